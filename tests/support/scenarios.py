"""Real LangGraph graphs driven the way users drive them. Each scenario runs against any
checkpointer and returns what a user would see, so s3dynamo can be compared with
LangGraph's own InMemorySaver on the same run."""

from __future__ import annotations

import asyncio
import operator
import sys
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

# LangGraph's `interrupt()` reads its run's config from a contextvar, which asyncio tasks
# carry only from Python 3.11 (langgraph/config.py): on 3.10 an async run that interrupts
# raises "Called get_config outside of a runnable context", with InMemorySaver too.
ASYNC_INTERRUPTS = sys.version_info >= (3, 11)
NO_ASYNC_INTERRUPTS = (
    "LangGraph's interrupt() in an async run needs Python 3.11 (InMemorySaver too)"
)
# The scenarios that interrupt.
INTERRUPTING = {"interrupt", "subgraph"}


class Runner:
    """Calls a compiled graph through the sync or the async API."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def invoke(self, graph: Any, inputs: Any, config: dict[str, Any], **kw: Any) -> Any:
        if self.mode == "async":
            return asyncio.run(graph.ainvoke(inputs, config, **kw))
        return graph.invoke(inputs, config, **kw)

    def state(self, graph: Any, config: dict[str, Any], **kw: Any) -> Any:
        if self.mode == "async":
            return asyncio.run(graph.aget_state(config, **kw))
        return graph.get_state(config, **kw)

    def history(self, graph: Any, config: dict[str, Any]) -> list[Any]:
        if self.mode == "async":

            async def collect() -> list[Any]:
                return [s async for s in graph.aget_state_history(config)]

            return asyncio.run(collect())
        return list(graph.get_state_history(config))

    def update(self, graph: Any, config: dict[str, Any], values: Any, **kw: Any) -> Any:
        if self.mode == "async":
            return asyncio.run(graph.aupdate_state(config, values, **kw))
        return graph.update_state(config, values, **kw)


def snapshot_view(s: Any) -> dict[str, Any]:
    """The parts of a StateSnapshot a user reads, without ids and timestamps."""
    return {
        "values": _plain(s.values),
        "next": tuple(s.next),
        "step": s.metadata.get("step") if s.metadata else None,
        "source": s.metadata.get("source") if s.metadata else None,
        "interrupts": [i.value for i in s.interrupts],
        "tasks": [(t.name, t.error is not None) for t in s.tasks],
    }


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "model_dump"):
        dumped = value.model_dump()
        return {k: dumped[k] for k in ("type", "content", "id")}
    return value


# ------------------------------------------------------------------ chat memory


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


def chat_graph(checkpointer: BaseCheckpointSaver) -> Any:
    def respond(state: ChatState) -> dict[str, Any]:
        turn = state.get("turns", 0) + 1
        heard = " / ".join(str(m.content) for m in state["messages"] if m.type == "human")
        return {
            "messages": [AIMessage(f"turn {turn}; heard: {heard}", id=f"ai-{turn}")],
            "turns": turn,
        }

    g = StateGraph(ChatState)
    g.add_node("respond", respond)
    g.add_edge(START, "respond")
    g.add_edge("respond", END)
    return g.compile(checkpointer=checkpointer)


def scenario_memory(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    graph = chat_graph(cp)
    config = {"configurable": {"thread_id": tid}}
    for i in range(3):
        run.invoke(graph, {"messages": [HumanMessage(f"hello {i}", id=f"h-{i}")]}, config)
    return snapshot_view(run.state(graph, config))


def scenario_history(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    graph = chat_graph(cp)
    config = {"configurable": {"thread_id": tid}}
    for i in range(3):
        run.invoke(graph, {"messages": [HumanMessage(f"q{i}", id=f"h-{i}")]}, config)
    return [snapshot_view(s) for s in run.history(graph, config)]


def scenario_fork(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    """update_state on an old checkpoint creates a fork; the next run continues from it."""
    graph = chat_graph(cp)
    config = {"configurable": {"thread_id": tid}}
    for i in range(2):
        run.invoke(graph, {"messages": [HumanMessage(f"q{i}", id=f"h-{i}")]}, config)
    history = run.history(graph, config)
    after_first = next(s for s in history if s.values.get("turns") == 1 and not s.next)
    forked = run.update(graph, after_first.config, {"messages": [HumanMessage("fork", id="f")]})
    run.invoke(graph, None, forked)
    run.invoke(graph, {"messages": [HumanMessage("after", id="h-after")]}, config)
    return {
        "latest": snapshot_view(run.state(graph, config)),
        "history": [snapshot_view(s) for s in run.history(graph, config)],
    }


def scenario_replay(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    """Re-running from an old checkpoint_id replays from there."""
    graph = chat_graph(cp)
    config = {"configurable": {"thread_id": tid}}
    for i in range(3):
        run.invoke(graph, {"messages": [HumanMessage(f"q{i}", id=f"h-{i}")]}, config)
    history = run.history(graph, config)
    before_second = next(s for s in history if s.values.get("turns") == 1 and s.next)
    replayed = run.invoke(graph, None, before_second.config)
    return {"replayed": _plain(replayed), "latest": snapshot_view(run.state(graph, config))}


# ------------------------------------------------------------ interrupt / resume


class AskState(TypedDict):
    question: str
    answer: str


def ask_graph(checkpointer: BaseCheckpointSaver) -> Any:
    def ask(state: AskState) -> dict[str, Any]:
        answer = interrupt({"question": state["question"]})
        return {"answer": f"you said {answer}"}

    g = StateGraph(AskState)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g.compile(checkpointer=checkpointer)


def scenario_interrupt(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    graph = ask_graph(cp)
    config = {"configurable": {"thread_id": tid}}
    first = run.invoke(graph, {"question": "name?"}, config)
    paused = snapshot_view(run.state(graph, config))
    done = run.invoke(graph, Command(resume="Ada"), config)
    return {
        "first": _plain(first.get("__interrupt__", [None])[0].value),
        "paused": paused,
        "done": _plain(done),
        "final": snapshot_view(run.state(graph, config)),
    }


# ---------------------------------------------------------------------- subgraph


class SubState(TypedDict):
    items: Annotated[list[str], operator.add]


def sub_graph(checkpointer: BaseCheckpointSaver) -> Any:
    def inner_a(state: SubState) -> dict[str, Any]:
        return {"items": ["inner-a"]}

    def inner_b(state: SubState) -> dict[str, Any]:
        approved = interrupt("approve?")
        return {"items": [f"inner-b:{approved}"]}

    sub = StateGraph(SubState)
    sub.add_node("inner_a", inner_a)
    sub.add_node("inner_b", inner_b)
    sub.add_edge(START, "inner_a")
    sub.add_edge("inner_a", "inner_b")
    sub.add_edge("inner_b", END)

    def outer(state: SubState) -> dict[str, Any]:
        return {"items": ["outer"]}

    g = StateGraph(SubState)
    g.add_node("outer", outer)
    g.add_node("child", sub.compile())
    g.add_edge(START, "outer")
    g.add_edge("outer", "child")
    g.add_edge("child", END)
    return g.compile(checkpointer=checkpointer)


def scenario_subgraph(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    graph = sub_graph(cp)
    config = {"configurable": {"thread_id": tid}}
    run.invoke(graph, {"items": ["start"]}, config)
    paused = run.state(graph, config, subgraphs=True)
    child = paused.tasks[0].state
    namespaces = {t.name: bool(t.state) for t in paused.tasks}
    run.invoke(graph, Command(resume="yes"), config)
    return {
        "paused": snapshot_view(paused),
        "child": snapshot_view(child),
        "child_ns_seen": namespaces,
        "final": snapshot_view(run.state(graph, config)),
    }


# ------------------------------------------------------- parallel, one failing


class FanState(TypedDict):
    results: Annotated[list[str], operator.add]


def fan_graph(checkpointer: BaseCheckpointSaver, calls: dict[str, int], fail: list[bool]) -> Any:
    good_done = threading.Event()

    def good(state: FanState) -> dict[str, Any]:
        calls["good"] = calls.get("good", 0) + 1
        good_done.set()
        return {"results": ["good"]}

    def flaky(state: FanState) -> dict[str, Any]:
        calls["flaky"] = calls.get("flaky", 0) + 1
        if fail[0]:
            # Fail only once the sibling has finished and its writes are on their way,
            # which is the case this scenario is about.
            good_done.wait(5)
            time.sleep(0.2)
            raise RuntimeError("flaky branch failed")
        return {"results": ["flaky"]}

    def join(state: FanState) -> dict[str, Any]:
        return {"results": [f"joined {len(state['results'])}"]}

    g = StateGraph(FanState)
    g.add_node("good", good)
    g.add_node("flaky", flaky)
    g.add_node("join", join)
    g.add_edge(START, "good")
    g.add_edge(START, "flaky")
    g.add_edge(["good", "flaky"], "join")
    g.add_edge("join", END)
    return g.compile(checkpointer=checkpointer)


def scenario_parallel_failure(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    calls: dict[str, int] = {}
    fail = [True]
    graph = fan_graph(cp, calls, fail)
    config = {"configurable": {"thread_id": tid}}
    error = None
    try:
        run.invoke(graph, {"results": []}, config)
    except RuntimeError as exc:
        error = str(exc)
    failed_state = snapshot_view(run.state(graph, config))
    fail[0] = False
    final = run.invoke(graph, None, config)
    return {
        "error": error,
        "failed_state": failed_state,
        "final": _plain(final),
        "calls": dict(calls),
    }


# --------------------------------------------------------------- durability


def scenario_durability(mode: str) -> Callable[[BaseCheckpointSaver, Runner, str], Any]:
    def scenario(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
        graph = chat_graph(cp)
        config = {"configurable": {"thread_id": tid}}
        for i in range(2):
            run.invoke(
                graph, {"messages": [HumanMessage(f"d{i}", id=f"h-{i}")]}, config, durability=mode
            )
        return {
            "latest": snapshot_view(run.state(graph, config)),
            "history": [snapshot_view(s) for s in run.history(graph, config)],
        }

    return scenario


# --------------------------------------------------------------------- Send


class MapState(TypedDict):
    topics: list[str]
    results: Annotated[list[str], operator.add]


def send_graph(checkpointer: BaseCheckpointSaver) -> Any:
    def fan_out(state: MapState) -> list[Send]:
        return [Send("work", {"topic": t}) for t in state["topics"]]

    def work(state: dict[str, Any]) -> dict[str, Any]:
        return {"results": [f"done {state['topic']}"]}

    g = StateGraph(MapState)
    g.add_node("work", work)
    g.add_conditional_edges(START, fan_out, ["work"])
    g.add_edge("work", END)
    return g.compile(checkpointer=checkpointer)


def scenario_send(cp: BaseCheckpointSaver, run: Runner, tid: str) -> Any:
    graph = send_graph(cp)
    config = {"configurable": {"thread_id": tid}}
    run.invoke(graph, {"topics": ["a", "b", "c"], "results": []}, config)
    return snapshot_view(run.state(graph, config))


SCENARIOS: dict[str, Callable[[BaseCheckpointSaver, Runner, str], Any]] = {
    "memory": scenario_memory,
    "history": scenario_history,
    "interrupt": scenario_interrupt,
    "fork": scenario_fork,
    "replay": scenario_replay,
    "subgraph": scenario_subgraph,
    "parallel_failure": scenario_parallel_failure,
    "send": scenario_send,
    "durability_exit": scenario_durability("exit"),
    "durability_async": scenario_durability("async"),
    "durability_sync": scenario_durability("sync"),
}
