"""Importing threads from another LangGraph checkpointer, into each backend (`backend`:
the in-memory twins, and the DynamoDB and S3 adapters): every tuple `list()` gives and
every state `get_state_history()` shows equal the source's, for chats, interrupts,
subgraphs, forks, parallel branches and DeltaChannel threads; a repeat duplicates
nothing; a thread that exists here with other checkpoints is reported, not overwritten.
From AWS's DynamoDBSaver (with its S3 offload) on the same AWS endpoints. (A fault at
every request of an import, and a repeat, are in `tests/unit/test_faults.py`; the import
from PostgresSaver in `tests/e2e/test_import.py`.)"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo import InvalidConfigError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from tests.support.backends import Backend
from tests.support.graphs import converse, delta_graph
from tests.support.imports import dynamodb_saver, same_order, states, tuples
from tests.support.memory_index import MemoryIndex
from tests.support.savers import Clients, make_saver, memory_saver
from tests.support.scenarios import SCENARIOS, Runner, chat_graph

THREADS = ["memory", "fork", "interrupt", "subgraph", "parallel_failure", "send"]


def populate(source: BaseCheckpointSaver[Any]) -> None:
    """A thread per scenario (named after it) and a DeltaChannel chat, on the source."""
    for name in THREADS:
        SCENARIOS[name](source, Runner("sync"), name)
    converse(delta_graph(source, 4), "delta", 9)


@pytest.fixture(params=["InMemorySaver", "SqliteSaver"])
def source(request: pytest.FixtureRequest) -> Iterator[BaseCheckpointSaver[Any]]:
    if request.param == "InMemorySaver":
        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


# Which saver the import reads is the source's side: each is read into the in-memory
# twins; into the AWS adapters, one.
@pytest.mark.parametrize(
    ("backend", "source"),
    [("memory", "InMemorySaver"), ("memory", "SqliteSaver"), ("aws", "InMemorySaver")],
    indirect=True,
)
def test_every_tuple_and_every_state_equal_the_source(
    backend: Backend, source: BaseCheckpointSaver[Any]
) -> None:
    populate(source)
    saver = backend.saver()
    plan = saver.ops.plan_import(source)
    assert sorted(t.thread_id for t in plan.threads) == sorted([*THREADS, "delta"])
    assert backend.writes() == {}  # planning wrote nothing
    assert all(saver.get_tuple({"configurable": {"thread_id": t}}) is None for t in THREADS)
    result = plan.execute().result()
    assert result["conflicts"] == [] and result["threads_copied"] == len(THREADS) + 1
    # The plan said what it would copy, pending writes included.
    assert result["checkpoints_copied"] == plan.counts["checkpoints_to_copy"]
    assert result["writes_copied"] == plan.counts["writes_to_copy"] > 0
    for tid in [*THREADS, "delta"]:
        assert tuples(saver, tid) == tuples(source, tid), tid
    assert states(chat_graph(saver), "memory") == states(chat_graph(source), "memory")
    assert states(delta_graph(saver, 4), "delta") == states(delta_graph(source, 4), "delta")
    # The threads go on here as they would have there.
    converse(delta_graph(saver, 4), "delta", 2, start=9)
    converse(delta_graph(source, 4), "delta", 2, start=9)
    mine = delta_graph(saver, 4).get_state({"configurable": {"thread_id": "delta"}}).values
    theirs = delta_graph(source, 4).get_state({"configurable": {"thread_id": "delta"}}).values
    assert mine == theirs


def test_a_repeat_duplicates_nothing_and_an_other_thread_is_not_overwritten(
    backend: Backend,
) -> None:
    source = InMemorySaver()
    populate(source)
    saver = backend.saver()
    first = saver.ops.import_threads(source, ["memory", "delta"]).result()
    assert first["checkpoints_copied"] > 0
    imported = {tid: tuples(saver, tid) for tid in ("memory", "delta")}
    again = saver.ops.import_threads(source, ["memory", "delta"])
    assert again.result()["checkpoints_copied"] == 0
    assert [t.already_here for t in again.threads] == [t.checkpoints for t in again.threads]
    assert {tid: tuples(saver, tid) for tid in ("memory", "delta")} == imported
    # A thread of the same id with a history of its own here: reported, left alone.
    chat_graph(saver).invoke(
        {"messages": [HumanMessage("mine", id="m")]}, {"configurable": {"thread_id": "fork"}}
    )
    mine = tuples(saver, "fork")
    plan = saver.ops.import_threads(source, ["fork"])
    assert [t.thread_id for t in plan.conflicts] == ["fork"]
    assert plan.conflicts[0].conflict == (
        f"thread 'fork' has {len(mine)} checkpoint(s) here that the source does not have, "
        "newer than those imported; an import never overwrites: to import the source's "
        "history in its place, delete the thread here first (`s3dynamo delete`, "
        "delete_thread), then import again"
    )
    assert tuples(saver, "fork") == mine


def test_a_thread_whose_checkpoint_ids_no_config_could_name_is_left_in_the_source(
    backend: Backend,
) -> None:
    """Issue 56: a config naming a checkpoint id that is no UUID is refused, so a thread
    holding such ids (InMemorySaver takes any text) is not brought here; the conformance
    suite's uuid4 ids are."""
    import uuid

    from langgraph.checkpoint.base import empty_checkpoint

    source = InMemorySaver()
    populate(source)
    for tid, cid in (("custom", "my-own-id"), ("uuid4", str(uuid.uuid4()))):
        checkpoint = {**empty_checkpoint(), "id": cid}
        source.put({"configurable": {"thread_id": tid, "checkpoint_ns": ""}}, checkpoint, {}, {})  # type: ignore[arg-type]
    saver = backend.saver()
    plan = saver.ops.import_threads(source, ["custom", "uuid4", "memory"])
    assert [t.thread_id for t in plan.conflicts] == ["custom"]
    assert plan.conflicts[0].conflict == (
        "thread 'custom' has 1 checkpoint id(s) that are not UUIDs in canonical form, as "
        "LangGraph makes them, such as 'my-own-id': a config naming one would be refused "
        "here, so the thread is left in the source"
    )
    assert saver.get_tuple({"configurable": {"thread_id": "custom"}}) is None
    for tid in ("uuid4", "memory"):
        assert tuples(saver, tid) == tuples(source, tid)


