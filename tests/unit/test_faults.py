"""Every operation, failed at each of its requests in turn (before, after or halfway
through applying it), leaves a state a reader may see, and a repeat finishes it.

Exhaustively on the in-memory ports through `tests/support/faults.py` (slow); through the
AWS adapters (moto, and the integration tiers' servers) for `copy_thread` and
`delete_thread`, with a botocore event hook failing request N before it is sent or after
its answer came back; and garbage collection in a bucket other deployments and other
data share. The states each operation may show are listed in docs/RELIABILITY.md.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from datetime import datetime, timedelta, timezone
from functools import cache
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo import (
    ConcurrentUpdateError,
    S3DynamoSaver,
    ThreadDeletedError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.format.layout import (
    control_pk,
    is_catalog_pk,
    loan_borrower,
    owner_prefix,
)
from langgraph.checkpoint.s3dynamo.ops.gc import plan_gc
from langgraph.checkpoint.s3dynamo.store import LEASE_TTL
from tests.support import raw
from tests.support.backends import Backend
from tests.support.faults import (
    Crash,
    Faults,
    FaultyObjects,
    FaultyTable,
    Halfway,
    History,
    Race,
    read_history,
)
from tests.support.graphs import delta_graph
from tests.support.memory_index import MemoryIndex
from tests.support.savers import make_saver
from tests.support.scenarios import chat_graph

# dynalite serves no TransactWriteItems: savers there run without conflict detection,
# whose heads hold a deleted thread and make the first put one transaction.
NEEDS_DETECTION = pytest.mark.unsupported_on("real", reason="no transactions on dynalite")

KEYS = {"k1": os.urandom(32), "k2": os.urandom(32)}
SECRET = os.urandom(16)
TURNS = 3
# What `keep_last` keeps in the operations that take it.
KEEP_LAST = 4
SWEEPS = itertools.count()


def saver_on(index: Any, objects: Any, active: str = "k1", catalog: bool = False) -> S3DynamoSaver:
    # inline_max=0: every value and write is an object, so object faults are exercised.
    # An operation named "catalog ..." runs on a deployment that files threads by user.
    return S3DynamoSaver(
        index=index,
        object_store=objects,
        keys=KEYS,
        active_key=active,
        secret=SECRET,
        inline_max=0,
        catalog_fields=["user_id"] if catalog else (),
    )


def filed(op: str) -> bool:
    """Whether an operation runs on a deployment with a thread catalog."""
    return op.startswith(CATALOG)


CATALOG = "catalog "


def graph_of(kind: str, saver: S3DynamoSaver) -> Any:
    return chat_graph(saver) if kind == "chat" else delta_graph(saver, 2)


def turn(kind: str, graph: Any, i: int, tid: str = "t") -> None:
    # Every thread is ada's: what a deployment with a catalog files it under.
    config = {
        "configurable": {"thread_id": tid},
        "metadata": {"run_id": f"run-{i}", "user_id": "ada"},
    }
    if kind == "chat":
        graph.invoke({"messages": [HumanMessage(f"message {i}", id=f"h{i}")]}, config)
    else:
        graph.invoke({"messages": [f"user: message {i}"]}, config)


@cache
def base(kind: str, op: str) -> tuple[MemoryIndex, MemoryObjects]:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = saver_on(index, objects, catalog=filed(op))
    graph = graph_of(kind, saver)
    for i in range(TURNS):
        turn(kind, graph, i)
    op = op.removeprefix(CATALOG)
    if op == "gc":  # something for collection to take
        saver.delete_for_runs([f"run-{TURNS - 1}"])
    if op == "expire indexed":  # a first sweep (the Scan) sets the cursor: the next Queries
        saver.ops.expire_idle_threads("1d")
    if op.startswith("shared: "):  # "copy" shares what "t" holds, and holds its own too
        saver.copy_thread("t", "copy")
        turn(kind, graph, TURNS, tid="copy")
        if op == "shared: gc":
            saver.delete_thread("t")  # objects only the copy's loans keep
    return index, objects


@cache
def import_source(kind: str) -> InMemorySaver:
    """Another LangGraph checkpointer holding thread "copy": what the import reads."""
    source = InMemorySaver()
    graph = graph_of(kind, source)  # type: ignore[arg-type]
    for i in range(TURNS):
        turn(kind, graph, i, tid="copy")
    return source


def run(kind: str, op: str, saver: S3DynamoSaver) -> None:
    op = op.removeprefix(CATALOG)
    if op == "invoke":
        turn(kind, graph_of(kind, saver), TURNS)
    elif op == "delete_thread":
        saver.delete_thread("t")
    elif op == "copy_thread":
        saver.copy_thread("t", "copy")
    elif op == "import":
        saver.ops.import_threads(import_source(kind), ["copy"])
    elif op == "prune":
        saver.prune(["t"])
    elif op == "prune keep_last":
        saver.prune(["t"], keep_last=KEEP_LAST)
    elif op == "delete_for_runs":
        saver.delete_for_runs([f"run-{TURNS - 1}"])
    elif op == "reencrypt":
        saver.ops.reencrypt(["t"])
    elif op == "gc":
        saver.ops.plan_garbage_collection(["t"], grace=timedelta(0)).execute()
    elif op.startswith("shared: "):
        run_shared(op.removeprefix("shared: "), saver)
    elif op in ("expire", "expire keep_latest", "expire keep_last", "expire indexed"):
        # Ten days on, with a one-day TTL: the thread is idle. Each sweep runs an hour
        # after the one before, as a schedule runs them: a crashed sweep's lease lapsed.
        later = time.time() + timedelta(days=10, hours=next(SWEEPS)).total_seconds()
        saver.store.clock = lambda: later
        strategy = "keep_latest" if op.startswith("expire keep_") else "delete"
        keep_last = KEEP_LAST if op == "expire keep_last" else 1
        plan = saver.ops.expire_idle_threads("1d", strategy=strategy, keep_last=keep_last)
        # The fault-free sweep after the first finds the thread through the idle index.
        assert op != "expire indexed" or plan.cursor.day is not None
    else:
        raise AssertionError(op)


def run_shared(op: str, saver: S3DynamoSaver) -> None:
    """An operation on a thread ("t") and its copy ("copy"), which shares its objects."""
    if op == "delete source":
        saver.delete_thread("t")
    elif op == "delete copy":
        saver.delete_thread("copy")
    elif op == "delete both":
        saver.delete_thread("copy")
        saver.delete_thread("t")
    elif op in ("prune source", "prune copy"):
        saver.prune(["t" if op == "prune source" else "copy"], keep_last=2)
    elif op == "reencrypt copy":
        saver.ops.reencrypt(["copy"])
    elif op == "delete_for_runs":  # a copy keeps its checkpoints' run ids: both lose them
        saver.delete_for_runs([f"run-{TURNS - 1}"])
    elif op == "gc":
        saver.ops.plan_garbage_collection(grace=timedelta(0)).execute()
    elif op == "expire":
        later = time.time() + timedelta(days=10, hours=next(SWEEPS)).total_seconds()
        saver.store.clock = lambda: later
        saver.ops.expire_idle_threads("1d")
    else:
        raise AssertionError(op)


def active_key(op: str) -> str:
    return "k2" if op.removeprefix(CATALOG) in ("reencrypt", "shared: reencrypt copy") else "k1"


def views(kind: str, index: MemoryIndex, objects: MemoryObjects, *more: str) -> dict[str, History]:
    graph = graph_of(kind, saver_on(index, objects))
    return {tid: read_history(graph, tid) for tid in ("t", "copy", *more)}


# What each thread may show after a fault in a "shared: ..." operation: as it was, or
# as it will be (gone, pruned); every checkpoint shown reads whole (`read_history`).
SHARED_CHANGES = {
    "delete source": {"t"},
    "delete copy": {"copy"},
    "delete both": {"t", "copy"},
    "prune source": {"t"},
    "prune copy": {"copy"},
    "reencrypt copy": set(),
    "delete_for_runs": {"t", "copy"},
    "gc": set(),
    "expire": {"t", "copy"},
}


def check_shared_after_fault(
    op: str, old: dict[str, History], ref: dict[str, History], seen: dict[str, History]
) -> None:
    changes = SHARED_CHANGES[op.removeprefix("shared: ")]
    for tid in ("t", "copy"):
        assert seen[tid] in ((old[tid], ref[tid]) if tid in changes else (old[tid],)), tid


def check_shared_repeated(op: str, saver: S3DynamoSaver, index: MemoryIndex) -> None:
    """After the repeat: what a thread that is gone shared, it no longer holds."""
    op = op.removeprefix("shared: ")
    if op in ("delete copy", "delete both", "expire"):
        assert index.loan_items == {} and index.borrowings == set()
    if op in ("delete both", "expire"):
        assert not list(saver.store.deployment_objects())


def check_catalog(index: MemoryIndex, objects: MemoryObjects, seen: dict[str, History]) -> None:
    """What the catalog shows after a fault, and after the repeat: exactly the threads a
    reader sees (a thread shown is filed; one filed and not shown is passed over)."""
    saver = saver_on(index, objects, catalog=True)
    found = saver.search_threads(metadata={"user_id": "ada"}, limit=10)
    assert {t.thread_id for t in found} == {tid for tid, history in seen.items() if history}


def check_catalog_cleared(index: MemoryIndex) -> None:
    """After the repeat: no catalog entry nor back-reference of a thread without records."""
    threads = {r.pk for r in index.records()}
    for key in index.catalog_keys():
        name = key.sk if is_catalog_pk(key.pk) else key.pk.removesuffix("!")
        assert name in threads, f"catalog item {key} of a thread without records"


def check_after_fault(
    op: str, old: History, ref: dict[str, History], seen: dict[str, History]
) -> None:
    op = op.removeprefix(CATALOG)
    t, copy = seen["t"], seen["copy"]
    if op not in ("copy_thread", "import"):
        assert copy == []
    if op == "invoke":
        # The old checkpoints untouched, plus whole checkpoints of the new turn.
        assert t[len(t) - len(old) :] == old
        assert all(view in [v for _, v in ref["t"]] for _, view in t[: len(t) - len(old)])
    elif op in ("delete_thread", "expire", "expire indexed"):
        assert t in ([], old)  # deleted, or unchanged (before the marks were written)
    elif op == "copy_thread":
        assert t == old and copy in ([], old)  # nothing at the target, or the whole copy
    elif op == "import":
        assert t == old and copy in ([], ref["copy"])
    elif op in (
        "prune",
        "prune keep_last",
        "expire keep_latest",
        "expire keep_last",
        "delete_for_runs",
    ):
        assert t in (old, ref["t"])  # unchanged, or already as it will be
    else:  # reencrypt, gc: nothing a reader sees may change
        assert t == old
    if op.endswith("keep_last"):
        # What it will be: the thread's newest checkpoints, each as it was.
        assert len(old) > len(ref["t"]) >= KEEP_LAST
        assert ref["t"][:KEEP_LAST] == old[:KEEP_LAST]


def check_repeated(
    op: str,
    ref: dict[str, History],
    seen: dict[str, History],
    saver: S3DynamoSaver,
    index: MemoryIndex,
    objects: MemoryObjects,
) -> None:
    op = op.removeprefix(CATALOG)
    if op == "invoke":
        return  # a user repeats a failed turn by invoking again; nothing to finish
    assert seen["t"] == ref["t"] and seen["copy"] == ref["copy"]
    if op in ("delete_thread", "expire", "expire indexed"):
        prefix = owner_prefix(saver.parts.namer.thread("t"))
        assert not [k for k in objects.blobs if k.startswith(prefix)]
    if op in ("expire", "expire indexed"):
        # Left: the tombstones alone (no lease, no record), and nothing more to do.
        plan = saver.ops.expire_idle_threads("1d", dry_run=True)
        assert not plan.idle and not plan.leftovers
    if op.startswith("expire keep_"):
        # No marker, no lease left, and nothing more to drop.
        # (The full Scan reads every thread, so it counts the kept one.)
        keep_last = KEEP_LAST if op == "expire keep_last" else 1
        plan = saver.ops.expire_idle_threads(
            "1d", strategy="keep_latest", keep_last=keep_last, dry_run=True, full=True
        )
        assert not plan.idle and not plan.leftovers and plan.kept == 1

    if op.startswith("shared: "):
        check_shared_repeated(op, saver, index)
    if op == "reencrypt":
        assert saver.ops.reencrypt(["t"]) == 0
    if op == "gc":
        assert saver.ops.plan_garbage_collection(["t"], grace=timedelta(0)).objects == 0


def inject(kind: str, op: str, modes: tuple[str, ...]) -> int:
    index0, objects0 = base(kind, op)
    olds = views(kind, index0, objects0)
    old = olds["t"]
    # The fault-free run: its result, and how many requests it makes.
    index, objects = index0.clone(), objects0.clone()
    counting = Faults()
    run(
        kind,
        op,
        saver_on(
            FaultyTable(index, counting),
            FaultyObjects(objects, counting),
            active_key(op),
            catalog=filed(op),
        ),
    )
    ref = views(kind, index, objects)
    total = counting.count
    assert total > 0
    kinds = ["start", *counting.kinds, "end"]
    for at, differing in enumerate(counting.modes, start=1):
        if kinds[at] == "read" == kinds[at - 1]:
            # A read right after a read: the stores are exactly as at the previous one,
            # so failing here is the case already tried.
            continue
        if kinds[at - 1] == kinds[at] == kinds[at + 1] == "object":
            # Inside one wave of object uploads only the first and the last are tried:
            # the states between differ only in which unreferenced objects exist.
            continue
        for mode in [m for m in modes if m in differing]:
            index, objects = index0.clone(), objects0.clone()
            faults = Faults(at, mode)
            saver = saver_on(
                FaultyTable(index, faults),
                FaultyObjects(objects, faults),
                active_key(op),
                catalog=filed(op),
            )
            with contextlib.suppress(Crash):
                run(kind, op, saver)
            where = f"{kind} {op}: fault at request {at}/{total} ({mode})"
            if not faults.fired:
                continue  # a parallel wave took another path; nothing was injected
            try:
                seen = views(kind, index, objects)
                if op.startswith("shared: "):
                    check_shared_after_fault(op, olds, ref, seen)
                else:
                    check_after_fault(op, old, ref, seen)
                if filed(op):
                    check_catalog(index, objects, seen)
                clean = saver_on(index, objects, active_key(op), catalog=filed(op))
                run(kind, op, clean)
                seen = views(kind, index, objects)
                check_repeated(op, ref, seen, clean, index, objects)
                if filed(op):
                    check_catalog(index, objects, seen)
                    check_catalog_cleared(index)
            except AssertionError as exc:
                raise AssertionError(f"{where}: {exc}") from exc
    return total


OPS = [
    "invoke",
    "delete_thread",
    "copy_thread",
    "import",
    "prune",
    "prune keep_last",
    "delete_for_runs",
    "reencrypt",
    "gc",
    "expire",
    "expire keep_latest",
    "expire keep_last",
    "expire indexed",
    *(f"shared: {op}" for op in SHARED_CHANGES),
    # Issue 50: what writes or removes a thread's catalog entries.
    *(
        f"{CATALOG}{op}"
        for op in (
            "invoke",
            "delete_thread",
            "copy_thread",
            "import",
            "delete_for_runs",
            "reencrypt",
            "expire",
        )
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", ["chat", "delta"])
def test_a_fault_at_any_request_leaves_a_named_state(kind: str, op: str) -> None:
    assert inject(kind, op, ("before", "after", "partial")) > 0


# -------------------- races: another operation, whole or halted, before each request


# What a thread and its copy race: removals of either (delete_for_runs leaves what its
# checkpoints held to incremental collection, which the race runs), another copy of the
# source, collection, re-encryption, retention.
RACING = [
    "delete copy",
    "prune copy",
    "delete source",
    "prune source",
    "delete_for_runs",
    "copy source",
    "reencrypt copy",
    "gc",
    "expire",
]


def race(kind: str, first: str, second: str, halfway: bool = False) -> int:
    """`first`, with `second` run whole before each of its requests in turn (but where
    `inject` skips: after a read, inside a wave of uploads), both ten days after the
    threads were written (what they write is fresh to retention). With `halfway`,
    `second` stops before one of its own requests instead (each in turn as `first`'s
    point moves on), `first` runs to its end, then `second` goes on to its end or, every
    other time, dies there. Each time: every checkpoint a reader is shown meanwhile reads
    whole and is one the thread held; once both are repeated, `verify` finds nothing
    missing, altered or left over, and a thread that is gone borrows nothing (after a
    death, once what `repair` runs has removed the garbage its repeat could not)."""
    index0, objects0 = base(kind, "shared: race")
    olds = views(kind, index0, objects0)
    olds["copy2"] = olds["t"]  # what "copy source" copies there
    later = time.time() + timedelta(days=10).total_seconds()

    def saver(table: Any, objects: Any) -> S3DynamoSaver:
        made = saver_on(table, objects, "k2")
        made.store.clock = lambda: later
        return made

    def stores() -> tuple[MemoryIndex, MemoryObjects]:
        index, objects = index0.clone(), objects0.clone()
        objects.clock = lambda: later
        return index, objects

    counting = Faults()
    index, objects = stores()
    run_racing(first, saver(FaultyTable(index, counting), FaultyObjects(objects, counting)))
    kinds = ["start", *counting.kinds, "end"]
    alone = Faults()  # `second`'s requests, for where `halfway` stops it
    if halfway:
        index, objects = stores()
        run_racing(second, saver(FaultyTable(index, alone), FaultyObjects(objects, alone)))
    tried = 0
    for at in range(1, counting.count + 1):
        if kinds[at] == "read" == kinds[at - 1]:
            continue
        if kinds[at - 1] == kinds[at] == kinds[at + 1] == "object":
            continue  # inside a wave of uploads, as `inject`: the first and the last
        index, objects = stores()
        where = f"{kind}: {second!r} before request {at}/{counting.count} of {first!r}"
        dies = False
        if halfway:
            other = Halfway.turn(
                lambda faults, index=index, objects=objects: run_racing(
                    second, saver(FaultyTable(index, faults), FaultyObjects(objects, faults))
                ),
                tried,
                alone.count,
            )
            act, dies = other.race(at), other.dies
            where = f"{kind}: {second!r} {other} at request {at}/{counting.count} of {first!r}"
        else:
            act = Race(
                at, lambda index=index, objects=objects: run_racing(second, saver(index, objects))
            )
        tried += 1
        try:
            try:
                run_racing(first, saver(FaultyTable(index, act), FaultyObjects(objects, act)))
            finally:
                if halfway:  # on to its end (or death); never begun (below): begun now
                    other.finish()
            if not act.fired:
                # A sweep removes its threads in parallel, and how many requests it
                # sends depends on how the two removals interleave: whether the source's
                # reads the copy's loans (one BatchGetItem) and which of them deletes the
                # objects no longer lent (44 to 46 here). This one ended before request
                # `at`: the other operation runs after it.
                assert first == "expire", "the other operation never ran"
                if not halfway:
                    act.act()
            seen = views(kind, index, objects, "copy2")
            for tid, history in seen.items():
                assert all(checkpoint in olds[tid] for checkpoint in history), tid
            for op in (first, second):
                run_racing(op, saver(index, objects))
            left = left_over(saver(index, objects), index, later)
            if dies and left:
                # What a process that died halfway leaves where its repeat cannot finish
                # it (the other changed the thread under it): garbage, which the tools
                # named in docs/RELIABILITY.md remove ("A process that never comes back").
                assert set(left) <= REPAIRED, left
                # A prune names what its records referenced before they go.
                assert not (second.startswith("prune") and "unreferenced object" in left)
                DIED_AND_LEFT.append((where, left))
                repair(saver(index, objects), left, later)
                left = left_over(saver(index, objects), index, later)
            assert left == [], left
        except Exception as exc:
            raise AssertionError(f"{where}: {exc}") from exc
    return counting.count


def left_over(clean: S3DynamoSaver, index: MemoryIndex, later: float) -> list[str]:
    """What should not be there once incremental collection has run (an upload a change
    refused names its intent, which it takes after its grace): `verify`'s problems,
    leftover writes records, and borrowings or loans of a thread that has no records."""
    done = datetime.fromtimestamp(later, timezone.utc) + timedelta(days=2)
    clean.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=done).execute(now=done)
    report = clean.ops.verify()
    left = sorted({f"{p['kind']} {p['where']}" for p in report.problems})
    left += ["leftover writes"] if report.leftover_writes else []
    for tid in ("t", "copy", "copy2"):
        name = clean.parts.namer.thread(tid)
        if not any(r.pk == name for r in index.records()):
            if any(k.pk == control_pk(name) for k in index.borrowings):
                left.append(f"borrowing of {tid}")
            if any(loan_borrower(k.sk) == name for k in index.loan_items):
                left.append(f"loan to {tid}")
    return left


# What a process that died halfway may leave, and what `repair` runs for it; each case
# met is kept in DIED_AND_LEFT, which docs/RELIABILITY.md's counts come from.
REPAIRED = {
    "unreferenced object",
    "leftover writes",
    "unfinished delete item",
    # A retention sweep removing the copy, stopped for good (its next sweep finishes it);
    # a copy that stopped for good leaves none: its repeat clears what it held.
    "borrowing of copy",
    "loan to copy",
}
DIED_AND_LEFT: list[tuple[str, list[str]]] = []


def repair(saver: S3DynamoSaver, left: list[str], later: float) -> None:
    """The next retention sweep, once the dead sweep's lease has run out; the full
    collection (its grace passed for what was written at the savers' time)."""
    if "unfinished delete item" in left or "loan to copy" in left:
        # An hour after the sweeps `run_racing` runs, past the dead one's lease.
        swept = saver.store.clock() + (timedelta(hours=1) + LEASE_TTL).total_seconds() + 60
        saver.store.clock = lambda: swept
        saver.ops.expire_idle_threads("1d")
    done = datetime.fromtimestamp(later, timezone.utc) + timedelta(days=2)
    plan_gc(saver.store, None, grace=timedelta(0), now=done).execute(now=done)


def run_racing(op: str, saver: S3DynamoSaver) -> None:
    """`run_shared`, a copy of the source to "copy2", or a retention sweep an hour after
    the saver's clock. What each may refuse, as it says: re-encrypting or copying a
    thread the other operation deleted (as any unknown thread); a copy whose source
    changed under it (nothing of it shown), or a repeat onto a copy of what the source no
    longer holds; a retention sweep while another runs."""
    refused = (ThreadNotFoundError, ConcurrentUpdateError, ThreadExistsError)
    with contextlib.suppress(*refused if op in ("copy source", "expire") else refused[:1]):
        if op == "copy source":
            saver.copy_thread("t", "copy2")
        elif op == "expire":
            swept = saver.store.clock() + timedelta(hours=1).total_seconds()
            saver.store.clock = lambda: swept
            saver.ops.expire_idle_threads("1d")
        else:
            run_shared(op, saver)


@pytest.mark.slow
@pytest.mark.parametrize("second", RACING)
@pytest.mark.parametrize("first", RACING)
@pytest.mark.parametrize("kind", ["chat", "delta"])
def test_two_operations_on_a_thread_and_its_copy_race_safely(
    kind: str, first: str, second: str
) -> None:
    assert race(kind, first, second) > 0


@pytest.mark.slow
@pytest.mark.parametrize("second", RACING)
@pytest.mark.parametrize("first", RACING)
@pytest.mark.parametrize("kind", ["chat", "delta"])
def test_two_operations_each_stopped_halfway_race_safely(
    kind: str, first: str, second: str
) -> None:
    assert race(kind, first, second, halfway=True) > 0


# -------------------- through the AWS adapters: a botocore hook fails request N

READS = ("Query", "GetObject", "ListObjectsV2", "Scan")


class Hook:
    """Fails the `at`-th AWS request: before it is sent, or after it was applied."""

    def __init__(self, clients: tuple[Any, Any]) -> None:
        self.at: int | None = None
        self.mode = "before"
        self.count = 0
        for client in clients:
            client.meta.events.register("before-call.*.*", self._before)
            client.meta.events.register("after-call.*.*", self._after)

    def arm(self, at: int | None, mode: str = "before") -> None:
        self.at, self.mode, self.count = at, mode, 0
        self.names: list[str] = []

    def _before(self, model: Any, **_: Any) -> None:
        self.count += 1
        self.names.append(model.name)
        if self.count == self.at and self.mode == "before":
            raise Crash(f"injected before request {self.at}")

    def _after(self, **_: Any) -> None:
        if self.count == self.at and self.mode == "after":
            raise Crash(f"injected after request {self.at}")


def _history(graph: Any, tid: str) -> History:
    return read_history(graph, tid)


def test_copy_thread_through_aws_survives_a_fault_at_any_request(
    clients: tuple[Any, Any],
) -> None:
    saver = make_saver(clients, inline_max=0)
    saver.setup()
    graph = chat_graph(saver)
    for i in range(1):
        graph.invoke(
            {"messages": [HumanMessage(f"m{i}", id=f"h{i}")]}, {"configurable": {"thread_id": "t"}}
        )
    source = _history(graph, "t")
    hook = Hook(clients)
    hook.arm(None)
    saver.copy_thread("t", "reference")
    names = ["", *hook.names, ""]
    assert _history(graph, "reference") == source
    for at in range(1, len(names) - 1):
        name = names[at]
        if name in READS and names[at - 1] in READS:
            continue  # the stores are as at the read before: already tried
        if name == "PutObject" and names[at - 1] == names[at + 1] == name:
            continue  # inside one upload wave, the first and the last are tried
        for mode in ("before",) if name in READS else ("before", "after"):
            target = f"copy-{at}-{mode}"
            hook.arm(at, mode)
            with contextlib.suppress(Crash):
                saver.copy_thread("t", target)
            hook.arm(None)
            reader = chat_graph(make_saver(clients, inline_max=0))
            seen = _history(reader, target)
            assert seen in ([], source), (at, mode)  # nothing at the target, or all of it
            saver.copy_thread("t", target)  # the repeat finishes it
            assert _history(reader, target) == source, (at, mode)
    assert _history(graph, "t") == source


def test_delete_thread_through_aws_survives_a_fault_at_any_request(
    clients: tuple[Any, Any],
) -> None:
    saver = make_saver(clients, inline_max=0)
    saver.setup()
    graph = chat_graph(saver)
    for i in range(2):
        graph.invoke(
            {"messages": [HumanMessage(f"m{i}", id=f"h{i}")]}, {"configurable": {"thread_id": "t"}}
        )
    source = _history(graph, "t")
    hook = Hook(clients)

    def copy_with_a_turn(target: str) -> None:
        # A copy sharing "t"'s objects, then holding objects of its own.
        saver.copy_thread("t", target)
        graph.invoke(
            {"messages": [HumanMessage("own", id="own")]}, {"configurable": {"thread_id": target}}
        )

    hook.arm(None)
    copy_with_a_turn("reference")
    # Without checkpoint ids: each target's own turn gets new ones.
    target_view = [view for _, view in _history(graph, "reference")]
    hook.arm(None)
    saver.delete_thread("reference")
    # Control items; tombstones on the heads (kept); keys; marks; checkpoints; writes;
    # its own objects (listed, its records and loans read for what they reference,
    # deleted); for the loan from "t": the loan read, "t"'s records and loans read,
    # nothing of "t"'s deleted (its records still reference it all), loan and borrowing
    # deleted; marks.
    # With conflict detection or without (dynalite), the same order: the removal
    # protocol (`store/removal.py`) tombstones what the control items show first.
    assert hook.names == [
        "Query",
        "BatchWriteItem",
        "Query",
        *["BatchWriteItem"] * 3,
        "ListObjectsV2",
        "Query",
        "Query",
        "DeleteObjects",
        *["Query"] * 3,
        *["BatchWriteItem"] * 2,
    ]
    names = ["", *hook.names, ""]
    assert _history(graph, "reference") == []
    for at in range(1, len(names) - 1):
        name = names[at]
        if name in READS and names[at - 1] in READS:
            continue  # the stores are as at the read before: already tried
        for mode in ("before",) if name in READS else ("before", "after"):
            target = f"delete-{at}-{mode}"
            hook.arm(None)
            copy_with_a_turn(target)
            hook.arm(at, mode)
            with contextlib.suppress(Crash):
                saver.delete_thread(target)
            hook.arm(None)
            reader = chat_graph(make_saver(clients, inline_max=0))
            # Deleted, or (before its marks were written) unchanged: never cut back.
            seen = [view for _, view in _history(reader, target)]
            assert seen in ([], target_view), (at, mode)
            saver.delete_thread(target)  # the repeat finishes it
            assert _history(reader, target) == [], (at, mode)
            name_of = saver.parts.namer.thread(target)
            prefix = owner_prefix(name_of)
            assert not list(saver.parts.engine.objects.port.list(prefix)), (at, mode)
            assert raw.left_after_delete(saver, name_of) == [], (at, mode)
            # What the copy shared, its source still reads whole.
            assert _history(reader, "t") == source, (at, mode)
    assert raw.loans(saver, "t") == []


@NEEDS_DETECTION
def test_a_delete_racing_a_run_leaves_the_thread_whole_or_gone_at_any_request(
    clients: tuple[Any, Any],
) -> None:
    """A run in another process loaded the thread; the delete fails at each of its
    requests; then the run sends its task's writes and its next checkpoint. A reader sees
    the thread whole (the run's checkpoint added if the delete had not begun to hide it)
    or gone, never back; a repeat of the delete finishes it and the run stays refused."""
    saver = make_saver(clients, inline_max=0)
    saver.setup()
    hook = Hook(clients)
    hook.arm(None)
    graph = chat_graph(saver)
    graph.invoke({"messages": [HumanMessage("m", id="h")]}, {"configurable": {"thread_id": "r"}})
    saver.delete_thread("r")
    names = ["", *hook.names, ""]  # of a delete of a thread like each below
    for at in range(1, len(names) - 1):
        for mode in ("before",) if names[at] in READS else ("before", "after"):
            tid = f"race-{at}-{mode}"
            config: Any = {"configurable": {"thread_id": tid}}
            hook.arm(None)
            graph.invoke({"messages": [HumanMessage("m", id="h")]}, config)
            whole = _history(graph, tid)
            run = make_saver(clients, inline_max=0)
            loaded = run.get_tuple(config)
            assert loaded is not None
            hook.arm(at, mode)
            with contextlib.suppress(Crash):
                saver.delete_thread(tid)
            hook.arm(None)
            reader = chat_graph(make_saver(clients, inline_max=0))
            before = _history(reader, tid)
            assert before in ([], whole), (at, mode)
            nxt = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
            try:
                run.put_writes(loaded.config, [("messages", [])], "task")
                run.put(loaded.config, nxt, {"step": 9}, {})  # type: ignore[arg-type]
                refused = False
            except ThreadDeletedError:
                refused = True
            after = _history(reader, tid)
            if refused or before == []:
                assert refused and after == before, (at, mode)  # nothing of the run shows
            else:
                assert after[1:] == whole, (at, mode)  # the delete had not begun
            saver.delete_thread(tid)  # the repeat finishes it
            assert _history(reader, tid) == [], (at, mode)
            with pytest.raises(ThreadDeletedError):
                run.put(loaded.config, dict(nxt, id=str(uuid6(clock_seq=10))), {}, {})  # type: ignore[arg-type]
            assert _history(reader, tid) == [], (at, mode)
            assert raw.partition(saver, saver.parts.namer.thread(tid)) == [], (at, mode)


def _put_big(saver: S3DynamoSaver, run_id: str, version: str | None = None) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": os.urandom(3 * saver.settings.inline_max)}
    cp["channel_versions"] = {"doc": version or saver.get_next_version(None, None)}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    return saver.put(config, cp, {"run_id": run_id}, cp["channel_versions"])


def test_gc_in_a_shared_bucket_touches_only_its_own_keys(clients: tuple[Any, Any]) -> None:
    _, s3 = clients
    savers = []
    for n, prefix in enumerate(("", "tenant-b/", "")):
        saver = make_saver(
            clients,
            table=f"{clients.table}-{n}",  # type: ignore[attr-defined]
            bucket=clients.bucket,  # type: ignore[attr-defined]
            prefix=prefix,
            secret=f"naming secret of deployment {n}",
        )
        saver.setup()
        _put_big(saver, "gone")
        _put_big(saver, "kept")
        saver.delete_for_runs(["gone"])
        savers.append(saver)
    s3.put_object(Bucket=clients.bucket, Key="reports/2025/summary.csv", Body=b"a,b")  # type: ignore[attr-defined]

    def keys() -> set[str]:
        out = s3.list_objects_v2(Bucket=clients.bucket)  # type: ignore[attr-defined]
        return {o["Key"] for o in out.get("Contents", [])}

    assert len(keys()) == 7
    for saver in savers:
        before = keys()
        plan = saver.ops.plan_garbage_collection(grace=timedelta(0), scope=saver.store.prefix)
        assert plan.objects == 1 and plan.execute() == 1
        assert len(before - keys()) == 1
        for other in savers:
            assert other.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    assert "reports/2025/summary.csv" in keys() and len(keys()) == 4


# The request that writes an object, as each backend counts it.
PUT_OBJECT = {"memory": "objects.put", "aws": "s3.PutObject"}


def test_a_writer_refreshes_an_object_it_finds_already_there(backend: Backend) -> None:
    saver = backend.saver()
    version = saver.get_next_version(None, None)
    _put_big(saver, "run-1", version)
    _put_big(saver, "run-2")
    saver.delete_for_runs(["run-1"])  # the first value is now an orphan
    plan = saver.ops.plan_garbage_collection(grace=timedelta(0))
    assert plan.objects == 1
    backend.reset()
    config = _put_big(saver, "run-3", version)  # same name: refused (412), then overwritten
    assert backend.calls()[PUT_OBJECT[backend.name]] == 2
    # Execution lists again, marks again and spares what the new record references.
    assert plan.execute() == 0
    tup = saver.get_tuple(config)
    assert tup is not None and len(tup.checkpoint["channel_values"]["doc"]) == 3 * (
        saver.settings.inline_max
    )
