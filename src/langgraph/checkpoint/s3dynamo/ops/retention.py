"""Retention: threads idle for longer than a time to live (TTL) are removed whole, or,
with the `keep_latest` strategy, pruned down to their latest checkpoints (the
`keep_last` newest of each namespace; 1 unless set).

A thread's activity is the newest `written_at` stamp among its records (a record written
before stamps existed is dated by its checkpoint id, a UUIDv6 or v1; a thread none of
whose records can be dated is kept and counted `undated`). `plan_expiry` is the dry run:
one parallel Scan reading each item's key, stamp and head, opening nothing sealed.
`ExpiryPlan.execute` removes each idle thread under its lease: tombstones on its heads, a
consistent read again (a commit meanwhile revives the thread), delete marks, the records,
the objects written before the cutoff (each only while unchanged), then the marks and the
lease. `keep_latest` sets a marker instead of tombstones, prunes as `prune` does and
collects the thread's garbage as `ops/gc.py` does.

The steps one by one, why an interrupted sweep is completed by the next one, why an
active thread loses nothing, and what is not guarded: docs/RELIABILITY.md, "Retention:
the sweep, step by step".
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.checkpoint.s3dynamo.errors import IntegrityError, InvalidConfigError
from langgraph.checkpoint.s3dynamo.identities import checkpoint_time
from langgraph.checkpoint.s3dynamo.layout import (
    LEASE_SK,
    PRUNING_HEAD,
    borrow_lender,
    catalog_ref_token,
    day_of_idle_key,
    head_namespace,
    is_control_pk,
    is_mark_key,
    is_writes_key,
    mark_operation,
    owner_prefix,
    owner_sk,
    parse_sk,
    thread_of,
    tombstone,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.ops.threads import kept_chains, release_unshared
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ItemKey,
    Stamp,
    head_key,
    lease_key,
)
from langgraph.checkpoint.s3dynamo.store import Skipped, ThreadStore, warn_skipped
from langgraph.checkpoint.s3dynamo.waves import WAVE_WORKERS, parallel

log = logging.getLogger(__name__)

STRATEGIES = ("delete", "keep_latest")
# How long the sweep's lease on one thread lasts: far longer than removing one thread
# takes, short enough that a sweep killed midway does not hold the thread for long.
LEASE_TTL = timedelta(minutes=15)
LEASE_OWNER = "retention"
# Threads removed at once: as many as the shared wave pool and the clients' connection
# pools serve (a thread's own requests then run one after another).
PARALLEL_THREADS = WAVE_WORKERS
# Segments of the Scan, read at once on the same pool. A sequential Scan reads one 1 MB
# page after another, so a large table can outlast a Lambda's 15 minutes; each segment
# adds one request per sweep, even on an empty table.
SCAN_SEGMENTS = 16


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
    # The latest day its items carry in the idle index, and where its newest write is.
    indexed: int | None = None
    newest_key: ItemKey | None = None

    def see(self, stamp: Stamp) -> None:
        sk = stamp.key.sk
        if stamp.idle is not None:
            self.indexed = max(self.indexed or 0, day_of_idle_key(stamp.idle))
        if is_mark_key(sk):
            self.marks.add(mark_operation(sk))
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
        the tombstones of a removal just finished."""
        return (
            self.lease
            or bool(self.marks)
            or bool(self.catalogued)
            or any((tombstone_time(head) or 0) <= cutoff for head in self.heads.values())
        )


