"""Retention: threads idle for longer than a time to live (TTL) are removed whole, or,
with the `keep_latest` strategy, pruned down to their latest checkpoints (the
`keep_last` newest of each namespace; 1 unless set).

A thread's activity is the newest `written_at` stamp among its records (a record written
before stamps existed is dated by its checkpoint id, a UUIDv6 or v1; a thread none of
whose records can be dated is kept and counted `undated`). `plan_expiry` is the dry run:
one parallel Scan reading each item's key, stamp and head, opening nothing sealed. Its
plan's `execute()` (`Sweep.run`) removes each idle thread under its lease with the thread
store's one removal protocol (`store/removal.py`): tombstones on its heads, a consistent
read again (a commit meanwhile revives the thread), delete marks, the records, the
objects written before the cutoff (each only while unchanged), then the marks and the
lease.
`keep_latest` sets a marker instead of tombstones and prunes as `prune` does.

The steps one by one, why an interrupted sweep is completed by the next one, why an
active thread loses nothing, and what is not guarded: docs/RELIABILITY.md, "Retention:
the sweep, step by step".
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from langgraph.checkpoint.s3dynamo.config.settings import Settings, duration
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from langgraph.checkpoint.s3dynamo.format.layout import thread_of
from langgraph.checkpoint.s3dynamo.ops.plan import Plan
from langgraph.checkpoint.s3dynamo.ops.threads import check_strategy
from langgraph.checkpoint.s3dynamo.store import (
    EVERY_DEPLOYMENT,
    WHOLE,
    Keep,
    SeenThread,
    Skipped,
    Terms,
    ThreadStore,
    warn_skipped,
)
from langgraph.checkpoint.s3dynamo.waves import WAVE_WORKERS, parallel

log = logging.getLogger(__name__)

STRATEGIES = ("delete", "keep_latest")
# Threads removed at once: as many as the shared wave pool and the clients' connection
# pools serve (a thread's own requests then run one after another).
PARALLEL_THREADS = WAVE_WORKERS
# Segments of the Scan, read at once on the same pool. A sequential Scan reads one 1 MB
# page after another, so a large table can outlast a Lambda's 15 minutes; each segment
# adds one request per sweep, even on an empty table.
SCAN_SEGMENTS = 16


@dataclass
class Sweep:
    """What a sweep found (the dry run; the state of its plan, `planned`) and, once run,
    what it removed. Threads are named by their keyed hash (the partition key), never by
    id."""

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
    # Filled by `run`.
    removed: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    # Leftovers finished: threads removed before (tombstones past the TTL, or a removal
    # an earlier run left midway), counted apart from the threads this sweep removed.
    cleared: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    records_deleted: int = 0
    objects_deleted: int = 0
    seen: dict[str, SeenThread] = field(default_factory=dict, repr=False)
    # The sweep's cursor (`ops/sweep.py`): journals the threads before removing them and
    # moves on once they are done. None: a plan that keeps no cursor.
    cursor: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def run(self, *, deadline: float | None = None) -> dict[str, int]:
        """Remove the idle threads and finish the leftovers (docs/RELIABILITY.md,
        "Retention"); what it did. With a `deadline` (a `time.monotonic()` value), no
        thread is started after it; those not started are listed in `unfinished`, for
        the next sweep."""
        work = [*self.idle, *self.leftovers]
        for start in range(0, len(work), PARALLEL_THREADS):
            if deadline is not None and time.monotonic() > deadline:
                self.unfinished += work[start:]
                break
            if self.cursor is not None:
                self.cursor.journal(work, start, self.revived)
            parallel(self._one, work[start : start + PARALLEL_THREADS])
        if self.cursor is not None:
            self.cursor.finish(self)
        warn_skipped("retention", self.skipped)
        done = {
            "removed_threads": len(self.removed),
            "pruned_threads": len(self.pruned),
            "leftovers_cleared": len(self.cleared),
            "skipped_threads": len(self.skipped),
            "records_deleted": self.records_deleted,
            "objects_deleted": self.objects_deleted,
            "busy_threads": len(self.busy),
            "revived_threads": len(self.revived),
        }
        log.info("retention: %s; %d left for the next sweep", done, len(self.unfinished))
        return done

    def _one(self, name: str) -> None:
        """Remove or prune one thread under its lease (`store/removal.py`)."""
        keep = (
            Keep(latest=self.keep_last)
            if self.strategy == "keep_latest" and name in self.idle
            else WHOLE
        )
        removed = self.store.expire(name, keep, Terms(self.cutoff, self.seen[name]))
        with self._lock:  # threads are removed in parallel
            if removed.outcome == "busy":
                self.busy.append(name)
            elif removed.outcome == "revived":
                self.revived.append(name)
            elif removed.skipped is not None:
                self.skipped.append(removed.skipped)
            else:
                done = self.pruned if keep.latest else self.removed
                (done if name in self.idle else self.cleared).append(name)
                self.records_deleted += removed.records
                self.objects_deleted += removed.objects
        if keep.latest:
            self.store.forget()


def terms(
    settings: Settings,
    older_than: str | float | timedelta | None,
    strategy: str | None,
    keep_last: int | None,
    scope: str | None,
) -> tuple[timedelta, str, int, bool]:
    """(time to live, strategy, keep_last, every deployment) of a sweep asked for with
    these, the settings filling in what is not given; what cannot be swept is refused."""
    ttl = duration(older_than, "older_than") if older_than is not None else settings.retention
    if ttl is None:
        raise InvalidConfigError(
            "expiring idle threads needs a time to live and none is set; pass "
            "older_than (such as '30d') or set retention / S3DYNAMO_RETENTION"
        )
    chosen = strategy or settings.retention_strategy
    if chosen not in STRATEGIES:
        raise InvalidConfigError(f"retention strategy {chosen!r} is not one of {STRATEGIES}")
    # The setting's N goes with keep_latest; a sweep asked for "delete" keeps nothing.
    kept = keep_last
    if kept is None:
        kept = settings.retention_keep_last if chosen == "keep_latest" else 1
    check_strategy(chosen, kept)
    every = scope == EVERY_DEPLOYMENT
    if every and chosen != "delete":
        raise InvalidConfigError(
            f"retention strategy {chosen!r} opens each thread's latest checkpoint, "
            "which needs that tenant's keys: sweep every tenant (scope='*') with "
            "strategy 'delete', or each tenant with its prefix and keys"
        )
    return ttl, chosen, kept, every


def planned(sweep: Sweep) -> Plan:
    """The plan "expiry" of a sweep: its counts; `execute(deadline=...)` runs it."""
    counts = {
        "ttl_seconds": int(sweep.ttl.total_seconds()),
        "strategy": sweep.strategy,
        "keep_last": sweep.keep_last,
        "idle_threads": len(sweep.idle),
        "kept_threads": sweep.kept,
        "records": sweep.records,
        "leftovers": len(sweep.leftovers),
        "active_threads": sweep.active,
        "undated_threads": sweep.undated,
    }
    return Plan("expiry", counts, sweep.run, bool(sweep.idle or sweep.leftovers), sweep)


def plan_expiry(store: ThreadStore, ttl: timedelta, **terms: Any) -> Plan:
    """The plan of `scan`."""
    return planned(scan(store, ttl, **terms))


def scan(
    store: ThreadStore,
    ttl: timedelta,
    *,
    strategy: str = "delete",
    keep_last: int = 1,
    segments: int = SCAN_SEGMENTS,
    deadline: float | None = None,
    every: bool = False,
) -> Sweep:
    """Find idle threads and leftovers with one Scan in `segments` parallel segments;
    nothing is changed (dry run). Idle is measured against the store's clock
    (`ThreadStore.clock`). With a `deadline` (a `time.monotonic()` value) the Scan stops
    at the first page after it, and the plan finds nothing (`scanned_all` False). With
    `every`, the threads of every deployment sharing the table (tenants) are judged;
    otherwise this deployment's only (`store/scope.py`)."""
    if segments < 1:
        raise InvalidConfigError(f"retention scan segments must be at least 1, got {segments}")
    plan = Sweep(
        store, ttl, int(store.clock() - ttl.total_seconds()), strategy, keep_last=keep_last
    )
    lock = threading.Lock()

    def scan(segment: int) -> bool:
        for page in store.stamps(segment, segments, every=every):
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


def judge(plan: Sweep) -> None:
    """Sort the threads the plan has seen into idle, leftovers, kept, active, undated."""
    strategy = plan.strategy
    for name, seen in plan.seen.items():
        if seen.copying is not None and seen.copying >= plan.cutoff:
            # A copy or import is writing it now: what a removal would end (its loans,
            # its objects) is what the records it is about to show need.
            plan.active += 1
        elif seen.records == 0:
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
