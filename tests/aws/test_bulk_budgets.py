"""Request budgets of whole-thread operations on a long thread, counted exactly on the
botocore clients: delete, copy and prune each go in full batches of 25 items, plus a
small constant (docs/RELIABILITY.md, "Deleting, copying, pruning")."""

from __future__ import annotations

import asyncio
import math
import os
import uuid
from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.format.layout import control_pk, mark_sk, parse_sk
from langgraph.checkpoint.s3dynamo.format.records import Mark
from tests.support import raw
from tests.support.graphs import two_step_graph
from tests.support.savers import BACKEND, RequestCounter, make_saver, memory_saver, thread_config

TURNS = 100
BATCH = 25
# What each operation sends beyond ceil(items / 25) DynamoDB requests, at most
# (docs/RELIABILITY.md, "Deleting, copying, pruning").
CONSTANT = 8
SECRET = "bulk-budgets-naming-secret"


@pytest.fixture
def saver(clients: tuple[Any, Any], counter: RequestCounter) -> S3DynamoSaver:
    s = make_saver(clients, secret=SECRET)
    s.setup()
    counter.reset()
    return s


def _long_thread(saver: S3DynamoSaver, tid: str, turns: int) -> None:
    """A thread of `turns` two-step turns, run on the in-memory ports (moto slows down
    as a partition grows) and loaded into the saver's table as stored, heads included."""
    mem = memory_saver(plaintext=True, keys=None, secret=SECRET)
    graph = two_step_graph(mem)
    for i in range(turns):
        graph.invoke({"steps": [f"turn {i}"]}, thread_config(tid))
    name = saver.parts.namer.thread(tid)
    assert all(k.pk == control_pk(name) for k in mem.index.heads)
    thread = [i for i in mem.index.items() if i["pk"] in (name, control_pk(name))]
    raw.table(saver).batch(thread)


def _items(saver: S3DynamoSaver, tid: str) -> tuple[int, int]:
    """(checkpoint records, writes records) of a thread."""
    keys = [r.key for r in saver.store.records(tid)]
    writes = sum(1 for k in keys if k.sk.count("#") == 2)
    return len(keys) - writes, writes


def _dynamodb(counter: RequestCounter) -> dict[str, int]:
    return {k: n for k, n in counter.calls.items() if k.startswith("dynamodb.")}


def test_delete_copy_and_prune_a_long_thread_go_in_full_batches(
    saver: S3DynamoSaver, counter: RequestCounter
) -> None:
    _long_thread(saver, "t", TURNS)
    graph = two_step_graph(saver)
    checkpoints, writes = _items(saver, "t")
    assert (checkpoints, writes) == (4 * TURNS, 3 * TURNS)
    items = checkpoints + writes
    latest = graph.get_state(thread_config("t"))
    history = [s.values for s in graph.get_state_history(thread_config("t"))]

    # Copy: both threads read once, the target's marks set with its heads (naming the
    # newest checkpoints copied; one transaction, each head only where none stood; where
    # the table serves no transactions, one batch, unclaimed) and cleared, the items in
    # full batches; every value is inline, so no loan and no S3 request.
    counter.reset()
    saver.copy_thread("t", "c")
    claim = {} if BACKEND == "real" else {"dynamodb.TransactWriteItems": 1}
    assert counter.calls == {
        "dynamodb.Query": 2,
        **claim,
        "dynamodb.BatchWriteItem": 1 + (not claim) + math.ceil((checkpoints + writes) / BATCH),
    }
    assert counter.total("dynamodb") <= math.ceil(items / BATCH) + CONSTANT
    assert [s.values for s in graph.get_state_history(thread_config("c"))] == history

    # Prune (keep_latest) of the copy: one read, marks set and cleared, the older
    # checkpoints in full batches, then their writes; no object is orphaned.
    counter.reset()
    saver.prune(["c"])
    kept_writes = 0  # the latest checkpoint of a finished turn has no pending writes
    assert counter.calls == {
        "dynamodb.Query": 1,
        "dynamodb.BatchWriteItem": 2
        + math.ceil((checkpoints - 1) / BATCH)
        + math.ceil((writes - kept_writes) / BATCH),
    }
    assert counter.total("dynamodb") <= math.ceil(items / BATCH) + CONSTANT
    assert graph.get_state(thread_config("c")).values == latest.values
    assert len(list(graph.get_state_history(thread_config("c")))) == 1

    # Delete: the heads read and made tombstones (kept); keys read once; marks;
    # checkpoints, then writes, in full batches; the objects listed (none, so no record
    # is read for them); marks cleared.
    counter.reset()
    saver.delete_thread("t")
    assert _dynamodb(counter) == {
        "dynamodb.Query": 2,
        "dynamodb.BatchWriteItem": 3 + math.ceil(checkpoints / BATCH) + math.ceil(writes / BATCH),
    }
    assert counter.total("dynamodb") <= math.ceil(items / BATCH) + CONSTANT
    assert counter.calls["s3.ListObjectsV2"] == 1 and counter.total("s3") == 1
    assert graph.get_state(thread_config("t")).values == {}
    assert list(graph.get_state_history(thread_config("t"))) == []


