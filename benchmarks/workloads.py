"""The workloads: real compiled LangGraph graphs with deterministic, LLM-free nodes.

A `Scenario` builds its graph on a saver and returns `Phase`s to run in order. Each
phase is a list of operations (an invoke, or a read); the runner measures every phase
except setup ones. All randomness is seeded from the turn or worker number, so every
saver sees byte-identical payloads, even with Send workers running in parallel.
"""

from __future__ import annotations

import hashlib
import operator
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import textgen
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.channels import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages
from langgraph.types import Send
from typing_extensions import TypedDict

USER_BYTES = 400
ASSISTANT_BYTES = 1500
TOOL_BYTES = 4000
SUMMARY_BYTES = 500
DOCUMENT_BYTES = 2_000_000
WORKER_BYTES = 8192
WORKERS = 10


@dataclass
class Phase:
    """Operations measured together: invokes (which write) or reads."""

    label: str
    ops: list[Callable[[], Any]]
    kind: str = "invoke"  # or "read"
    measured: bool = True
    # Set by an op that stopped early (time budget), saying how far it got.
    partial: str | None = None


@dataclass
class Scale:
    chat_turns: int = 40
    counter_bumps: int = 20
    fanout_rounds: int = 5
    read_repeats: int = 5
    # A full history read is one long op, so its time swings from run to run: the
    # figure is the mean of this many (one when a read hits the time budget).
    history_repeats: int = 3
    history_budget_s: float = 60.0


@dataclass
class Scenario:
    name: str
    description: str
    build: Callable[[Any, Scale], tuple[list[Phase], Callable[[], str]]]


def _config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


# --- W1/W2 chat (W5/W6 read it back) -----------------------------------------------


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turn: int
    summary: str


class DeltaChatState(TypedDict):
    # Stores only each step's new messages; readers replay them from the last snapshot.
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]
    turn: int
    summary: str


def _assistant(state: dict[str, Any]) -> dict[str, Any]:
    turn = state.get("turn", 0) + 1
    rng = random.Random(f"assistant-{turn}")
    # Every second turn the assistant calls a tool, then answers again after it.
    tool_calls = []
    if turn % 2 == 0:
        query = " ".join(textgen.words(rng, 5))
        tool_calls = [{"name": "search", "args": {"query": query}, "id": f"call-{turn}"}]
    reply = AIMessage(
        content=textgen.prose(rng, ASSISTANT_BYTES), tool_calls=tool_calls, id=f"ai-{turn}"
    )
    summary = textgen.prose(random.Random(f"summary-{turn}"), SUMMARY_BYTES)
    return {"messages": [reply], "turn": turn, "summary": summary}


def _tool(state: dict[str, Any]) -> dict[str, Any]:
    turn = state["turn"]
    rng = random.Random(f"tool-{turn}")
    result = ToolMessage(
        content=textgen.search_results(rng, TOOL_BYTES),
        tool_call_id=f"call-{turn}",
        id=f"tool-{turn}",
    )
    return {"messages": [result]}


def _followup(state: dict[str, Any]) -> dict[str, Any]:
    turn = state["turn"]
    rng = random.Random(f"followup-{turn}")
    return {"messages": [AIMessage(content=textgen.prose(rng, ASSISTANT_BYTES), id=f"ai2-{turn}")]}


def _after_assistant(state: dict[str, Any]) -> str:
    return "tool" if state["messages"][-1].tool_calls else END


def _chat_graph(schema: type, saver: Any) -> Any:
    graph = StateGraph(schema)
    graph.add_node("assistant", _assistant)
    graph.add_node("tool", _tool)
    graph.add_node("followup", _followup)
    graph.add_edge(START, "assistant")
    graph.add_conditional_edges("assistant", _after_assistant, ["tool", END])
    graph.add_edge("tool", "followup")
    graph.add_edge("followup", END)
    return graph.compile(checkpointer=saver)


def _user_turn(
    graph: Any, config: dict[str, Any], turn: int, durability: str | None = None
) -> Callable[[], Any]:
    # Without a durability the invoke passes none, and LangGraph uses its default ("async").
    options = {} if durability is None else {"durability": durability}

    def invoke() -> Any:
        text = textgen.prose(random.Random(f"user-{turn}"), USER_BYTES)
        return graph.invoke(
            {"messages": [HumanMessage(text, id=f"user-{turn}")]}, config, **options
        )

    return invoke


