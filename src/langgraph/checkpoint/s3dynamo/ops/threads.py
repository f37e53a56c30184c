"""Whole-thread operations: delete, copy, prune, delete runs. Each is planned first (what
it would touch, read without changing anything) and then executed; the command line
shows the plan and executes it on `--yes`, the saver's own methods execute at once.

Each reads a thread's records with one paged query and works in memory. Before its
first change it writes a mark over each namespace it changes (`records.Mark`), hiding
from readers what it is about to delete, or, at a copy's target, everything; then its
records go in full batches sent in parallel, in any order; the marks go last. So readers
see each operation whole: before it, or after it. A copy shares its source's objects,
which the source's loans then keep (docs/RELIABILITY.md, "Copies share objects").
Objects an operation leaves unreferenced are deleted once no record references them and
no loan lends them when this operation is what orphaned them (prune, delete), or left to
garbage collection (`ops/gc.py`). The states an interruption can leave, the data-safety
argument and why a repeat completes each operation: docs/RELIABILITY.md, "Deleting,
copying, pruning".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo import arguments
from langgraph.checkpoint.s3dynamo.deployment import Deployment, guarded
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    InvalidConfigError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.layout import (
    is_mark_key,
    is_writes_key,
    mark_sk,
    object_key,
    owner_sk,
    parse_sk,
)
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ItemKey,
    Mark,
    Record,
    Veil,
    referenced_leaves,
    shared_leaves,
)
from langgraph.checkpoint.s3dynamo.runnable_config import thread_id_of
from langgraph.checkpoint.s3dynamo.settings import keep_last_count
from langgraph.checkpoint.s3dynamo.store import Entry, ThreadStore
from langgraph.checkpoint.s3dynamo.waves import parallel

log = logging.getLogger(__name__)

PRUNE_STRATEGIES = ("keep_latest", "delete")
# Other names LangGraph's server (langgraph-api) sends for them: its gRPC checkpointer
# service turns the DELETE_ALL strategy into "delete_all" (langgraph-api 0.16).
PRUNE_STRATEGY_NAMES = {"delete_all": "delete"}
# Checkpoints `delete_for_runs` hides with one mark per namespace at most (a mark names
# each id: 8,000 ids of 36 characters stay far below an item's 400 KB).
RUNS_ROUND = 8000
# Keeps a thread that lost its heads in the idle index (`sweep.index_kept`): passed in,
# as retention, whose rule dates a thread, imports this module.
IndexKept = Callable[[ThreadStore, str, Collection[ItemKey]], None]

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
            "items": deleted.items,
            "objects": deleted.objects,
        }


def plan_delete(store: ThreadStore, tid: str) -> DeletePlan:
    keys = [k for k in store.finder.thread_keys(tid) if not is_mark_key(k.sk)]
    objects = store.engine.objects.list_owner(store.namer.thread(tid))
    return DeletePlan(
        store,
        tid,
        checkpoints=sum(1 for k in keys if not is_writes_key(k.sk)),
        items=len(keys),
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "checkpoints": self.checkpoints,
            "items": self.items,
            "objects": self.objects,
            "target_checkpoints": self.target_checkpoints,
        }

    def execute(self) -> int:
        """Copy; how many checkpoints it wrote (0: the target held the whole copy)."""
        return copy_thread(self.store, self.source, self.target)


def plan_copy(store: ThreadStore, src: str, dst: str) -> CopyPlan:
    """What copying `src` to `dst` writes; a target `copy_thread` would refuse (the source
    itself, or a thread with checkpoints of its own) is refused here, before any plan."""
    entries = store.finder.thread_entries(src)
    records, marks = (
        store.finder.partition_items(store.namer.thread(dst)) if src != dst else ([], [])
    )
    refuse_target(store, src, dst, entries, records, marks)
    return CopyPlan(
        store,
        src,
        dst,
        checkpoints=len(entries),
        items=len(entries) + sum(len(e.writes) for e in entries),
        objects=len(store.finder.referenced_keys(entries)),
        target_checkpoints=len(store.finder.thread_entries(dst)),
    )


def copy_one(store: ThreadStore, deployment: Deployment, source: str, target: str) -> None:
    """The saver's `copy_thread`: a source with no checkpoints is `ThreadNotFoundError`
    once the deployment's keys are checked (a wrong secret finds nothing, and is named as
    such instead)."""
    src, dst = thread_id_of(source), thread_id_of(target)
    log.info("copy_thread %s -> %s", store.namer.thread(src), store.namer.thread(dst))
    with guarded(deployment):
        try:
            copy_thread(store, src, dst)
        except ThreadNotFoundError:
            deployment.verify(write=False)
            raise


def copy_thread(store: ThreadStore, src: str, dst: str) -> int:
    """Copy `src` (what its readers see) to `dst`, resumably, sharing `src`'s objects
    (`Rewriter.share`). Order: the loans of what the copy will share (a borrowing in
    the target's control partition, then the lenders' loans), the source read again
    (a delete or prune of it that began before the loans were there is seen now, and the
    copy stops: `ConcurrentUpdateError`, after ending its loans); a copy mark over each
    namespace of the target, hiding all of it; every record, in full batches sent in
    parallel, in any order; then the marks, the root namespace's last. So an
    interrupted copy leaves the target showing nothing (or, after the marks went, the
    whole copy), and no object it shares is deleted while it does. A repeat sees that
    the target holds only keys this copy writes, writes the records still missing and
    removes the marks; a repeat after a complete copy changes nothing. A target holding
    any other key (its own checkpoints) raises `ThreadExistsError`. Returns how many
    checkpoints it wrote. Why no shared object is lost: docs/RELIABILITY.md, "Copies
    share objects". A source with no checkpoints raises `ThreadNotFoundError`, once the
    marks an unfinished copy from it left are cleared."""
    entries = store.finder.thread_entries(src)
    name = store.namer.thread(dst)
    records, marks = store.finder.partition_items(name) if src != dst else ([], [])
    refuse_target(store, src, dst, entries, records, marks)
    present = {r.sk for r in records}
    wanted = {(e.ns, e.checkpoint_id): store.rewriter.target_keys(dst, e) for e in entries}
    # Records go in any order: a checkpoint is done when all of its records are there.
    todo = [e for e in entries if not wanted[(e.ns, e.checkpoint_id)] <= present]
    copying = {m.key for m in marks if m.operation == "copy"}
    if not entries:
        store.deleter.unhide(copying, last=store.namer.namespace(dst, ""))
        raise ThreadNotFoundError(
            f"copy_thread source {src!r} has no checkpoints in this deployment, so there is "
            "nothing to copy; check the thread id (`s3dynamo threads` lists them)"
        )
    if not todo and not copying:
        return 0
    plan = store.rewriter.share(src, dst, todo) if todo else None
    written = [new for _, new in plan.records] if plan else []
    if plan:
        lend(store, src, name, written, todo)
    # The target is filed under every declared value of the checkpoints copied, with its
    # records (a repeat files it again, whatever an interruption left).
    filed = store.catalog.entries_of(dst, (store.walker.open_metadata(e) for e in entries))
    store.deleter.written_hidden(
        dst,
        {store.namer.namespace(dst, e.ns) for e in todo},
        copying,
        lambda: store.write_copy(dst, plan, filed),
        newest(store, dst, [(e.ns, e.checkpoint_id) for e in entries]),
    )
    return sum(1 for r in written if isinstance(r, CheckpointRecord))


def refuse_target(
    store: ThreadStore,
    src: str,
    dst: str,
    entries: Sequence[Entry],
    records: Sequence[Record],
    marks: Sequence[Mark],
) -> None:
    """`ThreadExistsError` if `dst` is the source itself or holds any key a copy of `src`
    does not write (its own checkpoints); an empty target, or an unfinished copy of `src`,
    passes."""
    if src == dst and entries:
        raise ThreadExistsError(f"copy_thread source and target are the same thread {src!r}")
    present = {r.sk for r in records}
    if not present:
        return
    wanted = [store.rewriter.target_keys(dst, e) for e in entries]
    if present.difference(*wanted):
        unfinished = sorted({m.operation for m in marks if m.operation != "copy"})
        raise ThreadExistsError(
            f"copy_thread target {dst!r} already has checkpoints that are not part of a "
            f"copy of {src!r}"
            + (f" (hidden by an unfinished {' and '.join(unfinished)})" if unfinished else "")
            + f"; expected an empty thread (or an unfinished copy of {src!r}, which a "
            "repeat completes). Delete it first (delete_thread) or copy to a new thread id"
        )


def newest(store: ThreadStore, tid: str, checkpoints: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The newest of these (namespace, checkpoint id) pairs in each namespace of `tid`,
    by namespace name."""
    latest: dict[str, str] = {}
    for ns, cid in checkpoints:
        name = store.namer.namespace(tid, ns)
        latest[name] = max(latest.get(name, cid), cid)
    return latest


