"""Thread operations behind marks, on the in-memory ports: what a reader sees while a
delete, copy or prune is interrupted, what a new run on such a thread does, and that
the read path costs the same with a mark as without (docs/RELIABILITY.md)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import ThreadDeletedError
from langgraph.checkpoint.s3dynamo.store import removal
from tests.support.savers import MemorySaver
from tests.support.scenarios import chat_graph


class Interrupted(Exception):
    pass


def _config(tid: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def _chat(saver: MemorySaver, tid: str = "t", turns: int = 3, start: int = 0) -> Any:
    graph = chat_graph(saver)
    for i in range(start, start + turns):
        graph.invoke({"messages": [HumanMessage(f"m{i}", id=f"h{i}")]}, _config(tid))
    return graph


def _history(graph: Any, tid: str = "t") -> list[Any]:
    return [s.values for s in graph.get_state_history(_config(tid))]


def _interrupt_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next record deletion applies half of its keys, then the process dies."""
    real = removal.delete_records

    def half(keys: Any) -> Any:
        keys = list(keys)
        yield from real(keys[::2])
        raise Interrupted

    monkeypatch.setattr(removal, "delete_records", half)


def test_an_interrupted_delete_reads_as_deleted_and_a_new_history_starts_cleanly(
    saver: MemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _chat(saver)
    with monkeypatch.context() as m:
        _interrupt_records(m)
        with pytest.raises(Interrupted):
            saver.delete_thread("t")
    assert saver.index.records() and saver.index.marks()  # half of it is still there
    saver.index.calls.clear()
    assert graph.get_state(_config()).values == {}
    assert saver.index.calls == {"Query": 1}  # the one Query of the read path
    assert _history(graph) == [] and list(saver.list(_config())) == []
    # A new conversation on the same thread id: newer checkpoint ids than the mark
    # hides, so they show, and nothing of the deleted one comes back.
    _chat(saver, turns=1, start=10)
    state = graph.get_state(_config())
    assert [m.content for m in state.values["messages"]] == ["m10", "turn 1; heard: m10"]
    assert len(_history(graph)) == 3
    # Repeating the delete finishes it: no record, mark or object is left, and the
    # heads stay tombstones.
    saver.delete_thread("t")
    assert not saver.index.records() and not saver.index.marks()
    assert all(h.startswith("~") for h in saver.index.heads.values()) and saver.index.heads
    assert not saver.objects.blobs
    assert graph.get_state(_config()).values == {}


def test_a_delete_stopped_right_after_its_fence_reads_as_deleted(
    saver: MemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fence (tombstone heads) goes with marks up to what the heads name: stopped
    before it reads the records, the thread reads as deleted, never as whole while runs
    on it are refused, and a new run starts a new history."""
    graph = _chat(saver)

    def stopped(*_: Any, **__: Any) -> Any:
        raise Interrupted
        yield

    with monkeypatch.context() as m:
        m.setattr(removal.Remover, "_stamps", stopped)
        with pytest.raises(Interrupted):
            saver.delete_thread("t")
    assert saver.index.records() and saver.index.marks()
    assert graph.get_state(_config()).values == {} and _history(graph) == []
    _chat(saver, turns=1, start=10)
    state = graph.get_state(_config())
    assert [m.content for m in state.values["messages"]] == ["m10", "turn 1; heard: m10"]
    saver.delete_thread("t")  # the repeat finishes it, the new history too
    assert not saver.index.records() and not saver.index.marks()
    assert graph.get_state(_config()).values == {}


def test_a_run_that_loaded_the_thread_before_a_delete_is_refused(
    saver: MemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _chat(saver)
    # The run loads the latest checkpoint, then the thread is deleted (interrupted
    # after the heads became tombstones), then the run commits on what it loaded.
    latest = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    assert latest is not None
    with monkeypatch.context() as m:
        _interrupt_records(m)
        with pytest.raises(Interrupted):
            saver.delete_thread("t")
    checkpoint = dict(latest.checkpoint, id="1fffffff-ffff-6fff-bfff-ffffffffffff")
    with pytest.raises(ThreadDeletedError, match="deleted after this run loaded it"):
        saver.put(latest.config, checkpoint, {"step": 9}, {})  # type: ignore[arg-type]
    assert graph.get_state(_config()).values == {}


def test_an_interrupted_copy_shows_nothing_at_the_target_until_a_repeat(
    saver: MemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _chat(saver)
    source = _history(graph)
    real = saver.index.batch
    calls = []

    def dying(puts: Any = (), deletes: Any = ()) -> None:
        puts = list(puts)
        calls.append(len(puts))
        # The records (the marks went before, in a transaction with the heads): half of
        # them, then death.
        if len(calls) == 1:
            real(puts[::2], deletes)
            raise Interrupted
        real(puts, deletes)

    with monkeypatch.context() as m:
        m.setattr(saver.index, "batch", dying)
        with pytest.raises(Interrupted):
            saver.copy_thread("t", "c")
    assert _history(graph, "c") == [] and graph.get_state(_config("c")).values == {}
    saver.copy_thread("t", "c")
    assert _history(graph, "c") == source and not saver.index.marks()
    saver.copy_thread("t", "c")  # complete: a repeat changes nothing
    assert _history(graph, "c") == source


def test_an_interrupted_prune_shows_the_pruned_thread_and_the_latest_unchanged(
    saver: MemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _chat(saver)
    latest = graph.get_state(_config())
    with monkeypatch.context() as m:
        _interrupt_records(m)
        with pytest.raises(Interrupted):
            saver.prune(["t"])
    state = graph.get_state(_config())
    assert state.values == latest.values and state.config == latest.config
    assert _history(graph) == [latest.values]
    # A run continues the thread meanwhile: its checkpoints are newer than the mark's.
    _chat(saver, turns=1, start=3)
    assert len(_history(graph)) == 4
    saver.prune(["t"])
    assert len(_history(graph)) == 1 and not saver.index.marks()


def test_a_run_on_a_copys_target_just_before_the_copy_writes_keeps_the_thread(
    saver: MemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target's first run commits after the copy read the target, before the copy's
    first write: the copy stops (`ThreadExistsError`, nothing of it written) and the
    thread is the run's, its next runs fine; never two histories in one thread."""
    from langgraph.checkpoint.s3dynamo import ThreadExistsError

    _chat(saver)
    real, ran = saver.index.transact, []

    def run_first(writes: Any) -> None:
        if not ran:
            ran.append(1)
            _chat(saver, "c", turns=1, start=10)
        real(writes)

    with monkeypatch.context() as m:
        m.setattr(saver.index, "transact", run_first)
        with pytest.raises(ThreadExistsError, match="was written \\(a run\\)"):
            saver.copy_thread("t", "c")
    graph = _chat(saver, "c", turns=2, start=11)
    said = [m.content for m in graph.get_state(_config("c")).values["messages"]]
    assert said[::2] == ["m10", "m11", "m12"]  # the run's history alone, going on
    assert len(_history(graph, "c")) == len(_history(_chat(saver, "x", 3, 10), "x"))
    assert not saver.index.marks()


def test_a_run_on_a_copys_target_while_the_copy_is_unfinished_is_refused_until_a_repeat(
    saver: MemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy interrupted after its marks: a run on the target is refused, saying a copy
    may be unfinished, and writes nothing; the repeat finishes the copy, and the next run
    continues it."""
    from langgraph.checkpoint.s3dynamo import ConcurrentUpdateError

    graph = _chat(saver)
    source = _history(graph)
    real = saver.index.batch

    def dying(puts: Any = (), deletes: Any = ()) -> None:
        real(list(puts)[::2], deletes)
        raise Interrupted

    with monkeypatch.context() as m:
        m.setattr(saver.index, "batch", dying)
        with pytest.raises(Interrupted):
            saver.copy_thread("t", "c")
    with pytest.raises(ConcurrentUpdateError, match="copy_thread or import into it"):
        _chat(saver, "c", turns=1, start=10)
    saver.copy_thread("t", "c")
    assert _history(graph, "c") == source
    _chat(saver, "c", turns=1, start=10)
    history = _history(graph, "c")
    assert history[len(history) - len(source) :] == source  # the copy, then the run
    assert [m.content for m in graph.get_state(_config("c")).values["messages"]][-2] == "m10"