@pytest.mark.parametrize("keep_last", [3, 60])
def test_prune_keep_last_of_a_long_thread_goes_in_full_batches(
    saver: S3DynamoSaver, counter: RequestCounter, keep_last: int
) -> None:
    _long_thread(saver, "t", TURNS)
    graph = two_step_graph(saver)
    checkpoints, writes = _items(saver, "t")
    history = list(graph.get_state_history(thread_config("t")))
    counter.reset()
    saver.prune(["t"], keep_last=keep_last)
    sent = dict(counter.calls)
    kept_checkpoints, kept_writes = _items(saver, "t")
    # One read, marks set and cleared, what goes in full batches (checkpoints, then the
    # writes they own); every value is inline, so no S3 request.
    assert kept_checkpoints == keep_last
    assert sent == {
        "dynamodb.Query": 1,
        "dynamodb.BatchWriteItem": 2
        + math.ceil((checkpoints - kept_checkpoints) / BATCH)
        + math.ceil((writes - kept_writes) / BATCH),
    }
    assert sum(sent.values()) <= math.ceil((checkpoints + writes) / BATCH) + CONSTANT
    # The newest `keep_last` read back as they did, pending writes and all.
    after = list(graph.get_state_history(thread_config("t")))
    assert [(s.config, s.values, s.next, s.tasks, s.metadata) for s in after] == [
        (s.config, s.values, s.next, s.tasks, s.metadata) for s in history[:keep_last]
    ]


# LangGraph's server (langgraph-api 0.16.7) prunes a custom checkpointer's threads with
# `await checkpointer.aprune(list(request.thread_ids), strategy=strategy)` (its gRPC
# checkpointer service), the strategy "keep_latest" or "delete_all" (its conversion of
# the gRPC enum), in batches of 100 thread ids (`Threads.prune(batch_size=100)`, which
# its thread-TTL sweep calls), each id a UUID's text.
SERVER_BATCH = 100


@pytest.mark.parametrize("strategy", ["keep_latest", "delete_all"])
def test_aprune_called_as_langgraph_server_calls_it_keeps_the_bulk_budget(
    saver: S3DynamoSaver, counter: RequestCounter, strategy: str
) -> None:
    tids = [str(uuid.uuid4()) for _ in range(SERVER_BATCH)]
    for tid in tids:
        _long_thread(saver, tid, 2)
    checkpoints, writes = _items(saver, tids[0])
    assert all(_items(saver, tid) == (checkpoints, writes) for tid in tids)
    graph = two_step_graph(saver)
    latest = {tid: graph.get_state(thread_config(tid)).values for tid in tids}
    counter.reset()
    asyncio.run(saver.aprune(list(tids), strategy=strategy))
    # Per thread, as one prune or delete of it costs (above): its records in full
    # batches and a small constant; nothing is read or written for the batch as a whole.
    if strategy == "keep_latest":
        each = {
            "dynamodb.Query": 1,
            "dynamodb.BatchWriteItem": 2
            + math.ceil((checkpoints - 1) / BATCH)
            + math.ceil(writes / BATCH),
        }
    else:
        each = {
            "dynamodb.Query": 2,
            "dynamodb.BatchWriteItem": 3
            + math.ceil(checkpoints / BATCH)
            + math.ceil(writes / BATCH),
            "s3.ListObjectsV2": 1,
        }
    assert counter.calls == {name: n * SERVER_BATCH for name, n in each.items()}
    per_thread = math.ceil((checkpoints + writes) / BATCH) + CONSTANT
    assert counter.total("dynamodb") <= SERVER_BATCH * per_thread
    for tid in tids:
        history = list(graph.get_state_history(thread_config(tid)))
        if strategy == "keep_latest":
            assert [s.values for s in history] == [latest[tid]]
        else:
            assert history == []


