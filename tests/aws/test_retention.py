"""Retention through the DynamoDB and S3 adapters (moto, moto server, dynalite + SeaweedFS):
the Scan's projection, stamps as item attributes, tombstoned heads and the head condition
that lets a new thread start on one, ETag-conditional deletes. The full set of cases runs
on the in-memory ports (`tests/unit/test_retention.py`, and faults at every request in
`tests/unit/test_faults.py`)."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.layout import is_control_pk
from langgraph.checkpoint.s3dynamo.ops.retention import SCAN_SEGMENTS
from tests.support.graphs import delta_graph
from tests.support.savers import BACKEND, RequestCounter, make_saver
from tests.support.scenarios import chat_graph

DAY = 86_400.0


def chat(saver: S3DynamoSaver, tid: str, turns: int = 2) -> Any:
    graph = chat_graph(saver)
    for i in range(turns):
        graph.invoke(
            {"messages": [HumanMessage(f"{tid} {i}", id=f"{tid}-{i}")]},
            {"configurable": {"thread_id": tid}},
        )
    return graph


def items_of(clients: Any, name: str) -> list[dict[str, Any]]:
    ddb = clients[0]
    items: list[dict[str, Any]] = []
    for pk in (name, name + "!"):
        out = ddb.query(
            TableName=clients.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
        )
        items += out["Items"]
    return items


def objects_of(clients: Any, prefix: str) -> list[str]:
    out = clients[1].list_objects_v2(Bucket=clients.bucket, Prefix=prefix)
    return [o["Key"] for o in out.get("Contents", [])]


def test_idle_threads_go_whole_active_ones_stay(clients: Any, counter: RequestCounter) -> None:
    saver = make_saver(clients, inline_max=0, prefix="agents/")
    saver.setup()
    chat(saver, "idle")
    # Written 40 days later than "idle" (by the saver's clock), then swept 5 days after.
    later = time.time() + 40 * DAY
    saver.store.clock = lambda: later
    active = chat(saver, "active")
    delta = delta_graph(saver, 2)
    for i in range(3):
        delta.invoke({"messages": [f"user: {i}"]}, {"configurable": {"thread_id": "delta"}})
    kept = [s.values for s in active.get_state_history({"configurable": {"thread_id": "active"}})]
    idle = saver.store.namer.thread("idle")
    assert any("c" in i for i in items_of(clients, idle))
    assert all("a" in i for i in items_of(clients, idle) if "c" in i)  # stamped
    assert objects_of(clients, saver.store.objects.thread_prefix(idle))

    sweep = time.time() + 45 * DAY
    saver.store.clock = lambda: sweep
    plan = saver.ops.expire_idle_threads("30d", dry_run=True)
    assert list(plan.idle) == [idle] and plan.active == 2
    counter.reset()
    plan.execute()
    # Removing one thread: its lease, the tombstones, one consistent read, the record
    # deletes (each checkpoint alone, newest first, then the writes in one batch), one
    # listing, one conditional DeleteObjects, one batch for the lease.
    assert counter["dynamodb.UpdateItem"] == 1
    assert counter["dynamodb.Query"] == 1
    assert counter["s3.ListObjectsV2"] == 1
    assert counter["s3.DeleteObjects"] == 1
    assert counter["dynamodb.BatchWriteItem"] <= 1 + plan.records_deleted + 1

    assert plan.removed == [idle]
    left = items_of(clients, idle)
    assert [i["sk"]["S"] for i in left] == ["head#" + next(iter(plan.seen[idle].namespaces))]
    assert left[0]["h"]["S"].startswith("~")  # the tombstone
    assert objects_of(clients, saver.store.objects.thread_prefix(idle)) == []
    assert saver.get_tuple({"configurable": {"thread_id": "idle"}}) is None
    assert [
        s.values for s in active.get_state_history({"configurable": {"thread_id": "active"}})
    ] == kept
    assert delta.get_state({"configurable": {"thread_id": "delta"}}).values["messages"][-1]
    # The same thread id starts afresh on its tombstone.
    fresh = chat(saver, "idle", turns=1)
    assert len(fresh.get_state({"configurable": {"thread_id": "idle"}}).values["messages"]) == 2


def test_scan_reads_only_keys_stamps_and_heads(clients: Any, counter: RequestCounter) -> None:
    saver = make_saver(clients)
    saver.setup()
    chat(saver, "one", turns=1)
    counter.reset()
    plan = saver.ops.expire_idle_threads("1d", dry_run=True)
    assert plan.active == 1 and not plan.idle
    # The sweep's cursor (none yet: this first sweep plans with the Scan), then the Scan.
    assert dict(counter.calls) == {"dynamodb.Query": 1, "dynamodb.Scan": SCAN_SEGMENTS}
    if BACKEND == "moto":
        stamps = list(saver.store.records.scan_stamps())
        assert len(stamps) == 1 and stamps[0] and all(s.key.pk for s in stamps[0])


def test_the_parallel_scan_covers_the_table_once(clients: Any) -> None:
    """DynamoDB's Segment and TotalSegments, as the backend sends them: the segments
    hold every item of a sequential Scan, each once."""
    saver = make_saver(clients)
    saver.setup()
    for i in range(6):
        chat(saver, f"t{i}", turns=1)
    index = saver.store.records
    whole = [s.key for page in index.scan_stamps() for s in page]
    split = [s.key for seg in range(4) for page in index.scan_stamps(seg, 4) for s in page]
    assert sorted(split) == sorted(whole) and len(set(split)) == len(split)
    assert len({k.pk for k in whole if not is_control_pk(k.pk)}) == 6