@dataclass
class ExpiryPlan:
    """What a sweep found (the dry run) and, once executed, what it removed. Threads are
    named by their keyed hash (the partition key), never by id."""

    store: ThreadStore
    ttl: timedelta
    cutoff: int
    # "delete": idle threads go whole; "keep_latest": they keep their latest checkpoints,
    # the `keep_last` newest of each namespace.
    strategy: str = "delete"
    keep_last: int = 1
    # thread name -> its newest record time (seconds since the epoch)
    idle: dict[str, int] = field(default_factory=dict)
    # thread names with control items left and no records (an interrupted removal)
    leftovers: list[str] = field(default_factory=list)
    active: int = 0
    undated: int = 0
    # keep_latest: idle threads with nothing to drop (keep_last checkpoints or fewer in
    # each namespace).
    kept: int = 0
    # Records of the idle threads.
    records: int = 0
    # False when the Scan met the deadline first: then nothing was judged or removed.
    scanned_all: bool = True
    # Filled by `execute`.
    removed: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    records_deleted: int = 0
    objects_deleted: int = 0
    executed: bool = False
    seen: dict[str, SeenThread] = field(default_factory=dict, repr=False)
    # The sweep's cursor (`ops/sweep.py`): journals the threads before removing them and
    # moves on once they are done. None: a plan that keeps no cursor.
    cursor: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def execute(self, *, deadline: float | None = None) -> ExpiryPlan:
        """Remove the idle threads and finish the leftovers (docs/RELIABILITY.md,
        "Retention"). With a `deadline` (a `time.monotonic()` value), no thread is
        started after it; those not started are listed in `unfinished`, for the next
        sweep."""
        work = [*self.idle, *self.leftovers]
        for start in range(0, len(work), PARALLEL_THREADS):
            if deadline is not None and time.monotonic() > deadline:
                self.unfinished += work[start:]
                break
            if self.cursor is not None:
                self.cursor.journal(work, start, self.revived)
            parallel(self._one, work[start : start + PARALLEL_THREADS])
        self.executed = True
        if self.cursor is not None:
            self.cursor.finish(self)
        warn_skipped("retention", self.skipped)
        log.info(
            "retention: removed %d threads, pruned %d (%d records, %d objects); %d busy, "
            "%d revived, %d left for the next sweep",
            len(self.removed),
            len(self.pruned),
            self.records_deleted,
            self.objects_deleted,
            len(self.busy),
            len(self.revived),
            len(self.unfinished),
        )
        return self

    def to_dict(self) -> dict[str, Any]:
        """The plan as the command line's `--json` shows it."""
        return {
            "ttl_seconds": int(self.ttl.total_seconds()),
            "strategy": self.strategy,
            "keep_last": self.keep_last,
            "idle_threads": len(self.idle),
            "kept_threads": self.kept,
            "records": self.records,
            "leftovers": len(self.leftovers),
            "active_threads": self.active,
            "undated_threads": self.undated,
        }

    def result(self) -> dict[str, Any]:
        """What an executed sweep did, as the command line's `--json` shows it."""
        return {
            "removed_threads": len(self.removed),
            "pruned_threads": len(self.pruned),
            "skipped_threads": len(self.skipped),
            "records_deleted": self.records_deleted,
            "objects_deleted": self.objects_deleted,
            "busy_threads": len(self.busy),
            "revived_threads": len(self.revived),
        }

    def _one(self, name: str) -> None:
        if self.strategy == "keep_latest" and name in self.idle:
            self._prune(name)
        else:
            self._remove(name)

    def _acquire(self, name: str) -> Any:
        """The thread's lease for the sweep, or None (and the thread counted busy)."""
        store = self.store
        held = store.acquire_lease(
            name,
            LEASE_OWNER,
            int(store.clock() * 1000),
            int(LEASE_TTL.total_seconds() * 1000),
        )
        if held is None:
            with self._lock:
                self.busy.append(name)
        return held

    def _prune(self, name: str) -> None:
        """keep_latest on one idle thread (docs/RELIABILITY.md, "Retention", steps 1 to 6)."""
        store = self.store
        marker = head_key(name, PRUNING_HEAD)
        held = self._acquire(name)  # 1.
        if held is None:
            return
        store.put_heads(name, {PRUNING_HEAD: str(store.now())})  # 2.
        # 3. and 4. read the same records: one consistent read serves both.
        records, marks = store.finder.partition_items(name, consistent=True)
        stamps = (Stamp(r.key, r.written_at) for r in records)
        if any(t >= self.cutoff for t in (stamp_time(s) for s in stamps) if t is not None):
            store.engine.batch(deletes=[marker])
            store.release_lease(held)
            with self._lock:
                self.revived.append(name)
            return
        try:
            entries = store.finder.group(records)
        except IntegrityError as exc:
            store.engine.batch(deletes=[marker])
            store.release_lease(held)
            refs = [r.thread_ref for r in records if isinstance(r, CheckpointRecord)]
            key_id = store.sealer.key_id_of(refs[0]) if refs else None
            with self._lock:
                self.skipped.append(Skipped(name, key_id, str(exc)))
            return
        chains = kept_chains(store, entries, self.keep_last)
        kept = [e.record.key for chain in chains.values() for e in chain]
        kept_sks = {k.sk for k in kept}
        doomed = [r.key for r in records if owner_sk(r.sk) not in kept_sks]
        hiding = store.deleter.delete_marks(name, doomed, keep=kept) if doomed else []
        store.deleter.hide(hiding)
        store.deleter.delete_records(doomed)
        cutoff = datetime.fromtimestamp(self.cutoff, timezone.utc)  # 5.
        prefix = owner_prefix(name)
        old = [o for o in store.engine.objects.list_owner(name) if o.modified < cutoff]
        live = (store.finder.live_leaves(name) or set()) if old else set()
        deleted = store.engine.objects.delete_unchanged(
            [o for o in old if o.key[len(prefix) :] not in live]
        )
        release_unshared(store, name, records, [r for r in records if owner_sk(r.sk) in kept_sks])
        store.deleter.unhide(  # 6.
            {m.key for m in hiding} | {m.key for m in marks if m.operation == "prune"}
        )
        store.engine.batch(deletes=[marker, held.key])
        store.forget()
        with self._lock:
            self.pruned.append(name)
            self.records_deleted += len(doomed)
            self.objects_deleted += len(deleted)

    def _remove(self, name: str) -> None:
        store, seen = self.store, self.seen[name]
        idle = name in self.idle
        lease = lease_key(name)
        # 1. The thread's lease.
        held = store.acquire_lease(
            name,
            LEASE_OWNER,
            int(store.clock() * 1000),
            int(LEASE_TTL.total_seconds() * 1000),
        )
        if held is None:
            with self._lock:
                self.busy.append(name)
            return
        # 2. Tombstones on every namespace.
        heads = dict(seen.heads)
        if idle:
            heads = dict.fromkeys(sorted(seen.namespaces | set(heads)), tombstone(store.now()))
            store.put_heads(name, heads)
        # 3. The records again, consistently.
        stamps = store.partition_stamps(name)
        records = [s for s in stamps if not is_mark_key(s.key.sk)]
        times = [t for t in (stamp_time(s) for s in records) if t is not None]
        if (records and not idle) or any(t >= self.cutoff for t in times):
            if idle:
                store.engine.batch(deletes=[head_key(name, ns) for ns in heads])
            store.release_lease(held)
            with self._lock:
                self.revived.append(name)
            return
        # 4. Marks hiding every record, then the records in full batches.
        keys = [s.key for s in records]
        hiding = store.deleter.delete_marks(name, keys) if keys else []
        store.deleter.hide(hiding)
        store.deleter.delete_records(keys)
        # 5. Objects written before the cutoff, each only while unchanged, but those
        # lent to a copy (the loans read after the marks); then the loans this thread
        # had of others' objects, as a copy, end.
        cutoff = datetime.fromtimestamp(self.cutoff, timezone.utc)
        old = [o for o in store.engine.objects.list_owner(name) if o.modified < cutoff]
        if old:
            lent = store.finder.lent_leaves(name)
            prefix = owner_prefix(name)
            old = [o for o in old if o.key[len(prefix) :] not in lent]
        deleted = store.engine.objects.delete_unchanged(old)
        for lender in sorted(seen.borrowed):
            store.deleter.release(name, lender, set())
        # 6. Every mark (an interrupted operation's too), the catalog's entries, then the
        # lease, live heads, tombstones older than the TTL and the entries' back-references.
        store.deleter.unhide(
            {m.key for m in hiding} | {s.key for s in stamps if is_mark_key(s.key.sk)}
        )
        refs = store.deleter.uncatalog(seen.catalogued)
        gone = [
            head_key(name, ns)
            for ns, head in heads.items()
            if (tombstone_time(head) or 0) <= self.cutoff
        ]
        store.engine.batch(deletes=[*gone, lease, *refs])
        with self._lock:  # threads are removed in parallel
            self.removed.append(name)
            self.records_deleted += len(keys)
            self.objects_deleted += len(deleted)


