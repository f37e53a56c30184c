"""Garbage collection: mark and sweep, per thread, planned then executed.

Objects become unreferenced when a writer crashes between its uploads and its index
write, when a special write is replaced, or when `delete_for_runs` removes checkpoints.
`plan_gc` marks every object leaf the thread's records reference and lists the thread's
objects; those not referenced and older than the grace period are candidates. The grace
period must exceed any writer's lifetime (a Lambda runs at most 15 minutes), so an
object uploaded by a `put` that has not yet written its record is never a candidate.

`GcPlan.execute` marks again just before deleting and drops any candidate that became
referenced meanwhile, so a referenced object is never deleted. A failed or interrupted
delete is harmless: the objects stay unreferenced and the next run takes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.thread_store import ThreadStore

DEFAULT_GRACE = timedelta(hours=1)


@dataclass
class GcPlan:
    """Unreferenced objects found by `plan_gc`, grouped by thread partition."""

    store: ThreadStore
    candidates: dict[str, list[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def objects(self) -> int:
        return sum(len(keys) for keys in self.candidates.values())

    @property
    def bytes(self) -> int:
        return sum(self.sizes.values())

    def execute(self) -> int:
        """Delete the candidates still unreferenced; returns how many were deleted."""
        deleted = 0
        for thread_name, keys in self.candidates.items():
            live = self.store.live_leaves(thread_name)
            prefix = self.store.thread_prefix(thread_name)
            doomed = [k for k in keys if k[len(prefix) :] not in live]
            if doomed:
                self.store.objects.delete(doomed)
                deleted += len(doomed)
        return deleted


def plan_gc(
    store: ThreadStore,
    thread_ids: Iterable[str] | None = None,
    *,
    grace: timedelta = DEFAULT_GRACE,
    now: datetime | None = None,
) -> GcPlan:
    """Find unreferenced objects of these threads (default: every thread in the bucket).
    Nothing is deleted: this is the dry run."""
    cutoff = (now or datetime.now(timezone.utc)) - grace
    by_thread: dict[str, list[ObjectInfo]] = {}
    if thread_ids is None:
        for obj in store.objects.list(store.prefix):
            thread_name = obj.key[len(store.prefix) :].split("/", 1)[0]
            by_thread.setdefault(thread_name, []).append(obj)
    else:
        for tid in thread_ids:
            thread_name = store.namer.thread(str(tid))
            by_thread[thread_name] = list(store.objects.list(store.thread_prefix(thread_name)))
    plan = GcPlan(store)
    for thread_name, objs in by_thread.items():
        live = store.live_leaves(thread_name)
        prefix = store.thread_prefix(thread_name)
        for obj in objs:
            if obj.key[len(prefix) :] not in live and obj.modified < cutoff:
                plan.candidates.setdefault(thread_name, []).append(obj.key)
                plan.sizes[obj.key] = obj.size
    return plan
