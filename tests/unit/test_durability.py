"""LangGraph's three durability modes, "sync", "async" (its default) and "exit", through
`invoke` and `ainvoke`, with the saver's default settings on the in-memory ports.

For each mode and API: a run with a subgraph, an interrupt and a resume reads back as
LangGraph's InMemorySaver reads it back; a node that raises after earlier steps
completed leaves, in a fresh saver on the same storage, what InMemorySaver keeps for
that mode; a request of the saver's own failing mid-run (`tests/support/faults.py`)
leaves an older part of the run's history; and a repeat of the run then finishes it.
"""

from __future__ import annotations

import operator
import os
import threading
import time
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from tests.support.faults import Crash, Faults, FaultyObjects, FaultyTable
from tests.support.memory_index import MemoryIndex
from tests.support.savers import MemorySaver, memory_saver
from tests.support.scenarios import ASYNC_INTERRUPTS, NO_ASYNC_INTERRUPTS, Runner, snapshot_view

DURABILITY = ["sync", "async", "exit"]
API = ["sync", "async"]  # invoke or ainvoke, through `Runner`
# One deployment's key and naming secret: a fresh saver with them reads what another wrote.
KEYS = {"k1": os.urandom(32)}
SECRET = os.urandom(16)
CONFIG = {"configurable": {"thread_id": "t"}}


def fresh(index: MemoryIndex, objects: MemoryObjects) -> MemorySaver:
    """A new saver on existing storage, default settings, as a restarted process has."""
    return memory_saver(index, objects, keys=KEYS, secret=SECRET)


def parametrize(test: Any) -> Any:
    test = pytest.mark.parametrize("api", API)(test)
    return pytest.mark.parametrize("durability", DURABILITY)(test)


class Items(TypedDict):
    items: Annotated[list[str], operator.add]


class Draft(Items, total=False):
    verdict: str


class Review(TypedDict, total=False):
    """The subgraph's state: `verdict` is shared with the parent, `notes` its own."""

    verdict: str
    notes: Annotated[list[str], operator.add]


# ------------------------------------------------------------ interrupt and resume


def review_graph(cp: BaseCheckpointSaver) -> Any:
    """draft, then a subgraph that notes something and asks for approval, then publish."""

    def inner_b(state: Review) -> dict[str, Any]:
        return {"verdict": f"approved:{interrupt('approve?')}"}

    sub = StateGraph(Review)
    sub.add_node("inner_a", lambda state: {"notes": ["inner-a"]})
    sub.add_node("inner_b", inner_b)
    sub.add_edge(START, "inner_a")
    sub.add_edge("inner_a", "inner_b")
    sub.add_edge("inner_b", END)

    g = StateGraph(Draft)
    g.add_node("draft", lambda state: {"items": ["draft"]})
    g.add_node("child", sub.compile())
    g.add_node("publish", lambda state: {"items": [f"publish {state['verdict']}"]})
    g.add_edge(START, "draft")
    g.add_edge("draft", "child")
    g.add_edge("child", "publish")
    g.add_edge("publish", END)
    return g.compile(checkpointer=cp)


def review(cp: BaseCheckpointSaver, run: Runner, durability: str) -> dict[str, Any]:
    graph = review_graph(cp)
    first = run.invoke(graph, {"items": ["start"]}, CONFIG, durability=durability)
    paused = run.state(graph, CONFIG, subgraphs=True)
    paused_history = run.history(graph, CONFIG)
    done = run.invoke(graph, Command(resume="yes"), CONFIG, durability=durability)
    return {
        "asked": [i.value for i in first["__interrupt__"]],
        "paused": snapshot_view(paused),
        "child": snapshot_view(paused.tasks[0].state),
        "paused_history": [snapshot_view(s) for s in paused_history],
        "done": done,
        "final": snapshot_view(run.state(graph, CONFIG)),
        "history": [snapshot_view(s) for s in run.history(graph, CONFIG)],
    }