def lend(
    store: ThreadStore, src: str, borrower: str, records: Sequence[Record], copied: Sequence[Entry]
) -> None:
    """Lend `borrower` what these records of it share, then check that the source still
    holds every checkpoint copied, none hidden by a mark: whoever deletes a shared
    object writes its marks before it reads the loans, so either it sees this loan or
    this read sees its marks (docs/RELIABILITY.md, "Copies share objects")."""
    lenders = shared_leaves(records)
    if not lenders:
        return
    store.lend(borrower, lenders)
    now, marks = store.finder.partition_items(store.namer.thread(src), consistent=True)
    present, veil = {r.sk for r in now}, Veil(marks)
    gone = [
        sk
        for e in copied
        for sk in (e.record.sk, *(w.sk for w in e.writes))
        if sk not in present or veil.hides(sk)
    ]
    if not gone:
        return
    kept = shared_leaves(store.finder.partition_items(borrower, consistent=True)[0])
    for lender in sorted(lenders):
        store.deleter.release(borrower, lender, kept.get(lender, set()))
    raise ConcurrentUpdateError(
        f"copy_thread of {src!r}: {len(gone)} of the records being copied were deleted or "
        "hidden meanwhile (a delete, prune or delete_for_runs of the source is running); "
        "nothing more was copied. Run the copy again: it copies what the source holds then"
    )


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
        entries = store.finder.thread_entries(tid)
        kept = 0
        if strategy == "keep_latest":
            kept = sum(len(chain) for chain in kept_chains(store, entries, keep_last).values())
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
    names = [store.namer.thread(t) for t in tids]
    log.info("prune %s (%s, keep_last=%d)", names, strategy, keep_last)
    with guarded(deployment):
        if not prune(store, tids, strategy, keep_last)[0]:
            deployment.verify(write=False)


