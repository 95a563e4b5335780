"""Moving and recomputing states into a new plan's instance (seed 001 (Zhu et al., Dynamic Plan
Migration), 4.1, Algorithms 1 and 2).

`move_states` runs after the old instance has drained to the marker (`cleanAccumulatedTuples`):

- matched states (`plan_change.matches`) are *shared*: the new store takes the old store's
  per-key lists themselves (4.1.1: a new cursor on the old state, nothing copied); a matched join
  state whose field layout or join key differs in the new plan is moved tuple by tuple into the
  new layout (a sub-tuple's id is cut out of the combined id);
- unmatched join states are *recomputed* (Algorithm 1): the state holding a range join's output
  is that join's two states joined pair by pair, without the purge step, over the window. The
  plan's operators are in topological order, so a join's own states are filled before the state
  of its output: the recursion of Algorithm 1, bottom up;
- unmatched old states are discarded, which is safe (4.1.3) because the old instance processed
  every tuple before the marker, so a sub-tuple missing from the matched states is older than the
  window before the marker and cannot join a tuple after it;
- the positions the old state covers carry over, so the new instance resumes exactly after them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamshift_engine.migration import plan_change
from streamshift_engine.migration.plan_change import JOIN_SIDES, StateSlot
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.joins import (
    IDENTITY,
    MAX,
    MIN,
    TS,
    VALUES,
    SymmetricJoin,
    combined_identity,
)
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance
from streamshift_engine.state.stores import KeyedRecordStore, StateStore

Record = tuple[Any, ...]


@dataclass(frozen=True)
class StateMove:
    """What a moving-state migration did: states shared, moved (copied) and recomputed."""

    shared: int
    moved_bytes: int
    recomputed_tuples: int


def move_states(old_plan: Plan, old: Instance, new_plan: Plan, new: Instance) -> StateMove:
    """Fill `new`'s states from `old`'s (matched: share or move; unmatched: recompute)."""
    shared, moved = move_matched(old_plan, old, new_plan, new)
    recomputed = recompute_unmatched(old_plan, new_plan, new)
    new.carry_positions(old)
    return StateMove(shared, moved, recomputed)


def move_matched(old_plan: Plan, old: Instance, new_plan: Plan, new: Instance) -> tuple[int, int]:
    """Share or move every matched state into `new`; answer (states shared, bytes moved)."""
    old_ops = {op.id: op for op in old.pipeline.operators}
    new_ops = {op.id: op for op in new.pipeline.operators}
    shared = moved = 0
    for slot, source in _matched(old_plan, new_plan):
        target = new_ops[slot.operator]
        if slot.store == "*":
            target.restore(old_ops[source.operator].snapshot())
            moved += target.state_bytes()
        elif (source.layout, source.key) == (slot.layout, slot.key):
            _share_join_state(target, slot.store, old_ops[source.operator].stores[source.store])
            shared += 1
        else:
            store = old_ops[source.operator].stores[source.store]
            assert isinstance(store, KeyedRecordStore)
            _fill(
                target, slot, [(p, _relayout(r, source, slot)) for p, r in _with_partitions(store)]
            )
            moved += store.nbytes()
    return shared, moved


def recompute_unmatched(old_plan: Plan, new_plan: Plan, new: Instance) -> int:
    """Algorithm 1, bottom up (the plan's topological order), once the matched states are in
    `new`: each unmatched state from its join's two filled states; answer the tuples made."""
    new_ops = {op.id: op for op in new.pipeline.operators}
    matched = plan_change.matches(old_plan, new_plan)
    recomputed = 0
    for slot in plan_change.slots(new_plan):
        if (slot.operator, slot.store) not in matched:
            tuples = _recompute(new_plan, new_ops, slot)
            _fill(new_ops[slot.operator], slot, tuples)
            recomputed += len(tuples)
    return recomputed


def _matched(old_plan: Plan, new_plan: Plan) -> list[tuple[StateSlot, StateSlot]]:
    """Each new state that has a match, with the old state it matches (by state id)."""
    matched = plan_change.matches(old_plan, new_plan)
    return [
        (slot, matched[(slot.operator, slot.store)])
        for slot in plan_change.slots(new_plan)
        if (slot.operator, slot.store) in matched
    ]


def _share_join_state(operator: Operator, side: str, store: StateStore) -> None:
    """The new join side uses the old state object itself (4.1.1: a cursor, not a copy)."""
    assert isinstance(operator, SymmetricJoin) and isinstance(store, KeyedRecordStore)
    operator.stores[side] = store
    operator.state[JOIN_SIDES.index(side)] = store


def _with_partitions(store: KeyedRecordStore) -> list[tuple[int, Record]]:
    return [(partition, r) for (partition, _), group in store.groups.items() for r in group]


def _sub_identity(identity: str, streams: str) -> str:
    parts = [part for part in identity.split("*") if part.split("@", 1)[0] in streams]
    return "*".join(sorted(parts))


def _relayout(record: Record, source: StateSlot, slot: StateSlot) -> Record:
    """A tuple of a matched state in the new state's field order."""
    assert source.layout is not None and slot.layout is not None
    position = {name: i for i, name in enumerate(source.layout)}
    values = [
        record[VALUES + position[name]]
        if name in position
        else _sub_identity(record[IDENTITY], name.removeprefix("id:"))
        for name in slot.layout
    ]
    return (*record[:VALUES], *values)


def _fill(operator: Operator, slot: StateSlot, tuples: Any) -> None:
    """Insert (partition, tuple) pairs into a join side's state, keyed by the new join key."""
    assert slot.layout is not None and slot.key is not None
    store = operator.stores[slot.store]
    assert isinstance(store, KeyedRecordStore)
    key_at = [VALUES + slot.layout.index(name) for name in slot.key]
    for partition, record in tuples:
        store.records(partition, tuple(record[i] for i in key_at)).append(record)


def _recompute(plan: Plan, ops: dict[str, Operator], slot: StateSlot) -> list[tuple[int, Record]]:
    """Algorithm 1's `window_join(child_op_l_state, child_op_r_state)` for a range join's
    output state: every pair of the join's two (already filled) states that joins, no purge."""
    assert slot.upstream is not None
    join = ops[slot.upstream]
    assert isinstance(join, SymmetricJoin)
    left, right = join.state
    found = []
    for group_key, lefts in left.groups.items():
        for stored in right.groups.get(group_key, []):
            for first in lefts:
                if join.joinable(first, stored):
                    found.append((group_key[0], _combine(first, stored)))
    found.sort(key=lambda pair: (pair[1][TS], pair[1][IDENTITY]))
    return found


def _combine(left: Record, right: Record) -> Record:
    """The combined tuple the join would have produced (values: left, right, then its id)."""
    identity = combined_identity(left, right)
    head = (max(left[TS], right[TS]), min(left[MIN], right[MIN]), max(left[MAX], right[MAX]))
    return (*head, identity, *left[VALUES:], *right[VALUES:], identity)
