"""Garbage collection: it removes what nothing references and never what something
does, whatever the interleaving; it touches only this deployment's keys; and the upload
journal lets it take what crashed puts left without listing the bucket.

A put (or put_writes) that uploads objects names them in an intent first and deletes it
with its commit, so a crash at any request leaves the old or the new state and at most
one intent, naming every object it orphaned; incremental collection deletes exactly
those. Tests taking `backend` run on the in-memory ports and through the DynamoDB and S3
adapters; the interleavings and faults at every request run in memory; the requests of
incremental collection for two deployment sizes are pinned on DynamoDB and S3 (`aws`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver, ScopeNotNamedError
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.format.layout import (
    JOURNAL_SHARDS,
    journal_pk,
    mark_sk,
    object_key,
    scope_of,
)
from langgraph.checkpoint.s3dynamo.format.layout import split_object_key as split_key
from langgraph.checkpoint.s3dynamo.format.records import Mark, referenced_leaves
from langgraph.checkpoint.s3dynamo.keys.identities import ValueAt
from langgraph.checkpoint.s3dynamo.ops.gc import plan_gc, plan_incremental_gc
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from tests.support import raw
from tests.support.backends import Backend
from tests.support.faults import Crash, Faults, FaultyObjects, FaultyTable
from tests.support.memory_index import MemoryIndex
from tests.support.savers import (
    Clients,
    MemorySaver,
    RequestCounter,
    make_saver,
    memory_saver,
    thread_config,
)


def _put_big(
    saver: S3DynamoSaver,
    tid: str,
    run_id: str,
    version: str | None = None,
    parent: Any = None,
) -> Any:
    """A checkpoint of one value too large to inline (an object), under `run_id`."""
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": b"d" * 10 + os.urandom(3 * saver.settings.inline_max)}
    cp["channel_versions"] = {"doc": version or saver.get_next_version(None, None)}
    config = parent or thread_config(tid, checkpoint_ns="")
    return saver.put(config, cp, {"run_id": run_id}, cp["channel_versions"])


def _keys(saver: S3DynamoSaver) -> set[str]:
    """The keys of the objects under the saver's prefix, as its object store lists them."""
    return {o.key for o in saver.parts.engine.objects.port.list(saver.settings.prefix)}


def _orphan(saver: MemorySaver, tid: str) -> None:
    """A thread with one live object and one unreferenced one."""
    _put_big(saver, tid, f"{tid}-gone")
    _put_big(saver, tid, f"{tid}-kept")
    saver.delete_for_runs([f"{tid}-gone"])


def test_key_shape_is_exactly_the_namers() -> None:
    name = memory_saver().parts.namer.thread("t")
    assert split_key("", f"{name}/{name}") == (name, name)
    # The thread name a key gives carries its deployment's prefix, as the partition key does.
    assert split_key("p/", f"p/{name}/{name}") == (f"p/{name}", name)
    assert split_key("", f"tenant-b/{name}/{name}") is None
    assert split_key("", "reports/2025/summary.csv") is None
    assert split_key("", f"{name}/{name}.csv") is None
    assert split_key("", f"{name[:-1]}B/{name}") is None  # 22nd character out of range
    assert split_key("", f"{name}/{name}/x") is None


