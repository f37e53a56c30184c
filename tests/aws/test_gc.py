"""Garbage collection removes what nothing references and never what something does."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.savers import RequestCounter, make_saver, thread_config


def _put_big(saver: S3DynamoSaver, tid: str, run_id: str, parent: Any = None) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": os.urandom(3 * saver.settings.inline_max)}
    cp["channel_versions"] = {"doc": saver.get_next_version(None, None)}
    config = parent or thread_config(tid, checkpoint_ns="")
    return saver.put(config, cp, {"run_id": run_id}, cp["channel_versions"])


def _objects(clients: tuple[Any, Any], saver: S3DynamoSaver) -> set[str]:
    out = clients[1].list_objects_v2(Bucket=saver.settings.bucket).get("Contents", [])
    return {o["Key"] for o in out}


def test_gc_removes_what_delete_for_runs_orphaned(
    saver: S3DynamoSaver, clients: tuple[Any, Any]
) -> None:
    first = _put_big(saver, "t", "run-1")
    second = _put_big(saver, "t", "run-2", parent=first)
    _put_big(saver, "other", "run-2")
    before = _objects(clients, saver)
    saver.delete_for_runs(["run-2"])
    assert _objects(clients, saver) == before  # objects wait for garbage collection

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
        and len(got.checkpoint["channel_values"]["doc"]) == 3 * saver.settings.inline_max
    )
    assert saver.get_tuple(second) is None
    assert len(_objects(clients, saver)) == 1


def test_execute_spares_an_object_referenced_after_planning(
    saver: S3DynamoSaver, clients: tuple[Any, Any]
) -> None:
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


# --------------------------------------------------------------------------------------
# Incremental collection: what crashed puts left, without listing the bucket
# --------------------------------------------------------------------------------------


class Crash(Exception):
    """The process died right after its upload landed, before its commit was sent."""


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


def _keys(clients: tuple[Any, Any], saver: S3DynamoSaver) -> set[str]:
    pages = (
        clients[1]
        .get_paginator("list_objects_v2")
        .paginate(Bucket=saver.settings.bucket, Prefix=saver.settings.prefix)
    )
    return {o["Key"] for page in pages for o in page.get("Contents", [])}


@pytest.mark.parametrize("k", [3, 6])
def test_incremental_collection_reads_what_crashes_left_not_the_bucket(
    clients: tuple[Any, Any], counter: RequestCounter, k: int
) -> None:
    costs = []
    for prefix, threads in (("small/", 8), ("large/", 40)):
        saver = _deployment(clients, prefix, threads)
        referenced = _keys(clients, saver)
        assert len(referenced) == 2 * threads
        _crash_commits(clients, saver, k)
        crashed = _keys(clients, saver) - referenced
        assert len(crashed) == k

        counter.reset()
        plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(0))
        assert len(plan.intents) == k and plan.objects == k
        assert set(plan.to_dict()) >= {"intents", "objects", "bytes"}
        assert plan.execute() == k
        costs.append(dict(counter.calls))

        # Exactly the orphans went, every referenced object stayed, no intent is left.
        assert _keys(clients, saver) == referenced
        assert saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).intents == []
        for i in range(threads):
            got = saver.get_tuple(thread_config(f"t{i}"))
            assert got is not None and len(got.checkpoint["channel_values"]["doc"]) > 0
    small, large = costs
    # One Query per journal shard (32), then per intent: a HEAD of its object and a
    # consistent Query of its thread, twice (plan, then execute), and one conditional
    # DeleteObjects; the intents go in one BatchWriteItem. No listing, whatever the size.
    assert (
        small
        == large
        == {
            "dynamodb.Query": 32 + 2 * k,
            "s3.HeadObject": 2 * k,
            "s3.DeleteObjects": k,
            "dynamodb.BatchWriteItem": 1,
        }
    )
    assert sum(small.values()) == 33 + 5 * k


def test_incremental_collection_takes_what_delete_for_runs_left(
    saver: S3DynamoSaver, clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    first = _put_big(saver, "t", "run-1")
    second = _put_big(saver, "t", "run-2", parent=first)
    _put_big(saver, "other", "run-2")
    before = _keys(clients, saver)
    saver.delete_for_runs(["run-2"])
    # An intent per thread names the objects of the deleted checkpoints; within the
    # grace period nothing is taken.
    assert saver.ops.plan_incremental_garbage_collection(grace=timedelta(hours=1)).objects == 0
    counter.reset()
    plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(0))
    assert len(plan.intents) == 2 and plan.objects == 2
    assert plan.execute() == 2
    assert "s3.ListObjectsV2" not in counter.calls
    # Both threads lost the objects only run-2 referenced; run-1's stays, and reads.
    assert len(_keys(clients, saver)) == len(before) - 2 == 1
    got = saver.get_tuple(first)
    assert got is not None and len(got.checkpoint["channel_values"]["doc"]) > 0
    assert saver.get_tuple(second) is None
    assert saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).intents == []
