"""A history listing deserializes a growing message list once and gives every snapshot
its own copy of the first items of it: what a reader sees is what deserializing each
snapshot gives, and no two snapshots share an object."""

from __future__ import annotations

from typing import Any

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.s3dynamo import list_reuse
from langgraph.checkpoint.s3dynamo.list_reuse import GrowingLists, array_items
from tests.support.chats import _config, chat, view
from tests.support.savers import MemorySaver, memory_saver


def count_message_lists(saver: MemorySaver, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the serializer's deserializations that give a list of several messages (a
    node's pending write is a list of one)."""
    counted = [0]
    loads = saver.serde.loads_typed

    def counting(typed: tuple[str, bytes]) -> Any:
        value = loads(typed)
        if isinstance(value, list) and len(value) > 1 and isinstance(value[0], BaseMessage):
            counted[0] += 1
        return value

    monkeypatch.setattr(saver.serde, "loads_typed", counting)
    return counted


def each_read_alone(saver: MemorySaver, tid: str) -> None:
    """Every listed checkpoint holds what reading it alone gives."""
    listed = list(saver.list(_config(tid)))
    assert listed
    for tup in listed:
        alone = saver.get_tuple(tup.config)
        assert alone is not None
        assert tup.checkpoint["channel_values"] == alone.checkpoint["channel_values"]


def test_a_growing_list_is_deserialized_once_per_listing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver = memory_saver()
    g = chat(saver, "t", 30)
    expected = view(chat(InMemorySaver(), "t", 30), "t")
    counted = count_message_lists(saver, monkeypatch)
    assert view(g, "t") == expected
    # 30 turns, three snapshots each: only the newest list is deserialized.
    assert counted[0] == 1
    each_read_alone(saver, "t")


def test_no_two_snapshots_share_a_message() -> None:
    saver = memory_saver()
    g = chat(saver, "t", 6)
    snapshots = list(g.get_state_history(_config("t")))
    lists = [s.values["messages"] for s in snapshots if s.values.get("messages")]
    seen: set[int] = set()
    for messages in lists:
        ids = {id(m) for m in messages} | {id(messages)}
        assert not ids & seen
        seen |= ids
    newest, older = lists[0], lists[1]
    first_content = older[0].content
    newest[0].content = "changed by the caller"
    newest.append(HumanMessage("appended by the caller"))
    assert older[0].content == first_content
    assert len(older) < len(newest) - 1


def test_a_list_changed_in_the_middle_is_deserialized_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver, memory = memory_saver(), InMemorySaver()
    graphs = [chat(saver, "t", 5), chat(memory, "t", 5)]
    for g in graphs:  # replace one message, remove another: not an append
        g.update_state(_config("t"), {"messages": [AIMessage("edited", id="ai-1")]})
        g.update_state(_config("t"), {"messages": [RemoveMessage(id="h-2")]})
    expected = view(graphs[1], "t")
    counted = count_message_lists(saver, monkeypatch)
    assert view(graphs[0], "t") == expected
    assert counted[0] == 3  # the two edits, then the chat before them
    each_read_alone(saver, "t")


def test_a_list_pickle_refuses_is_deserialized_for_every_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver = memory_saver()
    chat(saver, "t", 4)

    refused = [0]

    def refuse(*_: Any, **__: Any) -> bytes:
        refused[0] += 1
        raise TypeError("cannot pickle")

    several = sum(
        1
        for t in saver.list(_config("t"))
        if len(t.checkpoint["channel_values"].get("messages", [])) > 1
    )
    monkeypatch.setattr(list_reuse.pickle, "dumps", refuse)
    counted = count_message_lists(saver, monkeypatch)
    list(saver.list(_config("t")))
    assert counted[0] == several
    assert refused[0] == 1  # not tried again for that channel in the listing
    each_read_alone(saver, "t")


def test_only_msgpack_arrays_of_json_plus_are_reused() -> None:
    class OwnLoads(JsonPlusSerializer):
        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            calls.append(data[0])
            return super().loads_typed(data)

    calls: list[str] = []
    plain = JsonPlusSerializer()
    loads = plain.loads_typed

    def counting(typed: tuple[str, bytes]) -> Any:
        calls.append(typed[0])
        return loads(typed)

    plain.loads_typed = counting  # type: ignore[method-assign]
    shrinking = [[1, 2, 3], [1, 2], [1], [1]]
    for serde, deserialized in ((plain, 1), (OwnLoads(), 4)):
        calls.clear()
        lists = GrowingLists(lambda serde=serde: serde)
        assert [lists.load("c", serde.dumps_typed(v)) for v in shrinking] == shrinking
        assert len(calls) == deserialized
    calls.clear()
    lists = GrowingLists(lambda: plain)
    for value in ({"a": 1}, {"a": 1}, "text", "text", [1, 2], [2]):
        assert lists.load("c", plain.dumps_typed(value)) == value
    assert len(calls) == 6


@pytest.mark.parametrize(("n", "start"), [(0, 1), (15, 1), (16, 3), (65535, 3), (65536, 5)])
def test_array_items_reads_every_array_header(n: int, start: int) -> None:
    assert array_items(ormsgpack.packb(list(range(n)))) == (n, start)
    assert array_items(ormsgpack.packb({"a": 1})) is None
    assert array_items(b"") is None
