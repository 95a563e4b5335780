#!/usr/bin/env bash
# What CI runs (`make test`, after `make setup`): lint and type checks, then every test under
# tests/ (pure and `stack`-marked) against the local stack. Starts the stack if it is not up and
# then stops it again on exit; a stack that was already up is left running. Exits with pytest's
# status, or 1 if the tests passed but a lint or type check failed.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO"

# lint first; a failure is reported and fails the run, but the tests still run
lint_failed=()
say "lint: ruff check ."
"$VENV/bin/ruff" check . || lint_failed+=("ruff check")
say "lint: ruff format --check ."
"$VENV/bin/ruff" format --check . || lint_failed+=("ruff format")
say "types: mypy"
# the cache outside the clone: a fresh clone checks only what changed (mypy compares the files'
# hashes), where an empty cache costs a minute or more of CPU on this 2-core machine
MYPY_CACHE_DIR="$CACHE/mypy" "$VENV/bin/mypy" || lint_failed+=("mypy")

started=()  # the parts this run starts, and so stops
own_data=""  # a data directory this run made for a stack it started whole, deleted at the end
stop_stack() {
  if [ ${#started[@]} -gt 0 ]; then
    say "stopping what this run started: ${started[*]}"
    "$REPO/dev/down.sh" "${started[@]}" || true
  fi
  if [ -n "$own_data" ]; then
    rm -rf "$own_data"
    say "test data deleted: $own_data"
  fi
}
trap stop_stack EXIT

if [ "${CI:-}" = true ] && pid="$(part_pid node-agent)" && agent_stale "$pid" >/dev/null; then
  # in CI nobody else uses the stack: a node agent older than its code is restarted
  say "CI: the node agent runs code older than its source; restarting it"
  "$REPO/dev/down.sh" node-agent
  restarted_agent=1
fi
if "$REPO/dev/status.sh" >/dev/null 2>&1; then
  say "the local stack is already up; using it"
else
  for part in "${PARTS[@]}"; do
    [ "$part" = node-agent ] && [ "${restarted_agent:-0}" = 1 ] && continue  # it was up: keep it
    part_pid "$part" >/dev/null || started+=("$part")
  done
  if [ ${#started[@]} -eq ${#PARTS[@]} ]; then
    # the whole stack is this run's: start it on empty data, so topics and objects of earlier runs
    # (thousands of partitions slow Kafka's start) neither cost time nor meet these tests
    own_data="$CACHE/test-data"
    rm -rf "$own_data"
    export STREAMSHIFT_DATA="$own_data"
  fi
  "$REPO/dev/up.sh"
fi

# Test files run in TEST_WORKERS processes at once (a file stays in one): the stack tests spend
# most of their time waiting on pods, Kafka and the API server, so three share two cores well.
set +e
"$VENV/bin/pytest" -q -n "${TEST_WORKERS:-3}" --dist loadfile --durations=25 tests "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  say "pytest collected no tests"
  rc=1
fi
if [ ${#lint_failed[@]} -gt 0 ]; then
  say "FAILED: ${lint_failed[*]} (see above)"
  [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
