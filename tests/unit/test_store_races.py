"""Two operations of the Store at once, as `test_faults.py` races a thread and its copy:
the second runs whole, as another process would, before each request of the first in
turn. The operations: puts that replace an item's object, shrink it inline, add an item
and refresh one with a TTL; deleting an item and a namespace prefix; re-sealing under a
new key; the expiry sweep; garbage collection. Each time, every item a reader is shown
opens and holds a value it was given; once both are repeated and the incremental
collection has run (the only one the shipped Lambda example schedules), `verify` finds
nothing missing, altered or left over. The same, with the namespaces a data subject's
(whose puts are transactions that check its fence, even under a lease); and both ways
again with the second operation stopped halfway, before one of its own requests, while
the first runs to its end. Last, a delete of a Store item and a node cache's clear,
each stopped for good at each of its requests. In `make test-sweeps`."""

from __future__ import annotations

import base64
import os
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.base import TTLConfig

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.embeddings import random_embedding
from tests.support.faults import Crash, Faults, FaultyObjects, FaultyTable, Halfway, Race
from tests.support.memory_index import MemoryIndex

pytestmark = pytest.mark.slow

KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
BOTH = f"k2:{base64.b64encode(bytes(range(32, 64))).decode()},{KEYS}"
SECRET = bytes(range(100, 132))
NS, NOTES = ("users", "u1", "memories"), ("users", "u1", "notes")
DIMS = 8
# The items are written two days before the operations run: the one with a TTL has
# expired, and garbage collection's grace has passed for what nothing references.
NOW = time.time()
BEFORE = NOW - timedelta(days=2).total_seconds()


def value(tag: str, large: bool = True) -> dict[str, str]:
    """A value with text to embed; large, an object of its own."""
    return {"text": tag, "v": tag + (os.urandom(12_000).hex() if large else "")}


LARGE, LARGER, SHRUNK = value("large"), value("larger"), value("shrunk", large=False)
BRIEF, RENEWED, FRESH = value("brief"), value("renewed"), value("fresh")
SMALL, NOTE = value("small", large=False), value("note")
# Every value each item may be seen to hold.
GIVEN = {
    (NS, "large"): [LARGE, LARGER, SHRUNK],
    (NS, "brief"): [BRIEF, RENEWED],
    (NS, "fresh"): [FRESH],
    (NS, "small"): [SMALL],
    (NOTES, "note"): [NOTE],
    (NOTES, "small"): [SMALL],
}

OPERATIONS = [
    "put larger",
    "shrink",
    "delete item",
    "put fresh",
    "renew brief",
    "delete prefix",
    "reseal",
    "expire",
    "gc",
]


def store_on(
    table: Any, objects: Any, at: float, keys: str = BOTH, key_table: Any = None
) -> S3DynamoStore:
    subjects: dict[str, Any] = {}
    if key_table is not None:  # the second label names the data subject: "u1"
        subjects = {"subject_field": "user_id", "subject_label": 1, "key_index": key_table}
    saver = S3DynamoSaver(index=table, object_store=objects, keys=keys, secret=SECRET, **subjects)
    store = S3DynamoStore.from_saver(
        saver,
        ttl=TTLConfig(refresh_on_read=False),
        index={"dims": DIMS, "embed": random_embedding(DIMS), "fields": ["text"]},
    )
    store.space.clock = lambda: at
    return store


def written(key_table: MemoryIndex | None) -> tuple[MemoryIndex, MemoryObjects]:
    index, objects = MemoryIndex(), MemoryObjects()
    objects.clock = lambda: BEFORE
    store = store_on(index, objects, BEFORE, keys=KEYS, key_table=key_table)
    store.saver.setup()
    store.put(NS, "large", LARGE)
    store.put(NS, "small", SMALL)
    store.put(NS, "brief", BRIEF, ttl=60)
    store.put(NOTES, "note", NOTE)
    # Renewed just now: a process's first put into them writes its item alone.
    now = store_on(index, objects, NOW, keys=KEYS, key_table=key_table)
    now.put(NS, "small", SMALL)
    now.put(NOTES, "small", SMALL)
    return index, objects


