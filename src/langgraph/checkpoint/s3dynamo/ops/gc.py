"""Garbage collection: mark and sweep, per thread, planned then executed.

Objects become unreferenced when a writer crashes between its uploads and its index
write, when a special write is replaced, or when `delete_for_runs` removes checkpoints.
`plan_gc` lists a thread's objects and marks every leaf its records reference; those
not referenced and older than the grace period are candidates. `GcPlan.execute` lists
them again, marks again, and deletes each one with a conditional delete that holds only
while the object is unchanged since that second listing.

What collection may touch
-------------------------
Only keys this deployment wrote: `<prefix><thread name>/<leaf>` where the thread name and
the leaf each have exactly the shape `naming.py` produces (urlsafe base64 without padding
of 16 bytes: 22 characters, the last one of `AQgw`; see `layout.split_object_key`). Any
other key under the prefix (another deployment's `tenant-b/...`,
`reports/2025/summary.csv`, a key of another shape) is never a candidate, so with an
empty prefix collection still skips them.

One case the shape cannot settle: another deployment writing at the bucket root (empty
prefix) makes keys of exactly our shape. So a table-wide run with an empty prefix takes
only threads that have a record in this deployment's index; keys of other thread names
are counted in `GcPlan.unindexed` and left alone. With a non-empty prefix the prefix is
this deployment's claim, and a thread with no record left (every checkpoint removed by
`delete_for_runs`, a crash inside `delete_thread`, a first `put` that died before its
record) is collected like any other. Naming threads (`thread_ids=`) collects them in
either case: their names derive from ids the caller says are its own. Two deployments
sharing a bucket must differ in prefix or in naming secret; otherwise equal thread ids
give equal keys and they overwrite each other's objects regardless of collection.

Why a referenced object is never deleted
----------------------------------------
Assumptions. (A1) The grace period G exceeds any writer's lifetime: from its last
upload of an object to the write of the record that references it, less than G passes.
(A2) The object store's modification time and this process's clock agree to within a
margin that G absorbs. (A3) Every write of a key gives it a new tag (S3: a new ETag;
sealed blobs carry a fresh nonce, so their bytes never repeat), and a conditional delete
removes a key only if it still carries the tag given (S3 conditional deletes, `If-Match`
with the ETag in DeleteObjects; the in-memory store keeps the same rule). (A4) Index
reads of the mark are strongly consistent (`ConsistentRead`). (A5) A record is removed
only by an operation the user asked for (`delete_thread`, `prune`, `delete_for_runs`),
never under a run still extending that checkpoint.

Writer protocol (`ObjectIO.upload`, `store/objects.py`). A writer that will reference
key k writes k (PUT If-None-Match; if the key exists, PUT again without condition), then writes its
record R. Values carried from a parent are not written again: they stay referenced by
the parent's record, which (A5) outlives the child's commit.

Collector protocol, per thread. Execution starts at t0 with cutoff c = t0 - G. L: list
the thread's keys, with modification time m and tag v; keep those with m < c that are
candidates of the plan. M: mark, a consistent query of the thread's records, after L.
D: conditional delete of each kept key with its tag v, after M.

Invariant: if a committed record references k, k exists. Suppose D removes k while a
record R referencing k is committed at some time. Let w be the last write of k before
D. By A3, D succeeds only if the version of k at D is the one L saw, so w happened at
time m and no write of k happened in (m, D]. Take any writer whose record R references
k, with its own last write of k at time t_w and R at t_R.

- t_w <= m (it wrote k before or when L's version was made). By A1, t_R < t_w + G <=
  m + G < c + G = t0 <= L < M. So R was committed before M, M read it (A4), k was
  marked, and D does not include k. Contradiction.
- m < t_w <= D. Then k was written after L's version, its tag changed (A3), and D's
  condition fails: k is not deleted. Contradiction.
- t_w > D. The writer's PUT (If-None-Match finds k absent, or the unconditional PUT)
  creates k again after D, so k exists when R commits.

Records committed before the plan or between plan and execution are covered by the first
case (M runs at execution). A record removed after M (A5) no longer references k. Every
interleaving of writer steps (upload, refresh, record) with collector steps (plan list,
plan mark, L, M, D) falls in one of the three cases, so collection never deletes an
object a committed record references, nor one a running writer is about to reference.
Interrupted collection is harmless: candidates stay unreferenced and the next run
takes them.

Where A3 does not hold (moto ignores the condition; without sealing keys a refresh
rewrites identical bytes, so S3 keeps the ETag) the second case rests on timing instead:
L runs again at execution, so a refresh before L makes k young and spares it, and only a
refresh landing inside one thread's L-to-D window (milliseconds) can be lost. Configure
sealing keys to close it.
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