def prune(
    store: ThreadStore, thread_ids: Sequence[str], strategy: str, keep_last: int = 1
) -> tuple[int, int]:
    """Prune each thread; returns how many records (and, deleting, objects) it found, and
    how many checkpoints it removed."""
    strategy = check_strategy(strategy, keep_last)
    found = removed = 0
    for tid in thread_ids:
        if strategy == "delete":
            deleted = store.delete_thread(tid)
            found, removed = found + deleted.found, removed + deleted.checkpoints
        else:
            had, gone = prune_keep_latest(store, tid, keep_last)
            found, removed = found + had, removed + gone
    store.forget()
    return found, removed


def kept_chains(
    store: ThreadStore, entries: Sequence[Entry], keep_last: int = 1
) -> dict[str, list[Entry]]:
    """Namespace -> what `keep_latest` keeps there: its `keep_last` newest checkpoints
    and the ancestors DeltaChannel reconstruction of each needs (oldest first)."""
    by_ns: dict[str, dict[str, Entry]] = {}
    for e in entries:
        by_ns.setdefault(e.ns, {})[e.checkpoint_id] = e
    kept: dict[str, list[Entry]] = {}
    for ns, chain in by_ns.items():
        newest = sorted(chain, reverse=True)[:keep_last]
        needed = {
            e.checkpoint_id: e for cid in newest for e in needed_chain(store, chain[cid], chain)
        }
        kept[ns] = [needed[cid] for cid in sorted(needed)]
    return kept