def _chat(
    schema: type, label: str, reads_label: str | None, durability: str | None = None
) -> Callable[..., tuple[list[Phase], Any]]:
    """The chat, then its reads under `reads_label` (none without one)."""

    def build(saver: Any, scale: Scale) -> tuple[list[Phase], Callable[[], str]]:
        graph = _chat_graph(schema, saver)
        config = _config("chat")
        turns = [_user_turn(graph, config, t, durability) for t in range(1, scale.chat_turns + 1)]
        if reads_label is None:
            return [Phase(f"{label} chat", turns)], lambda: _digest(graph, config)
        picked: dict[str, Any] = {}

        def pick_old_checkpoint() -> None:
            # The saver's own listing (no state rebuilt): one from the first quarter.
            checkpoints = list(saver.list(config))
            picked["count"] = len(checkpoints)
            picked["old"] = checkpoints[len(checkpoints) * 3 // 4].config

        history = Phase(f"{reads_label} history", [], kind="read")

        def read_history() -> None:
            # Time-boxed: savers without a fast DeltaChannel history rebuild each
            # snapshot by walking its ancestors one get_tuple at a time (quadratic).
            deadline = time.perf_counter() + scale.history_budget_s
            done = 0
            for _ in graph.get_state_history(config):
                done += 1
                if time.perf_counter() > deadline:
                    break
            if done < picked["count"]:
                history.partial = (
                    f"stopped after {done} of {picked['count']} snapshots "
                    f"({scale.history_budget_s:.0f} s budget)"
                )

        history.ops = [read_history] * scale.history_repeats
        phases = [
            Phase(f"{label} chat", turns),
            Phase("pick old checkpoint", [pick_old_checkpoint], kind="read", measured=False),
            history,
            Phase(
                f"{reads_label} get_state latest",
                [lambda: graph.get_state(config)] * scale.read_repeats,
                kind="read",
            ),
            Phase(
                f"{reads_label} get_state old",
                [lambda: graph.get_state(picked["old"])] * scale.read_repeats,
                kind="read",
            ),
        ]
        return phases, lambda: _digest(graph, config)

    return build


# --- W3 big document, small updates --------------------------------------------------


class DocumentState(TypedDict):
    document: str
    note: str
    counter: int


def _bump(state: dict[str, Any]) -> dict[str, Any]:
    return {"counter": state.get("counter", 0) + 1}


def _document(saver: Any, scale: Scale) -> tuple[list[Phase], Callable[[], str]]:
    graph = StateGraph(DocumentState)
    graph.add_node("bump", _bump)
    graph.add_edge(START, "bump")
    compiled = graph.compile(checkpointer=saver)
    config = _config("document")
    document = textgen.prose(random.Random("document"), DOCUMENT_BYTES)

    def load() -> Any:
        return compiled.invoke({"document": document, "note": "loaded"}, config)

    def bump(i: int) -> Callable[[], Any]:
        return lambda: compiled.invoke({"note": f"bump {i}"}, config)

    phases = [
        Phase("W3 load", [load], measured=False),
        Phase("W3 counter", [bump(i) for i in range(scale.counter_bumps)]),
    ]
    return phases, lambda: _digest(compiled, config)


# --- W4 Send fan-out ----------------------------------------------------------------


class FanoutState(TypedDict):
    topic: str
    round: int
    results: Annotated[list[str], operator.add]


class WorkerTask(TypedDict):
    round: int
    worker: int


def _plan(state: dict[str, Any]) -> dict[str, Any]:
    return {"round": state.get("round", 0) + 1}


def _fan_out(state: dict[str, Any]) -> list[Send]:
    return [Send("worker", {"round": state["round"], "worker": i}) for i in range(WORKERS)]


def _worker(task: WorkerTask) -> dict[str, Any]:
    rng = random.Random(f"worker-{task['round']}-{task['worker']}")
    return {"results": [textgen.prose(rng, WORKER_BYTES)]}


def _fanout(saver: Any, scale: Scale) -> tuple[list[Phase], Callable[[], str]]:
    graph = StateGraph(FanoutState)
    graph.add_node("plan", _plan)
    graph.add_node("worker", _worker)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", _fan_out, ["worker"])
    graph.add_edge("worker", END)
    compiled = graph.compile(checkpointer=saver)
    config = _config("fanout")

    def run(i: int) -> Callable[[], Any]:
        return lambda: compiled.invoke({"topic": f"topic {i}"}, config)

    phases = [Phase("W4 fan-out", [run(i) for i in range(scale.fanout_rounds)])]
    return phases, lambda: _digest(compiled, config)


def _digest(graph: Any, config: dict[str, Any]) -> str:
    """Fingerprint of the final state, to check every saver gave the graph the same."""
    values = graph.get_state(config).values
    canonical = {
        key: [(m.type, m.id, m.content) for m in value] if key == "messages" else value
        for key, value in sorted(values.items())
    }
    if "results" in canonical:
        canonical["results"] = sorted(canonical["results"])  # Send order is not fixed
    return hashlib.sha256(repr(canonical).encode()).hexdigest()[:12]


SCENARIOS: list[Scenario] = [
    Scenario("W1", "chat with add_messages, read back by W5", _chat(ChatState, "W1", "W5")),
    Scenario("W2", "chat with DeltaChannel, read back by W6", _chat(DeltaChatState, "W2", "W6")),
    Scenario("W3", "2 MB document set once, then counter bumps", _document),
    Scenario("W4", "Send fan-out to 10 workers x 8 KB", _fanout),
]

# Not run by default: `--workloads "W1 sync" "W1 async" "W1 exit"` picks them. W1's chat
# (no reads) with each invoke given LangGraph's `durability`: "sync" saves each step's
# checkpoint before the next step starts, "async" (the default) saves it while the next
# step runs, "exit" saves only when the invoke ends.
DURABILITY_SCENARIOS: list[Scenario] = [
    Scenario(
        f"W1 {mode}",
        f"W1's chat with durability={mode!r}",
        _chat(ChatState, f"W1 {mode}", None, durability=mode),
    )
    for mode in ("sync", "async", "exit")
]
