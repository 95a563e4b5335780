#!/usr/bin/env bash
# `make demo PROTOCOL=...`: the stack is set up (make's dependency) and started here; the
# migration demo itself needs the operator, which is not built yet, and this script says so
# instead of pretending.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
protocol="${1:-unimico}"
"$REPO/dev/up.sh"
echo
"$REPO/dev/status.sh" || true
echo
say "The local stack is up (kubeconfig: $KUBECONFIG_PATH)."
say "The migration demo (protocol '$protocol') is NOT built yet: the streamshift operator does"
say "not exist so far, so no StreamQuery was created and nothing was migrated."
say "Try the stack by hand: export KUBECONFIG=$KUBECONFIG_PATH; $BIN/kubectl get nodes"
say "Stop it with 'make down'."
