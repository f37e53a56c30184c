"""A LangGraph agent on AWS Lambda, checkpointed by s3dynamo. No LLM: deterministic nodes.

The graph: `agent` reads the last message. "refund <order id>" makes it call the
`lookup_order` tool (a `ToolNode` step); a refundable order goes to `approval`, which
calls `interrupt()` and waits for a human; anything else gets a plain reply. Every turn
is checkpointed, so each invocation may land on a different container.

One request per invocation; events and responses are plain JSON:

    {"action": "start", "message": "hello"}                     -> new thread (id in reply)
    {"action": "start", "thread_id": "t-1", "message": "..."}   -> new thread with that id
    {"action": "send", "thread_id": "t-1", "message": "refund A-1001"}
    {"action": "resume", "thread_id": "t-1", "approved": true, "by": "maria"}
    {"action": "history", "thread_id": "t-1", "limit": 20}      -> checkpoints, newest first
    {"action": "delete", "thread_id": "t-1"}                    -> forget the thread
    {"action": "collect"}                                       -> delete what crashed writes left

Replies carry `"ok": true` or `"ok": false` with an `"error"`.

Two runs on one thread at once (a retried delivery, a double-clicked send): the saver
refuses the one that commits second with `ConcurrentUpdateError`, having written nothing
of it. The handler then runs the action again on the new latest state, checks included,
at most `RUN_ATTEMPTS` times with jittered backoff, and otherwise answers `"ok": false,
"retry": true`. Nothing is lost or repeated either way. With SERIALIZE_RUNS=1 runs on
one thread wait for each other instead: start, send and resume run under
`saver.ops.thread_lock(thread_id, context=context)`, whose lease never outlives the
invocation, and whose wait ends in time to answer `"retry": true`.

Each invocation also prints one line of CloudWatch embedded metric format: the saver's
requests by service, bytes read and written (stored and logical), cache hits, waves,
retries and throttles during it (`telemetry.collect()`), in namespace
POWERTOOLS_METRICS_NAMESPACE (default "s3dynamo") with the dimension `service`
(POWERTOOLS_SERVICE_NAME, default "lambda_agent"), as Powertools' Metrics writes them.

Configuration comes from
the environment (`S3DynamoSaver.from_env()`): S3DYNAMO_TABLE, S3DYNAMO_BUCKET,
S3DYNAMO_PREFIX, and one key source: S3DYNAMO_KMS_KEY_ID (what the Terraform example
sets), or S3DYNAMO_KEYS + S3DYNAMO_SECRET. Without one the saver refuses to start.
"""

from __future__ import annotations

import json
import operator
import os
import random
import re
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import ConcurrentUpdateError, LeaseTimeoutError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.telemetry import Figures, collect

MAX_MESSAGE_CHARS = 4000
MAX_THREAD_ID_CHARS = 128
MAX_HISTORY = 100
# Runs of one action when another run keeps committing to the thread first; the backoff
# doubles from RETRY_BACKOFF seconds (jittered), about a second in all at most.
RUN_ATTEMPTS = 3
RETRY_BACKOFF = 0.1
# Runs on one thread wait for each other under the thread's lease instead of retrying.
SERIALIZE_RUNS = os.environ.get("SERIALIZE_RUNS") == "1"
# Where each invocation's figures go in CloudWatch: Powertools' variables and defaults.
METRICS_NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "s3dynamo")
SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "lambda_agent")

# The shop's order book, standing in for a database the tool would query.
ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {"item": "blue kettle", "amount": 49.0, "status": "delivered"},
    "A-1002": {"item": "mug set", "amount": 24.5, "status": "refunded"},
    "A-1003": {"item": "tea sampler", "amount": 18.0, "status": "delivered"},
}
REFUND = re.compile(r"\brefund\b\D*?([A-Za-z]-?\d{3,})", re.IGNORECASE)


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    pending_refund: dict[str, Any] | None
    refunds: Annotated[list[dict[str, Any]], operator.add]


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up in the shop's order book by its id, e.g. A-1001."""
    key = order_id.upper()
    if not key.startswith("A-"):
        key = "A-" + key.lstrip("A")
    order = ORDERS.get(key)
    return json.dumps({"order_id": key, "found": order is not None, **(order or {})})


