"""The thread store on the in-memory ports: the storage protocol without moto."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo import IntegrityError, ThreadExistsError
from langgraph.checkpoint.s3dynamo.errors import ObjectNotFoundError
from langgraph.checkpoint.s3dynamo.format.layout import object_key
from langgraph.checkpoint.s3dynamo.format.records import CheckpointRecord, WritesRecord
from tests.support.savers import MemorySaver, memory_saver
from tests.support.scenarios import SCENARIOS, Runner, chat_graph

SECRET = b"naming secret, 16+ bytes"


def _config(tid: str = "t", **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid, "checkpoint_ns": "", **extra}}


def _put(saver: MemorySaver, values: dict[str, Any], parent: Any = None) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = values
    cp["channel_versions"] = {ch: saver.get_next_version(None, None) for ch in values}
    return saver.put(parent or _config(), cp, {"step": 1}, cp["channel_versions"])


def test_small_values_inline_large_ones_as_objects() -> None:
    saver = memory_saver(secret=SECRET)
    big = os.urandom(3 * saver.settings.inline_max)
    config = _put(saver, {"big": big, "small": "s"})
    # The upload intent before the object, the commit (which deletes it) after.
    assert saver.index.calls == {"PutItem": 1, "TransactWriteItems": 1}
    assert saver.objects.calls == {"put": 1}
    assert saver.index.intents == {}
    (record,) = saver.index.records()
    assert isinstance(record, CheckpointRecord)
    assert len(record.objects) == 1 and len(record.inline) == 1
    saver.index.calls.clear()
    saver.objects.calls.clear()
    got = saver.get_tuple(config)
    assert got is not None and got.checkpoint["channel_values"] == {"big": big, "small": "s"}
    # The object this process just wrote comes from its cache; another process GETs it.
    assert saver.index.calls == {"Query": 1} and not saver.objects.calls
    other = memory_saver(saver.index, saver.objects, keys=saver.parts.sealer.keyring, secret=SECRET)
    assert other.get_tuple(config) is not None and saver.objects.calls == {"get": 1}


def test_a_call_of_writes_is_one_merge_in_order(saver: MemorySaver) -> None:
    config = _put(saver, {"a": 1})
    saver.index.calls.clear()
    saver.put_writes(config, [("a", 2), ("b", os.urandom(3 * saver.settings.inline_max))], "task")
    saver.put_writes(config, [("a", 3)], "task")  # first write of an index wins
    # Only the call with a large write opens an upload intent (its merge deletes it).
    assert saver.index.calls == {"PutItem": 1, "TransactWriteItems": 1, "UpdateItem": 1}
    assert saver.index.intents == {}
    got = saver.get_tuple(config)
    assert got is not None and [w[1] for w in got.pending_writes] == ["a", "b"]
    assert got.pending_writes[0][2] == 2


def test_many_writes_go_to_one_bundle(saver: MemorySaver) -> None:
    config = _put(saver, {"a": 1})
    saver.put_writes(config, [("a", i) for i in range(100)], "task")
    writes = [r for r in saver.index.records() if isinstance(r, WritesRecord)]
    assert len(writes) == 1 and writes[0].bundle is not None and not writes[0].writes
    got = saver.get_tuple(config)
    assert got is not None and [w[2] for w in got.pending_writes] == list(range(100))
    saver.copy_thread("t", "copy")
    copied = saver.get_tuple({"configurable": {"thread_id": "copy"}})
    assert copied is not None and copied.pending_writes == got.pending_writes


def test_a_deleted_object_names_thread_and_checkpoint() -> None:
    saver = memory_saver(secret=SECRET)
    config = _put(saver, {"big": os.urandom(3 * saver.settings.inline_max)})
    saver.objects.blobs.clear()
    cid = config["configurable"]["checkpoint_id"]
    # Another process: the writer's own cache would still serve the object.
    reader = memory_saver(
        saver.index, saver.objects, keys=saver.parts.sealer.keyring, secret=SECRET
    )
    with pytest.raises(IntegrityError, match=f"thread 't' checkpoint {cid}.*missing"):
        reader.get_tuple(config)


def test_delete_copy_and_exists(saver: MemorySaver) -> None:
    _put(saver, {"big": os.urandom(3 * saver.settings.inline_max)})
    saver.copy_thread("t", "u")
    before = saver.index.records()
    saver.copy_thread("t", "u")  # a repeat after a complete copy changes nothing
    assert saver.index.records() == before
    _put(saver, {"own": 1}, parent=_config("v"))
    with pytest.raises(ThreadExistsError, match="not part of a copy"):
        saver.copy_thread("t", "v")
    saver.delete_thread("t")
    assert saver.get_tuple(_config("t")) is None
    got = saver.get_tuple(_config("u"))
    assert got is not None and len(saver.objects.blobs) == 1


def test_gc_spares_referenced_objects(saver: MemorySaver) -> None:
    first = _put(saver, {"doc": os.urandom(3 * saver.settings.inline_max)})
    saver.delete_thread("t")
    _put(saver, {"doc": os.urandom(3 * saver.settings.inline_max)})
    saver.objects.put_new(object_key(saver.parts.namer.thread("t"), "orphan".ljust(22, "A")), b"x")
    plan = saver.ops.plan_garbage_collection(grace=timedelta(0))
    assert plan.objects == 1 and plan.execute() == 1
    assert saver.get_tuple(_config()) is not None and saver.get_tuple(first) is None


def test_reencrypt_moves_everything_to_the_active_key() -> None:
    old_key, new_key, secret = os.urandom(32), os.urandom(32), b"naming secret, 16+ bytes"
    saver = memory_saver(keys={"old": old_key}, secret=secret)
    _put(saver, {"big": os.urandom(3 * saver.settings.inline_max), "small": "s"})
    ports = {"index": saver.index, "objects": saver.objects}
    rotated = memory_saver(**ports, keys={"new": new_key, "old": old_key}, secret=secret)
    assert rotated.ops.reencrypt() > 0 and rotated.ops.reencrypt() == 0
    only_new = memory_saver(**ports, keys={"new": new_key}, secret=secret)
    got = only_new.get_tuple(_config())
    assert got is not None and got.checkpoint["channel_values"]["small"] == "s"


def test_a_thread_deleted_while_it_is_re_encrypted_is_no_loss(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A removal deletes a thread's records, then its objects: a re-encryption that read
    the records before finds objects gone, reads the thread again and finds it gone. An
    object deleted outside s3dynamo, named by the same records twice, is reported."""
    old_key, new_key, secret = os.urandom(32), os.urandom(32), b"naming secret, 16+ bytes"
    saver = memory_saver(keys={"old": old_key}, secret=secret)
    _put(saver, {"big": os.urandom(3 * saver.settings.inline_max)})
    ports = {"index": saver.index, "objects": saver.objects}
    rotated = memory_saver(**ports, keys={"new": new_key, "old": old_key}, secret=secret)
    upkeep = type(rotated.store)
    real = upkeep.sealed

    def deleted_meanwhile(store: Any, tid: Any, entries: Any) -> Any:
        monkeypatch.setattr(upkeep, "sealed", real)
        saver.delete_thread("t")
        return real(store, tid, entries)

    monkeypatch.setattr(upkeep, "sealed", deleted_meanwhile)
    assert rotated.ops.reencrypt(["t"]) == 0
    assert rotated.get_tuple(_config()) is None and not saver.objects.blobs
    _put(saver, {"big": os.urandom(3 * saver.settings.inline_max)})
    saver.objects.blobs.clear()
    with pytest.raises(ObjectNotFoundError):
        rotated.ops.reencrypt(["t"])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_graph_matches_in_memory(saver: MemorySaver, name: str) -> None:
    scenario = SCENARIOS[name]
    expected = scenario(InMemorySaver(), Runner("sync"), "thread-1")
    assert scenario(saver, Runner("sync"), "thread-1") == expected


