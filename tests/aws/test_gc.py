"""Garbage collection removes what nothing references and never what something does."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.savers import thread_config


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
