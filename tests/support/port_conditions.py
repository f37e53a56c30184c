"""The conditions of a commit and of a lease, where marks sort, and the upload journal,
checked on any `Index`: the in-memory twin (`tests/unit/test_memory_ports.py`) and
DynamoDB on moto (`tests/aws/test_concurrency.py`, `tests/aws/test_bulk_budgets.py`,
`tests/aws/test_gc.py`) must agree on every one."""

from __future__ import annotations

from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError, LeaseLostError
from langgraph.checkpoint.s3dynamo.layout import intents_before, journal_pk_of, mark_sk
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    Fence,
    HeadMove,
    ItemKey,
    Mark,
    WritesRecord,
    upload_intent,
)

PK, HEAD, LEASE = "p", ItemKey("p!", "head#ns"), ItemKey("p!", "lease")


def _cp(cid: str) -> CheckpointRecord:
    return CheckpointRecord(PK, f"ns#{cid}", b"body-" + cid.encode(), b"m", b"t")


def _ids(index: Any) -> list[str]:
    return [r.sk for r in index.query(PK, prefix="ns#").records]


def commit(
    index: Any, cid: str, parent: str | None, *, check: bool = True, fence: Any = None
) -> None:
    index.put_checkpoint(_cp(cid), HeadMove(HEAD, cid, parent, check), fence)


def check_commit_conditions(index: Any) -> None:
    # A new namespace: the first commit with no parent goes; a second one is refused.
    commit(index, "1", None)
    with pytest.raises(ConcurrentUpdateError):
        commit(index, "1b", None)
    # A continuation of the head goes; a second child of the same parent is refused and
    # writes nothing.
    commit(index, "2", "1")
    with pytest.raises(ConcurrentUpdateError):
        commit(index, "2b", "1")
    assert _ids(index) == ["ns#1", "ns#2"]
    # A repeat of the commit that moved the head (its answer lost) goes.
    commit(index, "2", "1")
    # A fork (unchecked) from an old parent goes and moves the head.
    commit(index, "3", "1", check=False)
    with pytest.raises(ConcurrentUpdateError):
        commit(index, "4", "2")
    commit(index, "4", "3")
    # Without a head (maintenance dropped it) any parent goes.
    index.drop_heads("p", ["ns"])
    commit(index, "5", "1")
    assert _ids(index) == ["ns#1", "ns#2", "ns#3", "ns#4", "ns#5"]


def check_lease_conditions(index: Any) -> None:
    first = index.acquire_lease(LEASE, "a", 1_000, 500)
    assert first is not None and first.token >= 1
    # Held and unexpired: a second holder is refused.
    assert index.acquire_lease(LEASE, "b", 1_200, 500) is None
    commit(index, "1", None, fence=Fence(LEASE, first.token))
    # Expired: taken over with a higher token; the first holder's writes are refused.
    second = index.acquire_lease(LEASE, "b", 1_600, 500)
    assert second is not None and second.token > first.token
    with pytest.raises(LeaseLostError):
        commit(index, "2", "1", fence=Fence(LEASE, first.token))
    with pytest.raises(LeaseLostError):
        index.merge_writes(
            WritesRecord(PK, "ns#1#t", b"t", {0: b"w"}), frozenset(), Fence(LEASE, first.token)
        )
    with pytest.raises(LeaseLostError):
        index.renew_lease(first, 1_700, 500)
    assert _ids(index) == ["ns#1"]
    index.release_lease(first)  # taken over: releasing changes nothing
    assert index.acquire_lease(LEASE, "c", 1_700, 500) is None
    # The holder writes, renews, releases; the next acquisition gets a higher token still.
    commit(index, "2", "1", fence=Fence(LEASE, second.token))
    index.merge_writes(
        WritesRecord(PK, "ns#2#t", b"t", {0: b"w"}), frozenset(), Fence(LEASE, second.token)
    )
    renewed = index.renew_lease(second, 1_800, 500)
    assert renewed.expires_ms == 2_300
    index.release_lease(renewed)
    third = index.acquire_lease(LEASE, "c", 1_900, 500)
    assert third is not None and third.token > second.token
    # A holder's accepted write renews its lease in the same request: the expiry becomes
    # the fence's. (`third` lapses at 2_400 on its own.)
    commit(index, "3", "2", fence=Fence(LEASE, third.token, 5_000))
    assert index.acquire_lease(LEASE, "d", 3_000, 500) is None
    index.merge_writes(
        WritesRecord(PK, "ns#3#t", b"t", {0: b"w"}), frozenset(), Fence(LEASE, third.token, 6_000)
    )
    assert index.acquire_lease(LEASE, "d", 5_500, 500) is None
    # A refused write renews nothing: a fenced commit whose head condition fails...
    with pytest.raises(ConcurrentUpdateError):
        commit(index, "4", "1", fence=Fence(LEASE, third.token, 60_000))
    fourth = index.acquire_lease(LEASE, "d", 6_001, 500)
    assert fourth is not None and fourth.token > third.token
    # ... and a taken-over holder's writes.
    with pytest.raises(LeaseLostError):
        commit(index, "4", "3", fence=Fence(LEASE, third.token, 60_000))
    with pytest.raises(LeaseLostError):
        index.merge_writes(
            WritesRecord(PK, "ns#3#t", b"t", {1: b"w"}),
            frozenset(),
            Fence(LEASE, third.token, 60_000),
        )
    assert "ns#4" not in _ids(index)
    assert index.query(PK, prefix="ns#3#t").records[0].writes.keys() == {0}
    assert index.acquire_lease(LEASE, "e", 6_502, 500) is not None


