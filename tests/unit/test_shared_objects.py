"""A copy shares its source's objects (`copy_thread`): it writes no object, and nothing
that deletes or rewrites data removes an object a thread still reads, whichever thread
goes first; the last thread to let an object go deletes it. A reference from one thread
to another's blob is authenticated like the blob. Faults at every request of each of
these: `tests/unit/test_faults.py` (the ops named "shared: ..."); the request budget on
AWS: `tests/aws/test_bulk_budgets.py`. The argument: docs/RELIABILITY.md, "Copies share
objects"."""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    IntegrityError,
    ObjectNotFoundError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    BORROW_PREFIX,
    LOAN_PREFIX,
    borrow_sk,
    control_pk,
    is_record_key,
    loan_sk,
    shared_leaf,
    split_write_ref,
)
from langgraph.checkpoint.s3dynamo.format.records import CheckpointRecord, ItemKey, WritesRecord
from tests.support import raw
from tests.support.backends import Backend
from tests.support.scenarios import ask_graph, chat_graph, snapshot_view


def config(tid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": tid}}


def say(graph: Any, tid: str, text: str) -> None:
    graph.invoke(
        {"messages": [HumanMessage(text, id=f"{tid}-{len(text)}-{text[:8]}")]}, config(tid)
    )


def history(graph: Any, tid: str) -> list[dict[str, Any]]:
    """Every checkpoint of a thread as a user reads it (each value opened), newest first."""
    return [snapshot_view(s) for s in graph.get_state_history(config(tid))]


def objects(saver: S3DynamoSaver) -> dict[str, int]:
    """Every object of the deployment: key -> size."""
    return {o.key: o.size for o in saver.store.deployment_objects()}


def loans(saver: S3DynamoSaver, *tids: str) -> list[Any]:
    return [loan for t in tids for loan in raw.loans(saver, t)]


def document(size: int = 100_000) -> str:
    """Text that does not compress (twice `size` characters): kept as objects."""
    return os.urandom(size).hex()


@pytest.fixture
def saver(backend: Backend) -> S3DynamoSaver:
    return backend.saver()


def source(saver: S3DynamoSaver, tid: str = "src", turns: int = 2, size: int = 100_000) -> Any:
    graph = chat_graph(saver)
    say(graph, tid, document(size))
    for i in range(turns - 1):
        say(graph, tid, f"and then {i}")
    return graph


def test_a_copy_of_a_thread_holding_a_2mb_document_writes_no_object(
    backend: Backend, saver: S3DynamoSaver
) -> None:
    graph = source(saver, size=1_000_000)  # 2 MB
    before, stored = history(graph, "src"), objects(saver)
    backend.reset()
    saver.copy_thread("src", "dst")
    sent = backend.calls()
    # No object request at all: no PUT, no COPY, not even a GET.
    assert not [name for name in sent if name.startswith(("s3.", "objects."))], sent
    assert objects(saver) == stored
    assert history(graph, "dst") == before
    # The copy continues on its own; the source is as it was.
    say(graph, "dst", "a turn of the copy's own")
    assert history(graph, "dst")[-len(before) :] == before
    assert history(graph, "src") == before


def tuples(saver: S3DynamoSaver, tid: str) -> list[tuple[Any, ...]]:
    """Every checkpoint tuple of a thread as `list()` gives it, the thread id aside."""
    out = []
    for t in saver.list(config(tid)):
        parent = (t.parent_config or {}).get("configurable", {})
        where = (t.config["configurable"]["checkpoint_ns"], parent.get("checkpoint_id"))
        out.append((where, t.checkpoint, t.metadata, t.pending_writes))
    return out


def test_a_copy_lists_the_checkpoints_its_source_lists(saver: S3DynamoSaver) -> None:
    """Whose values a copy's checkpoints share is the store's to know: `list()` shows the
    source's checkpoints key for key, and a turn on the copy adds one with LangGraph's
    keys only."""
    graph = source(saver)
    saver.copy_thread("src", "dst")
    copied = tuples(saver, "src")
    assert tuples(saver, "dst") == copied
    say(graph, "dst", "and on the copy")
    say(graph, "src", "and on the source")
    mine, theirs = tuples(saver, "dst"), tuples(saver, "src")
    assert mine[-len(copied) :] == copied
    assert [cp.keys() for _, cp, _, _ in mine] == [cp.keys() for _, cp, _, _ in theirs]


def test_deleting_the_source_keeps_what_the_copy_reads(saver: S3DynamoSaver) -> None:
    graph = source(saver)
    saver.copy_thread("src", "dst")
    say(graph, "dst", "more")
    copied = history(graph, "dst")
    saver.delete_thread("src")
    assert history(graph, "src") == []
    assert history(graph, "dst") == copied
    say(graph, "dst", "still more")
    assert history(graph, "dst")[-len(copied) :] == copied


def test_the_last_thread_to_let_an_object_go_deletes_it(saver: S3DynamoSaver) -> None:
    graph = source(saver)
    saver.copy_thread("src", "a")
    saver.copy_thread("a", "b")  # a copy of a copy shares the source's objects too
    say(graph, "a", document())
    expected = {tid: history(graph, tid) for tid in ("src", "a", "b")}
    for gone in ("a", "src"):
        saver.delete_thread(gone)
        expected[gone] = []
        assert {tid: history(graph, tid) for tid in expected} == expected
    assert objects(saver)  # "b" still reads the source's document
    saver.delete_thread("b")
    assert objects(saver) == {}
    assert loans(saver, "src", "a", "b") == []
    assert raw.left_after_delete(saver, saver.parts.namer.thread("b")) == []


@pytest.mark.parametrize("pruned", ["src", "dst"])
@pytest.mark.parametrize("keep_last", [1, 2])
def test_pruning_either_thread_keeps_what_the_other_reads(
    saver: S3DynamoSaver, pruned: str, keep_last: int
) -> None:
    graph = source(saver, turns=3)
    saver.copy_thread("src", "dst")
    say(graph, "src", document())
    say(graph, "dst", document())
    other = "dst" if pruned == "src" else "src"
    kept = history(graph, other)
    newest = history(graph, pruned)[:keep_last]
    saver.prune([pruned], keep_last=keep_last)
    assert history(graph, pruned) == newest
    assert history(graph, other) == kept
    # Then the other goes too: every object either held is gone with the last.
    saver.delete_thread(other)
    assert history(graph, pruned) == newest
    saver.delete_thread(pruned)
    assert objects(saver) == {}
    assert loans(saver, "src", "dst") == []


def test_garbage_collection_keeps_what_a_copy_shares_of_a_deleted_source(
    saver: S3DynamoSaver,
) -> None:
    graph = source(saver)
    saver.copy_thread("src", "dst")
    copied = history(graph, "dst")
    saver.delete_thread("src")
    plan = saver.ops.plan_garbage_collection(grace=timedelta(0))
    assert plan.objects == 0
    plan.execute()
    assert history(graph, "dst") == copied


def test_retention_removes_an_idle_source_and_keeps_what_its_copy_reads(
    saver: S3DynamoSaver,
) -> None:
    graph = source(saver)
    copied_before = history(graph, "src")
    later = saver.store.clock() + timedelta(days=3).total_seconds()
    saver.store.clock = lambda: later
    saver.copy_thread("src", "dst")  # the copy is new activity; the source stays idle
    plan = saver.ops.expire_idle_threads("1d")
    assert plan.removed == [saver.parts.namer.thread("src")]
    assert history(graph, "src") == []
    assert history(graph, "dst") == copied_before
    # Later the copy goes idle and is removed too: with it, everything.
    much_later = later + timedelta(days=3).total_seconds()
    saver.store.clock = lambda: much_later
    saver.ops.expire_idle_threads("1d")
    assert history(graph, "dst") == []
    assert objects(saver) == {}
    assert loans(saver, "src", "dst") == []


def test_delete_for_runs_keeps_what_the_copy_reads(saver: S3DynamoSaver) -> None:
    graph = chat_graph(saver)

    def run(tid: str, run_id: str) -> None:
        graph.invoke(
            {"messages": [HumanMessage(document(), id=f"{tid}-{run_id}")]},
            {"configurable": {"thread_id": tid}, "metadata": {"run_id": run_id}},
        )

    run("src", "run-0")
    run("src", "run-1")
    saver.copy_thread("src", "dst")
    run("dst", "run-2")

    def by_run(tid: str) -> list[tuple[Any, dict[str, Any]]]:
        return [
            (s.metadata.get("run_id"), snapshot_view(s))
            for s in graph.get_state_history(config(tid))
        ]

    expected = {t: [s for s in by_run(t) if s[0] != "run-1"] for t in ("src", "dst")}
    # A copy keeps its checkpoints' run ids: the run's checkpoints go from both threads.
    saver.delete_for_runs(["run-1"])
    saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).execute()
    saver.ops.plan_garbage_collection(grace=timedelta(0)).execute()
    assert {t: by_run(t) for t in ("src", "dst")} == expected
    saver.delete_thread("src")
    saver.ops.plan_garbage_collection(grace=timedelta(0)).execute()
    assert by_run("dst") == expected["dst"]