def plan_expiry(
    store: ThreadStore,
    ttl: timedelta,
    *,
    strategy: str = "delete",
    keep_last: int = 1,
    segments: int = SCAN_SEGMENTS,
    deadline: float | None = None,
    every: bool = False,
) -> ExpiryPlan:
    """Find idle threads and leftovers with one Scan in `segments` parallel segments;
    nothing is changed (dry run). Idle is measured against the store's clock
    (`ThreadStore.clock`). With a `deadline` (a `time.monotonic()` value) the Scan stops
    at the first page after it, and the plan finds nothing (`scanned_all` False). With
    `every`, the threads of every deployment sharing the table (tenants) are judged;
    otherwise this deployment's only (`store/scope.py`)."""
    if segments < 1:
        raise InvalidConfigError(f"retention scan segments must be at least 1, got {segments}")
    plan = ExpiryPlan(
        store, ttl, int(store.clock() - ttl.total_seconds()), strategy, keep_last=keep_last
    )
    lock = threading.Lock()

    def scan(segment: int) -> bool:
        for page in store.scope.stamps(segment, segments, every=every):
            if deadline is not None and time.monotonic() > deadline:
                return False
            with lock:
                for stamp in page:
                    plan.seen.setdefault(thread_of(stamp.key.pk), SeenThread()).see(stamp)
        return True

    finished = parallel(scan, range(segments))
    if not all(finished):
        plan.scanned_all = False
        plan.seen.clear()
        log.warning(
            "retention: the Scan reached the deadline with %d of %d segments read; nothing "
            "was judged or removed. Give the job more time, or run the sweep where no "
            "deadline applies (`s3dynamo expire`)",
            sum(finished),
            segments,
        )
        return plan
    judge(plan)
    return plan


def judge(plan: ExpiryPlan) -> None:
    """Sort the threads the plan has seen into idle, leftovers, kept, active, undated."""
    strategy = plan.strategy
    for name, seen in plan.seen.items():
        if seen.records == 0:
            if seen.unfinished(plan.cutoff):
                plan.leftovers.append(name)
        elif seen.newest is None:
            plan.undated += 1
        elif seen.newest < plan.cutoff:
            if strategy == "keep_latest" and not seen.history_to_drop(plan.keep_last):
                plan.kept += 1
                continue
            plan.idle[name] = seen.newest
            plan.records += seen.records
        else:
            plan.active += 1
    log.info(
        "retention: %d threads idle for over %s, %d leftovers, %d active, %d undated",
        len(plan.idle),
        plan.ttl,
        len(plan.leftovers),
        plan.active,
        plan.undated,
    )