@parametrize
def test_interrupt_and_resume_read_back_as_in_memory(durability: str, api: str) -> None:
    if api == "async" and not ASYNC_INTERRUPTS:
        pytest.skip(NO_ASYNC_INTERRUPTS)
    run = Runner(api)
    expected = review(InMemorySaver(), run, durability)
    saver = memory_saver(keys=KEYS, secret=SECRET)
    got = review(saver, run, durability)
    assert got == expected
    # What a user reads at the pause: the parent waits on the subgraph, which waits on
    # its second node, and the question is there to show.
    assert got["asked"] == ["approve?"]
    assert got["paused"]["next"] == ("child",)
    assert got["paused"]["interrupts"] == ["approve?"]
    assert got["child"]["next"] == ("inner_b",)
    assert got["child"]["values"] == {"notes": ["inner-a"]}
    final = {"items": ["start", "draft", "publish approved:yes"], "verdict": "approved:yes"}
    assert got["done"] == final
    assert got["final"]["values"] == final and got["final"]["next"] == ()
    if durability == "exit":
        # One checkpoint per invoke: where the first stopped (before child), and the end.
        assert [h["next"] for h in got["history"]] == [(), ("child",)]
    else:
        # One per step: the input, before draft, child and publish, and the end.
        assert [h["next"] for h in got["history"]] == [
            (),
            ("publish",),
            ("child",),
            ("draft",),
            ("__start__",),
        ]
    assert got["paused_history"] == got["history"][-len(got["paused_history"]) :]
    # The history is complete the same way when a new process reads it.
    again = review_graph(fresh(saver.index, saver.objects))
    assert [snapshot_view(s) for s in run.history(again, CONFIG)] == got["history"]


# ------------------------------------------------------------------ a node raises


def pipeline_graph(cp: BaseCheckpointSaver, calls: dict[str, int], fail: list[bool]) -> Any:
    """fetch, parse, then check and store side by side, then report. While `fail[0]`,
    store raises once check has finished."""
    checked = threading.Event()

    def node(name: str) -> Any:
        def run(state: Items) -> dict[str, Any]:
            calls[name] = calls.get(name, 0) + 1
            if name == "check":
                checked.set()
            if name == "store" and fail[0]:
                # Fail once check's writes are on their way, so the failed step has a
                # finished task as well as the failed one.
                checked.wait(5)
                time.sleep(0.1)
                raise RuntimeError("store failed")
            return {"items": [name]}

        return run

    g = StateGraph(Items)
    for name in ("fetch", "parse", "check", "store", "report"):
        g.add_node(name, node(name))
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "parse")
    g.add_edge("parse", "check")
    g.add_edge("parse", "store")
    g.add_edge(["check", "store"], "report")
    g.add_edge("report", END)
    return g.compile(checkpointer=cp)


def read_back(cp: BaseCheckpointSaver, run: Runner) -> dict[str, Any]:
    """What a reader finds on the thread: its state, how many checkpoints it has, and
    the pending writes of the latest one, by the name of the task that made them."""
    graph = pipeline_graph(cp, {}, [False])
    state = run.state(graph, CONFIG)
    names = {t.id: t.name for t in state.tasks}
    saved = cp.get_tuple(CONFIG)
    assert saved is not None
    pending = sorted(
        (names[task_id], channel, repr(value) if isinstance(value, Exception) else value)
        for task_id, channel, value in saved.pending_writes or []
    )
    return {
        "state": snapshot_view(state),
        "checkpoints": len(run.history(graph, CONFIG)),
        "pending": pending,
    }


def fail_then_repeat(
    cp: BaseCheckpointSaver, reader: Any, run: Runner, durability: str
) -> dict[str, Any]:
    calls: dict[str, int] = {}
    fail = [True]
    graph = pipeline_graph(cp, calls, fail)
    with pytest.raises(RuntimeError, match="store failed"):
        run.invoke(graph, {"items": ["start"]}, CONFIG, durability=durability)
    seen = read_back(reader(), run)
    fail[0] = False
    final = run.invoke(graph, None, CONFIG, durability=durability)
    return {"seen": seen, "final": final, "calls": calls}