def test_reencryption_of_a_copy_and_of_its_source(backend: Backend) -> None:
    old, new = {"k1": os.urandom(32)}, {"k2": os.urandom(32)}
    saver = backend.saver(keys=old)
    graph = source(saver)
    saver.copy_thread("src", "dst")
    copied = history(graph, "dst")
    rotated = backend.saver(keys={**old, **new}, active_key="k2")
    assert rotated.ops.reencrypt(["dst"]) > 0  # the shared objects too, in their place
    assert rotated.ops.reencrypt(["src"]) > 0  # its own records; the objects are done
    assert rotated.ops.reencrypt(["src", "dst"]) == 0
    rotated.delete_thread("src")
    # The old key gone, the copy still reads whole: every blob it shares was re-sealed.
    assert history(chat_graph(backend.saver(keys=new, active_key="k2")), "dst") == copied


def lends(keys: list[ItemKey]) -> bool:
    """A request that writes a copy's borrowings or loans."""
    return any(k.sk.startswith((BORROW_PREFIX, LOAN_PREFIX)) for k in keys)


def test_a_copy_racing_a_delete_of_its_source_loses_nothing(backend: Backend) -> None:
    saver = backend.saver()
    graph = source(saver)
    # Read by the copy before, deleted before its loans are written.
    with (
        backend.before_request(lends, lambda: saver.delete_thread("src")),
        pytest.raises(ConcurrentUpdateError, match="deleted or hidden meanwhile"),
    ):
        saver.copy_thread("src", "dst")
    assert history(graph, "dst") == [] and history(graph, "src") == []
    assert objects(saver) == {} and loans(saver, "src") == []