def agent(state: State) -> dict[str, Any]:
    messages = state["messages"]
    last = messages[-1]
    if isinstance(last, HumanMessage):
        text = str(last.content)
        if match := REFUND.search(text):
            call = {
                "name": "lookup_order",
                "args": {"order_id": match.group(1)},
                "id": f"call-{len(messages)}",
                "type": "tool_call",
            }
            return {"messages": [AIMessage("", tool_calls=[call])]}
        turns = sum(isinstance(m, HumanMessage) for m in messages)
        return {
            "messages": [
                AIMessage(
                    f"(turn {turns}) Noted: {text!r}. Ask me to 'refund <order id>' "
                    "and I will look the order up."
                )
            ]
        }
    if isinstance(last, ToolMessage):
        order = json.loads(str(last.content))
        if not order["found"]:
            return {"messages": [AIMessage(f"I cannot find order {order['order_id']}.")]}
        if order["status"] == "refunded":
            return {"messages": [AIMessage(f"Order {order['order_id']} is already refunded.")]}
        return {"pending_refund": order}
    return {"messages": [AIMessage("I have nothing to add.")]}


def route(state: State) -> str:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return "tools"
    if state.get("pending_refund"):
        return "approval"
    return END


def approval(state: State) -> dict[str, Any]:
    order = state["pending_refund"] or {}
    decision = interrupt(
        {
            "question": f"Refund {order['amount']:.2f} for order {order['order_id']} "
            f"({order['item']})?",
            "order_id": order["order_id"],
            "amount": order["amount"],
        }
    )
    approved = bool(decision.get("approved")) if isinstance(decision, dict) else False
    by = str(decision.get("by", "a reviewer")) if isinstance(decision, dict) else "a reviewer"
    verdict = "approved" if approved else "declined"
    return {
        "messages": [
            AIMessage(
                f"The refund of {order['amount']:.2f} for order {order['order_id']} "
                f"was {verdict} by {by}."
            )
        ],
        "pending_refund": None,
        "refunds": [
            {
                "order_id": order["order_id"],
                "amount": order["amount"],
                "approved": approved,
                "by": by,
            }
        ],
    }


def build_graph(checkpointer: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup_order]))
    builder.add_node("approval", approval)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", "approval", END])
    builder.add_edge("tools", "agent")
    builder.add_edge("approval", END)
    return builder.compile(checkpointer=checkpointer)


# ----------------------------------------------------------------------------- handler

# Built in the init phase (when Lambda imports this module, before the first invocation;
# with SnapStart, once, before the snapshot) and kept for every invocation of the
# container. `prime()` builds the AWS clients and whatever else the first request needs
# without sending a request, so the first invocation starts where a warm one does.
_saver = S3DynamoSaver.from_env()
_saver.prime()
_graph = build_graph(_saver)


def get_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    return _graph


class BadRequest(ValueError):
    pass


def _text(message: AnyMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content)


def _thread_id(event: dict[str, Any], *, new: bool = False) -> str:
    tid = event.get("thread_id")
    if tid is None and new:
        return str(uuid.uuid4())
    if not isinstance(tid, str) or not tid or len(tid) > MAX_THREAD_ID_CHARS:
        raise BadRequest(f"thread_id must be a string of 1 to {MAX_THREAD_ID_CHARS} characters")
    return tid


def _message(event: dict[str, Any]) -> str:
    message = event.get("message")
    if not isinstance(message, str) or not message.strip():
        raise BadRequest("message must be a non-empty string")
    if len(message) > MAX_MESSAGE_CHARS:
        raise BadRequest(f"message is longer than {MAX_MESSAGE_CHARS} characters")
    return message


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _pending(snapshot: Any) -> list[Any]:
    return [i.value for task in snapshot.tasks for i in task.interrupts]


def _reply(thread_id: str, result: dict[str, Any]) -> dict[str, Any]:
    interrupts = [i.value for i in result.get("__interrupt__", [])]
    messages = result.get("messages", [])
    last_ai = next((m for m in reversed(messages) if isinstance(m, AIMessage) and m.content), None)
    if interrupts:
        reply = str(interrupts[0].get("question")) if isinstance(interrupts[0], dict) else None
    else:
        reply = _text(last_ai) if last_ai is not None else None
    return {
        "ok": True,
        "thread_id": thread_id,
        "status": "waiting_for_approval" if interrupts else "done",
        "reply": reply,
        "interrupt": interrupts[0] if interrupts else None,
        "messages": len(messages),
        "refunds": result.get("refunds", []),
    }