def test_deployments_sharing_a_bucket_never_collect_each_other() -> None:
    objects = MemoryObjects()
    root = memory_saver(MemoryIndex(), objects)  # prefix "", its own table
    tenant_b = memory_saver(MemoryIndex(), objects, prefix="tenant-b/")
    root_too = memory_saver(MemoryIndex(), objects)  # another deployment at the root
    objects.put_new("reports/2025/summary.csv", b"csv")
    for saver in (root, tenant_b, root_too):
        _orphan(saver, "t")
    assert len(objects.blobs) == 7

    def survivors() -> set[str]:
        return set(objects.blobs)

    # A saver without a prefix, on a bucket that holds a tenant, is told to name its scope.
    with pytest.raises(ScopeNotNamedError, match="'tenant-b/'"):
        root.ops.plan_garbage_collection(grace=timedelta(0))
    for saver in (root, tenant_b, root_too):
        before = survivors()
        plan = saver.ops.plan_garbage_collection(grace=timedelta(0), scope=saver.store.prefix)
        assert plan.objects == 1
        (doomed,) = (k for keys in plan.candidates.values() for k in keys)
        assert plan.execute() == 1
        assert survivors() == before - {doomed}
        if saver is not tenant_b:
            # The other root deployment's thread has our shape but no record here.
            assert plan.unindexed >= 1
        assert plan.foreign >= (1 if saver is not tenant_b else 0)
        # Every checkpoint of every deployment still opens.
        for other in (root, tenant_b, root_too):
            assert other.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    assert "reports/2025/summary.csv" in survivors() and len(survivors()) == 4


class Interleave(MemoryObjects):
    """Runs `before_delete` once, just before a conditional delete applies: a writer
    landing between the collector's last look and its delete."""

    before_delete: Callable[[], None] | None = None

    def delete_unchanged(self, objects: Sequence[ObjectInfo]) -> list[str]:
        hook, self.before_delete = self.before_delete, None
        if hook is not None:
            hook()
        return super().delete_unchanged(objects)


def _orphan_of_version(saver: MemorySaver) -> str:
    version = saver.get_next_version(None, None)
    _put_big(saver, "t", "run-1", version)
    _put_big(saver, "t", "run-2")  # the thread keeps a record
    saver.delete_for_runs(["run-1"])
    return version


def test_refresh_between_last_look_and_delete_keeps_the_object() -> None:
    """The copy-retry race: a writer finds an old orphan (412), refreshes it and commits
    while collection, which already listed and marked, deletes."""
    objects = Interleave()
    saver = memory_saver(MemoryIndex(), objects)
    version = _orphan_of_version(saver)
    plan = saver.ops.plan_garbage_collection(grace=timedelta(0))
    assert plan.objects == 1
    committed: list[Any] = []
    objects.before_delete = lambda: committed.append(_put_big(saver, "t", "run-3", version))
    assert plan.execute() == 0
    got = saver.get_tuple(committed[0])
    assert (
        got is not None and len(got.checkpoint["channel_values"]["doc"]) > saver.settings.inline_max
    )


def test_refresh_before_execution_makes_the_object_young_again() -> None:
    objects = MemoryObjects()
    saver = memory_saver(MemoryIndex(), objects)
    version = _orphan_of_version(saver)
    later = datetime.now(timezone.utc) + timedelta(hours=2)
    plan = plan_gc(saver.store, grace=timedelta(hours=1), now=later)
    assert plan.objects == 1
    # A writer that got 412 rewrites the object: new time, new tag.
    (key,) = plan.candidates[saver.parts.namer.thread("t")]
    tag = objects.tags[key]
    saver.parts.engine.objects.upload([(key, objects.blobs[key][0])])
    assert objects.tags[key] != tag
    # Its record is not written yet: the object is young, so execution spares it.
    assert plan.execute() == 0
    _put_big(saver, "t", "run-3", version)
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None


def _orders(a: list[str], b: list[str]) -> list[list[str]]:
    """Every merge of two sequences keeping each one's own order."""
    if not a or not b:
        return [a + b]
    return [[a[0], *rest] for rest in _orders(a[1:], b)] + [
        [b[0], *rest] for rest in _orders(a, b[1:])
    ]