def check_mark_conditions(index: Any) -> None:
    writes = WritesRecord(PK, "ns#2#task", b"t", {0: b"w"})
    index.write_batch(puts=[_cp("1"), _cp("2"), writes])
    mark = Mark(PK, mark_sk("ns", "prune"), "2", frozenset({"2"}), frozenset({"0"}), 7)
    index.write_batch(puts=[mark])
    # Descending from the namespace's top, the mark comes first and counts towards the
    # limit; it comes in `marks`, never among the records, as it was written.
    top = index.query(PK, prefix="ns#", descending=True, limit=2)
    assert top.marks == (mark,) and [r.sk for r in top.records] == ["ns#2#task"]
    whole = index.query(PK, prefix="ns#")
    assert [r.sk for r in whole.records] == ["ns#1", "ns#2", "ns#2#task"]
    assert whole.marks == (mark,)
    assert mark.key in set(index.query_keys(PK))
    assert [r.sk for r in index.scan()] == ["ns#1", "ns#2", "ns#2#task"]
    index.write_batch(deletes=[mark.key])
    assert index.query(PK, prefix="ns#").marks == ()


def check_journal_conditions(index: Any) -> None:
    """Upload intents: read back by key range, closed by the commit that names them (with
    or without a head, with or without a fence: a put_writes too), even when already gone,
    and deleted with other control items; never seen by a Scan of thread records."""
    thread = "A" * 21 + "Q"
    pk = journal_pk_of(thread)
    intents = [upload_intent(thread, [f"leaf{i}"], 1_000 + i, f"n{i}") for i in range(4)]
    for intent in intents:
        index.put_intent(intent)
    assert index.intents_before(pk, intents_before(1_002)) == intents[:2]
    assert index.intents_before(pk, intents_before(5_000)) == intents
    index.put_checkpoint(_cp("1"), None, None, intents[0].key)
    index.put_checkpoint(_cp("2"), HeadMove(HEAD, "2", None, False), None, intents[1].key)
    index.merge_writes(
        WritesRecord(PK, "ns#2#t", b"t", {0: b"w"}), frozenset(), None, intents[2].key
    )
    # A repeat of a commit whose intent is already gone goes through.
    index.put_checkpoint(_cp("2"), HeadMove(HEAD, "2", None, True), None, intents[1].key)
    assert index.intents_before(pk, intents_before(5_000)) == intents[3:]
    assert _ids(index) == ["ns#1", "ns#2", "ns#2#t"]
    index.delete_items([intents[3].key])
    assert index.intents_before(pk, intents_before(5_000)) == []
    index.put_intent(intents[3])
    assert [r.sk for r in index.scan()] == ["ns#1", "ns#2", "ns#2#t"]
