"""The thread format on every table: what each write of `store/format.py` leaves
(`records.py`'s items), and which of its conditions refuse what. On the in-memory table
and, marked `aws`, on DynamoDB (moto in process, and the integration tiers' servers)."""

from __future__ import annotations

from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError, LeaseLostError
from langgraph.checkpoint.s3dynamo.format.layout import (
    deployment_pk,
    intents_before,
    journal_pk_of,
    mark_sk,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    ControlRecord,
    Fence,
    HeadMove,
    Lease,
    Mark,
    Record,
    WritesRecord,
    control_from,
    head_key,
    intent_from,
    intent_item,
    is_mark,
    mark_from,
    mark_item,
    put_control,
    record_from,
    record_item,
    stamp_from,
    upload_intent,
)
from langgraph.checkpoint.s3dynamo.format.schema import RUN_INDEX
from langgraph.checkpoint.s3dynamo.store import format as thread_format
from langgraph.checkpoint.s3dynamo.table import (
    Delete,
    Put,
    Table,
    Write,
    begins,
    every_item,
    key_of,
    lt,
)
from tests.support.backends import Backend
from tests.support.raw import HEAD, LEASE, PK
from tests.support.raw import checkpoint_record as _cp

LAST_WINS = frozenset({-1})

# A commit with a head or a fence is one TransactWriteItems on DynamoDB.
needs_transactions = pytest.mark.unsupported_on("real", reason="dynalite has no transactions")


@pytest.fixture
def table(backend: Backend) -> Table:
    saver = backend.saver()
    return saver.parts.engine.ports.table  # type: ignore[no-any-return]


def send(table: Table, writes: list[Write]) -> None:
    """As the engine sends a commit: one write alone, else one transaction."""
    if len(writes) == 1:
        table.write(writes[0])
    else:
        table.transact(writes)


def records(table: Table, prefix: str = "ns#") -> list[Record]:
    items = every_item(table, PK, where=begins("sk", prefix), consistent=True)
    return [record_from(i) for i in items if not is_mark(i)]


def _ids(table: Table, prefix: str = "ns#") -> list[str]:
    return [r.sk for r in records(table, prefix)]


def commit(
    table: Table, cid: str, parent: str | None, *, check: bool = True, fence: Any = None
) -> None:
    head = HeadMove(HEAD, cid, parent, check)
    send(table, thread_format.commit_checkpoint(_cp(cid), head, fence, 0))


def merge(table: Table, record: WritesRecord, fence: Fence | None = None) -> None:
    send(table, thread_format.commit_writes(record, LAST_WINS, fence))