def test_a_delete_racing_a_copy_of_its_source_ends_what_the_copy_lent(backend: Backend) -> None:
    """The source is deleted once the copy's loans stand, before the copy shows: the copy
    has not settled its borrowing, so the delete ends it and takes every object (the
    copy then never shows)."""
    saver = backend.saver()
    graph = source(saver)
    before = history(graph, "src")
    lent: list[bool] = []

    def after_the_loans(keys: list[ItemKey]) -> bool:
        if lends(keys):
            lent.append(True)
            return False
        return bool(lent)

    def delete() -> None:
        saver.delete_thread("src")
        assert objects(saver) == {}

    with (
        backend.before_request(after_the_loans, delete),
        pytest.raises(ConcurrentUpdateError),
    ):
        saver.copy_thread("src", "dst")
    assert before
    assert history(graph, "dst") == [] and history(graph, "src") == []
    # The copy ended its loans: nothing is left over.
    assert objects(saver) == {} and loans(saver, "src") == []


def test_a_copy_and_its_source_deleted_at_once_leave_no_object(backend: Backend) -> None:
    """The copy's deletion reads its source's records (which still name what it shares)
    and, before it ends its loan, the source is deleted whole: the last of the two lets
    go of every shared object, as retention removing both in parallel needs."""
    saver = backend.saver()
    graph = source(saver)
    saver.copy_thread("src", "dst")
    assert loans(saver, "src")

    def ends_the_loan(keys: list[ItemKey]) -> bool:
        return any(k.sk.startswith(LOAN_PREFIX) for k in keys)

    with backend.before_request(ends_the_loan, lambda: saver.delete_thread("src")):
        saver.delete_thread("dst")
    assert history(graph, "dst") == [] and history(graph, "src") == []
    assert objects(saver) == {} and loans(saver, "src") == []