def run(op: str, store: S3DynamoStore) -> None:
    """One operation, whole. What it may refuse: nothing."""
    ops = store.saver.ops
    if op == "put larger":
        store.put(NS, "large", LARGER)
    elif op == "shrink":
        store.put(NS, "large", SHRUNK)
    elif op == "delete item":
        store.delete(NS, "large")
    elif op == "put fresh":
        store.put(NS, "fresh", FRESH)
    elif op == "renew brief":
        store.put(NS, "brief", RENEWED, ttl=60)
    elif op == "delete prefix":
        store.delete_namespace(("users", "u1"))
    elif op == "reseal":
        ops.reencrypt()
    elif op == "expire":
        ops.memory.expire()
    elif op == "gc":
        ops.memory.collect_garbage(timedelta(hours=1))
    else:
        raise AssertionError(op)


def check_reads(store: S3DynamoStore) -> None:
    """Every item shown opens and holds a value it was given, by key and by search."""
    for (ns, key), values in GIVEN.items():
        item = store.get(ns, key)
        assert item is None or item.value in values, (ns, key)
    for ns in (NS, NOTES):
        for item in store.search(ns, limit=100):
            assert item.value in GIVEN[(ns, item.key)], (ns, item.key)
        for item in store.search(ns, query="large", limit=100):
            assert item.value in GIVEN[(ns, item.key)], (ns, item.key)


def race(first: str, second: str, subjects: bool = False, halfway: bool = False) -> int:
    """`first`, with `second` run whole before each of its requests in turn; with
    `halfway`, `second` stops before one of its own requests instead (each in turn as
    `first`'s point moves on), `first` runs to its end, then `second` goes on to its end
    or, every other time, dies there. Each time: every item read opens and holds a value
    it was given; once both are repeated and incremental collection has run, `verify`
    finds nothing wrong, after a death too."""
    keys0 = MemoryIndex() if subjects else None
    index0, objects0 = written(keys0)

    def copies() -> tuple[MemoryIndex, MemoryObjects, MemoryIndex | None]:
        index, objects = index0.clone(), objects0.clone()
        objects.clock = time.time
        return index, objects, None if keys0 is None else keys0.clone()

    def on(table: Any, objects: Any, key_table: MemoryIndex | None) -> S3DynamoStore:
        return store_on(table, objects, NOW, key_table=key_table)

    counting, alone = Faults(), Faults()
    index, objects, keys = copies()
    run(first, on(FaultyTable(index, counting), FaultyObjects(objects, counting), keys))
    if halfway:  # `second`'s requests, for where it stops
        index, objects, keys = copies()
        run(second, on(FaultyTable(index, alone), FaultyObjects(objects, alone), keys))
    for at in range(1, counting.count + 1):
        index, objects, keys = copies()
        where = f"{second!r} before request {at}/{counting.count} of {first!r}"
        if halfway:
            other = Halfway.turn(
                lambda faults, i=index, o=objects, k=keys: run(
                    second, on(FaultyTable(i, faults), FaultyObjects(o, faults), k)
                ),
                at - 1,
                alone.count,
            )
            act = other.race(at)
            where = f"{second!r} {other} at request {at}/{counting.count} of {first!r}"
        else:
            act = Race(at, lambda i=index, o=objects, k=keys: run(second, on(i, o, k)))
        try:
            try:
                run(first, on(FaultyTable(index, act), FaultyObjects(objects, act), keys))
            finally:
                if halfway:
                    other.finish()
            assert act.fired
            check_reads(on(index, objects, keys))
            for op in (first, second):
                run(op, on(index, objects, keys))
            clean = on(index, objects, keys)
            check_reads(clean)
            # What an upload left that a change refused names its intent: the journal's
            # collection takes it after its grace.
            done = datetime.now(timezone.utc) + timedelta(days=1)
            journal = clean.saver.ops.plan_incremental_garbage_collection(
                grace=timedelta(0), now=done
            )
            journal.execute(now=done)
            # Nothing is left that only the full collection finds, even by an operation
            # that died: each names the objects it read before the request that lets
            # them go, and one it had not read right after (docs/RELIABILITY.md, "A
            # process that never comes back").
            report = clean.saver.ops.verify()
            assert report.problems == [], report.problems
        except Exception as exc:
            raise AssertionError(f"{where}: {exc!r}") from exc
    return counting.count