def test_the_read_path_costs_the_same_with_and_without_a_mark(
    saver: S3DynamoSaver, counter: RequestCounter
) -> None:
    graph = two_step_graph(saver)
    for i in range(3):
        graph.invoke({"steps": [f"turn {i}"]}, thread_config("t"))
    counter.reset()
    assert graph.get_state(thread_config("t")).values["steps"]
    plain = dict(counter.calls)
    # A mark left by an interrupted delete: the same single Query finds the thread gone.
    _mark_as_deleting(saver, "t")
    counter.reset()
    assert graph.get_state(thread_config("t")).values == {}
    assert counter.calls == plain == {"dynamodb.Query": 1}


def _mark_as_deleting(saver: S3DynamoSaver, tid: str) -> Any:
    """A delete's marks over each namespace of the thread, as an interrupted one leaves."""
    newest: dict[str, str] = {}
    for record in saver.store.records(tid):
        ns_name, cid, _ = parse_sk(record.sk)
        newest[ns_name] = max(newest.get(ns_name, cid), cid)
    name = saver.store.name_of(tid)
    marks = [Mark(name, mark_sk(ns, "delete"), upto=cid, at=0) for ns, cid in newest.items()]
    raw.put_records(saver, marks)
    return marks


def _stored(clients: Any) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """(object key -> size, item key -> size in bytes as stored) of the whole deployment."""
    dynamodb, s3 = clients
    listed = s3.list_objects_v2(Bucket=clients.bucket).get("Contents", [])
    items: dict[tuple[str, str], int] = {}
    for page in dynamodb.get_paginator("scan").paginate(TableName=clients.table):
        for item in page["Items"]:
            items[(item["pk"]["S"], item["sk"]["S"])] = len(repr(item))
    return {o["Key"]: o["Size"] for o in listed}, items


@pytest.mark.unsupported_on(
    "real", reason="counts a copy's borrowing and loans as one transaction; dynalite has none"
)
def test_a_copy_of_a_thread_holding_a_2mb_document_sends_no_object_request(
    clients: Any, saver: S3DynamoSaver, counter: RequestCounter
) -> None:
    graph = two_step_graph(saver)
    document = os.urandom(1_000_000).hex()  # 2 MB that does not compress: objects
    graph.invoke({"steps": [document]}, thread_config("t"))
    for i in range(3):
        graph.invoke({"steps": [f"turn {i}"]}, thread_config("t"))
    checkpoints, writes = _items(saver, "t")
    history = [s.values for s in graph.get_state_history(thread_config("t"))]
    # A deployment's first copy that shares objects records storage format 2 first:
    # one PutItem, once (docs/FORMAT.md).
    counter.reset()
    saver.copy_thread("t", "first")
    assert counter["dynamodb.PutItem"] == 1
    objects_before, items_before = _stored(clients)
    counter.reset()
    saver.copy_thread("t", "c")
    # Both threads read, the source read again after the loan; the borrowing and the
    # loan in one transaction; the target's marks set with its heads in one, its items
    # in full batches, then the borrowing settled as the marks go, in one transaction.
    # Nothing of S3.
    assert counter.calls == {
        "dynamodb.Query": 3,
        "dynamodb.TransactWriteItems": 3,
        "dynamodb.BatchWriteItem": math.ceil((checkpoints + writes) / BATCH),
    }
    assert counter.total("dynamodb") <= math.ceil((checkpoints + writes) / BATCH) + CONSTANT
    objects_after, items_after = _stored(clients)
    # The bucket is byte for byte as it was; the table grew by the copy's index items,
    # its loan, its borrowing and its head.
    assert objects_after == objects_before
    assert items_after.keys() > items_before.keys()
    assert len(items_after) - len(items_before) == checkpoints + writes + 3
    assert [s.values for s in graph.get_state_history(thread_config("c"))] == history
