#!/usr/bin/env bash
# Stop what `dev/up.sh` started, and only that: each part by the pid in its pid file (checked
# against the process's command line, so a pid reused after a crash is never hit), then any pod
# process the node agent left behind. `--purge` also deletes the stack's data (etcd, Kafka, MinIO).
# With part names (`dev/down.sh kafka minio`) it stops only those parts.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
purge=0 only=()
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    *) only+=("$arg") ;;
  esac
done

stop_group() {  # stop_group NAME PID: SIGTERM the process group, SIGKILL after 20 s
  local name="$1" pid="$2" i
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 80); do
    [ -d "/proc/$pid" ] || { say "$name: stopped"; return 0; }
    sleep 0.25
  done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  say "$name: killed (did not stop within 20 s)"
}

stopped=0
for (( i=${#PARTS[@]}-1; i>=0; i-- )); do
  part="${PARTS[$i]}"
  if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $part "* ]]; then continue; fi
  if pid="$(part_pid "$part")"; then
    stop_group "$part" "$pid"
    stopped=$((stopped + 1))
  elif [ -f "$(pidfile "$part")" ]; then
    say "$part: not running (stale pid file removed)"
  fi
  rm -f "$(pidfile "$part")"
done

# pods the node agent started and did not get to stop (it crashed or was killed)
if ! part_pid node-agent >/dev/null; then
  for f in "$RUN"/pod-pids/*.pid; do
    [ -e "$f" ] || continue
    read -r pid uid < "$f" || true
    if [ -n "${pid:-}" ] && [ -r "/proc/$pid/environ" ] \
        && tr '\0' '\n' < "/proc/$pid/environ" | grep -qx "STREAMSHIFT_POD_UID=$uid"; then
      stop_group "pod $(basename "$f" .pid)" "$pid"
      stopped=$((stopped + 1))
    fi
    rm -f "$f"
  done
fi
running=0
for part in "${PARTS[@]}"; do part_pid "$part" >/dev/null && running=1; done
[ "$running" = 1 ] || rm -f "$STACK_ENV"

if [ "$purge" = 1 ]; then
  rm -rf "$DATA"
  say "data deleted: $DATA"
fi
[ "$stopped" -gt 0 ] || say "nothing to stop"
