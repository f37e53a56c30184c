"""A thread `delete_for_runs` leaves with records but without heads stays in the idle
index: the indexed sweep (not only the full Scan) finds it once idle and keeps it while
active, on both backends; and so after a crash at any request of `delete_for_runs` and
its repeat. The other whole-thread operations (prune, copy, re-encryption, import) leave
a thread the indexed sweep finds as well. Why: docs/RELIABILITY.md, "Finding idle
threads: the idle index"."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from tests.support.backends import Backend
from tests.support.faults import Crash, Faults, FaultyObjects, FaultyTable
from tests.support.memory_index import MemoryIndex
from tests.support.savers import BACKEND
from tests.support.scenarios import chat_graph

DAY = 86_400.0
TTL = "30d"
START = time.time()


def at(saver: S3DynamoSaver, days: float) -> None:
    """The saver's clock (record stamps, sweeps) `days` after the test began; objects
    keep their real times, all before any cutoff a sweep here uses."""
    moment = START + days * DAY
    saver.store.clock = lambda: moment


def turn(saver: S3DynamoSaver, tid: str, run: str) -> None:
    config = {"configurable": {"thread_id": tid}, "metadata": {"run_id": run}}
    chat_graph(saver).invoke({"messages": [HumanMessage(f"{tid} {run}", id=run)]}, config)


def messages(saver: S3DynamoSaver, tid: str) -> list[str]:
    state = chat_graph(saver).get_state({"configurable": {"thread_id": tid}})
    return [str(m.content) for m in state.values.get("messages", [])]


def written_then_runs_deleted(saver: S3DynamoSaver, tid: str, day: float, later: float = 1) -> None:
    """Two turns `later` days apart on `tid`, then the later run deleted: the thread
    keeps the first turn's records, and loses its head."""
    at(saver, day)
    turn(saver, tid, f"{tid}-run-0")
    at(saver, day + later)
    turn(saver, tid, f"{tid}-run-1")
    saver.delete_for_runs([f"{tid}-run-1"])
    assert messages(saver, tid) == [f"{tid} {tid}-run-0", "turn 1; heard: " + f"{tid} {tid}-run-0"]


def test_a_thread_delete_for_runs_left_is_found_by_the_indexed_sweep_once_idle(
    backend: Backend,
) -> None:
    saver = backend.saver()
    at(saver, 0)
    assert saver.ops.expire_idle_threads(TTL).cursor.day is None  # the first sweep scans
    written_then_runs_deleted(saver, "idle", 1)
    written_then_runs_deleted(saver, "active", 20)
    namer = saver.parts.namer
    at(saver, 33)  # "idle" last written on day 1 (its run of day 2 deleted), "active" on 20
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.cursor.day is not None  # the index, not the Scan, found them
    assert plan.removed == [namer.thread("idle")]
    # "active" is keyed on its own day 20, after the cutoff: not read, not removed.
    assert namer.thread("active") not in plan.seen
    assert messages(saver, "idle") == []
    assert messages(saver, "active") == [
        "active active-run-0",
        "turn 1; heard: active active-run-0",
    ]
    at(saver, 52)
    assert saver.ops.expire_idle_threads(TTL).removed == [namer.thread("active")]
    assert messages(saver, "active") == []


def test_delete_for_runs_keys_the_thread_on_its_newest_remaining_write(
    backend: Backend,
) -> None:
    saver = backend.saver()
    at(saver, 0)
    saver.ops.expire_idle_threads(TTL)  # the cursor: later sweeps Query the index
    # The first turn on day 1; the second, and its deletion, on day 20.
    written_then_runs_deleted(saver, "t", 1, later=19)
    # The thread's key names day 1 (its newest record left), not day 20 (the deletion):
    # it expires TTL after its last write, as the Scan would judge it.
    at(saver, 32)
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.cursor.day is not None and plan.removed == [saver.parts.namer.thread("t")]
    assert messages(saver, "t") == []


def test_delete_for_runs_sends_one_query_and_one_update_more_per_thread(
    backend: Backend,
) -> None:
    saver = backend.saver()
    at(saver, 1)
    turn(saver, "t", "run-0")
    turn(saver, "t", "run-1")
    plan = saver.ops.plan_delete_runs(["run-1"])
    backend.reset()
    plan.execute()
    calls = backend.calls()
    query, update = "dynamodb.Query", "dynamodb.UpdateItem"
    # One Query per checkpoint deleted (its records), as before, and one of the thread's
    # items left; one Update: the idle-index key on the newest record left. With
    # detection off (dynalite's tier) there are no heads: every record carries its key.
    keyed = 0 if BACKEND == "real" and backend.name == "aws" else 1
    assert (calls[query], calls[update]) == (len(plan.checkpoints) + 1, keyed)
    # Another run deleted: the newest record left (the same) already carries its key.
    turn(saver, "t", "run-2")
    backend.reset()
    saver.delete_for_runs(["run-2"])
    assert backend.calls()[update] == 0
    assert saver.ops.plan_delete_runs(["run-1", "run-2"]).checkpoints == []