def take(table: Table, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
    taken = table.write(thread_format.take_lease(LEASE, owner, now_ms, ttl_ms), returning="new")
    if not taken.applied or taken.item is None:
        return None
    return thread_format.lease_taken(LEASE, owner, taken.item, now_ms + ttl_ms)


def set_expiry(table: Table, lease: Lease, expires_ms: int) -> bool:
    return table.write(thread_format.lease_expiry(lease, expires_ms)).applied


@needs_transactions
def test_commit_conditions(table: Table) -> None:
    # A new namespace: the first commit with no parent goes; a second one is refused.
    commit(table, "1", None)
    with pytest.raises(ConcurrentUpdateError):
        commit(table, "1b", None)
    # A continuation of the head goes; a second child of the same parent is refused
    # and writes nothing.
    commit(table, "2", "1")
    with pytest.raises(ConcurrentUpdateError):
        commit(table, "2b", "1")
    assert _ids(table) == ["ns#1", "ns#2"]
    # A repeat of the commit that moved the head (its answer lost) goes.
    commit(table, "2", "1")
    # A fork (unchecked) from an old parent goes and moves the head.
    commit(table, "3", "1", check=False)
    with pytest.raises(ConcurrentUpdateError, match="the head names 3, not 2"):
        commit(table, "4", "2")
    commit(table, "4", "3")
    # Without a head (maintenance dropped it) any parent goes.
    table.batch(deletes=[HEAD])
    commit(table, "5", "1")
    # A head behind the parent (a commit without detection wrote the parent and left the
    # head) goes, and moves it; a second child of that parent is refused.
    send(table, thread_format.commit_checkpoint(_cp("6"), None, None, 0))
    commit(table, "7", "6")
    with pytest.raises(ConcurrentUpdateError, match="the head names 7, not 6"):
        commit(table, "7b", "6")
    assert _ids(table) == ["ns#1", "ns#2", "ns#3", "ns#4", "ns#5", "ns#6", "ns#7"]


@needs_transactions
def test_lease_conditions(table: Table) -> None:
    first = take(table, "a", 1_000, 500)
    assert first is not None and first.token >= 1
    # Held and unexpired: a second holder is refused.
    assert take(table, "b", 1_200, 500) is None
    commit(table, "1", None, fence=Fence(LEASE, first.token))
    # Expired: taken over with a higher token; the first holder's writes are refused.
    second = take(table, "b", 1_600, 500)
    assert second is not None and second.token > first.token
    with pytest.raises(LeaseLostError):
        commit(table, "2", "1", fence=Fence(LEASE, first.token))
    with pytest.raises(LeaseLostError):
        merge(table, WritesRecord(PK, "ns#1#t", b"t", {0: b"w"}), Fence(LEASE, first.token))
    assert not set_expiry(table, first, 2_200)  # renewing a lease taken over
    assert _ids(table) == ["ns#1"]
    set_expiry(table, first, 0)  # taken over: releasing changes nothing
    assert take(table, "c", 1_700, 500) is None
    # The holder writes, renews, releases; the next one gets a higher token still.
    commit(table, "2", "1", fence=Fence(LEASE, second.token))
    merge(table, WritesRecord(PK, "ns#2#t", b"t", {0: b"w"}), Fence(LEASE, second.token))
    assert set_expiry(table, second, 2_300)
    set_expiry(table, second, 0)
    third = take(table, "c", 1_900, 500)
    assert third is not None and third.token > second.token
    # A holder's accepted write renews its lease in the same request: the expiry
    # becomes the fence's. (`third` lapses at 2_400 on its own.)
    commit(table, "3", "2", fence=Fence(LEASE, third.token, 5_000))
    assert take(table, "d", 3_000, 500) is None
    merge(table, WritesRecord(PK, "ns#3#t", b"t", {0: b"w"}), Fence(LEASE, third.token, 6_000))
    assert take(table, "d", 5_500, 500) is None
    # A refused write renews nothing: a fenced commit whose head condition fails...
    with pytest.raises(ConcurrentUpdateError):
        commit(table, "4", "1", fence=Fence(LEASE, third.token, 60_000))
    fourth = take(table, "d", 6_001, 500)
    assert fourth is not None and fourth.token > third.token
    # ... and a taken-over holder's writes: the transaction writes nothing at all.
    with pytest.raises(LeaseLostError):
        commit(table, "4", "3", fence=Fence(LEASE, third.token, 60_000))
    with pytest.raises(LeaseLostError):
        merge(table, WritesRecord(PK, "ns#3#t", b"t", {1: b"w"}), Fence(LEASE, third.token, 60_000))
    assert "ns#4" not in _ids(table)
    (writes,) = records(table, "ns#3#t")
    assert isinstance(writes, WritesRecord) and writes.writes.keys() == {0}
    assert take(table, "e", 6_502, 500) is not None


def test_marks_sort_first_and_come_apart(table: Table) -> None:
    writes = WritesRecord(PK, "ns#2#task", b"t", {0: b"w"})
    table.batch(thread_format.batch_items([_cp("1"), _cp("2"), writes]))
    mark = Mark(PK, mark_sk("ns", "prune"), "2", frozenset({"2"}), frozenset({"0"}), 7)
    table.batch([mark_item(mark)])
    # Descending from the namespace's top, the mark comes first and counts towards the
    # limit, read back as it was written.
    top = table.query(PK, where=begins("sk", "ns#"), descending=True, limit=2)
    assert [mark_from(i) for i in top.items if is_mark(i)] == [mark]
    assert [i["sk"] for i in top.items if not is_mark(i)] == ["ns#2#task"]
    assert _ids(table) == ["ns#1", "ns#2", "ns#2#task"]
    table.batch(deletes=[mark.key])
    assert not [i for i in every_item(table, PK) if is_mark(i)]


def test_records_read_back_as_written(table: Table) -> None:
    record = _cp("1", run_key="run-7", objects=frozenset({"o1", "o2"}), written_at=1_700)
    record.inline["tag"] = b"\x00sealed"
    send(table, thread_format.commit_checkpoint(record, None, None, 0))
    record.inline["tag"] = b"changed after the write"  # the stored copy stays
    writes = WritesRecord(PK, "ns#1#t", b"task", {0: b"w", 1: "leaf/ref"}, "bundle", 1_701)
    merge(table, writes)
    stored, stored_writes = records(table)
    assert stored == _cp(
        "1",
        run_key="run-7",
        objects=frozenset({"o1", "o2"}),
        written_at=1_700,
        inline={"tag": b"\x00sealed"},
    )
    assert stored_writes == writes
    assert [key_of(i) for i in every_item(table, "run-7", index=RUN_INDEX)] == [record.key]
    assert every_item(table, "run-8", index=RUN_INDEX) == []
    assert table.item_size(record_item(stored)) > len(stored.body)


def test_merge_keeps_first_regular_write_and_last_special(table: Table) -> None:
    merge(table, WritesRecord(PK, "a#1#t", b"t", {0: b"first", -1: b"e1"}))
    merge(table, WritesRecord(PK, "a#1#t", b"t", {0: b"second", 1: b"new", -1: b"e2"}))
    (stored,) = records(table, "a#")
    assert isinstance(stored, WritesRecord)
    assert stored.writes == {0: b"first", 1: b"new", -1: b"e2"}


def test_replace_only_if_unchanged(table: Table) -> None:
    old = _cp("1")
    table.write(Put(record_item(old)))
    replace = thread_format.replace_if_unchanged
    assert table.write(replace(old, _cp("1", b"new"))).applied  # type: ignore[arg-type]
    assert not table.write(replace(old, _cp("1", b"newer"))).applied  # type: ignore[arg-type]
    (stored,) = records(table)
    assert isinstance(stored, CheckpointRecord) and stored.body == b"new"


def test_heads_are_control_items_apart_from_records(table: Table) -> None:
    table.batch(thread_format.head_items("p", {"ns": "1", "sub": "~5"}))
    stamps = {s.key: s for s in map(stamp_from, every_item(table, "p!"))}
    assert set(stamps) == {head_key("p", "ns"), head_key("p", "sub")}
    assert stamps[head_key("p", "ns")].head == "1"
    # A tombstone stays in the idle index under its own day.
    assert (
        stamps[head_key("p", "sub")].idle is not None and stamps[head_key("p", "ns")].idle is None
    )


def test_control_records_replace_only_at_the_expected_version(table: Table) -> None:
    pk = deployment_pk("test-only/")
    v1 = ControlRecord("deployment", {"bucket": "b", "check": b"\x01"}, 1)
    assert table.write(put_control(pk, v1, None)).applied
    assert not table.write(put_control(pk, v1, None)).applied  # one of that name exists
    v2 = ControlRecord("deployment", {"bucket": "c", "check": b"\x02"}, 2)
    assert not table.write(put_control(pk, v2, 2)).applied  # the stored one is at 1
    assert table.write(put_control(pk, v2, 1)).applied
    assert not table.write(put_control(pk, ControlRecord("keyring", {}, 1), 1)).applied
    assert [control_from(i) for i in every_item(table, pk)] == [v2]


@needs_transactions
def test_upload_intents_are_closed_by_the_commit_that_names_them(table: Table) -> None:
    """Read back by key range; closed by the commit that names them (with or without a
    head, a put_writes too) even when already gone, as the engine closes them."""
    thread = "A" * 21 + "Q"
    pk = journal_pk_of(thread)
    intents = [upload_intent(thread, [f"leaf{i}"], 1_000 + i, f"n{i}") for i in range(4)]
    table.batch([intent_item(i) for i in intents])

    def left(before_ms: int) -> list[Any]:
        found = every_item(table, pk, where=lt("sk", intents_before(before_ms)))
        return [intent_from(i) for i in found]

    assert left(1_002) == intents[:2]
    assert left(5_000) == intents
    send(table, [*thread_format.commit_checkpoint(_cp("1"), None, None, 0), Delete(intents[0].key)])
    head = HeadMove(HEAD, "2", None, False)
    send(table, [*thread_format.commit_checkpoint(_cp("2"), head, None, 0), Delete(intents[1].key)])
    writes = thread_format.commit_writes(
        WritesRecord(PK, "ns#2#t", b"t", {0: b"w"}), LAST_WINS, None
    )
    send(table, [*writes, Delete(intents[2].key)])
    # A repeat of a commit whose intent is already gone goes through.
    head = HeadMove(HEAD, "2", None, True)
    send(table, [*thread_format.commit_checkpoint(_cp("2"), head, None, 0), Delete(intents[1].key)])
    assert left(5_000) == intents[3:]
    assert _ids(table) == ["ns#1", "ns#2", "ns#2#t"]


def test_every_item_of_a_thread_is_one_of_its_kinds(table: Table) -> None:
    """Records and marks share the thread's partition; heads, leases and loans its
    control partition; no item there parses as another kind."""
    table.batch(thread_format.batch_items([_cp("1")]))
    table.batch([mark_item(Mark(PK, mark_sk("ns", "delete"), "1"))])
    table.batch(thread_format.head_items(PK, {"ns": "1"}))
    table.write(thread_format.borrowing(PK, "lender"))
    kinds = sorted(("mark" if is_mark(i) else "record") for i in every_item(table, PK))
    assert kinds == ["mark", "record"]
    assert sorted(str(i["sk"]) for i in every_item(table, f"{PK}!")) == ["borrow#lender", "head#ns"]
