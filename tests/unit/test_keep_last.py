"""`keep_last`: pruning (and retention, `tests/unit/test_retention.py`) keeps each
namespace's N newest checkpoints, read back exactly as before: values, pending writes,
interrupts, the tasks a resume runs, DeltaChannel state; everything older goes. A copy
with `keep_last` copies just those, at a cost that does not grow with the history.
`keep_latest` is N = 1. Faults at every request: `tests/unit/test_faults.py` (ops
`prune keep_last`, `expire keep_last`); the request budget:
`tests/aws/test_bulk_budgets.py`."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError, ThreadExistsError
from tests.support.backends import Backend
from tests.support.graphs import converse, delta_graph
from tests.support.scenarios import chat_graph, snapshot_view, sub_graph
from tests.support.unchanged import nothing_written


def config(tid: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def snapshots(graph: Any, tid: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Every checkpoint of a thread as a user reads it, newest first, with its id."""
    return [
        {"id": s.config["configurable"]["checkpoint_id"], **snapshot_view(s)}
        for s in graph.get_state_history(config(tid), **kwargs)
    ]


def chat(saver: S3DynamoSaver, tid: str, turns: int) -> Any:
    graph = chat_graph(saver)
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(f"message {i}", id=f"{tid}-{i}")]}, config(tid))
    return graph


@pytest.mark.parametrize("keep_last", [1, 2, 5])
def test_the_newest_n_read_back_as_before_and_the_rest_is_gone(
    backend: Backend, keep_last: int
) -> None:
    saver = backend.saver(inline_max=0)  # every value an object: those of the rest go too
    graph = chat(saver, "t", 4)
    before = snapshots(graph, "t")
    assert len(before) > keep_last
    latest = graph.get_state(config("t"))
    objects = len(saver.parts.engine.objects.list_owner(saver.parts.namer.thread("t")))
    saver.prune(["t"], keep_last=keep_last)
    assert snapshots(graph, "t") == before[:keep_last]
    assert snapshot_view(graph.get_state(config("t"))) == snapshot_view(latest)
    assert len(saver.parts.engine.objects.list_owner(saver.parts.namer.thread("t"))) < objects
    # The conversation goes on from where it was.
    graph.invoke({"messages": [HumanMessage("again", id="again")]}, config("t"))
    assert graph.get_state(config("t")).values["messages"][-1].content.endswith("again")


def test_keep_last_1_is_keep_latest(saver: S3DynamoSaver) -> None:
    graph = chat(saver, "a", 3)
    chat(saver, "b", 3)
    before = {tid: snapshots(graph, tid) for tid in ("a", "b")}
    saver.prune(["a"], keep_last=1)
    saver.prune(["b"], strategy="keep_latest")
    assert {tid: snapshots(graph, tid) for tid in ("a", "b")} == {
        tid: history[:1] for tid, history in before.items()
    }


def test_a_delta_channel_thread_keeps_what_its_newest_n_are_rebuilt_from(
    saver: S3DynamoSaver,
) -> None:
    # A snapshot every 4 updates, two updates a turn: the newest are rebuilt from writes.
    graph, theirs = delta_graph(saver, 4), delta_graph(InMemorySaver(), 4)
    for g in (graph, theirs):
        converse(g, "t", 9)
    before = snapshots(graph, "t")
    saver.prune(["t"], keep_last=3)
    after = snapshots(graph, "t")
    assert after[:3] == before[:3]
    assert 3 <= len(after) <= 3 + 4  # ancestors back to the snapshot, no more
    converse(graph, "t", 1, start=9), converse(theirs, "t", 1, start=9)
    assert graph.get_state(config("t")).values == theirs.get_state(config("t")).values


def test_each_namespace_keeps_its_own_newest_n(saver: S3DynamoSaver) -> None:
    graph = sub_graph(saver)
    graph.invoke({"items": ["start"]}, config("t"))  # paused inside the subgraph
    paused = graph.get_state(config("t"), subgraphs=True)
    child_ns = paused.tasks[0].state.config["configurable"]["checkpoint_ns"]
    child = {"configurable": {"thread_id": "t", "checkpoint_ns": child_ns}}
    child_history = [snapshot_view(s) for s in graph.get_state_history(child)]
    root_history = snapshots(graph, "t")
    assert len(child_history) > 2 and len(root_history) > 2
    saver.prune(["t"], keep_last=2)
    assert snapshots(graph, "t") == root_history[:2]
    assert [snapshot_view(s) for s in graph.get_state_history(child)] == child_history[:2]
    graph.invoke(Command(resume="yes"), config("t"))
    assert graph.get_state(config("t")).values["items"][-1] == "inner-b:yes"