def _run_order(order: list[str]) -> None:
    objects = Interleave()
    saver = memory_saver(MemoryIndex(), objects)
    version = _orphan_of_version(saver)
    value = b"d" * 10 + os.urandom(3 * saver.settings.inline_max)
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": value}
    cp["channel_versions"] = {"doc": version}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    plans: list[Any] = []
    committed: list[Any] = []

    def step(name: str) -> None:
        if name == "plan":
            plans.append(saver.ops.plan_garbage_collection(grace=timedelta(0)))
        elif name == "upload":  # the writer's upload wave alone (412, then refresh)
            sealed = saver.parts.codec.seal_value(ValueAt("t", "", "doc", version), value)
            leaf = saver.parts.namer.value(ValueAt("t", "", "doc", version))
            saver.parts.engine.objects.upload(
                [(object_key(saver.parts.namer.thread("t"), leaf), sealed)]
            )
        elif name == "record":  # put() uploads again (412, refresh), then the record
            committed.append(saver.put(config, cp, {"run_id": "w"}, {"doc": version}))

    # "list+mark" and "delete" are one execute(): writer steps ordered between them
    # run at the hook, after execute() listed and marked, just before its delete.
    first, last = order.index("list+mark"), order.index("delete")
    for name in order[:first]:
        step(name)
    between = order[first + 1 : last]

    def writer_between() -> None:
        for name in between:
            step(name)

    objects.before_delete = writer_between
    plans[0].execute()
    for name in between if objects.before_delete is not None else ():
        step(name)  # execute() found nothing to delete, so the hook never ran
    for name in order[last + 1 :]:
        step(name)
    got = saver.get_tuple(committed[0])
    assert got is not None and got.checkpoint["channel_values"]["doc"] == value, order


def test_every_interleaving_of_one_writer_and_one_collection() -> None:
    """The writer's steps (upload, record) against the collector's (plan, list and mark,
    delete), in every order: a committed record's object always exists."""
    orders = _orders(["plan", "list+mark", "delete"], ["upload", "record"])
    assert len(orders) == 10
    for order in orders:
        _run_order(order)


# ------------------------------------------------ collection on both backends


def _runs_deleted(saver: S3DynamoSaver) -> tuple[Any, Any, set[str]]:
    """Thread "t" with a checkpoint of run-1 and one of run-2 on it, thread "other" with
    one of run-2, every value an object; then run-2 deleted. (run-1's checkpoint,
    run-2's on "t", the object keys before the delete)."""
    first = _put_big(saver, "t", "run-1")
    second = _put_big(saver, "t", "run-2", parent=first)
    _put_big(saver, "other", "run-2")
    before = _keys(saver)
    saver.delete_for_runs(["run-2"])
    return first, second, before


def test_gc_removes_what_delete_for_runs_orphaned(backend: Backend) -> None:
    saver = backend.saver()
    first, second, before = _runs_deleted(saver)
    assert _keys(saver) == before  # objects wait for garbage collection

    young = saver.ops.plan_garbage_collection(grace=timedelta(hours=1))
    assert young.objects == 0  # inside the grace period: maybe an unfinished put

    plan = saver.ops.plan_garbage_collection(grace=timedelta(0))
    # With an empty prefix a table-wide run takes only threads with a record left here:
    # "other" lost its only checkpoint, and at the bucket root its name could be another
    # deployment's. Naming the thread collects it.
    assert plan.objects == 1 and plan.unindexed == 1
    assert plan.execute() == 1
    named = saver.ops.plan_garbage_collection(["other"], grace=timedelta(0))
    assert named.objects == 1 and plan.bytes + named.bytes > 2 * 3 * saver.settings.inline_max
    assert named.execute() == 1
    got = saver.get_tuple(first)
    assert (
        got is not None
        and len(got.checkpoint["channel_values"]["doc"]) == 10 + 3 * saver.settings.inline_max
    )
    assert saver.get_tuple(second) is None
    assert len(_keys(saver)) == 1


