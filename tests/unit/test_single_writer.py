"""With concurrent-run detection on (the default), every single-writer path LangGraph has
keeps working: replays, forks by `update_state` and by `__copy__`, bulk updates, and
subgraph state loaded on replay or across ticks, in one process or handed from one
process to another. Each test failed with `ConcurrentUpdateError` (or, the first, with
the old answer) when detection remembered per process how a checkpoint was loaded.
Two runs that continue the same latest checkpoint are still refused (last tests here,
and `test_concurrency.py`)."""

from __future__ import annotations

import asyncio
import operator
import os
import threading
from typing import Annotated, Any

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import Command, StateUpdate, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import ConcurrentUpdateError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from tests.support.memory_index import MemoryIndex
from tests.support.savers import memory_saver
from tests.support.scenarios import ASYNC_INTERRUPTS, NO_ASYNC_INTERRUPTS


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def config(tid: str = "t", **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid, **extra}}


def two_processes() -> tuple[S3DynamoSaver, S3DynamoSaver]:
    """Two savers on one store with the same keys: two Lambda processes taking turns."""
    index, objects = MemoryIndex(), MemoryObjects()
    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    return (
        memory_saver(index, objects, keys=keys, secret=secret),
        memory_saver(index, objects, keys=keys, secret=secret),
    )


def chain(saver: S3DynamoSaver) -> Any:
    """START -> a -> b, each appending its name."""
    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=saver)


def with_asking_subgraph(saver: S3DynamoSaver) -> Any:
    """router -> stateful subgraph (step, ask a human, step) -> post."""
    sub = StateGraph(State)
    sub.add_node("before", lambda s: {"log": ["sub-before"]})
    sub.add_node("ask", lambda s: {"log": [f"human:{interrupt('answer?')}"]})
    sub.add_node("after", lambda s: {"log": ["sub-after"]})
    sub.add_edge(START, "before")
    sub.add_edge("before", "ask")
    sub.add_edge("ask", "after")
    g = StateGraph(State)
    g.add_node("router", lambda s: {"log": ["routed"]})
    g.add_node("sub", sub.compile(checkpointer=True))
    g.add_node("post", lambda s: {"log": ["post"]})
    g.add_edge(START, "router")
    g.add_edge("router", "sub")
    g.add_edge("sub", "post")
    return g.compile(checkpointer=saver)


class SubState(TypedDict):
    trail: Annotated[list[str], operator.add]


def with_counting_subgraph(saver: S3DynamoSaver, seen: list[list[str]]) -> Any:
    """parent -> stateful subgraph whose one node records the state it was given (the
    subgraph shares no key with the parent: its state is only its own)."""

    def count(s: SubState) -> dict[str, Any]:
        seen.append(list(s.get("trail", [])))
        return {"trail": ["s"]}

    sub = StateGraph(SubState)
    sub.add_node("count", count)
    sub.add_edge(START, "count")
    g = StateGraph(State)
    g.add_node("parent", lambda s: {"log": ["p"]})
    g.add_node("sub", sub.compile(checkpointer=True))
    g.add_edge(START, "parent")
    g.add_edge("parent", "sub")
    return g.compile(checkpointer=saver)


def test_replay_of_a_subgraph_interrupt_then_resume_gives_the_new_answer() -> None:
    graph = with_asking_subgraph(memory_saver())
    graph.invoke({"log": []}, config())
    graph.invoke(Command(resume="old"), config())
    at_sub = next(s for s in graph.get_state_history(config()) if s.next == ("sub",))
    graph.invoke(None, at_sub.config)  # the subgraph asks again
    out = graph.invoke(Command(resume="new"), config())
    assert "human:new" in out["log"] and "human:old" not in out["log"]
    assert out["log"][-2:] == ["sub-after", "post"]


def test_a_copy_fork_and_an_update_of_the_same_checkpoint() -> None:
    graph = chain(memory_saver())
    graph.invoke({"log": []}, config())
    before_b = next(s for s in graph.get_state_history(config()) if s.next == ("b",))
    copied = graph.update_state(before_b.config, None, as_node="__copy__")
    assert graph.get_state(copied).metadata["source"] == "fork"
    updated = graph.update_state(before_b.config, {"log": ["x"]})
    assert graph.get_state(updated).metadata["source"] == "update"
    assert graph.invoke(None, copied)["log"] == ["a", "b"]
    assert graph.invoke(None, updated)["log"] == ["a", "x", "b"]


def test_a_bulk_update_after_a_copy() -> None:
    graph = chain(memory_saver())
    graph.invoke({"log": ["in-1"]}, config())
    graph.invoke({"log": ["in-2"]}, config())
    base = next(s for s in graph.get_state_history(config()) if s.next == ("a",))
    forked = graph.bulk_update_state(
        base.config, [[StateUpdate(None, "__copy__")], [StateUpdate({"log": ["s2"]}, "a")]]
    )
    assert graph.get_state(forked).values["log"][-1] == "s2"


