"""The local MinIO server: put and get a 10 MB object with the minio client."""

from __future__ import annotations

import hashlib
import io
import os
import uuid
from urllib.parse import urlparse

import pytest
from minio import Minio

from .helpers import Stack

pytestmark = pytest.mark.stack


def test_put_and_get_10_mb_object(stack: Stack) -> None:
    url = urlparse(stack.s3_endpoint)
    s3 = Minio(
        url.netloc,
        access_key=stack.s3_access_key,
        secret_key=stack.s3_secret_key,
        secure=url.scheme == "https",
    )
    bucket = f"t-{uuid.uuid4().hex[:8]}"
    s3.make_bucket(bucket)
    data = os.urandom(10 * 1024 * 1024)
    s3.put_object(bucket, "snapshots/big.bin", io.BytesIO(data), len(data))

    assert s3.stat_object(bucket, "snapshots/big.bin").size == len(data)
    resp = s3.get_object(bucket, "snapshots/big.bin")
    try:
        got = resp.read()
    finally:
        resp.close()
        resp.release_conn()
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()
    names = [o.object_name for o in s3.list_objects(bucket, prefix="snapshots/")]
    assert names == ["snapshots/big.bin"]

    s3.remove_object(bucket, "snapshots/big.bin")
    s3.remove_bucket(bucket)
    assert not s3.bucket_exists(bucket)
