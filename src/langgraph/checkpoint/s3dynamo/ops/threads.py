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
from functools import partial
from types import SimpleNamespace
from typing import Any

from langgraph.checkpoint.s3dynamo.config import arguments
from langgraph.checkpoint.s3dynamo.config.runnable_config import thread_id_of
from langgraph.checkpoint.s3dynamo.config.settings import keep_last_count
from langgraph.checkpoint.s3dynamo.deployment import Deployment, guarded
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError, ThreadNotFoundError
from langgraph.checkpoint.s3dynamo.format.records import CheckpointRecord
from langgraph.checkpoint.s3dynamo.ops.plan import Plan
from langgraph.checkpoint.s3dynamo.store import ThreadStore

log = logging.getLogger(__name__)

PRUNE_STRATEGIES = ("keep_latest", "delete")
# Other names LangGraph's server (langgraph-api) sends for them: its gRPC checkpointer
# service turns the DELETE_ALL strategy into "delete_all" (langgraph-api 0.16).
PRUNE_STRATEGY_NAMES = {"delete_all": "delete"}

# ------------------------------------------------------------------------- delete


def plan_delete(store: ThreadStore, tid: str) -> Plan:
    """What deleting a thread removes (counted when planned); `execute()` deletes it and
    tells what it deleted (read again, so what was written since counts too)."""
    records = store.records(tid)
    objects = store.objects_of(store.name_of(tid))

    def run() -> dict[str, int]:
        done = store.delete_thread(tid)
        return dict(checkpoints=done.checkpoints, items=done.records, objects=done.objects)

    counts = {
        "thread_id": tid,
        "checkpoints": sum(1 for r in records if isinstance(r, CheckpointRecord)),
        "items": len(records),
        "objects": len(objects),
        "object_bytes": sum(o.size for o in objects),
    }
    return Plan("delete", counts, run)


# --------------------------------------------------------------------------- copy


def plan_copy(store: ThreadStore, src: str, dst: str, keep_last: int | None = None) -> Plan:
    """What copying `src` to `dst` writes; a target `copy_thread` would refuse (the source
    itself, or a thread with checkpoints of its own) is refused here, before any plan.
    `execute()` copies, and tells how many checkpoints it wrote (0: the target held the
    whole copy)."""
    entries = store.entries(src) if keep_last is None else store.newest(src, keep_last)
    store.check_copy(src, dst, entries, keep_last)
    counts = {
        "source": src,
        "target": dst,
        "keep_last": keep_last,
        "checkpoints": len(entries),
        "items": len(entries) + sum(len(e.writes) for e in entries),
        "objects": len(store.referenced(entries)),
        "target_checkpoints": len(store.entries(dst)),
    }
    copied = "copied_checkpoints"
    return Plan("copy", counts, lambda: {copied: store.copy(src, dst, keep_last)}, gives=copied)


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
            "strategy='keep_latest' (on the command line --strategy keep_latest) with it"
        )
    return strategy


def plan_prune(
    store: ThreadStore, thread_ids: Sequence[str], strategy: str, keep_last: int = 1
) -> Plan:
    """What pruning keeps and removes per thread; `execute()` prunes, and tells how many
    checkpoints it removed (read again, not the plan's count)."""
    strategy = check_strategy(strategy, keep_last)
    rows: list[dict[str, Any]] = []
    for tid in thread_ids:
        entries = store.entries(tid)
        n, kept = len(entries), 0
        if strategy == "keep_latest":
            kept = sum(len(chain) for chain in store.kept(entries, keep_last).values())
        rows.append(dict(thread_id=tid, checkpoints=n, kept=kept, removed=n - kept))

    def run() -> dict[str, int]:
        return {"removed_checkpoints": prune(store, thread_ids, strategy, keep_last)[1]}

    counts = {"strategy": strategy, "keep_last": keep_last, "threads": rows}
    return Plan("prune", counts, run, any(r["removed"] for r in rows))


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


def plan_delete_runs(store: ThreadStore, run_ids: Sequence[str]) -> Plan:
    """The checkpoints (with their writes) that runs created, found through the run
    index without a scan (`.checkpoints`); `execute()` deletes them. Objects they alone
    referenced are left to garbage collection, named by an upload intent so the
    incremental one finds them (`store/removal.py`)."""
    found = SimpleNamespace(run_ids=list(run_ids), checkpoints=store.run_checkpoints(run_ids))
    counts = {"runs": len(run_ids), "checkpoints": len(found.checkpoints)}
    run = partial(store.remove_checkpoints, found.checkpoints)
    return Plan("delete_runs", counts, run, state=found)