def test_execute_spares_an_object_referenced_after_planning(backend: Backend) -> None:
    saver = backend.saver()
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": os.urandom(3 * saver.settings.inline_max)}
    cp["channel_versions"] = {"doc": saver.get_next_version(None, None)}
    saver.put(thread_config("t", checkpoint_ns=""), cp, {"run_id": "run-1"}, {})
    saver.put(thread_config("t", checkpoint_ns=""), cp, {"run_id": "run-1"}, cp["channel_versions"])
    saver.delete_for_runs(["run-1"])
    plan = saver.ops.plan_garbage_collection(["t"], grace=timedelta(0))
    assert plan.objects == 1
    # Between plan and execute, a new checkpoint commits a reference to the same object.
    again = dict(cp, id=empty_checkpoint()["id"])
    saver.put(thread_config("t", checkpoint_ns=""), again, {}, cp["channel_versions"])
    assert plan.execute() == 0
    got = saver.get_tuple(thread_config("t"))
    assert got is not None and got.checkpoint["channel_values"] == cp["channel_values"]


# Incremental collection: what crashed puts left, without listing the bucket.


def _deployment(clients: tuple[Any, Any], prefix: str, threads: int) -> S3DynamoSaver:
    """A deployment of `threads` threads, two checkpoints each, every value an object."""
    saver = make_saver(clients, prefix=prefix)
    saver.setup()
    for i in range(threads):
        first = _put_big(saver, f"t{i}", "run")
        _put_big(saver, f"t{i}", "run", parent=first)
    return saver


def _crash_commits(clients: tuple[Any, Any], saver: S3DynamoSaver, k: int) -> None:
    """K puts, each on another thread, that upload their object and die before the commit."""
    armed = [True]

    def die(**_: Any) -> None:
        if armed[0]:
            raise Crash()

    s3 = clients[1]
    s3.meta.events.register("after-call.s3.PutObject", die)
    try:
        for i in range(k):
            parent = saver.get_tuple(thread_config(f"t{i}"))
            assert parent is not None
            with pytest.raises(Crash):
                _put_big(saver, f"t{i}", "crashed", parent=parent.config)
    finally:
        armed[0] = False
        s3.meta.events.unregister("after-call.s3.PutObject", die)


@pytest.mark.aws
@pytest.mark.parametrize("k", [3, 6])
def test_incremental_collection_reads_what_crashes_left_not_the_bucket(
    clients: Clients, counter: RequestCounter, k: int
) -> None:
    costs = []
    for prefix, threads in (("small/", 8), ("large/", 40)):
        saver = _deployment(clients, prefix, threads)
        referenced = _keys(saver)
        assert len(referenced) == 2 * threads
        _crash_commits(clients, saver, k)
        crashed = _keys(saver) - referenced
        assert len(crashed) == k

        counter.reset()
        plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(0))
        assert len(plan.intents) == k and plan.objects == k
        assert set(plan.to_dict()) >= {"intents", "objects", "bytes"}
        assert plan.execute() == k
        costs.append(dict(counter.calls))

        # Exactly the orphans went, every referenced object stayed, no intent is left.
        assert _keys(saver) == referenced
        assert saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).intents == []
        for i in range(threads):
            got = saver.get_tuple(thread_config(f"t{i}"))
            assert got is not None and len(got.checkpoint["channel_values"]["doc"]) > 0
    small, large = costs
    # One Query per journal shard (32), then per intent: a HEAD of its object and two
    # consistent Queries (its thread's records, then the loans of its objects to
    # copies), twice (plan, then execute), and one conditional DeleteObjects; the
    # intents go in one BatchWriteItem. No listing, whatever the size.
    assert (
        small
        == large
        == {
            "dynamodb.Query": 32 + 4 * k,
            "s3.HeadObject": 2 * k,
            "s3.DeleteObjects": k,
            "dynamodb.BatchWriteItem": 1,
        }
    )
    assert sum(small.values()) == 33 + 7 * k


