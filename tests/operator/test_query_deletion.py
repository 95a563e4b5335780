"""Deleting a query, the pure decisions: snapshot removal tried a bounded number of times, then
let go with what was left behind; a query stranded in deletion (its namespace deleted while the
operator was down, or its deletion older than any handler's retries) is finished by the sweep,
one whose handler may still run is left to it."""

from datetime import UTC, datetime, timedelta
from typing import Any

from operator_stack import Stack, stream_query
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.streamquery.deletion import (
    GIVE_UP_S,
    RETRY_S,
    Verdict,
    after_failure,
    location,
)
from streamshift_operator.streamquery.stranded import KOPF_FINALIZER, STRANDED_S, stranded

NOW = datetime(2026, 11, 24, 19, 0, tzinfo=UTC)
STACK = Stack("127.0.0.1:19092", "http://127.0.0.1:9", "a", "s", "kubeconfig")


def test_removal_is_tried_for_a_bounded_time_then_let_go_with_what_stays() -> None:
    spec = StreamQuerySpec.model_validate(stream_query("q", "nexmark-q5", "p", STACK)["spec"])
    where = location(spec, "team", "q")
    assert where == "http://127.0.0.1:9 bucket operator-tests under team/q/"
    assert after_failure(0, "unreachable", where) == Verdict(
        True, "removing snapshots failed (0 s in): unreachable"
    )
    assert after_failure(GIVE_UP_S - RETRY_S - 1, "unreachable", where).retry
    assert after_failure(GIVE_UP_S - RETRY_S, "unreachable", where) == Verdict(
        False,
        f"snapshots left behind at {where}: unreachable (gave up after "
        f"{GIVE_UP_S - RETRY_S:.0f} s); remove them by hand",
    )


def query(deleting_s: float | None, finalizers: list[str], namespace: str = "team") -> Any:
    meta: dict[str, Any] = {"name": "q", "namespace": namespace, "finalizers": finalizers}
    if deleting_s is not None:
        since = NOW - timedelta(seconds=deleting_s)
        meta["deletionTimestamp"] = since.isoformat().replace("+00:00", "Z")
    return {"metadata": meta}


def test_a_query_in_a_namespace_being_deleted_is_stranded_at_once() -> None:
    assert stranded(query(1, [KOPF_FINALIZER]), {"team"}, NOW)
    assert not stranded(query(1, [KOPF_FINALIZER]), {"other"}, NOW)


def test_a_deletion_older_than_any_handler_retries_is_stranded() -> None:
    assert not stranded(query(STRANDED_S - 1, [KOPF_FINALIZER]), set(), NOW)
    assert stranded(query(STRANDED_S + 1, [KOPF_FINALIZER]), set(), NOW)


def test_queries_not_being_deleted_or_without_kopfs_finalizer_are_left_alone() -> None:
    assert not stranded(query(None, [KOPF_FINALIZER]), {"team"}, NOW)
    assert not stranded(query(600, ["someone.else/finalizer"]), {"team"}, NOW)
    assert not stranded(query(600, []), {"team"}, NOW)
