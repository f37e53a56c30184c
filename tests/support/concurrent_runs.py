"""Two runs on one thread at once, driven the way a retried Lambda invocation or a
double-clicked send drives them: each thread of execution has its own saver on the same
storage and invokes a chat graph N times on one thread id. Used by
`tests/unit/test_concurrency.py` on both backends with the same checks."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph

from langgraph.checkpoint.s3dynamo import (
    ConcurrentUpdateError,
    LeaseLostError,
    S3DynamoSaver,
)
from tests.support.scenarios import ChatState

TID = "shared"
CONFIG = {"configurable": {"thread_id": TID}}


def slow_chat_graph(checkpointer: BaseCheckpointSaver, pause: Callable[[], None]) -> Any:
    """The chat graph of `scenarios.py`, whose node calls `pause` first (to make two
    runs overlap, or to hold one while the other runs)."""

    def respond(state: ChatState) -> dict[str, Any]:
        pause()
        heard = [m.id for m in state["messages"] if m.type == "human"]
        turn = state.get("turns", 0) + 1
        return {"messages": [AIMessage(f"heard {heard}", id=f"ai-{turn}")], "turns": turn}

    g = StateGraph(ChatState)
    g.add_node("respond", respond)
    g.add_edge(START, "respond")
    return g.compile(checkpointer=checkpointer)


def human_ids(saver: S3DynamoSaver) -> list[str]:
    graph = slow_chat_graph(saver, lambda: None)
    return [str(m.id) for m in graph.get_state(CONFIG).values["messages"] if m.type == "human"]


def two_writers(savers: tuple[S3DynamoSaver, S3DynamoSaver], turns: int, mode: str) -> int:
    """Each saver's thread invokes `turns` times with its own messages; `mode` "detect"
    retries a run refused with ConcurrentUpdateError, "lock" holds the thread's lease
    around each run. Returns how many runs were refused (and retried)."""
    refused = [0]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(who: str, saver: S3DynamoSaver) -> None:
        graph = slow_chat_graph(saver, lambda: time.sleep(0.002))
        start.wait()
        for i in range(turns):
            message = {"messages": [HumanMessage(f"{who} {i}", id=f"{who}-{i}")]}
            while True:
                try:
                    if mode == "lock":
                        with saver.ops.thread_lock(TID, ttl=30, wait=60):
                            graph.invoke(message, CONFIG)
                    else:
                        graph.invoke(message, CONFIG)
                    break
                except ConcurrentUpdateError:
                    refused[0] += 1
                    if mode == "lock":
                        raise

    def run(who: str, saver: S3DynamoSaver) -> None:
        try:
            writer(who, saver)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w, s)) for w, s in zip("ab", savers, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return refused[0]


def check_every_message_once(saver: S3DynamoSaver, turns: int) -> None:
    ids = human_ids(saver)
    expected = sorted(f"{w}-{i}" for w in "ab" for i in range(turns))
    assert sorted(ids) == expected, f"lost or repeated: {sorted(ids)} != {expected}"


def stale_run_is_refused(savers: tuple[S3DynamoSaver, S3DynamoSaver]) -> str:
    """Run A commits its input checkpoint (durability "sync": before its node runs) and
    pauses inside its node; run B completes a whole turn from there; A then writes its
    next checkpoint on a parent that is no longer the latest. Returns A's error."""
    first, second = savers
    slow_chat_graph(first, lambda: None).invoke(
        {"messages": [HumanMessage("hello", id="h0")]}, CONFIG
    )
    inside, go = threading.Event(), threading.Event()

    def hold() -> None:
        inside.set()
        assert go.wait(30)

    stale = slow_chat_graph(first, hold)
    caught: list[BaseException] = []

    def run_a() -> None:
        try:
            stale.invoke({"messages": [HumanMessage("from a", id="a")]}, CONFIG, durability="sync")
        except BaseException as exc:
            caught.append(exc)

    a = threading.Thread(target=run_a)
    a.start()
    assert inside.wait(30)
    slow_chat_graph(second, lambda: None).invoke(
        {"messages": [HumanMessage("from b", id="b")]}, CONFIG
    )
    go.set()
    a.join()
    assert len(caught) == 1 and isinstance(caught[0], ConcurrentUpdateError), caught
    # B continued from A's input checkpoint, so A's message is in; A's retry repeats
    # nothing (the message keeps its id) and loses nothing.
    assert human_ids(second) == ["h0", "a", "b"]
    slow_chat_graph(first, lambda: None).invoke(
        {"messages": [HumanMessage("from a", id="a")]}, CONFIG
    )
    assert human_ids(second) == ["h0", "a", "b"]
    return str(caught[0])


