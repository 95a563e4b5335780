"""The state a migration would move, as the workers report it, for `auto`'s choice.

`moving_instances` is pure: a move names its instances, a rescale or plan change moves every
partition. `observed_state_bytes` sums `state_bytes` from the `/v1/status` of those instances'
workers; a worker that does not answer counts nothing (the choice is not held up by one).
"""

from typing import Any

from streamshift_operator.context import Context
from streamshift_operator.models.migration import MigrationSpec
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.resources.names import pod_name
from streamshift_operator.streamquery.observe import observe


def moving_instances(spec: MigrationSpec, placed: StreamQueryStatus) -> list[int]:
    """The ids of the placed instances whose partitions the migration moves."""
    ids = [i.id for i in placed.instances]
    if spec.target.move_instances and spec.target.plan is None:
        return [i for i in ids if i in spec.target.move_instances]
    return ids


async def observed_state_bytes(
    ctx: Context, query: dict[str, Any], spec: MigrationSpec, placed: StreamQueryStatus
) -> int:
    """The moving instances' state in bytes (0 without a control token to ask with)."""
    meta = query["metadata"]
    qspec = StreamQuerySpec.model_validate(query["spec"])
    token = await ctx.kube.secret_value(
        meta["namespace"], qspec.control_token.name, qspec.control_token.key
    )
    if token is None:
        return 0
    view = await observe(ctx.kube, ctx.control(token), meta["namespace"], meta["name"])
    pods = (pod_name(meta["name"], placed.epoch, i) for i in moving_instances(spec, placed))
    return sum(view.reports[pod].state_bytes for pod in pods if pod in view.reports)
