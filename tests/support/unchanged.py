"""Nothing written: everything a backend's table and bucket hold, taken before an error
that is raised before writing and compared after it.

    with nothing_written(backend), pytest.raises(ItemTooLargeError):
        graph.invoke(inputs, config)

`contents` lists every item (checkpoint and writes records, heads, leases, upload intents,
the deployment's records, Store items and node-cache entries, their directories, the
Store's vector logs, manifests and filter tokens) and every object, each with what it
holds; on AWS, an object with its ETag and modification time, so one written again with
the same bytes counts as written too. The Store's and
the cache's errors use it the same way: nothing here knows which part wrote."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from tests.support.memory_index import MemoryIndex

Contents = dict[str, Any]


def memory_contents(index: MemoryIndex, stores: dict[str, MemoryObjects]) -> Contents:
    """Every item of the in-memory table, and every object of each named store."""
    out: Contents = {f"item {i['pk']} {i['sk']}": i for i in index.items()}
    for name, store in stores.items():
        for key, blob in store.blobs.items():
            out[f"object {name}/{key}"] = (blob, store.tags.get(key))
    return out


def aws_contents(dynamodb: Any, s3: Any, table: str, bucket: str) -> Contents:
    """Every item of the table (a consistent Scan) and every object of the bucket; a table
    or bucket that does not exist holds nothing."""
    out: Contents = {}
    # Asked by name: ListTables answers 100 names a page, and a shared server's tables
    # (one per test) are far more.
    if _exists(lambda: dynamodb.describe_table(TableName=table)):
        for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
            for item in page["Items"]:
                out[f"item {item['pk']['S']} {item['sk']['S']}"] = item
    if _exists(lambda: s3.head_bucket(Bucket=bucket)):
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for obj in page.get("Contents", []):
                out[f"object {obj['Key']}"] = (obj["ETag"], obj["Size"], obj["LastModified"])
    return out


def _exists(ask: Any) -> bool:
    """Whether a table or bucket asked for by name exists (any other error raises)."""
    from botocore.exceptions import ClientError

    try:
        ask()
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("ResourceNotFoundException", "404", "NoSuchBucket"):
            return False
        raise
    return True


def unobserved(client: Any) -> Any:
    """A boto3 client for the same service, region and endpoint as `client`, with no
    request counter hooked to it."""
    import boto3

    return boto3.client(
        client.meta.service_model.service_name,
        region_name=client.meta.region_name,
        endpoint_url=client.meta.endpoint_url,
    )


def differences(before: Contents, after: Contents) -> list[str]:
    """What changed, one line per item or object: added, removed or changed."""
    lines = [f"added {k}" for k in sorted(after.keys() - before.keys())]
    lines += [f"removed {k}" for k in sorted(before.keys() - after.keys())]
    lines += [f"changed {k}" for k in sorted(before.keys() & after.keys()) if before[k] != after[k]]
    return lines


@contextmanager
def nothing_written(backend: Any) -> Iterator[None]:
    """Assert that the block leaves the backend's table and bucket exactly as they were
    (`backend`: a `tests.support.backends.Backend`). Put it outside `pytest.raises`."""
    before = backend.contents()
    yield
    changed = differences(before, backend.contents())
    assert not changed, f"{len(changed)} changes after an error raised before writing: " + (
        "; ".join(changed[:8])
    )
