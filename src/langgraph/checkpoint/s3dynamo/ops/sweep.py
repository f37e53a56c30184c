"""Retention planned from the idle-period index: a sweep whose cost grows with the
threads that expire, not with the table.

Every commit sets its namespace's head (or, with concurrent-run detection off, its
record) to the index key `<day>#<shard>` of its write (`layout.idle_key`). A sweep reads
its cursor (the last day it swept fully, and the threads an interrupted sweep left),
Queries the index partitions of every day after the cursor up to the cutoff's day (every
shard), reads each thread found (and each left) consistently, judges it exactly as the
Scan does (`retention.judge`), and removes or prunes it with `Sweep.run`. Before
each group of removals it journals their names in the cursor record; once done it moves
an active thread's index key up to its newest write where no item carries it yet, then
moves the cursor on. Without a cursor (a first sweep, an upgraded table) or with `full`,
it plans with the Scan (`retention.scan`), which also indexes the active threads
it finds without a key (the backfill).

Why an idle thread is always found, why an interrupted sweep is finished by the next one,
and why an active thread loses nothing: docs/RELIABILITY.md, "Retention: the sweep, step
by step".
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta

from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError
from langgraph.checkpoint.s3dynamo.format.layout import (
    IDLE_SHARDS,
    control_pk,
    idle_day,
    idle_key,
    idle_partition,
    thread_of,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.format.records import ControlRecord, ItemKey, head_key
from langgraph.checkpoint.s3dynamo.ops.plan import Plan
from langgraph.checkpoint.s3dynamo.ops.retention import (
    PARALLEL_THREADS,
    SCAN_SEGMENTS,
    Sweep,
    judge,
    planned,
    scan,
)
from langgraph.checkpoint.s3dynamo.store import SeenThread, ThreadStore
from langgraph.checkpoint.s3dynamo.waves import parallel

log = logging.getLogger(__name__)

# The cursor record in the deployment's own partition (`*`: a sweep of every tenant), one
# per policy (`cursor_name`).
CURSOR = "sweep"
# Thread names one cursor write holds: a multiple of the threads removed at once, small
# enough for a 400 KB item with a tenant prefix of up to 200 characters.
JOURNAL_MAX = 50 * PARALLEL_THREADS
# The cursor stops this long before the sweep's clock: an index write is visible in the
# index within seconds (global secondary indexes are eventually consistent), so every
# write of a day the cursor passes was visible to the Queries that passed it.
SETTLE = 3600


@dataclass
class SweepCursor:
    """The cursor of one sweep: what it read, and how it moves on (module docstring)."""

    store: ThreadStore
    name: str
    version: int | None
    # The last day swept fully (None: none yet: the Scan plans) and the day to move to.
    day: int | None
    to_day: int
    # Active threads whose newest write no index key names yet: (item, its new key).
    moves: list[tuple[ItemKey, str]] = field(default_factory=list)

    def _write(self, day: int | None, pending: list[str]) -> bool:
        fields: dict[str, str | bytes] = {
            "day": "" if day is None else str(day),
            "pending": " ".join(pending),
        }
        version = (self.version or 0) + 1
        ok = self.store.put_sweep_cursor(ControlRecord(self.name, fields, version), self.version)
        if ok:
            self.version = version
        return ok

    def journal(self, work: list[str], start: int, revived: list[str]) -> None:
        """Before removing `work[start:]`: at each JOURNAL_MAX boundary, record the next
        group's names (and the threads revived so far, which lost their index keys), so
        a sweep killed among them leaves them to the next."""
        if start % JOURNAL_MAX:
            return
        if not self._write(self.day, [*work[start : start + JOURNAL_MAX], *revived]):
            raise ConcurrentUpdateError(
                f"retention: the sweep cursor {self.name!r} changed since this sweep read "
                "it: another sweep is running on this deployment. Nothing more was removed; "
                "run one sweep at a time (the scheduled job's concurrency is 1)"
            )

    def finish(self, plan: Sweep) -> None:
        """After the removals: move active threads' index keys up, then the cursor."""
        if not plan.scanned_all:
            return
        parallel(lambda move: self.store.set_idle(move[0], move[1], None), self.moves)
        # A revived thread lost its heads (and their index keys) with its tombstones: the
        # next sweep reads it again and indexes its newest write (`_move`). A busy or
        # skipped one is carried too, so the cursor moves on; a thread not started
        # (`unfinished`) keeps its keys, so the cursor stays and the days are read again.
        kept = set(plan.revived)
        carried = [
            *sorted(kept),
            *sorted({*plan.busy, *(s.partition for s in plan.skipped)} - kept),
        ]
        advance = not plan.unfinished and len(carried) <= JOURNAL_MAX
        day = self.to_day if advance else self.day
        if not self._write(day, carried[: max(JOURNAL_MAX, len(kept))]):
            log.warning("retention: another sweep moved the cursor %r; kept its", self.name)


