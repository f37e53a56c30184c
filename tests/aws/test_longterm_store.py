"""S3DynamoStore and S3DynamoCache on DynamoDB and S3 (moto): requests per operation,
nothing readable at rest, and thread maintenance unaffected by memory items beside it."""

from __future__ import annotations

import base64
import os
from datetime import timedelta
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.savers import RequestCounter, make_saver

# The first put into a namespace is one TransactWriteItems (the item and its namespace's
# directory entry).
pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")


def stored_bytes(clients: Any) -> bytes:
    dynamodb, s3 = clients
    out = bytearray()
    for page in dynamodb.get_paginator("scan").paginate(TableName=clients.table):
        out += repr(page["Items"]).encode()
    for obj in s3.list_objects_v2(Bucket=clients.bucket).get("Contents", []):
        out += (
            obj["Key"].encode()
            + s3.get_object(Bucket=clients.bucket, Key=obj["Key"])["Body"].read()
        )
    return bytes(out)


def test_requests_per_operation(saver: S3DynamoSaver, counter: RequestCounter) -> None:
    store = S3DynamoStore.from_saver(saver)
    store.put(("users", "a"), "k", {"v": 1})  # the deployment check is done by setup()
    assert counter.calls == {"dynamodb.TransactWriteItems": 1}
    counter.reset()
    assert store.get(("users", "a"), "k") is not None
    assert counter.calls == {"dynamodb.BatchGetItem": 1}
    counter.reset()
    assert [i.key for i in store.search(("users",))] == ["k"]
    # The directory, then the matching namespace's partition.
    assert counter.calls == {"dynamodb.Query": 2}
    counter.reset()
    # Later puts into it, while the process holds a lease on its entry: the item alone.
    store.put(("users", "a"), "big", {"v": os.urandom(30000).hex()})
    assert counter.calls == {"s3.PutObject": 1, "dynamodb.UpdateItem": 1}
    counter.reset()
    # A batch writes each namespace's items together: 99 items and the directory entry
    # a transaction, so parallel puts into one namespace never contend for its entry.
    store.batch([PutOp(("users", "b"), f"k{i}", {"i": i}) for i in range(150)])
    assert counter.calls == {"dynamodb.TransactWriteItems": 2}
    assert len(store.search(("users", "b"), limit=200)) == 150


def test_nothing_readable_at_rest(clients: Any) -> None:
    keys = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
    saver = make_saver(clients, keys=keys, secret=os.urandom(32))
    saver.setup()
    store = S3DynamoStore.from_saver(saver)
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(saver)
    store.put(("tenant-ns", "alice"), "key-name", {"pw": "hunter2"})
    store.put(("tenant-ns", "alice"), "large-key", {"blob": os.urandom(30000).hex()})
    cache.set({(("cache-ns",), "cache-key"): ("cached-value", 60)})
    raw = stored_bytes(clients)
    for word in (b"tenant-ns", b"alice", b"key-name", b"hunter2", b"large-key", b"cache-"):
        assert word not in raw


def test_thread_maintenance_passes_memory_items_by(saver: S3DynamoSaver) -> None:
    store = S3DynamoStore.from_saver(saver)
    store.put(("a",), "k", {"v": 1}, ttl=1)
    S3DynamoCache.from_saver(saver).set({(("n",), "k"): (1, 60)})
    assert saver.ops.stats().threads == 0
    plan = saver.ops.plan_expiry(timedelta(days=1))
    assert plan.idle == {} and plan.leftovers == []
    assert store.space.expire(now=store.space.clock() + 1800) == (1, 1)
    assert store.list_namespaces() == []


def test_replaced_large_values_are_collected(saver: S3DynamoSaver, clients: Any) -> None:
    from langgraph.checkpoint.s3dynamo.memory.admin import collect_memory_garbage

    store = S3DynamoStore.from_saver(saver)
    store.put(("docs",), "big", {"v": os.urandom(20000).hex()})
    store.put(("docs",), "big", {"v": os.urandom(20000).hex()})
    assert len(clients[1].list_objects_v2(Bucket=clients.bucket)["Contents"]) == 2
    assert collect_memory_garbage(saver.parts, timedelta(hours=1))["store"] == 0
    assert collect_memory_garbage(saver.parts, timedelta(seconds=-5))["store"] == 1
    assert len(clients[1].list_objects_v2(Bucket=clients.bucket)["Contents"]) == 1
    assert store.get(("docs",), "big") is not None