@pytest.mark.parametrize("keep_last", [1, 2])
def test_a_pruned_copy_and_its_source_deleted_at_once_leave_no_object_unnamed(
    backend: Backend, keep_last: int
) -> None:
    """The copy's prune reads its source's records (which still name what the pruned
    checkpoints shared) and, before it gives those objects up, the source is deleted
    whole: what the copy keeps stays and reads back, and no object is left that no
    record and no loan names (keep_last 1 lets go of every shared object, 2 of some)."""
    saver = backend.saver()
    graph = source(saver, turns=3)
    saver.copy_thread("src", "dst")
    say(graph, "dst", "the copy's own turn")
    kept = history(graph, "dst")[:keep_last]

    def gives_up_objects(keys: list[ItemKey]) -> bool:
        return any(k.sk.startswith(LOAN_PREFIX) for k in keys)

    with backend.before_request(gives_up_objects, lambda: saver.delete_thread("src")):
        saver.prune(["dst"], keep_last=keep_last)
    assert history(graph, "src") == []
    assert history(graph, "dst") == kept
    report = saver.ops.verify()
    assert report.problems == [] and report.checked["objects"] > 0


def _records(saver: S3DynamoSaver, tid: str) -> list[Any]:
    return saver.store.records(tid)


def test_a_table_writer_cannot_point_a_thread_at_another_threads_objects(
    saver: S3DynamoSaver,
) -> None:
    graph = source(saver)
    say(graph, "other", "a thread that shares nothing")
    before = history(graph, "other")
    src_name = saver.parts.namer.thread("src")
    theirs = sorted(
        o.key.rpartition("/")[2] for o in saver.parts.engine.objects.list_owner(src_name)
    )
    # Every checkpoint of "other" made to name every object of "src", as a copy's would:
    # what a thread shares its sealed body says, so the names alone change nothing.
    forged = []
    for rec in _records(saver, "other"):
        if isinstance(rec, CheckpointRecord):
            rec.objects = frozenset({*rec.objects, *(shared_leaf(src_name, x) for x in theirs)})
            forged.append(rec)
    raw.put_records(saver, forged)
    saver.store.forget()
    assert history(graph, "other") == before
    # Without its own inline values, the checkpoint is reported altered; it never shows
    # the other thread's.
    for rec in forged:
        rec.inline = {}
    raw.put_records(saver, forged)
    saver.store.forget()
    with pytest.raises(IntegrityError):
        history(graph, "other")


def test_a_table_writer_cannot_swap_a_copys_shared_write(saver: S3DynamoSaver) -> None:
    graph = source(saver)
    saver.copy_thread("src", "dst")
    dst = _records(saver, "dst")
    writes = [
        r
        for r in dst
        if isinstance(r, WritesRecord) and any(isinstance(v, str) for v in r.writes.values())
    ]
    assert writes, "the document's write is an object the copy shares"
    w = writes[0]
    idx, ref = next((i, v) for i, v in w.writes.items() if isinstance(v, str))
    leaf, tag = split_write_ref(ref)
    # Another object of the source, named as a shared write: the sealed body does not list it.
    src_name = saver.parts.namer.thread("src")
    other = next(
        o.key
        for o in saver.parts.engine.objects.list_owner(src_name)
        if not leaf.endswith(o.key.rpartition("/")[2])
    )
    w.writes[idx] = f"{other}.{tag}"
    raw.put_records(saver, [w])
    with pytest.raises(IntegrityError):
        history(graph, "dst")


def test_a_copy_of_an_interrupted_thread_resumes_after_its_source_is_gone(
    backend: Backend,
) -> None:
    saver = backend.saver(inline_max=0)  # the interrupt and every value are objects
    graph = ask_graph(saver)
    question = document()
    graph.invoke({"question": question}, config("src"))
    paused = snapshot_view(graph.get_state(config("src")))
    saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    # The copy shows the interrupt its source raised, and the resume (a write merged
    # into the writes item the copy shares) runs on it.
    assert snapshot_view(graph.get_state(config("dst"))) == paused
    done = graph.invoke(Command(resume="Ada"), config("dst"))
    assert done == {"question": question, "answer": "you said Ada"}
    history(graph, "dst")  # every checkpoint of the copy opens
    saver.delete_thread("dst")
    assert objects(saver) == {}