def start(event: dict[str, Any]) -> dict[str, Any]:
    graph, tid, message = get_graph(), _thread_id(event, new=True), _message(event)
    if graph.get_state(_config(tid)).values:
        raise BadRequest(f"thread {tid!r} exists; use action 'send' to continue it")
    return _reply(tid, graph.invoke({"messages": [HumanMessage(message)]}, _config(tid)))


def send(event: dict[str, Any]) -> dict[str, Any]:
    graph, tid, message = get_graph(), _thread_id(event), _message(event)
    snapshot = graph.get_state(_config(tid))
    if not snapshot.values:
        raise BadRequest(f"no thread {tid!r}; use action 'start' to begin one")
    if _pending(snapshot):
        raise BadRequest(f"thread {tid!r} waits for approval; use action 'resume'")
    return _reply(tid, graph.invoke({"messages": [HumanMessage(message)]}, _config(tid)))


def resume(event: dict[str, Any]) -> dict[str, Any]:
    graph, tid = get_graph(), _thread_id(event)
    approved = event.get("approved")
    if not isinstance(approved, bool):
        raise BadRequest("approved must be true or false")
    by = event.get("by", "a reviewer")
    if not isinstance(by, str) or not by or len(by) > 100:
        raise BadRequest("by must be a string of 1 to 100 characters")
    if not _pending(graph.get_state(_config(tid))):
        raise BadRequest(f"thread {tid!r} is not waiting for approval")
    command = Command(resume={"approved": approved, "by": by})
    return _reply(tid, graph.invoke(command, _config(tid)))


def history(event: dict[str, Any]) -> dict[str, Any]:
    graph, tid = get_graph(), _thread_id(event)
    limit = event.get("limit", 20)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_HISTORY:
        raise BadRequest(f"limit must be an integer from 1 to {MAX_HISTORY}")
    checkpoints = []
    for snap in graph.get_state_history(_config(tid), limit=limit):
        messages = snap.values.get("messages", [])
        parent = snap.parent_config["configurable"]["checkpoint_id"] if snap.parent_config else None
        checkpoints.append(
            {
                "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
                "parent_checkpoint_id": parent,
                "step": snap.metadata.get("step") if snap.metadata else None,
                "source": snap.metadata.get("source") if snap.metadata else None,
                "created_at": snap.created_at,
                "next": list(snap.next),
                "messages": len(messages),
                "last_message": _text(messages[-1]) if messages else None,
                "interrupts": _pending(snap),
            }
        )
    return {"ok": True, "thread_id": tid, "checkpoints": checkpoints}


def delete(event: dict[str, Any]) -> dict[str, Any]:
    tid = _thread_id(event)
    get_graph()
    _saver.delete_thread(tid)
    return {"ok": True, "thread_id": tid, "deleted": True}


def collect_garbage(event: dict[str, Any]) -> dict[str, Any]:
    """Delete the objects that crashed or refused writes uploaded and never committed: the
    upload journal's intents older than `grace_seconds` (default an hour) whose objects
    nothing references (`saver.ops.plan_incremental_garbage_collection`). Its requests
    are ones the agent's own role makes anyway (Query, HeadObject, DeleteObjects,
    BatchWriteItem), so terraform/examples/lambda_agent schedules it on this function.
    `{"dry_run": true}` only reports. What a run does not finish, the next does."""
    grace = event.get("grace_seconds", 3600)
    if isinstance(grace, bool) or not isinstance(grace, int) or grace < 0:
        raise BadRequest(
            f"grace_seconds must be a whole number of seconds, 0 or more; got {grace!r}"
        )
    plan = _saver.ops.plan_incremental_garbage_collection(grace=timedelta(seconds=grace))
    dry_run = bool(event.get("dry_run"))
    deleted = 0 if dry_run else plan.execute()
    return {"ok": True, "dry_run": dry_run, **plan.to_dict(), "objects_deleted": deleted}


ACTIONS = {
    "start": start,
    "send": send,
    "resume": resume,
    "history": history,
    "delete": delete,
    "collect": collect_garbage,
}
RUNS = {"start", "send", "resume"}


# A sweep stops starting new threads this long before the invocation's time runs out.
EXPIRE_MARGIN_MS = 60_000


def publish(figures: Figures, **properties: Any) -> None:
    """One embedded-metric-format line on stdout, which CloudWatch Logs turns into
    metrics; `properties` ride along, searchable in Logs Insights, not metrics."""
    record = figures.emf(namespace=METRICS_NAMESPACE, dimensions={"service": SERVICE})
    print(json.dumps({**record, **properties}), flush=True)


