"""Garbage collection touches only this deployment's keys, and never deletes an object a
committed or committing checkpoint references, whatever the interleaving."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import ScopeNotNamedError
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.identities import ValueAt
from langgraph.checkpoint.s3dynamo.layout import split_object_key as split_key
from langgraph.checkpoint.s3dynamo.ops.gc import plan_gc
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from tests.support.savers import MemorySaver, memory_saver


def _put_big(saver: MemorySaver, tid: str, run_id: str, version: str | None = None) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": b"d" * 10 + os.urandom(3 * saver.settings.inline_max)}
    cp["channel_versions"] = {"doc": version or saver.get_next_version(None, None)}
    config = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
    return saver.put(config, cp, {"run_id": run_id}, cp["channel_versions"])


def _orphan(saver: MemorySaver, tid: str) -> None:
    """A thread with one live object and one unreferenced one."""
    _put_big(saver, tid, f"{tid}-gone")
    _put_big(saver, tid, f"{tid}-kept")
    saver.delete_for_runs([f"{tid}-gone"])


def test_key_shape_is_exactly_the_namers() -> None:
    name = memory_saver().store.namer.thread("t")
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
    (key,) = plan.candidates[saver.store.namer.thread("t")]
    tag = objects.tags[key]
    saver.store.objects.upload([(key, objects.blobs[key][0])])
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
            sealed = saver.store.codec.seal_value(ValueAt("t", "", "doc", version), value)
            leaf = saver.store.namer.value(ValueAt("t", "", "doc", version))
            saver.store.objects.upload([(saver.store.objects.key("t", leaf), sealed)])
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
