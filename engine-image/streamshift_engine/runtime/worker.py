"""`streamshift worker`: run one worker process (config from env, control API on POD_IP).

A bad configuration exits with status 2 and a message naming the setting. SIGTERM commits, takes
a final snapshot and exits 0; a worker that fails exits 1 (the pod restarts and recovers), at
once, with a log line saying so: threads left blocked in a Kafka client call (a stuck commit,
`outage`) are not waited for. `/healthz` is the loop's liveness (`liveness`): its thread runs
and it advances.

The `streamshift` console registers every subcommand by importing its module, so this module
imports the worker's runtime (aiohttp, Kafka, MinIO, the engine) only when `main` runs: the other
subcommands do not pay for it. A worker needs all of it before it is ready (its control API,
its Kafka clients, the snapshot bucket and the engine instance), so nothing is deferred further.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiohttp import web

    from streamshift_engine.runtime.loop import Worker

log = logging.getLogger("streamshift.worker")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `worker` to the `streamshift` console's subcommands."""
    parser = subparsers.add_parser("worker", help="run a worker pod's process (config from env)")
    parser.set_defaults(handler=lambda _arguments: main())


def main() -> int:
    from streamshift_engine.runtime import _arenas
    from streamshift_engine.runtime.config import ConfigError, load
    from streamshift_engine.runtime.control import build_app
    from streamshift_engine.runtime.loop import Worker
    from streamshift_engine.runtime.metrics import Metrics, setup_logging

    setup_logging()
    try:
        config = load(os.environ)
    except ConfigError as error:
        print(f"streamshift worker: bad configuration: {error}", file=sys.stderr)
        return 2
    _arenas.keep(config.arena_cache_bytes)
    try:
        worker = Worker(config, Metrics(config.identity))
    except Exception:  # its Kafka clients could not start (brokers away past the retries)
        log.exception("worker could not start; exiting, the pod restarts it")
        return 1

    def body() -> None:
        try:
            worker.run()
        except BaseException as error:
            log.exception("worker failed")
            log.error(
                "worker exiting after a failure; the pod restarts it and it recovers from its "
                "last snapshot and the committed offsets",
                extra={"error": repr(error)},
            )
            logging.shutdown()
            # at once, from this thread: not waiting for threads a failed Kafka call may have
            # left blocked, nor for the control API's calls waiting on this loop (asyncio's
            # shutdown waited 10 s for those after a stuck commit)
            os._exit(1)

    thread = threading.Thread(target=body, name="worker", daemon=True)
    thread.start()
    app = build_app(worker, config.control_token, thread.is_alive, worker.source.progress.problem)
    asyncio.run(_serve(app, config.control_host, config.control_port, worker, thread))
    return 0


async def _serve(
    app: web.Application, host: str, port: int, worker: Worker, thread: threading.Thread
) -> None:
    from aiohttp import web

    from streamshift_engine.runtime import roles
    from streamshift_engine.runtime.loop import Command

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    log.info("control API listening", extra={"host": host, "port": port})
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: worker.submit(Command(roles.stop)))
    while thread.is_alive():
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.3)
    await runner.cleanup()
