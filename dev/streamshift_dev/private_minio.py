"""A private MinIO server for benchmarks that take the snapshot store down (`make chaos`).

The shared stack's MinIO serves every other test and benchmark, so an outage is played on a
server of our own: the binary `make setup` cached (`$STREAMSHIFT_CACHE/bin/minio`), started as
`dev/up.sh` starts the stack's (same keys), with its own data directory and a free loopback
port. `stop` ends it by its process id; `start` again keeps the data directory and the port, as
a store that comes back does.
"""

from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path

from streamshift_dev.process import wait_serving
from streamshift_dev.workers import cache_dir, free_port


class PrivateMinio:
    """One MinIO server on 127.0.0.1 with a data directory of its own."""

    def __init__(self, folder: Path, access_key: str, secret_key: str) -> None:
        self.folder = folder
        self.port = free_port()
        self.access_key, self.secret_key = access_key, secret_key
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        (folder / "data").mkdir(parents=True, exist_ok=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        """Start the server and wait until it reports ready."""
        self.starts += 1
        log = (self.folder / f"minio-{self.starts}.log").open("wb")
        env = {
            **os.environ,
            "MINIO_ROOT_USER": self.access_key,
            "MINIO_ROOT_PASSWORD": self.secret_key,
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
        }
        command = [str(cache_dir() / "bin" / "minio"), "server", "--quiet"]
        command += ["--address", f"127.0.0.1:{self.port}", str(self.folder / "data")]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        wait_serving(self.process, self._ready, "private MinIO", timeout, self.log_tail)

    def _ready(self) -> bool:
        try:
            url = f"{self.endpoint}/minio/health/ready"
            with urllib.request.urlopen(url, timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server by its process id (SIGKILL: an outage, not a clean shutdown)."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(30)

    def log_tail(self) -> str:
        logs = sorted(self.folder.glob("minio-*.log"))
        return logs[-1].read_text()[-3000:] if logs else ""
