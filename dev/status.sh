#!/usr/bin/env bash
# Health and memory of each part of the local stack: pid, health check, resident memory (RSS),
# then the sum, pods included. Exit status 0 when every part is up and healthy, 1 otherwise.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"

bad=0 total=0
printf '%-24s %-8s %-9s %10s  %s\n' PART PID HEALTH RSS_MiB LOG
for part in "${PARTS[@]}"; do
  if pid="$(part_pid "$part")"; then
    rss="$(rss_kib "$pid")"; total=$((total + rss))
    if healthy "$part"; then health=healthy; else health=UNHEALTHY; bad=1; fi
    printf '%-24s %-8s %-9s %10d  %s\n' "$part" "$pid" "$health" $((rss / 1024)) "$LOG/$part.log"
    if [ "$part" = node-agent ] && src="$(agent_stale "$pid")"; then
      echo "  note: $src changed after the node agent started; to run the new code:"
      echo "        dev/down.sh node-agent && dev/up.sh"
    fi
  else
    printf '%-24s %-8s %-9s %10s  %s\n' "$part" - stopped - "$LOG/$part.log"
    bad=1
  fi
done
pods=0 pod_rss=0
for f in "$RUN"/pod-pids/*.pid; do
  [ -e "$f" ] || continue
  read -r pid _ < "$f" || continue
  [ -d "/proc/$pid" ] || continue
  pods=$((pods + 1)); pod_rss=$((pod_rss + $(rss_kib "$pid")))
done
printf '%-24s %-8s %-9s %10d  %s\n' "pods ($pods)" - - $((pod_rss / 1024)) "$LOG/pods/"
total=$((total + pod_rss))
printf 'total RSS: %d MiB (goal: under 3072 MiB idle)\n' $((total / 1024))
[ -f "$STACK_ENV" ] && echo "endpoints: $STACK_ENV    kubeconfig: $KUBECONFIG_PATH"
exit "$bad"