def test_incremental_collection_takes_what_delete_for_runs_left(backend: Backend) -> None:
    saver = backend.saver()
    first, second, before = _runs_deleted(saver)
    # An intent per thread names the objects of the deleted checkpoints; within the
    # grace period nothing is taken.
    assert saver.ops.plan_incremental_garbage_collection(grace=timedelta(hours=1)).objects == 0
    # Intents are dated to the millisecond and due once older than now minus the grace:
    # in memory, planning could otherwise fall in the same millisecond.
    time.sleep(0.01)
    backend.reset()
    plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(0))
    assert len(plan.intents) == 2 and plan.objects == 2
    assert plan.execute() == 2
    assert not {"s3.ListObjectsV2", "objects.list"} & set(backend.calls())
    # Both threads lost the objects only run-2 referenced; run-1's stays, and reads.
    assert len(_keys(saver)) == len(before) - 2 == 1
    got = saver.get_tuple(first)
    assert got is not None and len(got.checkpoint["channel_values"]["doc"]) > 0
    assert saver.get_tuple(second) is None
    assert saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).intents == []


def test_naming_more_objects_than_one_item_holds_writes_intents_in_parts() -> None:
    """20,000 objects named at once (a namespace's delete or an expiry sweep of that
    many values, a removal's orphans) go in intents of at most 8,000 leaves, each under
    DynamoDB's 400 KB (which the in-memory table holds to, as DynamoDB does): one intent
    of them all was refused, and the operation with it."""
    saver = memory_saver()
    leaves = [f"{i:022d}" for i in range(20_000)]
    saver.store.name_orphans(saver.store.name_of("t"), leaves)
    intents = saver.index.intents.values()
    assert sorted(len(i.leaves) for i in intents) == [4_000, 8_000, 8_000]
    assert {leaf for i in intents for leaf in i.leaves} == set(leaves)
    assert saver.index.calls == {"PutItem": 3}


# ------------------------------------------------------------ the upload journal


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
    run(FaultyTable(index, counting), FaultyObjects(objects, counting))
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
                run(FaultyTable(index, faults), FaultyObjects(objects, faults))
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
    real_put = index.transact

    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash("the process died before its commit")

    index.transact = crash  # type: ignore[method-assign]  # the commit
    with pytest.raises(Crash):
        saver.put(first, cp, {"step": 2}, cp["channel_versions"])
    index.transact = real_put  # type: ignore[method-assign]
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
    index.transact = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[method-assign]
    with pytest.raises(Crash):
        put_big(saver, first, 2)
    # Within the grace period the put may still be running: nothing is read back.
    plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(hours=1))
    assert plan.intents == [] and plan.execute() == 0
    assert len(index.intents) == 1 and len(orphans(index, objects)) == 2


def test_verify_counts_what_an_intent_names_and_reports_the_rest() -> None:
    """An object a crashed put left, or a Store put replaced, is named by an upload
    intent: `verify` counts it as awaiting collection, no problem, whole or for the
    thread; an unreferenced object no intent names is a problem."""
    from langgraph.store.s3dynamo import S3DynamoStore

    index, objects, first = start()
    saver = saver_on(index, objects)
    store = S3DynamoStore.from_saver(saver)
    store.put(("users", "u"), "large", {"v": os.urandom(BIG).hex()})
    store.put(("users", "u"), "large", {"v": "short now"})  # its object, named
    index.transact = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[method-assign]
    with pytest.raises(Crash):
        put_big(saver, first, 2)  # two objects, uploaded, never referenced
    del index.transact
    report = saver.ops.verify()
    assert report.ok and report.awaiting_collection == 3, report.problems
    assert saver.ops.verify("t").awaiting_collection == 2
    by_hand = f"{saver.store.name_of('t')}/{'A' * 22}"  # shaped as the namer's leaves
    objects.put_new(by_hand, b"put there by hand")
    problems = [(p["kind"], p["key"]) for p in saver.ops.verify().problems]
    assert problems == [("unreferenced", by_hand)]
    plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later())
    assert plan.execute(now=later()) == 3
    assert saver.ops.verify().awaiting_collection == 0


