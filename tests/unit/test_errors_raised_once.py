"""A refusal or a missing object is raised once, by the adapter that met it, and reaches
the caller with the whole story: what the service said, which write or checkpoint it
concerned, and what to do (issue 29: one owner for error enrichment). On in-memory ports;
`tests/unit/test_architecture.py` keeps any layer from raising a caught error again.
"""

from __future__ import annotations

import contextvars
import os
import time
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import (
    ConcurrentUpdateError,
    LeaseLostError,
    ObjectNotFoundError,
    S3DynamoSaver,
)
from tests.support.savers import MemorySaver, memory_saver, thread_config

KEYS = {"k1": os.urandom(32)}
SECRET = os.urandom(16)


def _pair() -> tuple[MemorySaver, MemorySaver]:
    """Two savers (two processes) on one store."""
    one = memory_saver(keys=KEYS, secret=SECRET)
    return one, memory_saver(one.index, one.objects, keys=KEYS, secret=SECRET)


def _put(saver: S3DynamoSaver, config: dict[str, Any], value: str) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notes": value}
    checkpoint["channel_versions"] = {"notes": value}
    return saver.put(config, checkpoint, {"step": 1}, {"notes": value})  # type: ignore[arg-type]


def _config() -> dict[str, Any]:
    config = thread_config("t")
    config["configurable"]["checkpoint_ns"] = ""
    return config


def test_a_put_overtaken_by_another_run_names_the_write_the_parent_and_the_fix() -> None:
    one, two = _pair()
    first = _put(one, _config(), "1")
    latest = one.get_tuple(_config())  # this run continues `first` as the latest
    assert latest is not None
    # Another process commits on the thread in the meantime.
    moved = contextvars.copy_context().run(_put, two, first, "2")
    with pytest.raises(ConcurrentUpdateError) as caught:
        _put(one, latest.config, "3")
    parent, head = first["configurable"]["checkpoint_id"], moved["configurable"]["checkpoint_id"]
    message = str(caught.value)
    assert message.startswith("thread 't' checkpoint ")
    assert (
        f": not written: another run committed to this thread since this run continued "
        f"checkpoint {parent} as the latest (the head names {head}, not {parent}). Nothing "
        "of this run is visible. Retry the run: it will load the new latest state. To run "
        "one at a time instead, wrap runs in saver.ops.thread_lock(thread_id)"
    ) in message
    # One error: the adapter's, told which write it refused, not a second one over it.
    assert caught.value.reason == f"the head names {head}, not {parent}"
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert two.get_tuple(_config()).config == moved  # type: ignore[union-attr]


def test_writes_of_a_holder_whose_lease_was_taken_over_name_the_task_and_the_fix() -> None:
    one, two = _pair()
    first = _put(one, _config(), "1")
    with one.ops.thread_lock("t", ttl=0.2, wait=0, heartbeat=False):
        time.sleep(0.3)  # stalled past its lease
        with two.ops.thread_lock("t", ttl=30, wait=5):
            pass
        with pytest.raises(LeaseLostError) as put_refused:
            _put(one, first, "2")
        with pytest.raises(LeaseLostError) as writes_refused:
            one.put_writes(first, [("notes", "x")], task_id="task-1")
    cid = first["configurable"]["checkpoint_id"]
    assert str(writes_refused.value) == (
        f"thread 't' checkpoint {cid}: writes of task 'task-1': not written: the thread's "
        "lease expired and another holder took it over; this run must stop (its writes are "
        "refused). A holder keeps its lease while it writes or its heartbeat runs; a longer "
        "ttl covers longer stalls"
    )
    assert str(put_refused.value).startswith("thread 't' checkpoint ")
    assert ": not written: the thread's lease expired and another holder took it over" in str(
        put_refused.value
    )
    for refused in (put_refused.value, writes_refused.value):
        assert refused.__context__ is None and refused.__cause__ is None
    # Nothing of the refused writes is visible.
    latest = two.get_tuple(_config())
    assert latest is not None and latest.config == first and latest.pending_writes == []


def test_an_object_deleted_outside_names_the_checkpoint_and_where_it_looked() -> None:
    saver = memory_saver(keys=KEYS, secret=SECRET, inline_max=0)
    config = _put(saver, _config(), "1")
    (key,) = saver.objects.blobs
    del saver.objects.blobs[key]
    fresh = memory_saver(saver.index, saver.objects, keys=KEYS, secret=SECRET)  # no cache
    with pytest.raises(ObjectNotFoundError) as caught:
        fresh.get_tuple(_config())
    cid = config["configurable"]["checkpoint_id"]
    assert caught.value.key == key
    assert str(caught.value) == (
        f"thread 't' checkpoint {cid}: object {key!r} is referenced by the index but missing "
        "from the memory store. s3dynamo deletes an object only once no record references "
        "it and no loan to a copy names it, so the object, or the record or loan that kept "
        "it, was deleted outside s3dynamo"
    )
    assert caught.value.__context__ is None