def test_a_source_that_cannot_list_its_threads_asks_for_them(backend: Backend) -> None:
    class NeedsThreadId(InMemorySaver):
        def list(self, config: Any, **kwargs: Any) -> Iterator[Any]:
            if config is None:
                raise ValueError("Runnable config must contain thread_id")
            return super().list(config, **kwargs)

    source = NeedsThreadId()
    populate(source)
    saver = backend.saver()
    with pytest.raises(InvalidConfigError, match="name the threads to import"):
        saver.ops.plan_import(source)
    assert saver.ops.import_threads(source, ["memory"]).result()["threads_copied"] == 1
    assert tuples(saver, "memory") == tuples(source, "memory")


def test_a_dynamodb_saver_thread_reads_back_whole(clients: Clients) -> None:
    source = dynamodb_saver(clients)
    for name in ("memory", "fork", "interrupt", "subgraph"):
        SCENARIOS[name](source, Runner("sync"), name)
    converse(delta_graph(source, 4), "delta", 6)
    # Over DynamoDBSaver's 350 KB offload threshold: this checkpoint lives in its bucket.
    big = os.urandom(300_000).hex()
    chat_graph(source).invoke(
        {"messages": [HumanMessage(big, id="big")]}, {"configurable": {"thread_id": "big"}}
    )

    saver: S3DynamoSaver = make_saver(clients)
    saver.setup()
    result = saver.ops.import_threads(source).result()
    assert result["conflicts"] == []
    for tid in ("memory", "fork", "interrupt", "subgraph", "delta", "big"):
        assert same_order(saver, tid) == same_order(source, tid), tid
    assert states(chat_graph(saver), "big") == states(chat_graph(source), "big")
    converse(delta_graph(saver, 4), "delta", 2, start=6)
    converse(delta_graph(source, 4), "delta", 2, start=6)
    config = {"configurable": {"thread_id": "delta"}}
    assert delta_graph(saver, 4).get_state(config).values == (
        delta_graph(source, 4).get_state(config).values
    )


