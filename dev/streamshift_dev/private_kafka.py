"""A private single-node Kafka broker (KRaft) for tests and benchmarks (`make chaos`) that stop
and start their broker.

The shared stack's broker serves every other test, so a test that restarts a broker runs its
own: the stack's jars (`$STREAMSHIFT_CACHE/opt/kafka*`), configured by `dev/lib/kafka-config.sh`
as `dev/up.sh` configures the stack's, with its own data directory and free loopback ports. It
is stopped by its process id; a restart keeps the data directory and the ports, as a broker pod
restarted in place does. `freeze` stops the process without closing its connections (SIGSTOP):
a broker that hangs, or a network that drops packets, until `thaw`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

from streamshift_engine.runtime.outage import kafka_answers

from streamshift_dev.process import wait_serving
from streamshift_dev.workers import cache_dir, free_port

REPO = Path(__file__).resolve().parents[2]


def kafka_home() -> Path:
    """The Kafka jars `make setup` installed (`opt/kafka`, else the newest `opt/kafka-*`)."""
    opt = cache_dir() / "opt"
    found = [opt / "kafka"] if (opt / "kafka" / "lib").is_dir() else sorted(opt.glob("kafka-*"))
    if not found:
        raise RuntimeError(f"no Kafka under {opt}: run `make setup`")
    return found[-1]


class PrivateKafka:
    """One broker on 127.0.0.1 with a data directory of its own; `stop` and `start` again."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.controller_port = free_port()
        self.home = kafka_home()
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        subprocess.run(
            [
                str(REPO / "dev" / "lib" / "kafka-config.sh"),
                str(folder),
                str(self.port),
                str(self.controller_port),
                str(self.home),
            ],
            check=True,
            capture_output=True,
        )

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> None:
        """Start the broker and wait until it answers metadata requests."""
        self.starts += 1
        log = (self.folder / f"broker-{self.starts}.log").open("wb")
        command = [
            "java",
            "-Xms64m",
            "-Xmx384m",
            "-XX:+UseSerialGC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
            "-cp",
            f"{self.home / 'lib'}/*",
            "kafka.Kafka",
            str(self.folder / "server.properties"),
        ]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_serving(self.process, self._answers, "private broker", timeout, self.log_tail)

    def _answers(self) -> bool:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", self.port)) != 0:
                return False
        return kafka_answers(self.bootstrap)

    def stop(self, kill: bool = False) -> None:
        """Stop the broker by its process id: SIGTERM (a clean shutdown) or SIGKILL."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGCONT)  # a frozen broker stops only once thawed
        os.kill(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)

    def freeze(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def log_tail(self) -> str:
        logs = sorted(self.folder.glob("broker-*.log"))
        return logs[-1].read_text()[-3000:] if logs else ""
