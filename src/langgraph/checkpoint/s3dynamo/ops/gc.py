"""Garbage collection: mark and sweep, per thread, planned then executed.

Objects become unreferenced when a writer crashes between its uploads and its index
write, when a special write is replaced, or when `delete_for_runs` removes checkpoints.
`plan_gc` lists a thread's objects and marks every leaf its records reference; those
not referenced and older than the grace period are candidates. `GcPlan.execute` lists
them again, marks again, and deletes each one with a conditional delete that holds only
while the object is unchanged since that second listing.

Only keys of the shape `naming.py` produces under this deployment's prefix are ever
candidates, and with an empty prefix only threads that have a record in this index (or
that the caller names). What collection may touch, and the proof that it never deletes
an object a committed record references (or one a running writer is about to): see
docs/RELIABILITY.md, "Garbage collection: why a referenced object is never deleted".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.checkpoint.s3dynamo.layout import object_scope, split_object_key
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.store import Skipped, ThreadStore, warn_skipped

DEFAULT_GRACE = timedelta(hours=1)


@dataclass
class GcPlan:
    """Unreferenced objects found by `plan_gc`, grouped by thread partition."""

    store: ThreadStore
    grace: timedelta = DEFAULT_GRACE
    candidates: dict[str, list[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    # Keys under the prefix that this deployment did not write (never touched).
    foreign: int = 0
    # Keys of threads with no record in this index (left to `delete_thread`).
    unindexed: int = 0
    # Threads whose records this saver cannot open (other keys): never collected.
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def objects(self) -> int:
        return sum(len(keys) for keys in self.candidates.values())

    @property
    def bytes(self) -> int:
        return sum(self.sizes.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "threads": len(self.candidates),
            "objects": self.objects,
            "bytes": self.bytes,
            "grace_seconds": int(self.grace.total_seconds()),
            "foreign": self.foreign,
            "unindexed": self.unindexed,
        }

    def execute(self, *, now: datetime | None = None) -> int:
        """Delete the candidates still old and unreferenced, each only if unchanged since
        it was listed again here; returns how many were deleted."""
        cutoff = (now or datetime.now(timezone.utc)) - self.grace
        deleted = 0
        for thread_name, keys in self.candidates.items():
            planned = set(keys)
            store = self.store
            prefix = store.thread_prefix(thread_name)
            # L: list again; an object written since planning is young now.
            old = [
                o
                for o in store.thread_objects(thread_name)
                if o.key in planned and o.modified < cutoff
            ]
            if not old:
                continue
            # M: mark again, after L.
            live = store.live_leaves(thread_name) or set()
            doomed = [o for o in old if o.key[len(prefix) :] not in live]
            # D: conditional on the tag L saw.
            if doomed:
                deleted += len(store.delete_unchanged_objects(doomed))
        return deleted


def plan_gc(
    store: ThreadStore,
    thread_ids: Iterable[str] | None = None,
    *,
    grace: timedelta = DEFAULT_GRACE,
    now: datetime | None = None,
) -> GcPlan:
    """Find unreferenced objects of these threads (default: every thread of this
    deployment in the bucket). Nothing is deleted: this is the dry run."""
    cutoff = (now or datetime.now(timezone.utc)) - grace
    plan = GcPlan(store, grace)
    by_thread: dict[str, list[ObjectInfo]] = {}
    if thread_ids is None:
        listed: Iterable[ObjectInfo] = store.deployment_objects()
    else:
        names = [store.namer.thread(str(tid)) for tid in thread_ids]
        by_thread = {name: [] for name in names}
        listed = (o for name in names for o in store.thread_objects(name))
    for obj in listed:
        parts = split_object_key(store.prefix, obj.key)
        if parts is None:
            plan.foreign += 1
            store.note_passed(object_scope(obj.key))
            continue
        by_thread.setdefault(parts[0], []).append(obj)
    # At the bucket root, a thread name with no record here may be another deployment's.
    need_records = thread_ids is None and not store.prefix
    for thread_name, objs in by_thread.items():
        if not objs:
            continue
        before = len(plan.skipped)
        live = store.live_leaves(thread_name, plan.skipped if thread_ids is None else None)
        if len(plan.skipped) > before:
            continue
        if live is None:
            if need_records:
                plan.unindexed += len(objs)
                continue
            live = set()
        prefix = store.thread_prefix(thread_name)
        for obj in objs:
            if obj.key[len(prefix) :] not in live and obj.modified < cutoff:
                plan.candidates.setdefault(thread_name, []).append(obj.key)
                plan.sizes[obj.key] = obj.size
    warn_skipped("garbage collection", plan.skipped)
    return plan
