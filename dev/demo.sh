#!/usr/bin/env bash
# `make demo PROTOCOL=...`: start the local stack, install the CRDs, start the operator (in the
# background, pid file and log under $STREAMSHIFT_CACHE), then run e2e/demo.py (`python -m e2e.demo`
# from the repository root): a Nexmark q5 StreamQuery fed at a steady rate, a Migration with the
# protocol given, a progress display, the phase timeline, the cost and the verification result. The operator this script started is
# stopped on exit, after the demo's query is deleted (its snapshots with it: retention Delete);
# then the demo's namespace is deleted.
# `dev/demo.sh compare` (`make demo-compare`) runs e2e/compare.py instead: every protocol in
# turn on the same query, then a side-by-side table of what each Migration's status records.
# Exit status 0 only when the migration(s) succeeded with verified-exact output.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
protocol="${1:-unimico}"
case "$protocol" in
  unimico|parallel-track|moving-state|state-transfer|savepoint-restart|auto|compare) ;;
  *) die demo "unknown protocol '$protocol'" \
       "use PROTOCOL=unimico, parallel-track, moving-state, state-transfer, savepoint-restart or auto" ;;
esac

"$REPO/dev/up.sh"
set -a; source "$STACK_ENV"; set +a
"$KUBECTL" apply -f "$REPO/crds/" >/dev/null
for crd in streamqueries.streamshift.io migrations.streamshift.io; do
  "$KUBECTL" wait --for=condition=Established "crd/$crd" --timeout=30s >/dev/null
done

mkdir -p "$RUN/pids" "$LOG"
pid_file="$RUN/pids/demo-operator.pid"
log_file="$LOG/demo-operator.log"
namespace="demo-$(date +%s)"
if [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
  die demo "a demo operator already runs (pid $(cat "$pid_file"))" \
    "wait for the other demo to finish, or stop that pid if it is yours"
fi
"$VENV/bin/kopf" run --standalone --namespace "$namespace" \
  -m streamshift_operator.handlers >"$log_file" 2>&1 &
echo $! >"$pid_file"
stop_operator() {
  local pid
  pid="$(cat "$pid_file")"
  # The query first, while the operator runs: its delete handler removes the snapshots.
  "$KUBECTL" -n "$namespace" delete streamquery q5 --timeout=60s >/dev/null 2>&1 || true
  kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -f "$pid_file"
  "$KUBECTL" delete namespace "$namespace" --wait=false >/dev/null 2>&1 || true
  say "operator (pid $pid) stopped; its log: $log_file"
}
trap stop_operator EXIT
say "operator started (pid $(cat "$pid_file"), log $log_file), watching namespace $namespace"

status=0
if [[ "$protocol" == compare ]]; then driver=(e2e.compare); else driver=(e2e.demo --protocol "$protocol"); fi
(cd "$REPO" && "$VENV/bin/python" -m "${driver[@]}" --namespace "$namespace" \
  --kafka "$KAFKA_BOOTSTRAP" --s3-endpoint "$S3_ENDPOINT" --s3-access-key "$S3_ACCESS_KEY" \
  --s3-secret-key "$S3_SECRET_KEY" --kubeconfig "$KUBECONFIG") || status=$?
if (( status != 0 )); then
  say "the demo did NOT show a successful, verified migration with protocol '$protocol':"
  say "the Migration's status above says what failed or what is missing."
fi
exit "$status"
