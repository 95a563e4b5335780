"""Snapshots in S3 (the `minio` client): save, list, load with checksum, retention.

`save` writes the object, then the manifest, each retried with exponential backoff when the store
is unreachable; when the retries run out it raises `SnapshotFailed` and no manifest exists for
the attempt, so no snapshot is ever half-written. Connections use short timeouts and no hidden
client retries, so the caller (a background thread of the worker) controls every wait.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Collection
from typing import TypeVar

import urllib3
from minio import Minio
from minio.error import S3Error

from streamshift_engine.runtime.config import S3Settings
from streamshift_engine.runtime.manifest import Manifest, checksum, verify

T = TypeVar("T")
ERRORS = (S3Error, urllib3.exceptions.HTTPError, OSError)


class SnapshotFailed(RuntimeError):
    """The store stayed unreachable through every retry."""


class SnapshotStore:
    """Snapshots of one query under `{prefix}snapshots/` and `{prefix}manifests/`."""

    def __init__(self, s3: S3Settings, attempts: int = 6, backoff_s: float = 0.2) -> None:
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=1.0, read=20.0), retries=urllib3.Retry(total=0)
        )
        self.client = Minio(
            s3.endpoint, s3.access_key, s3.secret_key, secure=s3.secure, http_client=http
        )
        self.bucket = s3.bucket
        self.prefix = s3.prefix
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.retries = 0

    def _retry(self, what: str, action: Callable[[], T]) -> T:
        delay = self.backoff_s
        for attempt in range(self.attempts):
            try:
                return action()
            except ERRORS as error:
                if attempt == self.attempts - 1:
                    raise SnapshotFailed(f"{what}: {error}") from error
                self.retries += 1
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        raise SnapshotFailed(what)

    def ensure_bucket(self) -> None:
        def make() -> None:
            if not self.client.bucket_exists(self.bucket):
                self.client.make_bucket(self.bucket)

        self._retry("bucket", make)

    def save(self, data: bytes, manifest: Manifest) -> Manifest:
        """Write the object, then its manifest (size and sha256 filled in here)."""
        key = f"{self.prefix}snapshots/{manifest.writer}/{manifest.seq:015d}.snap"
        done = Manifest(
            **{**manifest.__dict__, "object_key": key, "size": len(data), "sha256": checksum(data)}
        )
        self._put(key, data)
        self._put(self._manifest_key(done), done.to_json())
        return done

    def _put(self, key: str, data: bytes) -> None:
        self._retry(
            f"put {key}",
            lambda: self.client.put_object(self.bucket, key, io.BytesIO(data), len(data)),
        )

    def _manifest_key(self, manifest: Manifest) -> str:
        return f"{self.prefix}manifests/{manifest.writer}/{manifest.seq:015d}.json"

    def manifests(self) -> list[Manifest]:
        def listing() -> list[Manifest]:
            found = []
            for item in self.client.list_objects(
                self.bucket, prefix=f"{self.prefix}manifests/", recursive=True
            ):
                response = self.client.get_object(self.bucket, item.object_name)
                try:
                    found.append(Manifest.from_json(response.read()))
                finally:
                    response.close()
                    response.release_conn()
            return found

        return self._retry("list manifests", listing)

    def load(self, manifest: Manifest) -> bytes:
        """The object's bytes, checked against the manifest's size and sha256."""

        def get() -> bytes:
            response = self.client.get_object(self.bucket, manifest.object_key)
            try:
                return bytes(response.read())
            finally:
                response.close()
                response.release_conn()

        data = self._retry(f"get {manifest.object_key}", get)
        verify(manifest, data)
        return data

    def delete(self, manifests: Collection[Manifest]) -> None:
        """Manifest first, then object: a manifest never names a missing object."""
        for manifest in manifests:
            self._remove(self._manifest_key(manifest))
            self._remove(manifest.object_key)

    def _remove(self, key: str) -> None:
        self._retry(f"delete {key}", lambda: self.client.remove_object(self.bucket, key))
