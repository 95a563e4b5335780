#!/usr/bin/env bash
# What CI runs (`make test`, after `make setup`): lint and type checks, then every test under
# tests/ (pure and `stack`-marked) against the local stack. Starts the stack if it is not up and
# then stops it again on exit; a stack that was already up is left running. Exits with pytest's
# status.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO"

say "lint: ruff check, ruff format --check, mypy"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
"$VENV/bin/mypy"

started_stack=0
stop_stack() {
  if [ "$started_stack" = 1 ]; then
    say "stopping the stack this run started"
    "$REPO/dev/down.sh" || true
  fi
}
trap stop_stack EXIT

if "$REPO/dev/status.sh" >/dev/null 2>&1; then
  say "the local stack is already up; using it"
else
  started_stack=1
  "$REPO/dev/up.sh"
fi

set +e
"$VENV/bin/pytest" -q tests "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  say "pytest collected no tests"
  rc=1
fi
exit "$rc"
