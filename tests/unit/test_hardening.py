"""What a table writer (no keys) or a careless process can still do to the thread catalog
and to deletes, each performed, with the named outcome a user sees (docs/SECURITY.md, "The
thread catalog" and "Deletes stay deleted")."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from tests.support import raw
from tests.support.backends import Backend
from tests.support.scenarios import chat_graph


def say(graph: Any, text: str, tid: str = "t") -> None:
    graph.invoke({"messages": [HumanMessage(text, id=text)]}, {"configurable": {"thread_id": tid}})


def test_an_item_s3dynamo_never_writes_in_a_threads_partition_does_not_block_its_delete(
    backend: Backend,
) -> None:
    saver = backend.saver()
    graph = chat_graph(saver)
    say(graph, "hello")
    name = saver.store.name_of("t")
    raw.put_items(saver, [{"pk": name, "sk": "planted-without-a-separator", "x": "1"}])
    saver.delete_thread("t")  # completes: the item is named in the log and removed
    assert raw.partition(saver, name) == []
    assert graph.get_state({"configurable": {"thread_id": "t"}}).values == {}
    say(graph, "a new start")  # a new history may start on the id
    messages = graph.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
    assert messages[0].content == "a new start"


def test_a_filter_value_no_float_holds_finds_nothing_instead_of_overflowing(
    backend: Backend,
) -> None:
    saver = backend.saver(catalog_fields=["user_id"])
    graph = chat_graph(saver)
    graph.invoke(
        {"messages": [HumanMessage("hi", id="hi")]},
        {"configurable": {"thread_id": "t", "user_id": 7}},
    )
    assert saver.search_threads(metadata={"user_id": 10**400}) == []
    assert list(saver.list(None, filter={"user_id": 10**400})) == []
    assert [t.thread_id for t in saver.search_threads(metadata={"user_id": 7})] == ["t"]