def _move(
    store: ThreadStore, name: str, seen: SeenThread, cutoff: int
) -> tuple[ItemKey, str] | None:
    """Where an active thread's newest write must be indexed, if no item says so yet: on
    a live head (any namespace's), else on its newest record."""
    if seen.newest is None or seen.newest < cutoff or seen.newest_key is None:
        return None
    if seen.indexed is not None and seen.indexed >= idle_day(seen.newest):
        return None
    # A forged tombstone is passed over as a real one: the key then goes on the record.
    live = sorted(ns for ns, head in seen.heads.items() if tombstone_time(head) is None)
    key = head_key(name, live[0]) if live else seen.newest_key
    return key, idle_key(name, seen.newest)


def cursor_name(strategy: str, keep_last: int, every: bool) -> str:
    """The cursor of sweeps of one policy: a day judged under one says nothing to another
    (a thread `keep_latest` kept is still idle to a `delete` sweep, or to one keeping
    fewer). A `delete` sweep's cursor holds whatever its TTL: what it judged idle is gone."""
    name = CURSOR if strategy == "delete" else f"{CURSOR}~{strategy}~{keep_last}"
    return name + ("*" if every else "")


def plan_sweep(
    store: ThreadStore,
    ttl: timedelta,
    *,
    strategy: str = "delete",
    keep_last: int = 1,
    deadline: float | None = None,
    every: bool = False,
    full: bool = False,
    segments: int = SCAN_SEGMENTS,
) -> Plan:
    """Find idle threads and leftovers from the idle index after the cursor, or with the
    Scan (`full`, or no cursor yet); nothing is changed until `execute` (dry run)."""
    name = cursor_name(strategy, keep_last, every)
    record = store.sweep_cursor(name)
    now = store.clock()
    cutoff = int(now - ttl.total_seconds())
    last = record.fields.get("day") if record is not None else None
    cursor = SweepCursor(
        store,
        name,
        record.version if record is not None else None,
        int(last) if isinstance(last, str) and last else None,
        idle_day(min(cutoff, int(now) - SETTLE)) - 1,
    )
    if full or cursor.day is None:
        plan = scan(
            store,
            ttl,
            strategy=strategy,
            keep_last=keep_last,
            segments=segments,
            deadline=deadline,
            every=every,
        )
    else:
        plan = Sweep(store, ttl, cutoff, strategy, keep_last=keep_last)
        pending = record.fields.get("pending", "") if record is not None else ""
        days = range(cursor.day + 1, idle_day(cutoff) + 1)
        indexed = _indexed_threads(store, days, deadline=deadline, every=every)
        if indexed is None:
            plan.scanned_all = False
            log.warning("retention: the index Queries reached the deadline; nothing judged")
            return planned(plan)
        # With the threads the cursor's journal names (left by an interrupted sweep).
        plan.seen = _read_threads(store, set(str(pending).split()) | indexed)
        judge(plan)
    plan.cursor = cursor
    cursor.moves = [
        m for n, seen in plan.seen.items() if (m := _move(store, n, seen, plan.cutoff)) is not None
    ]
    return planned(plan)


def _indexed_threads(
    store: ThreadStore, days: range, *, deadline: float | None, every: bool
) -> set[str] | None:
    """The threads the idle index files under these days (every shard of each); None if
    the deadline came before they were all read."""
    names: set[str] = set()
    for day in days:
        if deadline is not None and time.monotonic() > deadline:
            return None
        for shard in range(IDLE_SHARDS):
            for page in store.idle_items(idle_partition(day, shard), every=every):
                names.update(thread_of(k.pk) for k in page)
    return names


def _read_threads(store: ThreadStore, names: set[str]) -> dict[str, SeenThread]:
    """Each thread found, as `judge` sees it: the stamps of its partition and of its
    control partition, read consistently (threads in parallel)."""

    def read(thread: str) -> SeenThread:
        seen = SeenThread()
        for pk in (thread, control_pk(thread)):
            for stamp in store.partition_stamps(pk):
                seen.see(stamp)
        return seen

    found = sorted(names)
    return dict(zip(found, parallel(read, found), strict=True))