class Stopped(Exception):
    """The process copying stopped for good."""


# The request of a copy that settles its borrowing: after the borrowing and the loans
# (one transaction; without transactions, concurrent-run detection off, one each).
SETTLES = {True: 2, False: 3}
DETECTION = [
    pytest.param(
        True,
        id="transactions",
        marks=pytest.mark.unsupported_on("real", reason="dynalite has no transactions"),
    ),
    pytest.param(False, id="no transactions"),
]


@pytest.mark.parametrize("detect", DETECTION)
@pytest.mark.parametrize("fix", ["copy again", "delete the target"])
@pytest.mark.parametrize("stop", ["before its records", "before it shows"])
def test_a_copy_that_stopped_for_good_goes_with_its_deleted_source(
    backend: Backend, stop: str, fix: str, detect: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A copy lent its source's objects, then its process stopped for good (a Lambda's
    time ran out) before it showed anything; the source is then deleted. The deletion
    ends the dead copy's borrowing, so it takes every object of the source with it
    (before, the loan kept them for as long as the target's hidden records stood);
    `verify` names the dead copy (not the objects its hidden records name as missing),
    and a repeat of the copy, or a delete of the target, clears what the target held:
    nothing of the source is left."""
    saver = backend.saver(detect_concurrent_runs=detect)
    graph = source(saver)
    dst = saver.store.name_of("dst")
    lending: list[bool] = []

    def stops_here(keys: list[ItemKey]) -> bool:
        if stop == "before its records":
            return any(k.pk == dst and is_record_key(k.sk) for k in keys)
        if lends(keys):  # the loans, then the borrowing settled as the marks go
            lending.append(True)
        return len(lending) == SETTLES[detect]

    def stops() -> None:
        raise Stopped

    caplog.set_level("INFO", logger="langgraph.checkpoint.s3dynamo.ops.threads")
    with pytest.raises(Stopped), backend.before_request(stops_here, stops):
        saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    assert history(graph, "dst") == [] and history(graph, "src") == []
    assert objects(saver) == {}
    report = saver.ops.verify()
    assert [p["kind"] for p in report.problems] == ["unfinished copy"], report.problems
    (problem,) = report.problems
    assert problem["key"].startswith(f"{dst}! ")
    if stop == "before it shows":  # its hidden records hold the thread id: named
        assert problem["thread_id"] == "dst"
        named = ": delete thread 'dst' (`s3dynamo delete`), or repeat its copy_thread, which"
        assert named in problem["detail"]
    else:  # nothing holds the thread id: the detail says how to tell which thread it is
        assert problem["thread_id"] is None
        assert problem["detail"].endswith(
            f"(it wrote no record): no record holds the target's thread id; its name is "
            f"{dst!r}, the key's start, which copy_thread logs (INFO, `copy_thread <source> "
            "-> <target>`, by name): repeat that copy_thread, which clears it, or "
            "delete_thread the target"
        )
        logged = f"copy_thread {saver.store.name_of('src')} -> {dst}"
        assert logged in caplog.messages, caplog.messages
    if fix == "copy again":
        with pytest.raises(ThreadNotFoundError, match="unfinished copy the target held"):
            saver.copy_thread("src", "dst")
    elif problem["thread_id"] is not None:
        saver.ops.plan_delete("dst").execute()  # `s3dynamo delete dst --yes`
    else:
        saver.delete_thread("dst")
    assert loans(saver, "src") == [] and saver.store.records("dst") == []
    assert saver.ops.verify().problems == []


@pytest.mark.parametrize("detect", DETECTION)
def test_a_copy_that_settles_before_its_source_ends_it_keeps_what_it_shares(
    backend: Backend, detect: bool
) -> None:
    """The source's deletion reads the copy's borrowing still copying and, before its
    update ending it, the copy settles and shows: the deletion's update is refused, it
    keeps what the copy shares, and the copy reads whole."""
    saver = backend.saver(detect_concurrent_runs=detect)
    graph = source(saver)
    before = history(graph, "src")
    borrowing = ItemKey(
        control_pk(saver.store.name_of("dst")), borrow_sk(saver.store.name_of("src"))
    )
    stopped, go, lending = threading.Event(), threading.Event(), []

    def copy() -> None:
        saver.copy_thread("src", "dst")

    copier = threading.Thread(target=copy)

    def see(keys: list[ItemKey]) -> None:
        if threading.current_thread() is copier:
            if lends(keys):
                lending.append(True)
            if len(lending) == SETTLES[detect] and not go.is_set():  # the settle: held back
                stopped.set()
                go.wait(30)
        elif keys == [borrowing] and not go.is_set():  # the deletion's update ending it
            go.set()
            copier.join(30)

    with backend.watching(see):
        copier.start()
        assert stopped.wait(30)
        saver.delete_thread("src")
    assert not copier.is_alive()
    assert history(graph, "dst") == before and history(graph, "src") == []
    assert saver.ops.verify().problems == []
    saver.delete_thread("dst")
    assert objects(saver) == {} and loans(saver, "src") == []


def test_a_copy_stopped_between_settling_and_showing_is_cleared_by_its_repeat(
    backend: Backend,
) -> None:
    """Without transactions a copy settles its borrowing, then removes its marks: one
    stopped for good between the two is settled, so the source's deletion keeps what it
    lent; the copy's repeat (its source gone) clears the target, and with it those
    objects."""
    saver = backend.saver(detect_concurrent_runs=False)
    graph = source(saver)
    lending: list[bool] = []

    def shows(keys: list[ItemKey]) -> bool:
        if lends(keys):
            lending.append(True)
            return False
        return len(lending) == SETTLES[False]

    def stops() -> None:
        raise Stopped

    with pytest.raises(Stopped), backend.before_request(shows, stops):
        saver.copy_thread("src", "dst")
    saver.delete_thread("src")
    assert objects(saver) and history(graph, "dst") == []
    with pytest.raises(ThreadNotFoundError, match="unfinished copy the target held"):
        saver.copy_thread("src", "dst")
    assert objects(saver) == {} and loans(saver, "src") == []
    assert saver.store.records("dst") == [] and saver.ops.verify().problems == []


@pytest.mark.parametrize("detect", DETECTION)
def test_a_copy_whose_source_is_deleted_as_it_shows_never_shows(
    backend: Backend, detect: bool
) -> None:
    """The source's deletion ends the borrowing just before the copy settles it: the copy
    is refused, clears what it wrote and says so; nothing of either thread is left."""
    saver = backend.saver(detect_concurrent_runs=detect)
    graph = source(saver)
    lending: list[bool] = []

    def settles(keys: list[ItemKey]) -> bool:
        if lends(keys):
            lending.append(True)
        return len(lending) == SETTLES[detect]

    with (
        backend.before_request(settles, lambda: saver.delete_thread("src")),
        pytest.raises(ConcurrentUpdateError, match="the copy never showed and is cleared"),
    ):
        saver.copy_thread("src", "dst")
    assert history(graph, "dst") == [] and history(graph, "src") == []
    assert objects(saver) == {} and loans(saver, "src") == []
    assert saver.store.records("dst") == [] and saver.ops.verify().problems == []


# ------------------------------------- what someone who can write the table can do


def _forged_loan(saver: S3DynamoSaver, lender: str, borrower_name: str) -> dict[str, Any]:
    """A loan of every object of `lender` to `borrower_name`, as a table writer writes it."""
    name = saver.parts.namer.thread(lender)
    leaves = frozenset(
        o.key.rpartition("/")[2] for o in saver.parts.engine.objects.list_owner(name)
    )
    assert leaves
    return {"pk": control_pk(name), "sk": loan_sk(borrower_name, 0), "ll": leaves}


def test_a_loan_no_borrowing_backs_keeps_nothing(saver: S3DynamoSaver) -> None:
    """Issue 51: a copy writes its borrowing before its loans and deletes it after them,
    so a loan without one was written by someone else: every deletion and collection
    passes it by, and `verify` names it."""
    source(saver)
    nobody = saver.parts.namer.thread("no such thread")
    raw.put_items(saver, [_forged_loan(saver, "src", nobody)])
    report = saver.ops.verify()
    assert [p["kind"] for p in report.problems] == ["unbacked loan"]
    saver.delete_thread("src")
    assert objects(saver) == {}
    # Collection too: what such a loan names is not live, so orphans it names go.
    source(saver, "other")
    orphan = "A" * 21 + "Q"
    forged = {**_forged_loan(saver, "other", nobody), "ll": frozenset({orphan})}
    raw.put_items(saver, [forged])
    name = saver.parts.namer.thread("other")
    assert orphan not in (saver.store.live_leaves(name) or set())
    assert saver.store.lent_leaves(name) == set()


def test_a_forged_loan_with_a_forged_borrowing_keeps_objects_until_that_thread_goes(
    saver: S3DynamoSaver,
) -> None:
    """The stated limit (docs/SECURITY.md): a loan backed by a borrowing forged in an
    existing thread's partition keeps the lender's objects until that thread is deleted,
    whose deletion ends the loan as a copy's does."""
    graph = source(saver)
    say(graph, "bystander", "a thread that copied nothing")
    bystander = saver.parts.namer.thread("bystander")
    src = saver.parts.namer.thread("src")
    borrowing = {"pk": control_pk(bystander), "sk": borrow_sk(src)}
    raw.put_items(saver, [_forged_loan(saver, "src", bystander), borrowing])
    saver.delete_thread("src")
    assert objects(saver)  # kept: what a loan names
    saver.delete_thread("bystander")
    assert objects(saver) == {} and loans(saver, "src") == []


def test_a_shared_object_deleted_because_its_loan_was_names_the_loan(
    saver: S3DynamoSaver,
) -> None:
    """Issue 51: the loan removed by someone else, the source's deletion takes the object
    its copy shares (nothing kept it); the copy's read says so, not that s3dynamo never
    deleted it."""
    graph = source(saver)
    saver.copy_thread("src", "dst")
    (loan,) = raw.loans(saver, "src")
    raw.table(saver).batch(deletes=[loan.key])
    saver.delete_thread("src")
    saver.store.forget()
    with pytest.raises(ObjectNotFoundError) as caught:
        history(graph, "dst")
    message = str(caught.value)
    assert "an object of thread 'src', which this copy shares" in message
    assert "the object, or the record or loan that kept it, was deleted outside" in message


def test_deleting_a_source_reads_its_loans_borrowings_once(backend: Backend) -> None:
    """What reading the borrowings costs (docs/RELIABILITY.md, "Deleting, copying,
    pruning"): a delete of a thread with one copy sends one BatchGetItem more than it
    did, after its Query of the loans; a delete of the copy, none."""
    saver = backend.saver()
    graph = source(saver)
    saver.copy_thread("src", "dst")
    say(graph, "dst", "more")
    backend.reset()
    saver.delete_thread("src")
    dynamodb = {k: n for k, n in backend.calls().items() if k.startswith("dynamodb.")}
    assert dynamodb == {
        "dynamodb.Query": 4,
        "dynamodb.BatchWriteItem": 5,
        "dynamodb.BatchGetItem": 1,
    }
    backend.reset()
    saver.delete_thread("dst")
    assert "dynamodb.BatchGetItem" not in backend.calls()


class Died(Exception):
    """The process deleting the copy stopped for good."""


def test_a_copys_delete_that_died_before_its_records_went_is_one_unfinished_delete(
    backend: Backend,
) -> None:
    """The copy's deletion set its tombstones and said its borrowing ends, then its
    process died before the records went; the source is deleted whole meanwhile and, the
    borrowing ending, takes every shared object with it. The copy reads as deleted;
    `verify` reports one unfinished delete, not the objects its dead records name as
    missing, and a repeat of the delete finishes it."""
    saver = backend.saver()
    graph = source(saver)
    saver.copy_thread("src", "dst")
    dst = saver.store.name_of("dst")

    def removes_records(keys: list[ItemKey]) -> bool:
        return any(k.pk == dst and is_record_key(k.sk) for k in keys)

    def dies() -> None:
        raise Died

    with pytest.raises(Died), backend.before_request(removes_records, dies):
        saver.delete_thread("dst")
    saver.delete_thread("src")
    assert history(graph, "dst") == [] and history(graph, "src") == []
    report = saver.ops.verify()
    assert [p["kind"] for p in report.problems] == ["unfinished delete"], report.problems
    assert "5 object(s) those records name are gone already" in report.problems[0]["detail"]
    saver.delete_thread("dst")
    assert saver.ops.verify().problems == [] and objects(saver) == {}