# ----------------------------------------- two tools that interrupt in the same step


class ToolsState(TypedDict):
    results: Annotated[list[str], operator.add]


def two_tools_graph(checkpointer: Any) -> Any:
    """A model step, then two tool calls in parallel, each asking a human first."""

    def model(state: ToolsState) -> dict[str, Any]:
        return {"results": ["model: call search and refund"]}

    def tool(name: str) -> Any:
        def run(state: ToolsState) -> dict[str, Any]:
            answer = interrupt(f"allow {name}?")
            return {"results": [f"{name}: {answer}"]}

        return run

    g = StateGraph(ToolsState)
    g.add_node("model", model)
    g.add_node("search", tool("search"))
    g.add_node("refund", tool("refund"))
    g.add_edge(START, "model")
    g.add_edge("model", "search")
    g.add_edge("model", "refund")
    g.add_edge("search", END)
    g.add_edge("refund", END)
    return g.compile(checkpointer=checkpointer)


def interrupts_by_tool(graph: Any, tid: str) -> dict[str, str]:
    state = graph.get_state(config(tid))
    return {t.name: t.interrupts[0].id for t in state.tasks if t.interrupts}


@pytest.mark.parametrize("keep_last", [1, 2])
def test_two_tools_that_interrupted_together_both_resume_after_pruning(
    saver: S3DynamoSaver, keep_last: int
) -> None:
    ours, theirs = two_tools_graph(saver), two_tools_graph(InMemorySaver())
    for graph in (ours, theirs):
        graph.invoke({"results": []}, config("t"))
    asked = interrupts_by_tool(ours, "t")
    assert set(asked) == {"search", "refund"}
    saver.prune(["t"], keep_last=keep_last)
    assert interrupts_by_tool(ours, "t") == asked  # both questions still pending
    # One answer now: the search runs, the refund asks again; its write is pending.
    for graph in (ours, theirs):
        ids = interrupts_by_tool(graph, "t")
        graph.invoke(Command(resume={ids["search"]: "yes"}), config("t"))
    saver.prune(["t"], keep_last=keep_last)
    assert set(interrupts_by_tool(ours, "t")) == {"refund"}
    for graph in (ours, theirs):
        ids = interrupts_by_tool(graph, "t")
        graph.invoke(Command(resume={ids["refund"]: "no"}), config("t"))
    final = ours.get_state(config("t"))
    assert final.values == theirs.get_state(config("t")).values
    assert sorted(final.values["results"]) == [
        "model: call search and refund",
        "refund: no",
        "search: yes",
    ]
    assert not final.next


def test_time_travel_one_step_back_after_keep_last_2(saver: S3DynamoSaver) -> None:
    ours, theirs = chat(saver, "t", 3), chat(InMemorySaver(), "t", 3)  # type: ignore[arg-type]
    saver.prune(["t"], keep_last=2)
    for graph in (ours, theirs):
        back = list(graph.get_state_history(config("t")))[1]
        graph.invoke(None, back.config)  # replay from one step back
    assert ours.get_state(config("t")).values == theirs.get_state(config("t")).values


def test_aprune_keeps_the_same(saver: S3DynamoSaver) -> None:
    graph = chat(saver, "t", 3)
    before = snapshots(graph, "t")
    asyncio.run(saver.aprune(["t"], keep_last=2))
    assert snapshots(graph, "t") == before[:2]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"keep_last": 0}, "at least 1"),
        ({"keep_last": -3}, "at least 1"),
        ({"keep_last": True}, "whole number"),
        ({"keep_last": 2.5}, "whole number"),
        ({"keep_last": "3"}, "whole number"),
        ({"strategy": "delete", "keep_last": 3}, "keep_latest"),
    ],
)
def test_a_wrong_keep_last_is_named_and_nothing_is_pruned(
    backend: Backend, arguments: dict[str, Any], named: str
) -> None:
    saver = backend.saver()
    chat(saver, "t", 2)
    with nothing_written(backend), pytest.raises(InvalidConfigError, match=named):
        saver.prune(["t"], **arguments)
    with nothing_written(backend), pytest.raises(InvalidConfigError, match=named):
        saver.ops.plan_prune(["t"], **arguments)


# ------------------------------------------------------------ copying the newest N