@pytest.mark.parametrize("catalog_fields", [(), ("langgraph", "user_id")], ids=["", "catalog"])
def test_chat_turn_budget(catalog_fields: tuple[str, ...]) -> None:
    """The same with catalog fields declared: a turn files nothing new (its first put,
    a new thread's, filed it in its own transaction)."""
    saver = memory_saver(catalog_fields=catalog_fields)
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "chat", "user_id": "ada"}}
    graph.invoke({"messages": [HumanMessage("hi", id="h0")]}, config)
    assert saver.index.calls == {"Query": 1, "TransactWriteItems": 3, "UpdateItem": 2}
    saver.index.calls.clear()
    graph.invoke({"messages": [HumanMessage("again", id="h1")]}, config)
    assert saver.index.calls == {"Query": 1, "TransactWriteItems": 3, "UpdateItem": 2}
    assert not saver.objects.calls


def test_logging_is_silent_by_default_and_names_no_thread_id(
    saver: MemorySaver, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    package = logging.getLogger("langgraph.checkpoint.s3dynamo")
    assert any(isinstance(h, logging.NullHandler) for h in package.handlers)
    with caplog.at_level(logging.DEBUG, logger="langgraph.checkpoint.s3dynamo"):
        _put(saver, {"big": os.urandom(3 * saver.settings.inline_max)}, _config("user-42"))
        saver.delete_thread("user-42")
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("DEBUG", "commit checkpoint: 0 inline, 1 objects") in messages
    assert any(level == "INFO" and m.startswith("delete_thread ") for level, m in messages)
    assert not any("user-42" in m for _, m in messages)