# ------------------------------------------ a crash at each request, then the repeat


def faulty_saver(index: Any, objects: Any, faults: Faults, day: float) -> S3DynamoSaver:
    saver = S3DynamoSaver(
        index=FaultyTable(index, faults),
        object_store=FaultyObjects(objects, faults),
        keys={"k1": b"k" * 32},
        secret=b"a naming secret!",
    )
    at(saver, day)
    return saver


@pytest.mark.parametrize("mode", ["before", "after", "partial"])
def test_a_crash_at_any_request_of_delete_for_runs_leaves_the_thread_indexed(mode: str) -> None:
    index0, objects0 = MemoryIndex(), MemoryObjects()
    saver = faulty_saver(index0, objects0, Faults(), 0)
    saver.ops.expire_idle_threads(TTL)  # the cursor: later sweeps Query the index
    at(saver, 1)
    turn(saver, "t", "run-0")
    at(saver, 2)
    turn(saver, "t", "run-1")
    counting = Faults()
    index, objects = index0.clone(), objects0.clone()
    faulty_saver(index, objects, counting, 2).delete_for_runs(["run-1"])
    assert counting.count > 0
    tried = 0
    for request in range(1, counting.count + 1):
        if mode not in counting.modes[request - 1]:
            continue
        index, objects = index0.clone(), objects0.clone()
        faults = Faults(request, mode)
        with contextlib.suppress(Crash):
            faulty_saver(index, objects, faults, 2).delete_for_runs(["run-1"])
        if not faults.fired:
            continue
        tried += 1
        clean = faulty_saver(index, objects, Faults(), 2)
        clean.delete_for_runs(["run-1"])  # the repeat
        where = f"fault at request {request}/{counting.count} ({mode})"
        assert messages(clean, "t") == ["t run-0", "turn 1; heard: t run-0"], where
        # Found through the index once its last record left is past the TTL, and judged
        # as the Scan judges it: a crash between the checkpoint records and their writes
        # records leaves the writes (day 2) to retention, so the thread goes a day later.
        name = clean.parts.namer.thread("t")
        at(clean, 31.5)
        plan = clean.ops.expire_idle_threads(TTL)
        assert plan.cursor.day is not None and name in plan.seen, where
        at(clean, 33)
        removed = [*plan.removed, *clean.ops.expire_idle_threads(TTL).removed]
        assert removed == [name] and messages(clean, "t") == [], where
    assert tried > 0


# ------------------- the other whole-thread operations keep a thread in the index too


def other_operation(backend: Backend, op: str) -> tuple[S3DynamoSaver, str]:
    """A thread written on day 1 and then touched by `op` the same day, after a first
    sweep set the cursor; returns the saver and the thread a sweep must find."""
    keys = {"k1": backend.keys["k1"], "k2": b"2" * 32}
    saver = backend.saver(keys=keys, active_key="k1")
    at(saver, 0)
    saver.ops.expire_idle_threads(TTL)
    at(saver, 1)
    turn(saver, "t", "run-0")
    turn(saver, "t", "run-1")
    if op == "prune":
        saver.prune(["t"])
        return saver, "t"
    if op == "copy_thread":
        saver.copy_thread("t", "copy")
        return saver, "copy"
    if op == "reencrypt":
        saver = backend.saver(keys=keys, active_key="k2")
        at(saver, 1)
        assert saver.ops.reencrypt(["t"]) > 0
        return saver, "t"
    source = InMemorySaver()
    for run in ("run-0", "run-1"):
        config = {"configurable": {"thread_id": "imported"}, "metadata": {"run_id": run}}
        chat_graph(source).invoke({"messages": [HumanMessage(run, id=run)]}, config)
    saver.ops.import_threads(source, ["imported"])
    return saver, "imported"


@pytest.mark.parametrize("op", ["prune", "copy_thread", "reencrypt", "import"])
def test_a_thread_another_operation_touched_is_found_by_the_indexed_sweep(
    backend: Backend, op: str
) -> None:
    saver, tid = other_operation(backend, op)
    before = messages(saver, tid)
    assert before
    at(saver, 20)  # not idle yet: kept whole
    assert saver.ops.expire_idle_threads(TTL).removed == []
    assert messages(saver, tid) == before
    at(saver, 32)
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.cursor.day is not None
    assert saver.parts.namer.thread(tid) in plan.removed
    assert messages(saver, tid) == []
