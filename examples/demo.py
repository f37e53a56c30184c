"""s3dynamo demo: a small support agent (no LLM, deterministic nodes) on moto in process.

Shows what a user would want to see: turns remembered across invocations, an interrupt
resumed, a time-travel fork, and what the run cost in objects, bytes and AWS requests.
Run it with `make demo`.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from typing import Annotated, Any

import boto3
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from moto import mock_aws
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import S3DynamoSaver


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    order: dict[str, Any]
    refund_approved: bool


def load_order() -> dict[str, Any]:
    """The customer's order history: about 200 KB, far over inline_max, so it lives in S3."""
    rng = random.Random(1001)
    skus = ["kettle-blue", "mug-set", "tea-sampler", "descaler", "filter-pack"]
    return {
        "customer": "customer-42",
        "lines": [
            {
                "sku": rng.choice(skus),
                "qty": rng.randint(1, 4),
                "price": round(rng.uniform(3, 90), 2),
                "ordered": f"2026-{rng.randint(1, 11):02}-{rng.randint(1, 28):02}",
                "note": rng.choice(["gift wrap", "leave at door", "", "fragile"]),
            }
            for _ in range(2000)
        ],
    }


def agent(state: State) -> dict[str, Any]:
    asked = [m.content for m in state["messages"] if m.type == "human"]
    reply = f"(turn {len(asked)}) You have told me: " + "; ".join(str(a) for a in asked)
    update: dict[str, Any] = {"messages": [AIMessage(reply)]}
    if not state.get("order"):
        update["order"] = load_order()  # written once; later checkpoints only point at it
    return update


def route(state: State) -> str:
    last = str(state["messages"][-1].content).lower()
    return "approve" if "refund" in last else "agent"


def approve(state: State) -> dict[str, Any]:
    decision = interrupt({"question": "Approve a refund for this customer?"})
    verdict = "approved" if decision == "yes" else "declined"
    return {
        "refund_approved": decision == "yes",
        "messages": [AIMessage(f"A supervisor {verdict} your refund.")],
    }


def build(saver: S3DynamoSaver) -> Any:
    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("approve", approve)
    g.add_conditional_edges(START, route, ["agent", "approve"])
    g.add_edge("agent", END)
    g.add_edge("approve", END)
    return g.compile(checkpointer=saver)


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "demo")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "demo")
    with mock_aws():
        ddb, s3 = boto3.client("dynamodb"), boto3.client("s3")
        requests: Counter[str] = Counter()
        for client in (ddb, s3):
            name = client.meta.service_model.service_name

            def count(model: Any, _name: str = name, **_: Any) -> None:
                requests[f"{_name}.{model.name}"] += 1

            client.meta.events.register("before-call.*.*", count)
        saver = S3DynamoSaver(
            table="demo-checkpoints",
            bucket="demo-checkpoints",
            dynamodb_client=ddb,
            s3_client=s3,
            keys={"2026-11": os.urandom(32)},
            secret=os.urandom(32),
        )
        saver.setup()
        requests.clear()
        graph = build(saver)
        config = {"configurable": {"thread_id": "customer-42"}}

        print("== Memory: three turns on one thread")
        for text in ("Hi, my order #1001 is late", "It was a blue kettle", "Any update?"):
            out = graph.invoke({"messages": [HumanMessage(text)]}, config)
            print("  user:", text)
            print("  agent:", out["messages"][-1].content)

        print("\n== Interrupt: a refund needs a supervisor")
        out = graph.invoke({"messages": [HumanMessage("I want a refund")]}, config)
        print("  paused with:", out["__interrupt__"][0].value)
        print("  next node:", graph.get_state(config).next)
        out = graph.invoke(Command(resume="yes"), config)
        print("  resumed ->", out["messages"][-1].content, "| approved:", out["refund_approved"])

        print("\n== Time travel: go back to the second turn and say something else")
        history = list(graph.get_state_history(config))
        print(f"  {len(history)} checkpoints in the thread's history")
        second = next(
            s for s in reversed(history) if not s.next and len(s.values.get("messages", [])) == 4
        )
        out = graph.invoke({"messages": [HumanMessage("Actually, cancel it")]}, second.config)
        print("  fork:", out["messages"][-1].content)
        print(
            "  the old branch is still there:",
            graph.get_state(history[0].config).values["messages"][-1].content,
        )

        print("\n== What it cost")
        spent = Counter(requests)  # before the demo's own look at the bucket and table
        objects = s3.list_objects_v2(Bucket="demo-checkpoints").get("Contents", [])
        items = ddb.scan(TableName="demo-checkpoints")["Items"]
        item_bytes = sum(item_size(i) for i in items)
        print(f"  S3: {len(objects)} objects, {sum(o['Size'] for o in objects):,} bytes")
        print(f"  DynamoDB: {len(items)} items, about {item_bytes:,} bytes")
        print(f"  AWS requests made by the saver: {sum(spent.values())} in all")
        for op, n in sorted(spent.items()):
            print(f"    {op:28} {n}")
        marker = b"blue kettle"
        leaked = any(
            marker in s3.get_object(Bucket="demo-checkpoints", Key=o["Key"])["Body"].read()
            for o in objects
        )
        print("  plaintext 'blue kettle' readable at rest:", leaked)


def item_size(item: dict[str, Any]) -> int:
    """Approximate stored size of a DynamoDB item: attribute names plus values."""
    return sum(len(name) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind in ("S", "B"):
        return len(inner.encode() if isinstance(inner, str) else inner)
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "M":
        return 3 + sum(len(k) + 1 + _value_size(v) for k, v in inner.items())
    return 8


if __name__ == "__main__":
    main()