def prune_keep_latest(store: ThreadStore, tid: str, keep_last: int = 1) -> tuple[int, int]:
    """Keep each namespace's `keep_last` newest checkpoints and the ancestors (with
    their writes) that DeltaChannel reconstruction of them still needs; delete the
    rest: a prune mark over each namespace hiding what goes (so readers see the pruned
    thread from then on), the records in full batches, the objects only they
    referenced, the marks last. The kept checkpoints are never touched. Returns how
    many records the thread had, and how many of its checkpoints went."""
    name = store.namer.thread(tid)
    records, marks = store.finder.partition_items(name)
    entries = store.finder.group(records, known_tid=tid)
    chains = kept_chains(store, entries, keep_last)
    kept = [e.record.key for chain in chains.values() for e in chain]
    kept_sks = {k.sk for k in kept}
    doomed: list[ItemKey] = []
    dropped_leaves: set[str] = set()
    kept_leaves: set[str] = set()
    kept_records: list[Record] = []
    for rec in records:
        if owner_sk(rec.sk) in kept_sks:
            kept_leaves |= referenced_leaves(rec)
            kept_records.append(rec)
        else:
            doomed.append(rec.key)
            dropped_leaves |= referenced_leaves(rec)
    hiding: list[Mark] = []
    if doomed:
        hiding = store.deleter.delete_marks(name, doomed, keep=kept)
        store.deleter.hide(hiding)
        store.deleter.delete_records(doomed)
    orphaned = dropped_leaves - kept_leaves
    if orphaned:
        # Read after the marks: a copy lending these now has seen them, or is seen here.
        orphaned -= store.finder.lent_leaves(name)
    store.engine.objects.delete([object_key(name, leaf) for leaf in sorted(orphaned)])
    release_unshared(store, name, records, kept_records)
    store.deleter.unhide({m.key for m in hiding} | {m.key for m in marks if m.operation == "prune"})
    return len(records), sum(1 for k in doomed if not is_writes_key(k.sk))


def release_unshared(
    store: ThreadStore, name: str, records: Sequence[Record], kept: Sequence[Record]
) -> None:
    """After a copy lost some of its records (`records` as they were, `kept` what is
    left): its loans from each lender its records named keep only what `kept` names
    (`Deleter.release`; a copy shares nothing: no request)."""
    after = shared_leaves(kept)
    for lender in sorted(shared_leaves(records)):
        store.deleter.release(name, lender, after.get(lender, set()))


def needed_chain(store: ThreadStore, latest: Entry, chain: dict[str, Entry]) -> list[Entry]:
    """The latest checkpoint plus its ancestors back to the nearest stored value of every
    DeltaChannel (the channels named in `counters_since_delta_snapshot`)."""
    metadata: dict[str, Any] = store.walker.open_metadata(latest) or {}
    remaining = set(metadata.get("counters_since_delta_snapshot") or {})
    needed = [latest]
    cursor: Entry | None = latest
    while cursor is not None and remaining:
        body = store.walker.open_body(cursor)
        remaining -= set(store.walker.stored_values(cursor, body))
        parent = body.get("parent")
        cursor = chain.get(parent) if parent and remaining else None
        if cursor is not None:
            needed.append(cursor)
    return needed