@parametrize
def test_a_failing_node_leaves_what_the_mode_keeps(durability: str, api: str) -> None:
    run = Runner(api)
    memory = InMemorySaver()
    expected = fail_then_repeat(memory, lambda: memory, run, durability)
    saver = memory_saver(keys=KEYS, secret=SECRET)
    got = fail_then_repeat(saver, lambda: fresh(saver.index, saver.objects), run, durability)
    assert got == expected
    seen = got["seen"]
    # The latest checkpoint is the one the failed step started from: fetch and parse
    # are done, check's result is there (as a pending write) and store is still to run.
    assert seen["state"]["values"] == {"items": ["start", "fetch", "parse", "check"]}
    assert seen["state"]["next"] == ("store",)
    assert seen["state"]["tasks"] == [("check", False), ("store", True)]
    assert [(task, channel) for task, channel, _ in seen["pending"]] == [
        ("check", "items"),
        ("check", "join:check+store:report"),
        ("store", "__error__"),
    ]
    if durability == "exit":
        # On a failure, "exit" persists as it does when a run ends: the checkpoint the
        # run had reached (the one the failed step started from) and that step's
        # pending writes, the finished task's and the error. The steps before it leave
        # no checkpoint of their own.
        assert seen["checkpoints"] == 1
    else:
        # One checkpoint per step: the input, then before fetch, parse and the failed step.
        assert seen["checkpoints"] == 4
    # The repeat resumes at the failed step: check's kept writes are reused, only
    # store runs again, and the run ends as an unbroken one would.
    assert got["final"] == {"items": ["start", "fetch", "parse", "check", "store", "report"]}
    assert got["calls"] == {"fetch": 1, "parse": 1, "check": 1, "store": 2, "report": 1}


# ------------------------------------------------------- a request of the saver fails


def views(cp: BaseCheckpointSaver, run: Runner) -> list[dict[str, Any]]:
    graph = pipeline_graph(cp, {}, [False])
    return [snapshot_view(s) for s in run.history(graph, CONFIG)]


def turn(cp: BaseCheckpointSaver, run: Runner, inputs: Any, durability: str) -> Any:
    return run.invoke(pipeline_graph(cp, {}, [False]), inputs, CONFIG, durability=durability)


def faulty(index: MemoryIndex, objects: MemoryObjects, faults: Faults) -> S3DynamoSaver:
    return S3DynamoSaver(
        index=FaultyTable(index, faults),
        object_store=FaultyObjects(objects, faults),
        keys=KEYS,
        secret=SECRET,
    )


@parametrize
def test_a_failed_request_mid_run_leaves_an_older_part(durability: str, api: str) -> None:
    run = Runner(api)
    # The yardstick: two turns on InMemorySaver, the second the one that will fail.
    memory = InMemorySaver()
    turn(memory, run, {"items": ["one"]}, durability)
    turn(memory, run, {"items": ["two"]}, durability)
    full = views(memory, run)
    final = run.state(pipeline_graph(memory, {}, [False]), CONFIG).values

    base = fresh(MemoryIndex(), MemoryObjects())
    turn(base, run, {"items": ["one"]}, durability)
    before = views(base, run)
    # The second turn without a fault reads back as InMemorySaver's; count its requests.
    index, objects = base.index.clone(), base.objects.clone()
    counting = Faults()
    turn(faulty(index, objects, counting), run, {"items": ["two"]}, durability)
    assert views(fresh(index, objects), run) == full
    writes = [at for at, kind in enumerate(counting.kinds, start=1) if kind != "read"]
    # "exit" writes once, at the end: the run's final checkpoint.
    assert (len(writes) == 1) if durability == "exit" else (len(writes) > 1)

    for at in writes:
        for mode in ("before", "after"):
            where = f"request {at} of {counting.count} failed ({mode})"
            index, objects = base.index.clone(), base.objects.clone()
            faults = Faults(at, mode)
            # The failure reaches the caller, also when it hit a write LangGraph sent in
            # the background.
            with pytest.raises(Crash):
                turn(faulty(index, objects, faults), run, {"items": ["two"]}, durability)
            # A new process finds the first turn whole and the second cut short after one
            # of its checkpoints, or before its first: the oldest part of the full history.
            seen = views(fresh(index, objects), run)
            assert len(seen) >= len(before) and seen == full[len(full) - len(seen) :], where
            # The user repeats the turn: sends it again if none of it was kept, or
            # resumes from where it stopped. Either way the thread ends as unbroken.
            again = fresh(index, objects)
            turn(again, run, {"items": ["two"]} if seen == before else None, durability)
            values = run.state(pipeline_graph(again, {}, [False]), CONFIG).values
            assert values == final, where
