"""A chat graph of plain prose messages (add_messages), shared by the tiers: long
enough turns that values are stored as deltas, and views of its history."""

from __future__ import annotations

import random
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

WORDS = [
    "the",
    "a",
    "kettle",
    "blue",
    "order",
    "refund",
    "shipping",
    "parcel",
    "week",
    "customer",
    "asked",
    "said",
]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def prose(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def graph(cp: BaseCheckpointSaver) -> Any:
    def respond(state: State) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(prose(n, 200), id=f"ai-{n}")]}

    g = StateGraph(State)
    g.add_node("respond", respond)
    g.add_edge(START, "respond")
    g.add_edge("respond", END)
    return g.compile(checkpointer=cp)


def chat(cp: BaseCheckpointSaver, tid: str, turns: int) -> Any:
    g = graph(cp)
    for i in range(turns):
        g.invoke({"messages": [HumanMessage(prose(-i, 60), id=f"h-{i}")]}, _config(tid))
    return g


def _config(tid: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def view(g: Any, tid: str) -> list[Any]:
    return [
        ([m.content for m in s.values.get("messages", [])], s.next, s.metadata["step"])
        for s in g.get_state_history(_config(tid))
    ]