def expire(event: Any, context: Any = None) -> dict[str, Any]:
    """AWS Lambda entry point of the scheduled retention job: every thread idle for longer
    than S3DYNAMO_RETENTION (or S3DYNAMO_TTL's default_ttl) is removed whole, or with
    keep_latest (S3DYNAMO_RETENTION_STRATEGY) pruned to its latest checkpoints (the N newest
    of each namespace with S3DYNAMO_RETENTION_KEEP_LAST); removals an earlier run left are
    finished; then Store items and node-cache entries past their TTL are removed. Without
    a retention setting threads are kept (the reply's `threads_kept` says so).
    `{"dry_run": true}` only reports. What a run cannot reach in its time, the next does.
    Runs after the first find idle threads in the table's idle index; `{"full": true}`
    scans the whole table instead (a repair, docs/OPERATIONS.md)."""
    with collect() as figures:
        reply = _expire(event, context)
    publish(figures, job="expire")
    return reply


def _expire(event: Any, context: Any) -> dict[str, Any]:
    saver = S3DynamoSaver.from_env()
    dry_run = isinstance(event, dict) and bool(event.get("dry_run"))
    full = isinstance(event, dict) and bool(event.get("full"))
    deadline = None
    if context is not None:
        left = context.get_remaining_time_in_millis() - EXPIRE_MARGIN_MS
        deadline = time.monotonic() + max(left, 0) / 1000
    reply: dict[str, Any] = {"ok": True, "dry_run": dry_run}
    if saver.settings.retention is None:
        # Threads are kept until deleted; Store items with a TTL still expire below.
        reply["threads_kept"] = "no S3DYNAMO_RETENTION (or S3DYNAMO_TTL default_ttl) is set"
    else:
        plan = saver.ops.expire_idle_threads(dry_run=dry_run, deadline=deadline, full=full)
        reply |= {
            "scanned_all": plan.scanned_all,
            "idle_threads": len(plan.idle),
            "leftovers": len(plan.leftovers),
            "active_threads": plan.active,
            "removed_threads": len(plan.removed),
            "pruned_threads": len(plan.pruned),
            "records_deleted": plan.records_deleted,
            "objects_deleted": plan.objects_deleted,
            "busy_threads": len(plan.busy),
            "left_for_next_run": len(plan.unfinished),
        }
    # Store items and node-cache entries past their TTL (hidden from reads already).
    memory = saver.ops.memory.expire(dry_run=dry_run)
    return {**reply, "memory_items_expired": sum(memory.items.values())}


def _locked(
    action: Callable[[dict[str, Any]], dict[str, Any]], event: dict[str, Any], context: Any
) -> dict[str, Any]:
    """The run under the thread's lease (SERIALIZE_RUNS=1), bounded by the invocation's
    remaining time when Lambda gave its context; else the run alone."""
    if not SERIALIZE_RUNS:
        return action(event)
    tid = _thread_id(event, new=event["action"] == "start")
    with _saver.ops.thread_lock(tid, context=context):
        return action({**event, "thread_id": tid})


def handler(event: Any, context: Any = None) -> dict[str, Any]:
    """AWS Lambda entry point: one action per invocation, JSON in, JSON out; the storage
    figures of the invocation to CloudWatch (`publish`)."""
    with collect() as figures:
        reply = _handle(event, context)
    action = event.get("action") if isinstance(event, dict) else None
    publish(figures, action=action if action in ACTIONS else None)
    return reply


def _handle(event: Any, context: Any) -> dict[str, Any]:
    if not isinstance(event, dict):
        return {"ok": False, "error": "the event must be a JSON object"}
    action = ACTIONS.get(event.get("action"))  # type: ignore[arg-type]
    if action is None:
        return {"ok": False, "error": f"action must be one of {sorted(ACTIONS)}"}
    for attempt in range(RUN_ATTEMPTS):
        try:
            return _locked(action, event, context) if event["action"] in RUNS else action(event)
        except BadRequest as exc:
            return {"ok": False, "error": str(exc)}
        except LeaseTimeoutError as exc:
            # The wait already used what the invocation could spare: answer now.
            return {"ok": False, "retry": True, "error": f"busy thread: {exc}"}
        except ConcurrentUpdateError as exc:
            if attempt + 1 == RUN_ATTEMPTS:
                return {"ok": False, "retry": True, "error": f"busy thread: {exc}"}
            time.sleep(RETRY_BACKOFF * 2**attempt * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")
