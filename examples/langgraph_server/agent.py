"""A tiny graph for the LangGraph server: it remembers what it was told on a thread.

It is compiled without a checkpointer: the server attaches the one that langgraph.json
names (checkpointer.py), as it does for every graph it serves.
"""

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def remember(state: State) -> dict[str, Any]:
    heard = [str(m.content) for m in state["messages"] if m.type == "human"]
    return {"messages": [AIMessage(f"so far you said: {' | '.join(heard)}")]}


builder = StateGraph(State)
builder.add_node("remember", remember)
builder.add_edge(START, "remember")
builder.add_edge("remember", END)
graph = builder.compile()