def test_the_journal_is_sharded_by_thread_and_owned_by_no_thread() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = saver_on(index, objects)
    saver.setup()
    for i in range(64):
        index.transact = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[method-assign]
        with pytest.raises(Crash):
            put_big(saver, config(f"t{i}"), 1, channels=1)
    shards = {key.pk for key in index.intents}
    assert len(shards) > JOURNAL_SHARDS // 2
    assert shards <= {journal_pk("", n) for n in range(JOURNAL_SHARDS)}
    # No scan takes a journal partition for a thread's, a deployment's or a memory space's.
    assert all(scope_of(pk) is None for pk in shards)
    # Each intent names its thread's object: no readable name, only keyed hashes.
    for intent in index.intents.values():
        assert all(key.startswith(intent.owner + "/") for key in intent.object_keys)
        assert len(intent.leaves) == 1


def test_a_collection_interrupted_anywhere_deletes_nothing_referenced_and_a_repeat_finishes() -> (
    None
):
    index0, objects0, first = start()
    saver = saver_on(index0, objects0)
    for step in (2, 2):  # two crashed puts of the same thread
        index0.transact = lambda *a, **k: (_ for _ in ()).throw(Crash())  # type: ignore[method-assign]
        with pytest.raises(Crash):
            put_big(saver, first, step)
    del index0.transact  # the class's own again
    old = read(index0, objects0)
    assert len(index0.intents) == 2 and len(orphans(index0, objects0)) == 4

    def collect(index: Any, objects: Any) -> None:
        store = saver_on(index, objects).store
        plan_incremental_gc(store, now=later()).execute(now=later())

    counting = Faults()
    index, objects = index0.clone(), objects0.clone()
    collect(FaultyTable(index, counting), FaultyObjects(objects, counting))
    assert "list" not in objects.calls and orphans(index, objects) == set()
    for at in range(1, counting.count + 1):
        for mode in ("before", "after"):
            index, objects = index0.clone(), objects0.clone()
            faults = Faults(at, mode)
            with contextlib.suppress(Crash):
                collect(FaultyTable(index, faults), FaultyObjects(objects, faults))
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


# ------------------------------------------- leftover writes records (issue 56, part 5)


def _leftover(saver: S3DynamoSaver, tid: str, value: Any = "from a run refused") -> Any:
    """What LangGraph leaves when a put is refused, or the run stops, after it sent a
    task's writes: a writes record of a checkpoint that never commits (a new id on an
    existing thread)."""
    config = dict(saver.get_tuple(thread_config(tid)).config)  # type: ignore[union-attr]
    config["configurable"] = {**config["configurable"], "checkpoint_id": empty_checkpoint()["id"]}
    saver.put_writes(config, [("notes", value)], "task-1")
    return config


def _thread_with_pending_writes(saver: S3DynamoSaver, tid: str) -> Any:
    """A thread whose latest checkpoint has pending writes (an interrupted step)."""
    cp = empty_checkpoint()
    cp["channel_values"] = {"notes": "kept"}
    cp["channel_versions"] = {"notes": "1"}
    done = saver.put(thread_config(tid, checkpoint_ns=""), cp, {}, {"notes": "1"})
    saver.put_writes(done, [("notes", "pending")], "task-0")
    return done


def test_leftover_writes_are_no_problem_and_the_full_collection_takes_them(
    backend: Backend,
) -> None:
    saver = backend.saver(inline_max=0)  # the leftover's value an object too
    kept = _thread_with_pending_writes(saver, "t")
    _leftover(saver, "t")
    report = saver.ops.verify()
    # Before: "unreferenced item", exit 1 for good; gc, gc --full and prune took nothing.
    assert report.ok and report.problems == [] and report.leftover_writes == 1
    assert report.to_dict()["leftover_writes"] == 1
    # Within the grace period nothing goes: a run may still be committing its checkpoint.
    young = plan_gc(saver.store, grace=timedelta(hours=1))
    assert young.to_dict()["leftover_writes"] == 0
    plan = plan_gc(saver.store, grace=timedelta(hours=1), now=later())
    assert plan.to_dict()["leftover_writes"] == 1
    plan.execute(now=later())
    assert plan.writes_deleted == 1
    # The committed checkpoint keeps its pending writes.
    got = saver.get_tuple(kept)
    assert got is not None and [w[1:] for w in got.pending_writes] == [("notes", "pending")]
    # The leftover's object, now unreferenced, is named in an intent: the incremental
    # collection takes it after the grace (`verify` counts it, no problem).
    report = saver.ops.verify()
    assert report.leftover_writes == 0
    assert report.ok and report.awaiting_collection == 1
    assert plan_incremental_gc(saver.store, now=later()).execute(now=later()) == 1
    assert saver.ops.verify().awaiting_collection == 0