# ------------------------------------------------------------------- delete runs


@dataclass
class DeleteRunsPlan:
    """The checkpoints (with their writes) that runs created, found through the run
    index without a scan; objects they alone referenced are left to garbage collection,
    named by an upload intent so the incremental one finds them."""

    store: ThreadStore
    run_ids: list[str]
    checkpoints: list[ItemKey]
    index_kept: IndexKept

    def to_dict(self) -> dict[str, Any]:
        return {"runs": len(self.run_ids), "checkpoints": len(self.checkpoints)}

    def execute(self) -> None:
        store = self.store
        found = self.checkpoints
        for start in range(0, len(found), RUNS_ROUND):
            batch = found[start : start + RUNS_ROUND]
            owned = {
                checkpoint: [r for r in records if owner_sk(r.sk) == checkpoint.sk]
                for checkpoint, records in zip(
                    batch, parallel(store.checkpoint_records, batch), strict=True
                )
            }
            # Before any record goes, an intent per thread names the objects the round's
            # records reference: incremental collection deletes those nothing else does.
            leaves: dict[str, set[str]] = {}
            for checkpoint, records in owned.items():
                for record in records:
                    leaves.setdefault(checkpoint.pk, set()).update(referenced_leaves(record))
            for thread_name, named in sorted(leaves.items()):
                if named:
                    store.name_orphans(thread_name, named)
            # A round's checkpoints, hidden by one mark per namespace naming them.
            delete_checkpoints(store, batch, _keys_of(owned), self.index_kept)
        store.forget()


def _keys_of(owned: dict[ItemKey, list[Record]]) -> Callable[[ItemKey], list[ItemKey]]:
    return lambda checkpoint: [r.key for r in owned[checkpoint]]


def delete_checkpoints(
    store: ThreadStore,
    checkpoints: Sequence[ItemKey],
    record_keys: Callable[[ItemKey], list[ItemKey]],
    index_kept: IndexKept,
) -> None:
    """Delete checkpoint records (and their writes) of any threads: heads of their
    namespaces dropped and each thread kept in the idle index, a runs mark over each
    namespace naming them, the records in full batches, the marks last."""
    doomed = [k for keys in parallel(record_keys, list(checkpoints)) for k in keys]
    # Heads first: one may name a checkpoint about to go, and would then hold every
    # later commit there to it. Without a head the next commit is not held.
    touched: dict[tuple[str, str], set[str]] = {}
    for key in checkpoints:
        touched.setdefault((key.pk, parse_sk(key.sk)[0]), set()).add(parse_sk(key.sk)[1])
    by_thread: dict[str, set[str]] = {}
    for pk, ns_name in touched:
        by_thread.setdefault(pk, set()).add(ns_name)
    gone = set(doomed)

    def unhead(thread_name: str) -> None:
        store.drop_heads(thread_name, by_thread[thread_name])
        index_kept(store, thread_name, gone)

    parallel(unhead, sorted(by_thread))
    if not doomed:
        return
    at = store.now()
    hiding = [
        Mark(pk, mark_sk(ns_name, "runs"), ids=frozenset(ids), at=at)
        for (pk, ns_name), ids in sorted(touched.items())
    ]
    store.deleter.hide(hiding)
    store.deleter.delete_records(doomed)
    store.deleter.unhide({m.key for m in hiding})
    if store.catalog.enabled:  # a thread left without records leaves the catalog
        parallel(store.deleter.drop_catalog_if_empty, sorted(by_thread))


def plan_delete_runs(
    store: ThreadStore, run_ids: Sequence[str], index_kept: IndexKept
) -> DeleteRunsPlan:
    run_keys = [store.namer.run(str(r)) for r in dict.fromkeys(run_ids)]
    found = [key for keys in parallel(store.run_checkpoints, run_keys) for key in keys]
    return DeleteRunsPlan(store, [str(r) for r in run_ids], found, index_kept)
