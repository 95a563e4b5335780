"""Deleting a StreamQuery whose snapshots go with it (retention `Delete`): stop the workers,
remove the snapshot objects, and never hold the deletion for good.

The snapshot store may be unreachable (a wrong endpoint, an outage) or the credentials gone (the
namespace is being deleted, its Secrets first). Before, the delete handler retried for good with
the S3 client's own five-minute timeouts, and the query's finalizer kept it, and its namespace,
Terminating. Now each attempt waits `TIMEOUT_S` at most; the handler tries again `RETRY_S`
apart for `GIVE_UP_S`, then lets the finalizer go with a Warning Event saying what was left
behind (`left_behind`), as it does at once when the credentials are gone.
"""

from dataclasses import dataclass

import urllib3
from minio import Minio
from minio.error import MinioException

from streamshift_operator.models.streamquery import StreamQuerySpec

GIVE_UP_S = 60.0  # after the delete handler first ran, the finalizer lets go
RETRY_S = 5.0  # between attempts
TIMEOUT_S = 5.0  # each call to the store waits at most this long


class StoreUnreachable(RuntimeError):
    """The snapshot store did not answer or refused; the message says which and why."""


@dataclass(frozen=True)
class Verdict:
    """After a failed removal: try again (`retry`), or let go with `message` as the Event."""

    retry: bool
    message: str


def location(spec: StreamQuerySpec, namespace: str, name: str) -> str:
    """Where the query's snapshots are: endpoint, bucket and prefix."""
    snapshot = spec.snapshot
    return f"{snapshot.endpoint} bucket {snapshot.bucket} under {namespace}/{name}/"


def left_behind(where: str, why: str) -> str:
    return f"snapshots left behind at {where}: {why}; remove them by hand"


def after_failure(running_s: float, error: str, where: str) -> Verdict:
    """Whether a removal that failed with `error`, `running_s` seconds after the delete handler
    first ran (kopf's `runtime`), is tried again, or the deletion goes on without it."""
    if running_s + RETRY_S < GIVE_UP_S:
        return Verdict(True, f"removing snapshots failed ({running_s:.0f} s in): {error}")
    return Verdict(False, left_behind(where, f"{error} (gave up after {running_s:.0f} s)"))


def remove(endpoint: str, access: str, secret: str, bucket: str, prefix: str) -> int:
    """Delete every object under `prefix`; how many. `StoreUnreachable` when the store does
    not answer within `TIMEOUT_S` or refuses. Blocking."""
    host = endpoint.removeprefix("https://").removeprefix("http://").rstrip("/")
    http = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=TIMEOUT_S, read=TIMEOUT_S), retries=False
    )
    store = Minio(
        host,
        access_key=access,
        secret_key=secret,
        secure=endpoint.startswith("https://"),
        http_client=http,
    )
    try:
        if not store.bucket_exists(bucket):
            return 0
        names = [o.object_name for o in store.list_objects(bucket, prefix=prefix, recursive=True)]
        for name in names:
            if name is not None:
                store.remove_object(bucket, name)
        return len(names)
    except MinioException as error:
        raise StoreUnreachable(f"the snapshot store at {endpoint} refused: {error}") from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise StoreUnreachable(
            f"the snapshot store at {endpoint} is unreachable: {error}"
        ) from None
    finally:
        http.clear()