def test_a_copy_moves_to_another_tenant_sealed_for_it() -> None:
    """A copy shares objects within its deployment only: importing it into another
    tenant's deployment (its own prefix and keys) writes objects of that tenant's, which
    read back whole after the first tenant's threads and objects are gone."""
    index, objects = MemoryIndex(), MemoryObjects()
    first = memory_saver(index, objects, prefix="tenant-a/", inline_max=0)
    SCENARIOS["memory"](first, Runner("sync"), "memory")
    first.copy_thread("memory", "fork")
    theirs = states(chat_graph(first), "fork")
    second = memory_saver(index, objects, prefix="tenant-b/", inline_max=0)
    assert second.ops.import_threads(first, ["fork"]).result()["conflicts"] == []
    assert tuples(second, "fork") == tuples(first, "fork")
    mine = {k: blob for k, (blob, _) in objects.blobs.items() if k.startswith("tenant-b/")}
    assert mine and not set(mine.values()) & {
        blob for k, (blob, _) in objects.blobs.items() if k.startswith("tenant-a/")
    }
    first.delete_thread("memory")
    first.delete_thread("fork")
    assert not [k for k in objects.blobs if k.startswith("tenant-a/")]
    assert states(chat_graph(second), "fork") == theirs


def test_a_repeat_catches_up_the_writes_a_resume_left_on_an_imported_checkpoint() -> None:
    """Imported while it waited on an interrupt, resumed in the source where the step
    then failed (no new checkpoint): the repeat copies the resume and the error onto the
    checkpoint here, so the run resumes here as it would there."""
    from langgraph.graph import START, StateGraph
    from langgraph.types import Command, interrupt
    from typing_extensions import TypedDict

    class State(TypedDict):
        x: str

    failing = {"on": True}

    def ask(state: State) -> dict[str, str]:
        answer = interrupt("approve?")
        if failing["on"]:
            raise RuntimeError("tool down")
        return {"x": f"got {answer}"}

    builder = StateGraph(State).add_node("ask", ask).add_edge(START, "ask")
    source, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    there = builder.compile(checkpointer=source)
    there.invoke({"x": ""}, config)
    saver = memory_saver()
    saver.ops.import_threads(source).result()
    with pytest.raises(RuntimeError, match="tool down"):
        there.invoke(Command(resume="YES"), config)
    plan = saver.ops.import_threads(source)
    # The task's writes again whole (its interrupt here already, its resumes and error).
    assert (plan.counts["checkpoints_to_copy"], plan.counts["writes_to_copy"]) == (0, 4)
    assert plan.result()["writes_copied"] == 4
    assert tuples(saver, "t") == tuples(source, "t")
    failing["on"] = False
    assert builder.compile(checkpointer=saver).invoke(None, config) == {"x": "got YES"}
    assert saver.ops.import_threads(source).counts["writes_to_copy"] == 0


def test_a_thread_the_source_does_not_hold_is_named_before_anything_is_written() -> None:
    from langgraph.checkpoint.s3dynamo import ThreadNotFoundError

    source = InMemorySaver()
    populate(source)
    saver = memory_saver()
    with pytest.raises(ThreadNotFoundError, match=r"no checkpoint of thread\(s\) \['nosuch'\]"):
        saver.ops.import_threads(source, ["memory", "nosuch"])
    assert list(saver.list(None)) == []


def test_an_empty_list_of_threads_imports_nothing() -> None:
    """None means every thread the source holds; an empty list means none of them."""
    source = InMemorySaver()
    populate(source)
    saver = memory_saver()
    plan = saver.ops.import_threads(source, [])
    assert plan.result() == {
        "threads_copied": 0,
        "checkpoints_copied": 0,
        "writes_copied": 0,
        "conflicts": [],
    }
    assert plan.threads == [] and list(saver.list(None)) == []


