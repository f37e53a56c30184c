"""Graphs with a DeltaChannel, shared by the tiers: a chat whose messages channel
stores deltas, driven turn by turn, and views of its state and history."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any

from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


def concat(state: list[str], writes: Sequence[Any]) -> list[str]:
    out = list(state)
    for w in writes:
        out.extend(w if isinstance(w, list) else [w])
    return out


def delta_graph(cp: BaseCheckpointSaver, frequency: int = 100, parallel: bool = False) -> Any:
    # Built at run time: the snapshot frequency is a parameter of the channel.
    State = TypedDict(  # noqa: UP013
        "State",
        {
            "messages": Annotated[list[str], DeltaChannel(concat, snapshot_frequency=frequency)],
            "turns": Annotated[int, operator.add],
        },
    )

    def respond(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        return {"messages": [f"assistant: I read {last!r} " + "lorem ipsum " * 20], "turns": 1}

    def critic(state: Any) -> dict[str, Any]:
        return {"messages": [f"critic: {len(state['messages'])} so far"]}

    g = StateGraph(State)
    g.add_node("respond", respond)
    g.add_edge(START, "respond")
    if parallel:
        g.add_node("critic", critic)
        g.add_edge(START, "critic")
        g.add_edge("critic", END)
    g.add_edge("respond", END)
    return g.compile(checkpointer=cp)


def converse(graph: Any, tid: str, turns: int, start: int = 0) -> None:
    config = {"configurable": {"thread_id": tid}}
    for i in range(start, start + turns):
        graph.invoke({"messages": [f"user: message {i}"]}, config)


def view(graph: Any, tid: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": tid}}
    state = graph.get_state(config)
    return {"values": state.values, "next": state.next}


def history(graph: Any, tid: str) -> list[Any]:
    config = {"configurable": {"thread_id": tid}}
    return [(s.values, s.next, s.metadata["step"]) for s in graph.get_state_history(config)]


def two_step_graph(cp: BaseCheckpointSaver) -> Any:
    """Two nodes one after the other: a turn is four checkpoints (input, after
    `__start__`, after each node) and three tasks' writes."""

    class Steps(TypedDict):
        steps: Annotated[list[str], operator.add]

    def first(state: Steps) -> dict[str, Any]:
        return {"steps": [f"first read {len(state['steps'])}"]}

    def second(state: Steps) -> dict[str, Any]:
        return {"steps": [f"second read {len(state['steps'])}"]}

    g = StateGraph(Steps)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    return g.compile(checkpointer=cp)
