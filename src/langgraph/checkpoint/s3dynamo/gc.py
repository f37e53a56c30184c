"""Garbage collection: mark and sweep, per thread, planned then executed.

Objects become unreferenced when a writer crashes between its uploads and its index
write, when a special write is replaced, or when `delete_for_runs` removes checkpoints.
`plan_gc` marks every object leaf the thread's items reference and lists the thread's
objects; those not referenced and older than the grace period are candidates. The grace
period must exceed any writer's lifetime (a Lambda runs at most 15 minutes), so an
object uploaded by a `put` that has not yet written its item is never a candidate.

`GcPlan.execute` marks again just before deleting and drops any candidate that became
referenced meanwhile, so a referenced object is never deleted. A failed or interrupted
delete is harmless: the objects stay unreferenced and the next run takes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from langgraph.checkpoint.s3dynamo import items as it

if TYPE_CHECKING:
    from langgraph.checkpoint.s3dynamo.saver import S3DynamoSaver

DEFAULT_GRACE = timedelta(hours=1)


@dataclass
class GcPlan:
    """Unreferenced objects found by `plan_gc`, grouped by thread partition."""

    saver: S3DynamoSaver
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
            live = _marked(self.saver, thread_name)
            prefix = self.saver._thread_prefix(thread_name)
            doomed = [k for k in keys if k[len(prefix) :] not in live]
            if doomed:
                self.saver.objects.delete_many(doomed)
                deleted += len(doomed)
        return deleted


def plan_gc(
    saver: S3DynamoSaver,
    thread_ids: Iterable[str] | None = None,
    *,
    grace: timedelta = DEFAULT_GRACE,
    now: datetime | None = None,
) -> GcPlan:
    """Find unreferenced objects of these threads (default: every thread in the bucket).
    Nothing is deleted: this is the dry run."""
    cutoff = (now or datetime.now(timezone.utc)) - grace
    by_thread: dict[str, list[dict[str, object]]] = {}
    if thread_ids is None:
        for obj in saver.objects.list_prefix(saver.prefix):
            thread_name = str(obj["Key"])[len(saver.prefix) :].split("/", 1)[0]
            by_thread.setdefault(thread_name, []).append(obj)
    else:
        for tid in thread_ids:
            thread_name = saver.namer.thread(str(tid))
            by_thread[thread_name] = list(
                saver.objects.list_prefix(saver._thread_prefix(thread_name))
            )
    plan = GcPlan(saver)
    for thread_name, objs in by_thread.items():
        live = _marked(saver, thread_name)
        prefix = saver._thread_prefix(thread_name)
        for obj in objs:
            key = str(obj["Key"])
            modified = obj["LastModified"]
            assert isinstance(modified, datetime)
            if key[len(prefix) :] not in live and modified < cutoff:
                plan.candidates.setdefault(thread_name, []).append(key)
                size = obj.get("Size", 0)
                plan.sizes[key] = size if isinstance(size, int) else 0
    return plan


def _marked(saver: S3DynamoSaver, thread_name: str) -> set[str]:
    live: set[str] = set()
    for item in saver.index.query_all(thread_name):
        live |= it.referenced_leaves(item)
    return live
