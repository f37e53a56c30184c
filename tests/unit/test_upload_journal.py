"""The upload journal: a put (or put_writes) that uploads objects names them in an intent
first and deletes it with its commit, so a crash at any request leaves the old or the new
state and at most one intent, naming every object it orphaned; incremental garbage
collection deletes exactly those, without listing the bucket."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.layout import JOURNAL_SHARDS, journal_pk, scope_of
from langgraph.checkpoint.s3dynamo.ops.gc import plan_incremental_gc
from langgraph.checkpoint.s3dynamo.records import referenced_leaves
from tests.support.faults import Crash, Faults, FaultyIndex, FaultyObjects

KEYS = {"k1": os.urandom(32)}
SECRET = os.urandom(16)
BIG = 3 * 8192


def saver_on(index: Any, objects: Any, **settings: Any) -> S3DynamoSaver:
    return S3DynamoSaver(index=index, object_store=objects, keys=KEYS, secret=SECRET, **settings)


def config(tid: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}


# Values too large to inline, the same in every run of a step (incompressible).
VALUES = {step: [os.urandom(BIG) for _ in range(2)] for step in (1, 2)}


def put_big(saver: S3DynamoSaver, parent: Any, step: int, channels: int = 2) -> Any:
    """A checkpoint whose `channels` values all change and are too large to inline."""
    cp = empty_checkpoint()
    cp["channel_values"] = {f"c{i}": VALUES[step][i] for i in range(channels)}
    cp["channel_versions"] = {ch: saver.get_next_version(None, None) for ch in cp["channel_values"]}
    return saver.put(parent, cp, {"step": step}, cp["channel_versions"])


def put_large_write(saver: S3DynamoSaver, at: Any, step: int) -> None:
    saver.put_writes(at, [("small", step), ("large", VALUES[step][0])], f"task-{step}")


def orphans(index: MemoryIndex, objects: MemoryObjects) -> set[str]:
    """Objects no record references."""
    live = {f"{r.pk}/{leaf}" for r in index.records() for leaf in referenced_leaves(r)}
    return set(objects.blobs) - live


def later() -> datetime:
    return datetime.now(timezone.utc) + timedelta(hours=2)


def read(index: MemoryIndex, objects: MemoryObjects) -> tuple[Any, Any]:
    """What a user sees: the latest checkpoint's values and its pending writes, every
    object opened."""
    got = saver_on(index, objects).get_tuple({"configurable": {"thread_id": "t"}})
    assert got is not None
    return got.checkpoint["channel_values"], sorted(w[1] for w in got.pending_writes or [])


def start() -> tuple[MemoryIndex, MemoryObjects, Any]:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = saver_on(index, objects)
    saver.setup()
    first = put_big(saver, config(), 1)
    put_large_write(saver, first, 1)
    assert index.intents == {}  # both commits closed their intents
    return index, objects, first


OPERATIONS: dict[str, Callable[[S3DynamoSaver, Any], None]] = {
    "put": lambda saver, first: put_big(saver, first, 2),
    "put_writes": lambda saver, first: put_large_write(saver, first, 2),
}


@pytest.mark.parametrize("detect", [True, False], ids=["detection", "no-detection"])
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_crash_at_any_request_leaves_one_intent_naming_the_orphans(
    operation: str, detect: bool
) -> None:
    index0, objects0, first = start()
    old = read(index0, objects0)

    def run(index: Any, objects: Any) -> None:
        saver = saver_on(index, objects, detect_concurrent_runs=detect)
        OPERATIONS[operation](saver, first)

    # The fault-free run: how many requests, and the state it makes.
    index, objects = index0.clone(), objects0.clone()
    counting = Faults()
    run(FaultyIndex(index, counting), FaultyObjects(objects, counting))
    new = read(index, objects)
    assert new != old and index.intents == {} and orphans(index, objects) == set()
    # The intent, then the uploads, then the commit (without detection, a put's commit is
    # a plain write and the intent's delete a request after it; a put_writes' merge too).
    assert counting.kinds[0] == "intent" and counting.kinds[-1] == "record"
    assert counting.kinds.count("record") == (1 if detect else 2)
    tried = 0
    for at in range(1, counting.count + 1):
        for mode in ("before", "after"):
            index, objects = index0.clone(), objects0.clone()
            faults = Faults(at, mode)
            with contextlib.suppress(Crash):
                run(FaultyIndex(index, faults), FaultyObjects(objects, faults))
            assert faults.fired
            tried += 1
            where = f"{operation}: fault at request {at}/{counting.count} ({mode})"
            seen = read(index, objects)
            left = orphans(index, objects)
            assert seen in (old, new), where
            assert len(index.intents) <= 1, where
            named = {k for i in index.intents.values() for k in i.object_keys}
            assert left <= named, f"{where}: orphans {left - named} named by no intent"
            if seen == new:
                # Committed: no orphan; an intent only between a plain commit and its delete.
                assert not left and (not detect or not index.intents), where
            # Incremental collection takes exactly the orphans and the intent.
            plan = plan_incremental_gc(saver_on(index, objects).store, now=later())
            assert len(plan.intents) == len(index.intents), where
            assert plan.execute(now=later()) == len(left), where
            assert orphans(index, objects) == set() and index.intents == {}, where
            assert read(index, objects) == seen, where
    assert tried == 2 * counting.count


def test_collection_keeps_what_a_later_commit_references() -> None:
    """A put that crashed before its commit and is then repeated (same versions): the
    repeat uploads the same keys again and commits; the first intent names objects that
    are referenced now, so collection keeps them and only drops the intent."""
    index, objects, first = start()
    saver = saver_on(index, objects)
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": os.urandom(BIG)}
    cp["channel_versions"] = {"doc": saver.get_next_version(None, None)}
    real_put = index.put_checkpoint

    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash("the process died before its commit")

    index.put_checkpoint = crash  # type: ignore[method-assign]
    with pytest.raises(Crash):
        saver.put(first, cp, {"step": 2}, cp["channel_versions"])
    index.put_checkpoint = real_put  # type: ignore[method-assign]
    assert len(index.intents) == 1 and len(orphans(index, objects)) == 1
    saver.put(first, cp, {"step": 2}, cp["channel_versions"])
    assert len(index.intents) == 1 and orphans(index, objects) == set()
    plan = plan_incremental_gc(saver.store, now=later())
    assert len(plan.intents) == 1 and plan.objects == 0
    assert plan.execute(now=later()) == 0
    assert index.intents == {} and read(index, objects)[0] == cp["channel_values"]


def test_young_intents_are_left_alone() -> None:
    index, objects, first = start()
    saver = saver_on(index, objects)
    index.put_checkpoint = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[method-assign]
    with pytest.raises(Crash):
        put_big(saver, first, 2)
    # Within the grace period the put may still be running: nothing is read back.
    plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(hours=1))
    assert plan.intents == [] and plan.execute() == 0
    assert len(index.intents) == 1 and len(orphans(index, objects)) == 2


def test_the_journal_is_sharded_by_thread_and_owned_by_no_thread() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = saver_on(index, objects)
    saver.setup()
    for i in range(64):
        index.put_checkpoint = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[method-assign]
        with pytest.raises(Crash):
            put_big(saver, config(f"t{i}"), 1, channels=1)
    shards = {key.pk for key in index.intents}
    assert len(shards) > JOURNAL_SHARDS // 2
    assert shards <= {journal_pk("", n) for n in range(JOURNAL_SHARDS)}
    # No scan takes a journal partition for a thread's, a deployment's or a memory space's.
    assert all(scope_of(pk) is None for pk in shards)
    # Each intent names its thread's object: no readable name, only keyed hashes.
    for intent in index.intents.values():
        assert all(key.startswith(intent.thread + "/") for key in intent.object_keys)
        assert len(intent.leaves) == 1


def test_a_collection_interrupted_anywhere_deletes_nothing_referenced_and_a_repeat_finishes() -> (
    None
):
    index0, objects0, first = start()
    saver = saver_on(index0, objects0)
    for step in (2, 2):  # two crashed puts of the same thread
        index0.put_checkpoint = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[method-assign]
        with pytest.raises(Crash):
            put_big(saver, first, step)
    del index0.put_checkpoint  # the class's own again
    old = read(index0, objects0)
    assert len(index0.intents) == 2 and len(orphans(index0, objects0)) == 4

    def collect(index: Any, objects: Any) -> None:
        store = saver_on(index, objects).store
        plan_incremental_gc(store, now=later()).execute(now=later())

    counting = Faults()
    index, objects = index0.clone(), objects0.clone()
    collect(FaultyIndex(index, counting), FaultyObjects(objects, counting))
    assert "list" not in objects.calls and orphans(index, objects) == set()
    for at in range(1, counting.count + 1):
        for mode in ("before", "after"):
            index, objects = index0.clone(), objects0.clone()
            faults = Faults(at, mode)
            with contextlib.suppress(Crash):
                collect(FaultyIndex(index, faults), FaultyObjects(objects, faults))
            where = f"fault at request {at}/{counting.count} ({mode})"
            assert read(index, objects) == old, where
            collect(index, objects)
            assert orphans(index, objects) == set() and index.intents == {}, where
            assert read(index, objects) == old, where


def test_delete_for_runs_names_its_objects_and_collection_keeps_the_carried_ones() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = saver_on(index, objects)
    saver.setup()
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": VALUES[1][0]}
    cp["channel_versions"] = {"doc": saver.get_next_version(None, None)}
    first = saver.put(config(), cp, {"run_id": "run-1"}, cp["channel_versions"])
    saver.get_tuple(first)  # the next put carries what this read found
    child = dict(cp, id=empty_checkpoint()["id"])
    child["channel_values"] = {"doc": VALUES[1][0], "new": VALUES[2][0]}
    child["channel_versions"] = {**cp["channel_versions"], "new": "1"}
    saver.put(first, child, {"run_id": "run-2"}, {"new": "1"})
    assert len(objects.blobs) == 2
    saver.delete_for_runs(["run-2"])
    # One intent names both objects run-2's checkpoint referenced: "doc" is carried from
    # run-1's and stays; "new" was run-2's alone and goes.
    (intent,) = index.intents.values()
    assert len(intent.leaves) == 2
    plan = plan_incremental_gc(saver.store, now=later())
    assert plan.objects == 1 and plan.execute(now=later()) == 1
    assert index.intents == {} and orphans(index, objects) == set()
    assert read(index, objects)[0] == cp["channel_values"]