def test_a_subgraph_loads_its_state_from_before_the_replay_point() -> None:
    seen: list[list[str]] = []
    graph = with_counting_subgraph(memory_saver(), seen)
    graph.invoke({"log": []}, config())
    graph.invoke({"log": []}, config())
    assert seen == [[], ["s"]]  # the subgraph's state carries across invocations
    first = [s for s in graph.get_state_history(config()) if s.next == ("sub",)][-1]
    seen.clear()
    graph.invoke(None, first.config)
    assert seen == [[]]  # as it was before the first invocation
    graph.invoke({"log": []}, config())  # and the thread goes on from the replay
    assert seen == [[], ["s"]]


def test_forks_and_replays_handed_between_processes() -> None:
    """Process one writes, process two appends, then process one forks and replays
    checkpoints it wrote or loaded before process two moved the thread on."""
    one, two = two_processes()
    seen: list[list[str]] = []
    graph_one = with_counting_subgraph(one, seen)
    graph_two = with_counting_subgraph(two, seen)
    graph_one.invoke({"log": []}, config())
    state_one = graph_one.get_state(config())
    graph_two.invoke({"log": []}, config())
    graph_one.update_state(state_one.config, None, as_node="__copy__")
    graph_one.update_state(state_one.config, {"log": ["x"]})
    first = [s for s in graph_one.get_state_history(config()) if s.next == ("sub",)][-1]
    graph_one.invoke(None, first.config)
    graph_two.invoke({"log": []}, config())
    out = graph_one.invoke({"log": []}, config())
    # The replay gave the subgraph its state from before the first run; each later run,
    # whichever process made it, continued from the one before.
    assert seen == [[], ["s"], [], ["s"], ["s", "s"]]
    assert out == {"log": ["p", "p", "p"]}
    assert graph_two.get_state(config()).values == out  # both processes read one latest


@pytest.mark.skipif(not ASYNC_INTERRUPTS, reason=NO_ASYNC_INTERRUPTS)
def test_async_forks_replays_and_subgraphs() -> None:
    async def main() -> None:
        seen: list[list[str]] = []
        graph = with_counting_subgraph(memory_saver(), seen)
        await graph.ainvoke({"log": []}, config())
        await graph.ainvoke({"log": []}, config())
        first = [s async for s in graph.aget_state_history(config()) if s.next == ("sub",)][-1]
        seen.clear()
        await graph.ainvoke(None, first.config)
        assert seen == [[]]
        await graph.aupdate_state(first.config, None, as_node="__copy__")
        asking = with_asking_subgraph(memory_saver())
        await asking.ainvoke({"log": []}, config())
        await asking.ainvoke(Command(resume="old"), config())
        history = [s async for s in asking.aget_state_history(config())]
        at_sub = next(s for s in history if s.next == ("sub",))
        await asking.ainvoke(None, at_sub.config)
        out = await asking.ainvoke(Command(resume="new"), config())
        assert "human:new" in out["log"] and "human:old" not in out["log"]

    asyncio.run(main())


# ------------------------------------------------- what detection still refuses


def _paused_chain(saver: S3DynamoSaver, gate: threading.Event, entered: threading.Event) -> Any:
    """START -> a -> b, where b waits for `gate`."""

    def b(s: State) -> dict[str, Any]:
        entered.set()
        assert gate.wait(10)
        return {"log": ["b"]}

    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("shared", [False, True], ids=["two-processes", "one-saver"])
def test_a_run_overtaken_midway_is_refused_at_its_next_step(shared: bool) -> None:
    """Run one commits its first steps and pauses; run two loads that as the latest and
    finishes; run one's next step no longer continues the head and is refused."""
    one, two = two_processes()
    if shared:
        two = one
    gate, entered = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first_run() -> None:
        try:
            # durability="sync": a's checkpoint is committed before b starts.
            _paused_chain(one, gate, entered).invoke({"log": []}, config(), durability="sync")
        except BaseException as exc:
            errors.append(exc)

    runner = threading.Thread(target=first_run)
    runner.start()
    assert entered.wait(10)
    chain(two).invoke({"log": ["second"]}, config())
    gate.set()
    runner.join(10)
    assert len(errors) == 1 and isinstance(errors[0], ConcurrentUpdateError)
    latest = chain(two).get_state(config()).values["log"]
    assert latest.count("second") == 1


def test_two_async_runs_on_the_latest_one_is_refused() -> None:
    async def main() -> list[BaseException | None]:
        saver = memory_saver()
        await chain(saver).ainvoke({"log": []}, config())
        arrived, both = [0], asyncio.Event()

        async def a_node(s: State) -> dict[str, Any]:
            arrived[0] += 1
            if arrived[0] == 2:
                both.set()
            await asyncio.wait_for(both.wait(), 10)  # both runs loaded the same latest
            return {"log": ["a"]}

        g = StateGraph(State)
        g.add_node("a", a_node)
        g.add_edge(START, "a")
        graph = g.compile(checkpointer=saver)
        results = await asyncio.gather(
            graph.ainvoke({"log": ["x"]}, config()),
            graph.ainvoke({"log": ["y"]}, config()),
            return_exceptions=True,
        )
        return [r if isinstance(r, BaseException) else None for r in results]

    outcomes = asyncio.run(main())
    assert sum(isinstance(o, ConcurrentUpdateError) for o in outcomes) == 1