def fenced_holder_is_refused(savers: tuple[S3DynamoSaver, S3DynamoSaver]) -> None:
    """Holder A stalls in its node with no heartbeat, so its lease lapses; B takes the
    lease over and runs a turn; A's next write is refused with LeaseLostError and B's
    state stands."""
    first, second = savers
    inside, go = threading.Event(), threading.Event()

    def hold() -> None:
        inside.set()
        assert go.wait(30)

    caught: list[BaseException] = []

    def run_a() -> None:
        try:
            # The lease outlives A's input checkpoint on a loaded machine, then lapses.
            with first.ops.thread_lock(TID, ttl=2, wait=0, heartbeat=False):
                slow_chat_graph(first, hold).invoke(
                    {"messages": [HumanMessage("from a", id="a")]}, CONFIG
                )
        except BaseException as exc:
            caught.append(exc)

    a = threading.Thread(target=run_a)
    a.start()
    assert inside.wait(30)
    with second.ops.thread_lock(TID, ttl=30, wait=10) as lease:
        assert lease.token >= 2
        slow_chat_graph(second, lambda: None).invoke(
            {"messages": [HumanMessage("from b", id="b")]}, CONFIG
        )
    go.set()
    a.join()
    assert len(caught) == 1 and isinstance(caught[0], LeaseLostError), caught
    # A's input checkpoint was committed under its valid lease; B continued from it.
    assert human_ids(second) == ["a", "b"]


def lock_fails_fast_or_times_out(savers: tuple[S3DynamoSaver, S3DynamoSaver]) -> None:
    from langgraph.checkpoint.s3dynamo import InvalidConfigError, LeaseTimeoutError

    first, second = savers
    with first.ops.thread_lock(TID, ttl=30):
        try:
            with first.ops.thread_lock(TID):
                raise AssertionError("the lease was taken twice in one context")
        except InvalidConfigError as exc:
            assert "not reentrant" in str(exc)
        for wait in (0, 0.2):
            began = time.monotonic()
            try:
                with second.ops.thread_lock(TID, ttl=30, wait=wait):
                    raise AssertionError("a second holder got the lease")
            except LeaseTimeoutError as exc:
                assert "held by another run" in str(exc)
            assert time.monotonic() - began < wait + 5


def async_locks_serialize(savers: tuple[S3DynamoSaver, S3DynamoSaver], turns: int) -> None:
    async def writer(who: str, saver: S3DynamoSaver) -> None:
        graph = slow_chat_graph(saver, lambda: time.sleep(0.002))
        for i in range(turns):
            async with saver.ops.athread_lock(TID, ttl=30, wait=60):
                await graph.ainvoke(
                    {"messages": [HumanMessage(f"{who} {i}", id=f"{who}-{i}")]}, CONFIG
                )

    async def both() -> None:
        await asyncio.gather(*(writer(w, s) for w, s in zip("ab", savers, strict=True)))

    asyncio.run(both())
    check_every_message_once(savers[0], turns)


# Run B of `test_the_losing_process_...` (tests/unit/test_concurrency.py), in a process of
# its own: it commits its input checkpoint, says so, waits inside its node until the
# file argv[1] exists, is refused, and does what the README says a refused run does.
# Its messages have no ids (LangGraph gives each a new one): sent again, one repeats.
LOSING_PROCESS = r"""
import json, os, sys, time
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.s3dynamo import ConcurrentUpdateError, S3DynamoSaver
from tests.support.concurrent_runs import CONFIG, slow_chat_graph

go = sys.argv[1]

def hold():
    print("inside", flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)

saver = S3DynamoSaver.from_env()
try:
    slow_chat_graph(saver, hold).invoke(
        {"messages": [HumanMessage("from b")]}, CONFIG, durability="sync"
    )
    print(json.dumps({"refused": False}), flush=True)
except ConcurrentUpdateError as exc:
    graph = slow_chat_graph(saver, lambda: None)
    humans = [m.content for m in graph.get_state(CONFIG).values["messages"] if m.type == "human"]
    # The README's retry: the input already in the latest state is not sent again.
    again = not exc.committed or "from b" not in humans
    if again:
        graph.invoke({"messages": [HumanMessage("from b")]}, CONFIG)
    print(json.dumps(
        {"refused": True, "committed": list(exc.committed), "message": str(exc), "again": again}
    ), flush=True)
"""
