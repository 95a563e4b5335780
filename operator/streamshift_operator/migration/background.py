"""Work that must not compete with the data path: the output verification, in a child process
at the lowest CPU priority.

A verification reads a query's whole input and output and runs the reference over it, a core's
work for a minute or more on a few million events. In a thread of the operator it would compete
at the priority of everything else with the workers and the broker for the node's cores, and
hold the operator's GIL against its handlers. In a child process at niceness `NICENESS` it takes
what the rest leaves, so it ends later on a busy node and never slows the query it verifies, and
the memory it reads the input into goes back to the system when it ends. The children are
started by `spawn` (the operator's process has threads: a fork would copy their locks) and kept
for the next verification; each is killed when the operator's process ends, however it ends
(`PR_SET_PDEATHSIG`): an orphan would go on verifying a migration no operator records.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from streamshift_operator.migration.verification import verify
from streamshift_operator.models.migration import Verification
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.resources.pods import QueryIdentity

NICENESS = 19
PROCESSES = 2  # verifications of several migrations at once; each holds its inputs in memory
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends


def lowest_priority(parent: int) -> None:
    """A child's initializer: the lowest CPU priority, for the process and what it starts, and
    SIGKILL once `parent` (the operator's process) ends."""
    os.setpriority(os.PRIO_PROCESS, 0, NICENESS)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the operator ended before the signal was asked for
        os._exit(1)


@functools.cache
def pool() -> ProcessPoolExecutor:
    """The operator's verification processes, started on first use."""
    return ProcessPoolExecutor(
        PROCESSES,
        multiprocessing.get_context("spawn"),
        initializer=lowest_priority,
        initargs=(os.getpid(),),
    )


async def verify_in_background(
    spec: StreamQuerySpec, plan_doc: dict[str, Any], query: QueryIdentity, touched_to: int
) -> Verification:
    """`verification.verify` in a child process at the lowest priority."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool(), verify, spec, plan_doc, query, touched_to)
