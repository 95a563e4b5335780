"""`streamshift-dev`: the local stack's helper commands.

node-agent   run the process node agent (a kubelet whose pods are local processes)
health       check one part: `health kafka --bootstrap H:P`, `health node --kubeconfig F --node N`
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="streamshift-dev",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    agent = sub.add_parser("node-agent", help="run the process node agent")
    agent.add_argument("--kubeconfig", required=True)
    agent.add_argument("--node", default="streamshift-local")
    agent.add_argument("--log-dir", required=True, type=Path, help="one log file per pod container")
    agent.add_argument("--work-dir", required=True, type=Path, help="pods' working directories")
    agent.add_argument(
        "--pid-dir",
        type=Path,
        help="pod pid files (default: LOG_DIR/../../run/pod-pids)",
    )
    agent.add_argument("--path", default="", help="directories put first on the pods' PATH")
    health = sub.add_parser("health", help="exit 0 when the part is healthy")
    health.add_argument("part", choices=["kafka", "node"])
    health.add_argument("--bootstrap", default="127.0.0.1:19092")
    health.add_argument("--kubeconfig")
    health.add_argument("--node", default="streamshift-local")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = _parser().parse_args(argv)
    if args.command == "node-agent":
        from streamshift_dev.agent import NodeAgent
        from streamshift_dev.runner import Paths

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        pids = args.pid_dir or args.log_dir.parent.parent / "run" / "pod-pids"
        paths = Paths(logs=args.log_dir, work=args.work_dir, pids=pids)
        NodeAgent(args.kubeconfig, args.node, paths, args.path).run()
        return 0
    from streamshift_dev import health as checks

    if args.part == "kafka":
        ok = checks.kafka_ok(args.bootstrap)
    else:
        if not args.kubeconfig:
            print("health node needs --kubeconfig", file=sys.stderr)
            return 2
        try:
            ok = checks.node_ok(args.kubeconfig, args.node)
        except Exception as exc:
            print(f"node {args.node}: {exc}", file=sys.stderr)
            ok = False
    print("healthy" if ok else "unhealthy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