def test_a_leftover_written_again_after_planning_is_kept() -> None:
    saver = memory_saver(MemoryIndex(), MemoryObjects())
    _thread_with_pending_writes(saver, "t")
    saver.store.clock = lambda: time.time() - 7200  # written two hours ago
    config = _leftover(saver, "t")
    plan = plan_gc(saver.store, grace=timedelta(hours=1))
    assert plan.to_dict()["leftover_writes"] == 1
    # Its run sends the task's writes again (a merge, stamped anew) before execution.
    saver.store.clock = time.time
    saver.put_writes(config, [("notes", "again")], "task-1")
    plan.execute()
    assert plan.writes_deleted == 0 and saver.ops.verify().leftover_writes == 1


def test_the_full_collection_of_named_threads_takes_their_leftovers_only(backend: Backend) -> None:
    saver = backend.saver()
    for tid in ("t", "u"):
        _thread_with_pending_writes(saver, tid)
        _leftover(saver, tid)
    plan = plan_gc(saver.store, ["t"], grace=timedelta(hours=1), now=later())
    assert plan.to_dict()["leftover_writes"] == 1
    plan.execute(now=later())
    assert saver.ops.verify().leftover_writes == 1  # u's


@pytest.mark.parametrize("operation", ["runs", "prune", "delete"])
def test_a_leftover_under_a_removals_mark_is_collected(backend: Backend, operation: str) -> None:
    """A removal's mark only hides what goes, and one whose process died may stay for
    good (a `delete_for_runs` whose checkpoint records went: the run index no longer
    finds them, so no repeat comes back to its writes): the writes records under it are
    leftovers the full collection takes."""
    saver = backend.saver()
    _thread_with_pending_writes(saver, "t")
    config = _leftover(saver, "t")
    tid, ns = config["configurable"]["thread_id"], config["configurable"]["checkpoint_ns"]
    pk, ns_name = saver.parts.namer.thread(tid), saver.parts.namer.namespace(tid, ns)
    gone = config["configurable"]["checkpoint_id"]
    raw.put_records(saver, [Mark(pk, mark_sk(ns_name, operation), ids=frozenset({gone}))])
    plan = plan_gc(saver.store, None, grace=timedelta(hours=1), now=later())
    assert plan.to_dict()["leftover_writes"] == 1
    plan.execute(now=later())
    assert saver.ops.verify().leftover_writes == 0


def test_a_leftover_under_a_mark_is_left_to_the_operation_that_set_it(backend: Backend) -> None:
    """An unfinished copy (or import) writes its records in any order behind a mark, so
    a writes record may wait there for its checkpoint record; the repeat writes it."""
    saver = backend.saver()
    _thread_with_pending_writes(saver, "t")
    config = _leftover(saver, "t")
    tid, ns = config["configurable"]["thread_id"], config["configurable"]["checkpoint_ns"]
    pk, ns_name = saver.parts.namer.thread(tid), saver.parts.namer.namespace(tid, ns)
    raw.put_records(saver, [Mark(pk, mark_sk(ns_name, "copy"), upto="~")])
    for thread_ids in (None, ["t"]):
        plan = plan_gc(saver.store, thread_ids, grace=timedelta(hours=1), now=later())
        assert plan.to_dict()["leftover_writes"] == 0
    assert saver.ops.verify().leftover_writes == 1