def test_a_copy_of_the_newest_n_reads_back_as_the_sources_newest_n(backend: Backend) -> None:
    saver = backend.saver(inline_max=0)  # every value an object: the copy shares them
    graph = chat(saver, "src", 5)
    source = snapshots(graph, "src")
    saver.copy_thread("src", "dst", keep_last=2)
    assert snapshots(graph, "dst") == source[:2]
    # The copy goes on from the source's latest state; the source is untouched.
    graph.invoke({"messages": [HumanMessage("again", id="again")]}, config("dst"))
    assert len(graph.get_state(config("dst")).values["messages"]) == 12
    assert snapshots(graph, "src") == source


def test_a_copy_of_the_newest_n_of_a_delta_channel_thread_rebuilds_as_the_source(
    saver: S3DynamoSaver,
) -> None:
    graph, theirs = delta_graph(saver, 4), delta_graph(InMemorySaver(), 4)
    for g in (graph, theirs):
        converse(g, "t", 9)
    saver.copy_thread("t", "c", keep_last=3)
    assert snapshots(graph, "c")[:3] == snapshots(graph, "t")[:3]
    converse(graph, "c", 1, start=9), converse(theirs, "t", 1, start=9)
    assert graph.get_state(config("c")).values == theirs.get_state(config("t")).values


def test_a_copy_of_the_newest_n_keeps_each_namespaces_own(saver: S3DynamoSaver) -> None:
    graph = sub_graph(saver)
    graph.invoke({"items": ["start"]}, config("t"))  # paused inside the subgraph
    saver.copy_thread("t", "c", keep_last=2)
    assert snapshots(graph, "c") == snapshots(graph, "t")[:2]
    graph.invoke(Command(resume="yes"), config("c"))
    assert graph.get_state(config("c")).values["items"][-1] == "inner-b:yes"


def test_a_copy_of_the_newest_n_onto_more_of_the_source_says_so(saver: S3DynamoSaver) -> None:
    """A target that holds more of the source than keep_last copies (a full copy since,
    or the newest of before the source went on) is refused saying that, and how to go
    on; one with a checkpoint of its own, saying that."""
    graph = chat(saver, "rp", 3)
    saver.copy_thread("rp", "rpU", keep_last=1)
    saver.copy_thread("rp", "rpU")  # every checkpoint: it holds more than the newest
    chat(saver, "rp", 1)  # and the source goes on
    refusal = (
        "copy_thread target 'rpU' holds more of 'rp' than a copy with keep_last=1 writes: "
        "checkpoints of 'rp' besides each namespace's 1 newest (and the ancestors they "
        "need), written there before; a copy never removes what the target holds. Copy "
        "without keep_last to bring the target up to date, or delete it first "
        "(delete_thread) to copy only the newest"
    )
    with pytest.raises(ThreadExistsError) as copying:
        saver.copy_thread("rp", "rpU", keep_last=1)
    with pytest.raises(ThreadExistsError) as planning:  # `s3dynamo copy --keep-last 1`
        saver.ops.plan_copy("rp", "rpU", keep_last=1)
    assert str(copying.value) == str(planning.value) == refusal
    saver.copy_thread("rp", "rpU")  # as it says: brought up to date
    assert snapshots(graph, "rpU") == snapshots(graph, "rp")
    graph.invoke({"messages": [HumanMessage("mine", id="mine")]}, config("rpU"))
    with pytest.raises(ThreadExistsError) as own:
        saver.copy_thread("rp", "rpU", keep_last=1)
    assert str(own.value).startswith(
        "copy_thread target 'rpU' already has checkpoints that are not part of a copy of 'rp'"
    )


@pytest.mark.unsupported_on(
    "real", reason="counts a copy's borrowing and loans as one transaction; dynalite has none"
)
def test_a_copy_of_the_newest_n_costs_the_same_whatever_the_history(backend: Backend) -> None:
    sent = []
    for turns in (4, 40):
        saver = backend.saver(inline_max=0)
        chat(saver, f"long-{turns}", turns)
        saver.copy_thread(f"long-{turns}", f"warm-{turns}", keep_last=2)  # format recorded
        backend.reset()
        saver.copy_thread(f"long-{turns}", f"copy-{turns}", keep_last=2)
        sent.append(backend.calls())
    # The heads, one page of the namespace newest first, the target; the loans (one
    # transaction) and the copied records read again by key; marks and heads, the
    # records, the marks removed: 8 requests at 4 turns and at 40.
    assert sent[0] == sent[1]
    assert sum(v for k, v in sent[0].items() if k.startswith("dynamodb.")) == 8
