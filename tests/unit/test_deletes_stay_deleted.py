"""A deleted thread stays deleted: a run that loaded it before the delete cannot write it
back (its next `put` or `put_writes` raises `ThreadDeletedError` and writes nothing), a
run that starts the thread id afresh may, and a copy or import onto the id starts a new
history that runs continue (docs/RELIABILITY.md, "Deletes stay deleted"). Crashes of a
delete racing a run are tested with the delete's other faults (tests/unit/test_faults.py).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.s3dynamo import S3DynamoSaver, ThreadDeletedError
from tests.support import raw
from tests.support.backends import Backend
from tests.support.concurrent_runs import slow_chat_graph
from tests.support.scenarios import chat_graph

# dynalite serves no TransactWriteItems: savers there run without conflict detection,
# whose heads hold a deleted thread and make the first put one transaction.
NEEDS_DETECTION = pytest.mark.unsupported_on("real", reason="no transactions on dynalite")

CONFIG: Any = {"configurable": {"thread_id": "t"}}


def say(graph: Any, text: str, tid: str = "t") -> None:
    graph.invoke({"messages": [HumanMessage(text, id=text)]}, {"configurable": {"thread_id": tid}})


def humans(graph: Any, tid: str = "t") -> list[str]:
    state = graph.get_state({"configurable": {"thread_id": tid}})
    return [str(m.content) for m in state.values.get("messages", []) if m.type == "human"]


@NEEDS_DETECTION
def test_a_run_in_flight_during_a_delete_cannot_write_the_thread_back(backend: Backend) -> None:
    """The issue's reproduction: a node is slow, the thread is deleted meanwhile, and
    the run's next checkpoint would have brought the whole conversation back."""
    saver = backend.saver()
    say(chat_graph(saver), "first")
    inside, go = threading.Event(), threading.Event()

    def hold() -> None:
        inside.set()
        assert go.wait(30)

    caught: list[BaseException] = []

    def run() -> None:
        try:
            say(slow_chat_graph(saver, hold), "second")
        except BaseException as exc:
            caught.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    assert inside.wait(30)
    saver.delete_thread("t")
    go.set()
    runner.join()
    assert len(caught) == 1 and isinstance(caught[0], ThreadDeletedError), caught
    assert "deleted after this run loaded it" in str(caught[0])
    assert saver.get_tuple(CONFIG) is None and list(saver.list(CONFIG)) == []
    assert raw.partition(saver, saver.parts.namer.thread("t")) == []
    # A new run starts the thread afresh, with nothing of the deleted conversation.
    say(chat_graph(saver), "again")
    assert humans(chat_graph(saver)) == ["again"]


@NEEDS_DETECTION
def test_writes_to_a_loaded_checkpoint_after_a_delete_are_refused(backend: Backend) -> None:
    """What a run resumed in another process does after loading the thread: its task's
    writes to the checkpoint it loaded, then its next checkpoint."""
    saver = backend.saver()
    say(chat_graph(saver), "first")
    stale = backend.saver()
    loaded = stale.get_tuple(CONFIG)
    assert loaded is not None
    saver.delete_thread("t")
    with pytest.raises(ThreadDeletedError):
        stale.put_writes(loaded.config, [("messages", ["late"])], "task-1")
    checkpoint = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
    with pytest.raises(ThreadDeletedError):
        stale.put(loaded.config, checkpoint, {"step": 9}, {})  # type: ignore[arg-type]
    assert raw.partition(saver, saver.parts.namer.thread("t")) == []


@NEEDS_DETECTION
def test_a_copy_onto_a_deleted_thread_id_continues_and_the_old_run_stays_refused(
    backend: Backend,
) -> None:
    saver = backend.saver()
    say(chat_graph(saver), "old")
    say(chat_graph(saver), "source", tid="src")
    stale = backend.saver()
    loaded = stale.get_tuple(CONFIG)
    assert loaded is not None
    saver.delete_thread("t")
    saver.copy_thread("src", "t")
    say(chat_graph(saver), "continued")
    assert humans(chat_graph(saver)) == ["source", "continued"]
    checkpoint = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
    with pytest.raises(Exception) as refused:  # the head names the copy's history now
        stale.put(loaded.config, checkpoint, {"step": 9}, {})  # type: ignore[arg-type]
    assert "not written" in str(refused.value)
    assert humans(chat_graph(saver)) == ["source", "continued"]


@NEEDS_DETECTION
def test_a_pruned_thread_stays_deleted(backend: Backend) -> None:
    saver = backend.saver()
    say(chat_graph(saver), "first")
    loaded = backend.saver().get_tuple(CONFIG)
    assert loaded is not None
    saver.prune(["t"], strategy="delete")
    checkpoint = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
    with pytest.raises(ThreadDeletedError):
        backend.saver().put(loaded.config, checkpoint, {"step": 9}, {})  # type: ignore[arg-type]
    assert saver.get_tuple(CONFIG) is None


def test_detection_off_writes_no_heads_so_it_does_not_hold_a_delete(backend: Backend) -> None:
    """Without conflict detection no head is read or written (the cheapest put), so a
    run that loaded the thread before the delete writes it back: the documented limit
    of `detect_concurrent_runs=False`."""
    saver: S3DynamoSaver = backend.saver(detect_concurrent_runs=False)
    say(chat_graph(saver), "first")
    loaded = saver.get_tuple(CONFIG)
    assert loaded is not None
    saver.delete_thread("t")
    checkpoint = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
    saver.put(loaded.config, checkpoint, {"step": 9}, {})  # type: ignore[arg-type]
    assert saver.get_tuple(CONFIG) is not None


def test_a_delete_stopped_at_any_request_never_shows_a_thread_that_refuses_runs() -> None:
    """A delete stopped at each of its requests: before its first write the thread reads
    whole and a run goes on with it; from its fence on (tombstones with marks up to what
    the heads named) it reads as deleted and a run starts afresh. Never the history shown
    with every run refused. The repeat deletes what is there and frees the id."""
    from tests.support.faults import Crash, Faults, FaultyTable
    from tests.support.savers import memory_saver

    keys, secret = {"k1": bytes(32)}, bytes(16)
    seen = set()
    for at in range(1, 8):
        saver = memory_saver(keys=keys, secret=secret)
        say(chat_graph(saver), "first")
        faulty = S3DynamoSaver(
            index=FaultyTable(saver.index, Faults(at)),
            object_store=saver.objects,
            keys=keys,
            secret=secret,
        )
        with pytest.raises(Crash):
            faulty.delete_thread("t")
        shown = humans(chat_graph(saver))
        say(chat_graph(saver), "second")  # never refused
        assert humans(chat_graph(saver)) == [*shown, "second"], at
        seen.add(tuple(shown))
        saver.delete_thread("t")
        say(chat_graph(saver), "again")
        assert humans(chat_graph(saver)) == ["again"], at
    assert seen == {("first",), ()}  # stopped before the fence, and after it
