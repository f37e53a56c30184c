"""The graph the LangGraph server test adds to a copy of examples/langgraph_server/: a draft,
then a reviewer's verdict through an interrupt, kept in the Store. The server imports this
file by path, so it imports nothing of the tests.

`delay` (seconds) keeps the draft step running, so that a second run can meet it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict


class Review(TypedDict, total=False):
    topic: str
    delay: float
    draft: str
    verdict: str


async def write(state: Review) -> dict[str, Any]:
    await asyncio.sleep(state.get("delay", 0))
    return {"draft": f"a draft about {state['topic']}"}


async def review(state: Review) -> dict[str, Any]:
    verdict = interrupt({"draft": state["draft"]})
    await get_store().aput(("reviews",), state["topic"], {"verdict": verdict})
    return {"verdict": verdict}


builder = StateGraph(Review)
builder.add_node("write", write)
builder.add_node("review", review)
builder.add_edge(START, "write")
builder.add_edge("write", "review")
builder.add_edge("review", END)
graph = builder.compile()
