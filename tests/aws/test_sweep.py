"""Retention planned from the idle-period index, on moto: what a sweep sends grows with
the threads that expire (E), not with the table (N); an old table is backfilled by the
first sweep (the Scan); a table without the index says how to add it. Faults at every
request of the indexed sweep: `tests/unit/test_faults.py` ("expire indexed")."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.errors import StorageConfigError
from langgraph.checkpoint.s3dynamo.layout import IDLE_SHARDS
from langgraph.checkpoint.s3dynamo.schema import IDLE_INDEX, table_definition
from tests.support.savers import RequestCounter, make_saver

DAY = 86_400.0
TTL = "30d"


def put(saver: S3DynamoSaver, tid: str) -> None:
    config = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
    saver.put(config, empty_checkpoint(), {"step": 1}, {})


def table(clients: Any, name: str, **kwargs: Any) -> S3DynamoSaver:
    saver = make_saver(clients, table=name, prefix="", **kwargs)
    saver.setup()
    return saver


def at(saver: S3DynamoSaver, moment: float) -> None:
    saver.store.clock = lambda: moment


def sweep_counts(
    clients: Any, counter: RequestCounter, n: int, e: int, t0: float
) -> tuple[Counter[str], int, Any]:
    """A table of `n` threads of which `e` are idle; the second sweep's requests, the
    items its reads evaluated, and its plan."""
    saver = table(clients, f"sweep-{n}-{e}")
    at(saver, t0 - 31 * DAY + 3600)
    for i in range(e):
        put(saver, f"idle-{i}")
    at(saver, t0 - DAY)
    first = saver.ops.expire_idle_threads(TTL)  # no cursor yet: the Scan; none idle
    assert not first.removed and first.cursor.day is None
    at(saver, t0)
    for i in range(n - e):
        put(saver, f"active-{i}")
    evaluated = [0]

    def count(parsed: Any, **_: Any) -> None:
        evaluated[0] += int(parsed.get("ScannedCount", 0)) if isinstance(parsed, dict) else 0

    clients[0].meta.events.register("after-call.dynamodb.Query", count)
    counter.reset()
    plan = saver.ops.expire_idle_threads(TTL)
    clients[0].meta.events.unregister("after-call.dynamodb.Query", count)
    calls = Counter(counter.calls)
    assert sorted(plan.removed) == sorted(saver.store.namer.thread(f"idle-{i}") for i in range(e))
    for i in range(0, n - e, max(1, (n - e) // 5)):  # active threads keep their checkpoint
        assert saver.get_tuple({"configurable": {"thread_id": f"active-{i}"}}) is not None
    return calls, evaluated[0], plan


def test_a_sweep_costs_what_expires_not_what_is_stored(
    clients: Any, counter: RequestCounter
) -> None:
    t0 = time.time()
    small, small_read, plan = sweep_counts(clients, counter, 20, 4, t0)
    large, large_read, _ = sweep_counts(clients, counter, 200, 4, t0)
    more, more_read, _ = sweep_counts(clients, counter, 20, 8, t0)
    # Ten times the threads, the same idle ones: the same requests and items read.
    assert small == large and small_read == large_read
    assert plan.active == 0  # the active threads were not even read
    # Per idle thread (one checkpoint, inline): 3 Query (its two partitions, then the
    # consistent read before removal), 1 UpdateItem (its lease), 5 BatchWriteItem
    # (tombstones, marks, records, marks removed, lease and heads), 1 ListObjectsV2 (no
    # object to delete). Per sweep: the cursor's
    # Query, the index's two days (the cutoff's and the one before) times 32 shards, the
    # journal and the cursor's PutItem.
    e = 4
    assert small == Counter(
        {
            "dynamodb.Query": 1 + 2 * IDLE_SHARDS + 3 * e,
            "dynamodb.UpdateItem": e,
            "dynamodb.BatchWriteItem": 5 * e,
            "dynamodb.PutItem": 2,
            "s3.ListObjectsV2": e,
        }
    )
    slope = {k: (more[k] - small[k]) / 4 for k in more}
    assert slope == {
        "dynamodb.Query": 3,
        "dynamodb.UpdateItem": 1,
        "dynamodb.BatchWriteItem": 5,
        "dynamodb.PutItem": 0,
        "s3.ListObjectsV2": 1,
    }
    # Items the Queries evaluated: the index entries and each idle thread's items, the
    # same for each idle thread.
    assert (small_read, more_read) == (18, 34)


def strip_index_keys(clients: Any, name: str) -> int:
    """What an old table holds: no item carries the index key."""
    ddb, stripped = clients[0], 0
    for item in ddb.scan(TableName=name)["Items"]:
        if "ik" in item:
            ddb.update_item(
                TableName=name,
                Key={"pk": item["pk"], "sk": item["sk"]},
                UpdateExpression="REMOVE ik",
            )
            stripped += 1
    return stripped


def test_the_first_sweep_on_an_old_table_scans_and_backfills(clients: Any) -> None:
    saver = table(clients, "old")
    t0 = time.time()
    at(saver, t0 - 40 * DAY)
    put(saver, "old-idle")
    at(saver, t0 - 20 * DAY)
    put(saver, "old-active")
    assert strip_index_keys(clients, "old") == 2
    at(saver, t0)
    first = saver.ops.expire_idle_threads(TTL)  # no cursor: the Scan, which backfills
    assert first.removed == [saver.store.namer.thread("old-idle")]
    # The active thread's head (its record, with concurrent-run detection off: no head)
    # now carries its newest write's index key.
    [(key, moved)] = first.cursor.moves
    assert key.pk.rstrip("!") == saver.store.namer.thread("old-active")
    assert moved.startswith(time.strftime("%Y%m%d", time.gmtime(t0 - 20 * DAY)))
    # Fifteen days on the backfilled thread is idle: the index finds it, no Scan.
    at(saver, t0 + 15 * DAY)
    counter = RequestCounter()
    counter.hook(clients[0])
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.removed == [saver.store.namer.thread("old-active")]
    assert counter["dynamodb.Scan"] == 0


def test_a_table_without_the_index_says_how_to_add_it(clients: Any) -> None:
    definition = table_definition("no-index")
    definition["GlobalSecondaryIndexes"] = [
        g for g in definition["GlobalSecondaryIndexes"] if g["IndexName"] != IDLE_INDEX
    ]
    definition["AttributeDefinitions"] = definition["AttributeDefinitions"][:3]
    clients[0].create_table(**definition)
    saver = make_saver(clients, table="no-index", prefix="")
    saver.setup()
    t0 = time.time()
    at(saver, t0 - 40 * DAY)
    put(saver, "t")
    at(saver, t0 - 39 * DAY)
    saver.ops.expire_idle_threads(TTL)  # the first sweep Scans: it needs no index
    at(saver, t0)
    with pytest.raises(StorageConfigError, match="terraform") as raised:
        saver.ops.expire_idle_threads(TTL)
    assert IDLE_INDEX in str(raised.value) and "--full" in str(raised.value)
    full = saver.ops.expire_idle_threads(TTL, full=True)
    assert full.removed == [saver.store.namer.thread("t")]
