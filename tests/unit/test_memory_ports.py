"""The in-memory ports honour the conditions the thread store relies on."""

from __future__ import annotations

import pytest

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.errors import ObjectNotFoundError, StoreMissingError
from langgraph.checkpoint.s3dynamo.records import CheckpointRecord, HeadMove, ItemKey, WritesRecord
from tests.support.port_conditions import (
    check_commit_conditions,
    check_journal_conditions,
    check_lease_conditions,
    check_mark_conditions,
)


def _cp(sk: str, body: bytes = b"b") -> CheckpointRecord:
    return CheckpointRecord("p", sk, body, b"m", b"t")


def _head(sk: str) -> HeadMove:
    return HeadMove(ItemKey("p!", "head#a"), sk.split("#")[1], None, False)


def test_objects_are_written_once() -> None:
    objects = MemoryObjects()
    assert objects.put_new("k", b"one") is True
    assert objects.put_new("k", b"two") is False
    assert objects.get("k") == b"one"
    with pytest.raises(ObjectNotFoundError) as caught:
        objects.get("gone")
    assert caught.value.key == "gone"
    assert [o.key for o in objects.list("")] == ["k"]
    objects.delete(["k", "absent"])
    assert list(objects.list("")) == []


def test_query_orders_pages_and_bounds() -> None:
    index = MemoryIndex()
    for sk in ("a#1", "a#2", "a#2#t", "a#3", "b#1"):
        index.write_batch(puts=[_cp(sk) if sk.count("#") == 1 else WritesRecord("p", sk, b"t")])
    first = index.query("p", prefix="a#", descending=True, limit=2)
    assert [r.sk for r in first.records] == ["a#3", "a#2#t"]
    rest = index.query("p", prefix="a#", descending=True, cursor=first.cursor)
    assert [r.sk for r in rest.records] == ["a#2", "a#1"] and rest.cursor is None
    assert [r.sk for r in index.query("p", between=("a#2", "a#3")).records] == [
        "a#2",
        "a#2#t",
        "a#3",
    ]
    assert [k.sk for k in index.query_keys("p", prefix="b")] == ["b#1"]


def test_merge_keeps_first_regular_write_and_last_special() -> None:
    index = MemoryIndex()
    index.merge_writes(WritesRecord("p", "a#1#t", b"t", {0: b"first", -1: b"e1"}), frozenset({-1}))
    index.merge_writes(WritesRecord("p", "a#1#t", b"t", {0: b"second", -1: b"e2"}), frozenset({-1}))
    (stored,) = index.query("p").records
    assert isinstance(stored, WritesRecord) and stored.writes == {0: b"first", -1: b"e2"}


def test_replace_only_if_unchanged() -> None:
    index = MemoryIndex()
    old = _cp("a#1")
    index.put_checkpoint(old, _head(old.sk))
    assert index.replace_if_unchanged(old, _cp("a#1", b"new")) is True
    assert index.replace_if_unchanged(old, _cp("a#1", b"newer")) is False
    (stored,) = index.query("p").records
    assert isinstance(stored, CheckpointRecord) and stored.body == b"new"


def test_stored_records_are_copies() -> None:
    index = MemoryIndex()
    record = _cp("a#1")
    index.put_checkpoint(record, _head(record.sk))
    record.inline["x"] = b"changed after the write"
    (stored,) = index.query("p").records
    assert isinstance(stored, CheckpointRecord) and stored.inline == {}


def test_missing_store_until_created() -> None:
    index = MemoryIndex(exists=False)
    with pytest.raises(StoreMissingError):
        index.query("p")
    assert index.create_if_missing() is True and index.create_if_missing() is False
    index.write_batch(deletes=[ItemKey("p", "none")])
    assert index.run_checkpoints("r") == []


def test_commit_conditions_hold_in_memory() -> None:
    check_commit_conditions(MemoryIndex())


def test_lease_conditions_hold_in_memory() -> None:
    check_lease_conditions(MemoryIndex())


def test_marks_sort_first_and_come_apart_in_memory() -> None:
    check_mark_conditions(MemoryIndex())


def test_the_journal_in_memory() -> None:
    check_journal_conditions(MemoryIndex())


def test_stat_is_what_a_listing_says_of_one_key() -> None:
    objects = MemoryObjects()
    assert objects.stat("k") is None
    objects.put_new("k", b"one")
    assert [objects.stat("k")] == list(objects.list("k"))