@pytest.mark.parametrize("second", OPERATIONS)
@pytest.mark.parametrize("first", OPERATIONS)
def test_two_store_operations_race_safely(first: str, second: str) -> None:
    assert race(first, second) > 0


@pytest.mark.parametrize("second", OPERATIONS)
@pytest.mark.parametrize("first", OPERATIONS)
def test_two_operations_on_a_data_subjects_namespaces_race_safely(first: str, second: str) -> None:
    assert race(first, second, subjects=True) > 0


@pytest.mark.parametrize("second", OPERATIONS)
@pytest.mark.parametrize("first", OPERATIONS)
@pytest.mark.parametrize("subjects", [False, True], ids=["namespaces", "subjects"])
def test_two_store_operations_each_stopped_halfway_race_safely(
    subjects: bool, first: str, second: str
) -> None:
    assert race(first, second, subjects, halfway=True) > 0


def test_the_items_are_written_as_the_race_needs() -> None:
    """The item with a TTL has expired when the operations run; the large values are
    objects, the small ones inline."""
    index, objects = written(None)
    store = store_on(index, objects, NOW)
    assert store.get(NS, "brief") is None and store.get(NS, "large") is not None
    assert len(list(objects.list(""))) == 3  # large, brief and note
    check_reads(store)


@pytest.mark.parametrize("mode", ["before", "after"])
@pytest.mark.parametrize("op", ["store delete", "cache clear"])
def test_a_delete_stopped_for_good_leaves_its_object_to_incremental_collection(
    op: str, mode: str
) -> None:
    """Whatever request a delete of an item holding an object stops at, for good (its
    process gone), a reader sees the item whole or not at all, a repeat deletes it, and
    incremental collection removes its object: nothing is left that only the full
    collection finds."""
    index0, objects0 = MemoryIndex(), MemoryObjects()
    objects0.clock = lambda: BEFORE

    def saver_on(table: Any, objects: Any) -> S3DynamoSaver:
        return S3DynamoSaver(index=table, object_store=objects, keys=KEYS, secret=SECRET)

    def reads(saver: S3DynamoSaver) -> Any:
        if op == "store delete":
            item = S3DynamoStore.from_saver(saver).get(NS, "large")
            return None if item is None else item.value
        return S3DynamoCache.from_saver(saver).get([(NS, "large")]).get((NS, "large"))

    def deletes(saver: S3DynamoSaver) -> None:
        if op == "store delete":
            S3DynamoStore.from_saver(saver).delete(NS, "large")
        else:
            S3DynamoCache.from_saver(saver).clear([NS])

    setup = saver_on(index0, objects0)
    setup.setup()
    if op == "store delete":
        S3DynamoStore.from_saver(setup).put(NS, "large", LARGE)
    else:
        S3DynamoCache.from_saver(setup).set({(NS, "large"): (LARGE, None)})
    counting = Faults()
    index, objects = index0.clone(), objects0.clone()
    deletes(saver_on(FaultyTable(index, counting), FaultyObjects(objects, counting)))
    assert counting.count > 3
    for at in range(1, counting.count + 1):
        index, objects = index0.clone(), objects0.clone()
        fault = Faults(at, mode)
        with pytest.raises(Crash):
            deletes(saver_on(FaultyTable(index, fault), FaultyObjects(objects, fault)))
        assert reads(saver_on(index, objects)) in (None, LARGE), at
        deletes(saver_on(index, objects))
        clean = saver_on(index, objects)
        assert reads(clean) is None
        done = datetime.now(timezone.utc) + timedelta(days=1)
        clean.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=done).execute(
            now=done
        )
        assert clean.ops.verify().problems == [], (op, mode, at)
        assert list(objects.list("")) == [], (op, mode, at)
