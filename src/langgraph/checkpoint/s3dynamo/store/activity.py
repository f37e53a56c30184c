"""What a thread's stamps say of its activity: when each record was written, its
newest write, its namespaces, heads, lease, borrowings, catalog entries and the marks of
unfinished operations (`SeenThread`), read from one Query of the thread or from a Scan
(retention's), and whether the idle index still finds it (`index_write`).

Retention judges a thread from this (`ops/retention.py`), its removal checks that no
write landed since (`store/removal.py`), and a removal that drops heads keeps the
thread in the idle index with it (docs/RELIABILITY.md, "Finding idle threads: the idle
index").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from langgraph.checkpoint.s3dynamo.format.layout import (
    LEASE_SK,
    PRUNING_HEAD,
    borrow_lender,
    catalog_ref_token,
    day_of_idle_key,
    head_namespace,
    idle_day,
    idle_key,
    is_control_pk,
    is_mark_key,
    is_writes_key,
    mark_operation,
    parse_sk,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey, Stamp
from langgraph.checkpoint.s3dynamo.keys.identities import checkpoint_time
from langgraph.checkpoint.s3dynamo.store.format import set_idle
from langgraph.checkpoint.s3dynamo.table import Update


def id_time(checkpoint_id: str) -> int | None:
    """Creation time (whole seconds since the epoch) held in a UUIDv6 or v1 checkpoint id."""
    at = checkpoint_time(checkpoint_id)
    return None if at is None else int(at)


def stamp_time(stamp: Stamp) -> int | None:
    """When a record was written: its stamp, else its checkpoint id's time."""
    if stamp.written_at is not None:
        return stamp.written_at
    return id_time(parse_sk(stamp.key.sk)[1])


@dataclass
class SeenThread:
    """What the Scan saw of one thread."""

    newest: int | None = None
    records: int = 0
    undated: int = 0
    namespaces: set[str] = field(default_factory=set)
    # namespace name -> how many checkpoint records it has
    checkpoints: dict[str, int] = field(default_factory=dict)
    # namespace name -> the checkpoint id or tombstone its head names
    heads: dict[str, str] = field(default_factory=dict)
    lease: bool = False
    # Threads whose objects it shares, as a copy (its borrowings).
    borrowed: set[str] = field(default_factory=set)
    # The back-references of its catalog entries.
    catalogued: set[ItemKey] = field(default_factory=set)
    # operations whose marks the thread holds (an operation of several requests left
    # unfinished, or running now)
    marks: set[str] = field(default_factory=set)
    # When its newest copy mark was set: a copy or import writes its records behind it.
    copying: int | None = None
    # The latest day its items carry in the idle index, and where its newest write is.
    indexed: int | None = None
    newest_key: ItemKey | None = None

    def see(self, stamp: Stamp) -> None:
        sk = stamp.key.sk
        if stamp.idle is not None:
            self.indexed = max(self.indexed or 0, day_of_idle_key(stamp.idle))
        if is_mark_key(sk):
            operation = mark_operation(sk)
            self.marks.add(operation)
            if operation == "copy" and stamp.written_at is not None:
                self.copying = max(self.copying or 0, stamp.written_at)
            return
        if is_control_pk(stamp.key.pk):
            ns_name = head_namespace(sk)
            if stamp.head is not None and ns_name is not None:
                self.heads[ns_name] = stamp.head
            elif sk == LEASE_SK:
                self.lease = True
            elif (lender := borrow_lender(sk)) is not None:
                self.borrowed.add(lender)
            elif catalog_ref_token(sk) is not None:
                self.catalogued.add(stamp.key)
            return
        self.records += 1
        ns_name = parse_sk(sk)[0]
        self.namespaces.add(ns_name)
        if not is_writes_key(sk):
            self.checkpoints[ns_name] = self.checkpoints.get(ns_name, 0) + 1
        at = stamp_time(stamp)
        if at is None:
            self.undated += 1
        elif self.newest is None or at > self.newest:
            self.newest, self.newest_key = at, stamp.key

    def history_to_drop(self, keep_last: int = 1) -> bool:
        """For `keep_latest`: whether a namespace has more than its `keep_last` newest
        checkpoints, or an earlier sweep was interrupted on it (its marker is still
        there)."""
        return (
            PRUNING_HEAD in self.heads
            or "prune" in self.marks
            or any(n > keep_last for n in self.checkpoints.values())
        )

    def unfinished(self, cutoff: int) -> bool:
        """For a thread without records: whether a removal is left to finish (a lease
        it took, a mark, a live head, a tombstone old enough to go), rather than only
        the tombstones of a removal just finished). Any tombstone counts, a forged one
        (no seal) too: on a thread without records it is removed as a finished removal's
        is, and it never decides what happens to records, which their stamps judge."""
        return (
            self.lease
            or bool(self.marks)
            or bool(self.catalogued)
            or any((tombstone_time(head) or 0) <= cutoff for head in self.heads.values())
        )


def index_write(name: str, stamps: Iterable[Stamp], gone: Collection[ItemKey]) -> Update | None:
    """What keeps a thread whose heads went (`delete_for_runs`) in the idle index: its
    newest record besides `gone` gets the key of its write's day, unless a record it
    keeps carries that day or a later one already (None: nothing to write)."""
    seen = SeenThread()
    for stamp in stamps:
        if stamp.key not in gone:
            seen.see(stamp)
    if seen.newest is None or seen.newest_key is None:
        return None
    if seen.indexed is not None and seen.indexed >= idle_day(seen.newest):
        return None
    return set_idle(seen.newest_key, idle_key(name, seen.newest), None)
