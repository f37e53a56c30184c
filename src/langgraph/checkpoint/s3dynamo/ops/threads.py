"""Whole-thread operations: delete, copy, prune, delete runs. Each is planned first (what
it would touch, read without changing anything) and then executed; the command line
shows the plan and executes it on `--yes`, the saver's own methods execute at once.
Each asks the thread store for its one removal or copy protocol (`store/removal.py`,
`store/copying.py`), whose order, the states an interruption can leave and why a repeat
completes it are in docs/RELIABILITY.md, "Deleting, copying, pruning".
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo import arguments
from langgraph.checkpoint.s3dynamo.deployment import Deployment, guarded
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError, ThreadNotFoundError
from langgraph.checkpoint.s3dynamo.records import CheckpointRecord, ItemKey
from langgraph.checkpoint.s3dynamo.runnable_config import thread_id_of
from langgraph.checkpoint.s3dynamo.settings import keep_last_count
from langgraph.checkpoint.s3dynamo.store import ThreadStore

log = logging.getLogger(__name__)

PRUNE_STRATEGIES = ("keep_latest", "delete")
# Other names LangGraph's server (langgraph-api) sends for them: its gRPC checkpointer
# service turns the DELETE_ALL strategy into "delete_all" (langgraph-api 0.16).
PRUNE_STRATEGY_NAMES = {"delete_all": "delete"}

# ------------------------------------------------------------------------- delete


@dataclass
class DeletePlan:
    """What deleting a thread removes (counted when planned; execution reads again)."""

    store: ThreadStore
    thread_id: str
    checkpoints: int
    items: int
    objects: int
    object_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoints": self.checkpoints,
            "items": self.items,
            "objects": self.objects,
            "object_bytes": self.object_bytes,
        }

    def execute(self) -> dict[str, int]:
        """Delete; what it deleted (read again, so what was written since counts too)."""
        deleted = self.store.delete_thread(self.thread_id)
        return {
            "checkpoints": deleted.checkpoints,
            "items": deleted.records,
            "objects": deleted.objects,
        }


def plan_delete(store: ThreadStore, tid: str) -> DeletePlan:
    records = store.records(tid)
    objects = store.objects_of(store.name_of(tid))
    return DeletePlan(
        store,
        tid,
        checkpoints=sum(1 for r in records if isinstance(r, CheckpointRecord)),
        items=len(records),
        objects=len(objects),
        object_bytes=sum(o.size for o in objects),
    )


# --------------------------------------------------------------------------- copy


@dataclass
class CopyPlan:
    store: ThreadStore
    source: str
    target: str
    checkpoints: int
    items: int
    objects: int
    target_checkpoints: int
    keep_last: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "keep_last": self.keep_last,
            "checkpoints": self.checkpoints,
            "items": self.items,
            "objects": self.objects,
            "target_checkpoints": self.target_checkpoints,
        }

    def execute(self) -> int:
        """Copy; how many checkpoints it wrote (0: the target held the whole copy)."""
        return self.store.copy(self.source, self.target, self.keep_last)


def plan_copy(store: ThreadStore, src: str, dst: str, keep_last: int | None = None) -> CopyPlan:
    """What copying `src` to `dst` writes; a target `copy_thread` would refuse (the source
    itself, or a thread with checkpoints of its own) is refused here, before any plan."""
    entries = store.entries(src) if keep_last is None else store.newest(src, keep_last)
    store.check_copy(src, dst, entries)
    return CopyPlan(
        store,
        src,
        dst,
        checkpoints=len(entries),
        items=len(entries) + sum(len(e.writes) for e in entries),
        objects=len(store.referenced(entries)),
        target_checkpoints=len(store.entries(dst)),
        keep_last=keep_last,
    )


def copy_one(
    store: ThreadStore,
    deployment: Deployment,
    source: str,
    target: str,
    keep_last: int | None = None,
) -> None:
    """The saver's `copy_thread`: a source with no checkpoints is `ThreadNotFoundError`
    once the deployment's keys are checked (a wrong secret finds nothing, and is named as
    such instead). Copy marks, loans and the order: `store/copying.py`."""
    src, dst = thread_id_of(source), thread_id_of(target)
    log.info("copy_thread %s -> %s", store.name_of(src), store.name_of(dst))
    with guarded(deployment):
        try:
            store.copy(src, dst, keep_last)
        except ThreadNotFoundError:
            deployment.verify(write=False)
            raise


# -------------------------------------------------------------------------- prune


@dataclass
class PrunedThread:
    thread_id: str
    checkpoints: int
    kept: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoints": self.checkpoints,
            "kept": self.kept,
            "removed": self.checkpoints - self.kept,
        }


@dataclass
class PrunePlan:
    store: ThreadStore
    strategy: str
    threads: list[PrunedThread] = field(default_factory=list)
    keep_last: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "keep_last": self.keep_last,
            "threads": [t.to_dict() for t in self.threads],
        }

    def execute(self) -> dict[str, int]:
        """Prune; how many checkpoints it removed (read again, not the plan's count)."""
        tids = [t.thread_id for t in self.threads]
        return {"removed_checkpoints": prune(self.store, tids, self.strategy, self.keep_last)[1]}


def check_strategy(strategy: str, keep_last: int = 1) -> str:
    """The prune strategy meant (`PRUNE_STRATEGY_NAMES` maps the server's names to ours),
    checked with `keep_last`."""
    strategy = PRUNE_STRATEGY_NAMES.get(arguments.text("strategy", strategy), strategy)
    if strategy not in PRUNE_STRATEGIES:
        raise InvalidConfigError(
            f"unknown prune strategy {strategy!r}; expected one of {PRUNE_STRATEGIES} (or "
            "LangGraph server's 'delete_all'): 'keep_latest' keeps each namespace's latest "
            "checkpoint, 'delete' the whole thread"
        )
    if isinstance(keep_last, str):  # a count, not a variable's text, here
        raise InvalidConfigError(
            f"keep_last must be a whole number of checkpoints, an int such as keep_last=3; "
            f"got the string {keep_last!r}"
        )
    keep_last_count(keep_last)
    if strategy == "delete" and keep_last != 1:
        raise InvalidConfigError(
            f"keep_last={keep_last} with strategy 'delete': 'delete' removes the whole "
            "thread; keep_last counts what 'keep_latest' keeps, so pass "
            "strategy='keep_latest' (the default) with it"
        )
    return strategy


def plan_prune(
    store: ThreadStore, thread_ids: Sequence[str], strategy: str, keep_last: int = 1
) -> PrunePlan:
    strategy = check_strategy(strategy, keep_last)
    plan = PrunePlan(store, strategy, keep_last=keep_last)
    for tid in thread_ids:
        entries = store.entries(tid)
        kept = 0
        if strategy == "keep_latest":
            kept = sum(len(chain) for chain in store.kept(entries, keep_last).values())
        plan.threads.append(PrunedThread(tid, len(entries), kept))
    return plan


def prune_some(
    store: ThreadStore,
    deployment: Deployment,
    thread_ids: Sequence[str],
    strategy: str,
    keep_last: int,
) -> None:
    """The saver's `prune`: arguments checked before anything is read; a prune that
    found nothing checks the deployment's keys (a wrong secret finds nothing)."""
    strategy = check_strategy(strategy, keep_last)
    tids = [thread_id_of(t) for t in thread_ids]
    names = [store.name_of(t) for t in tids]
    log.info("prune %s (%s, keep_last=%d)", names, strategy, keep_last)
    with guarded(deployment):
        if not prune(store, tids, strategy, keep_last)[0]:
            deployment.verify(write=False)


def prune(
    store: ThreadStore, thread_ids: Sequence[str], strategy: str, keep_last: int = 1
) -> tuple[int, int]:
    """Prune each thread (`store/removal.py`); how many records (and, deleting,
    objects) it found, and how many checkpoints it removed."""
    strategy = check_strategy(strategy, keep_last)
    found = removed = 0
    for tid in thread_ids:
        done = store.delete_thread(tid) if strategy == "delete" else store.prune(tid, keep_last)
        found += done.found + done.objects
        removed += done.checkpoints
    store.forget()
    return found, removed


# ------------------------------------------------------------------- delete runs


@dataclass
class DeleteRunsPlan:
    """The checkpoints (with their writes) that runs created, found through the run
    index without a scan; objects they alone referenced are left to garbage collection,
    named by an upload intent so the incremental one finds them (`store/removal.py`)."""

    store: ThreadStore
    run_ids: list[str]
    checkpoints: list[ItemKey]

    def to_dict(self) -> dict[str, Any]:
        return {"runs": len(self.run_ids), "checkpoints": len(self.checkpoints)}

    def execute(self) -> None:
        self.store.remove_checkpoints(self.checkpoints)


def plan_delete_runs(store: ThreadStore, run_ids: Sequence[str]) -> DeleteRunsPlan:
    return DeleteRunsPlan(store, [str(r) for r in run_ids], store.run_checkpoints(run_ids))
