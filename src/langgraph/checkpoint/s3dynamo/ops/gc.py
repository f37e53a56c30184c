"""Garbage collection: mark and sweep, per thread, planned then executed; incremental
(what the upload journal names) or full (what listing the bucket finds).

Objects become unreferenced when a writer crashes between its uploads and its index
write, when a special write is replaced, or when `delete_for_runs` removes checkpoints.
`plan_gc` lists a thread's objects and marks every leaf its records reference; those
not referenced and older than the grace period are candidates. The plan's `execute()`
lists them again, marks again, and deletes each one with a conditional delete that holds
only while the object is unchanged since that second listing.

The full collection also deletes leftover writes records: those older than the grace
whose checkpoint record is not in the table (LangGraph sends a task's writes before its
checkpoint's put may be refused; `finder.leftover_writes`), after an intent naming
the objects they reference. Why that never takes writes a reader sees or will see:
docs/RELIABILITY.md, "Garbage collection: leftover writes records".

`plan_incremental_gc` reads only the upload intents older than the grace (one Query per
journal shard, `blobs/journal.py`): each names the objects a write (a put, a Store put,
a copy) was about to upload when it crashed or its commit was refused, or those
`delete_for_runs` left. For those keys it does the same three steps (`blobs/collect.py`:
a HEAD per key instead of the listing), then deletes the intents it settled.

Only keys of the shape `naming.py` produces under this deployment's prefix are ever
candidates; with an empty prefix the full collection takes only threads that have a
record in this index (or that the caller names), the incremental one what intents name.
What collection may touch, and the proof that it never deletes an object a committed
record references (or one a running writer is about to): see docs/RELIABILITY.md,
"Garbage collection: why a referenced object is never deleted", and "Garbage
collection: the upload journal".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs import collect
from langgraph.checkpoint.s3dynamo.format.layout import object_scope, owner_prefix
from langgraph.checkpoint.s3dynamo.format.records import ItemKey, UploadIntent
from langgraph.checkpoint.s3dynamo.ops.plan import Plan
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.store import Skipped, ThreadStore, warn_skipped

DEFAULT_GRACE = timedelta(hours=1)


@dataclass
class Candidates:
    """What a collection found (a plan's `state`): unreferenced objects by owner and
    their sizes; the full one's leftover writes records and what it leaves alone, the
    incremental one's upload intents."""

    candidates: dict[str, list[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    intents: list[UploadIntent] = field(default_factory=list)
    # Keys under the prefix that this deployment did not write (never touched).
    foreign: int = 0
    # Keys of threads with no record in this index (left to `delete_thread`).
    unindexed: int = 0
    # Threads whose records this saver cannot open (other keys): never collected.
    skipped: list[Skipped] = field(default_factory=list)
    # Leftover writes records older than the grace, by thread partition; and how many
    # the run deleted.
    leftovers: dict[str, list[ItemKey]] = field(default_factory=dict)
    writes_deleted: int = 0

    @property
    def objects(self) -> int:
        return sum(len(keys) for keys in self.candidates.values())

    @property
    def bytes(self) -> int:
        return sum(self.sizes.values())


def _plan(found: Candidates, grace: timedelta, counts: dict[str, Any], run: Any) -> Plan:
    """The plan "gc" of what was found; `execute()` returns the objects deleted."""
    counts = {
        **counts,
        "threads": len(found.candidates),
        "objects": found.objects,
        "bytes": found.bytes,
        "grace_seconds": int(grace.total_seconds()),
    }
    work = found.objects > 0 or bool(found.leftovers) or bool(found.intents)
    return Plan("gc", counts, run, work, found, gives="deleted")


def plan_gc(
    store: ThreadStore,
    thread_ids: Iterable[str] | None = None,
    *,
    grace: timedelta = DEFAULT_GRACE,
    now: datetime | None = None,
) -> Plan:
    """Find unreferenced objects of these threads (default: every thread of this
    deployment in the bucket). Nothing is deleted: this is the dry run. `execute()`
    deletes the leftover writes records still leftovers, then the candidates still old
    and unreferenced, each only if unchanged since it was read or listed again there."""
    cutoff = (now or datetime.now(timezone.utc)) - grace
    found = Candidates()
    by_thread = _objects_by_thread(store, thread_ids, found)
    _mark(store, by_thread, cutoff, found, every_thread=thread_ids is None)
    warn_skipped("garbage collection", found.skipped)
    named = None if thread_ids is None else list(by_thread)
    for key in store.leftover_writes(named, int(cutoff.timestamp())):
        found.leftovers.setdefault(key.pk, []).append(key)

    def run(*, now: datetime | None = None) -> dict[str, int]:
        cutoff = (now or datetime.now(timezone.utc)) - grace
        collector = store.collector()
        before_s = int(cutoff.timestamp())
        for name, keys in found.leftovers.items():
            found.writes_deleted += store.clear_leftovers(name, set(keys), before_s)
        deleted = sum(
            collector.sweep(name, store.live_leaves, cutoff, set(keys))
            for name, keys in found.candidates.items()
        )
        wrote = {"writes_deleted": found.writes_deleted} if found.leftovers else {}
        return {"deleted": deleted, **wrote}

    leftovers = sum(len(keys) for keys in found.leftovers.values())
    counts = {"mode": "full", "foreign": found.foreign, "unindexed": found.unindexed}
    return _plan(found, grace, {**counts, "leftover_writes": leftovers}, run)


def _objects_by_thread(
    store: ThreadStore, thread_ids: Iterable[str] | None, found: Candidates
) -> dict[str, list[ObjectInfo]]:
    """The objects listed, by the thread that owns them: every thread's of this
    deployment, or those of the threads named (each named one present, even without
    objects). A key of no shape this deployment writes is counted as foreign."""
    by_thread: dict[str, list[ObjectInfo]] = {}
    if thread_ids is None:
        listed: Iterable[ObjectInfo] = store.deployment_objects()
    else:
        names = [store.name_of(str(tid)) for tid in thread_ids]
        by_thread = {name: [] for name in names}
        listed = (o for name in names for o in store.objects_of(name))
    for obj in listed:
        parts = store.object_owner(obj.key)
        if parts is None:
            found.foreign += 1
            store.note_scope(object_scope(obj.key))
            continue
        by_thread.setdefault(parts[0], []).append(obj)
    return by_thread


def _mark(
    store: ThreadStore,
    by_thread: dict[str, list[ObjectInfo]],
    cutoff: datetime,
    found: Candidates,
    *,
    every_thread: bool,
) -> None:
    """Mark each thread's live leaves and take as candidates its objects that none
    references and that are older than `cutoff`. With `every_thread` (none named), a
    thread this saver cannot open is skipped, and, at the bucket root, one with no
    record here is left alone (counted as unindexed)."""
    # At the bucket root, a thread name with no record here may be another deployment's.
    need_records = every_thread and not store.prefix
    for thread_name, objs in by_thread.items():
        if not objs:
            continue
        before = len(found.skipped)
        live = store.live_leaves(thread_name, found.skipped if every_thread else None)
        if len(found.skipped) > before:
            continue
        if live is None:
            if need_records:
                found.unindexed += len(objs)
                continue
            live = set()
        prefix = owner_prefix(thread_name)
        for obj in objs:
            if obj.key[len(prefix) :] not in live and obj.modified < cutoff:
                found.candidates.setdefault(thread_name, []).append(obj.key)
                found.sizes[obj.key] = obj.size


# ------------------------------------------------------------------ incremental


def plan_incremental_gc(
    store: ThreadStore,
    live_of: collect.LiveLeaves | None = None,
    *,
    grace: timedelta = DEFAULT_GRACE,
    now: datetime | None = None,
) -> Plan:
    """Objects named by upload intents older than `grace` that nothing references and
    that are older than `grace` themselves. `live_of` gives the leaves an owner's items
    reference, threads' and memory namespaces' alike (`saver.ops` passes both; default:
    threads only). Reads the journal's shards, then per owner a HEAD per named key and
    one consistent read of its items; never lists the bucket. Nothing is deleted: this
    is the dry run. `execute()`, for each owner the intents name: lists again (a HEAD
    per key), marks again, deletes each old unreferenced key only if unchanged since
    that HEAD; then deletes every intent whose keys are all settled (gone, deleted, or
    referenced). An intent naming a key that is young again or changed stays for the
    next run."""
    cutoff = (now or datetime.now(timezone.utc)) - grace
    collector = store.collector()
    live = live_of or store.live_leaves
    found = Candidates(intents=collector.expired(int(cutoff.timestamp() * 1000)))
    for owner, group in collect.by_owner(found.intents).items():
        _, _, doomed = collector.examine(owner, group, live, cutoff)
        if doomed:
            found.candidates[owner] = [o.key for o in doomed]
            found.sizes.update({o.key: o.size for o in doomed})

    def run(*, now: datetime | None = None) -> dict[str, int]:
        cutoff = (now or datetime.now(timezone.utc)) - grace
        collector = store.collector()
        deleted = 0
        settled: list[ItemKey] = []
        for owner, intents in collect.by_owner(found.intents).items():
            gone, done = collector.settle(owner, intents, live, cutoff)
            deleted += gone
            settled += [i.key for i in done]
        collector.close(settled)
        return {"deleted": deleted}

    return _plan(found, grace, {"mode": "incremental", "intents": len(found.intents)}, run)