def test_a_catch_up_copies_what_is_new_where_the_source_dropped_its_oldest() -> None:
    """The source lost its oldest checkpoint after the import (DynamoDBSaver's ttl, a
    cleanup) and the chat went on there: the repeat copies the new checkpoints, and the
    one it imported earlier is no conflict. A checkpoint written here after the import
    still is."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    source, config = SqliteSaver(conn), {"configurable": {"thread_id": "chat"}}
    for i in range(3):
        chat_graph(source).invoke({"messages": [HumanMessage(f"u{i}", id=f"u{i}")]}, config)
    saver = memory_saver()
    assert saver.ops.import_threads(source).result()["conflicts"] == []
    oldest = min(t.checkpoint["id"] for t in source.list(config))
    conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (oldest,))
    conn.execute("DELETE FROM writes WHERE checkpoint_id = ?", (oldest,))
    conn.commit()
    chat_graph(source).invoke({"messages": [HumanMessage("u3", id="u3")]}, config)
    result = saver.ops.import_threads(source).result()
    assert result["conflicts"] == [] and result["checkpoints_copied"] > 0
    # The latest state is the source's; this side keeps the checkpoint the source dropped.
    assert latest(saver, config) == latest(source, config)
    assert len(tuples(saver, "chat")) == len(tuples(source, "chat")) + 1
    # A run here after the import, then one there: the thread moved on here.
    chat_graph(saver).invoke({"messages": [HumanMessage("here", id="h")]}, config)
    chat_graph(source).invoke({"messages": [HumanMessage("there", id="t")]}, config)
    mine = tuples(saver, "chat")
    plan = saver.ops.import_threads(source)
    assert [t.thread_id for t in plan.conflicts] == ["chat"]
    assert "newer than those imported" in (plan.conflicts[0].conflict or "")
    assert tuples(saver, "chat") == mine
    conn.close()


def latest(saver: BaseCheckpointSaver[Any], config: Any) -> Any:
    return chat_graph(saver).get_state(config).values


def _said(saver: BaseCheckpointSaver[Any], tid: str) -> list[str]:
    values = chat_graph(saver).get_state({"configurable": {"thread_id": tid}}).values
    return [str(m.content) for m in values.get("messages", [])][::2]


def _turn(saver: BaseCheckpointSaver[Any], tid: str, text: str) -> None:
    chat_graph(saver).invoke(
        {"messages": [HumanMessage(text, id=text)]}, {"configurable": {"thread_id": tid}}
    )


@pytest.mark.parametrize("when", ["after the plan", "after the thread is read again"])
def test_a_run_here_during_a_catch_up_makes_it_a_conflict_and_the_thread_goes_on(
    when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the switch, the app answers on a thread while a catch-up import is about to
    copy what the source gained: the import leaves the thread to the run (a conflict,
    nothing more written), and the thread's next runs go on; a repeat says the same."""
    source = InMemorySaver()
    _turn(source, "t", "old0")
    saver = memory_saver()
    saver.ops.import_threads(source)
    _turn(source, "t", "old1")  # in the old store, before the switch
    plan = saver.ops.plan_import(source)
    assert plan.counts["checkpoints_to_copy"] > 0 and plan.counts["conflicts"] == 0
    if when == "after the plan":
        _turn(saver, "t", "new")
    else:  # between the import's last read of the thread and its first commit
        real = saver.store.present

        def then_a_run(tid: str) -> Any:
            here = real(tid)
            _turn(saver, "t", "new")
            return here

        monkeypatch.setattr(saver.store, "present", then_a_run)
    result = plan.execute().result()
    monkeypatch.undo()
    assert result["conflicts"] == ["t"] and result["checkpoints_copied"] == 0
    assert "was written here (a run) while it was imported" in (plan.conflicts[0].conflict or "")
    assert _said(saver, "t") == ["old0", "new"]
    _turn(saver, "t", "next")
    assert _said(saver, "t") == ["old0", "new", "next"]
    assert saver.ops.import_threads(source).result()["conflicts"] == ["t"]
    assert saver.ops.verify().ok


def test_a_run_on_a_thread_an_interrupted_import_holds_is_refused_until_a_repeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An import of a thread new here dies halfway; the app's run on the thread is
    refused (not taken and hidden), saying an import may be unfinished; the repeat
    finishes the import, and the next run continues it."""
    from langgraph.checkpoint.s3dynamo import ConcurrentUpdateError

    source = InMemorySaver()
    for i in range(3):
        _turn(source, "t", f"old{i}")
    saver = memory_saver()
    real, sent = saver.index.transact, []

    def dying(writes: Any) -> None:
        sent.append(1)
        if len(sent) == 5:
            raise Interrupted
        real(writes)

    with monkeypatch.context() as m:
        m.setattr(saver.index, "transact", dying)
        with pytest.raises(Interrupted):
            saver.ops.import_threads(source)
    assert _said(saver, "t") == []
    with pytest.raises(ConcurrentUpdateError, match="copy_thread or import into it"):
        _turn(saver, "t", "hello")
    result = saver.ops.import_threads(source).result()
    assert result["conflicts"] == [] and result["checkpoints_copied"] > 0
    assert tuples(saver, "t") == tuples(source, "t")
    _turn(saver, "t", "hello")
    assert _said(saver, "t") == ["old0", "old1", "old2", "hello"]


class Interrupted(Exception):
    pass
