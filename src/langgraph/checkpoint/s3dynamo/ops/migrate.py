"""Importing threads from any LangGraph checkpointer (`InMemorySaver`, `SqliteSaver`,
`PostgresSaver`, AWS's `DynamoDBSaver`, ...): whole histories, every namespace, with
their checkpoint ids, parents, metadata and pending writes, so that `list()`,
`get_state_history()` and DeltaChannel reconstruction read back what the source does.

The source is read through its public `list()`: one listing of a thread gives every
checkpoint of every namespace as LangGraph stored it (a DeltaChannel's snapshots where
they were taken, its writes everywhere). Each checkpoint is written here holding
exactly the values the source gives for it: the channels whose version and value it
shares with its parent point at what the parent stored, and a channel the source gives
no value for (a DeltaChannel between snapshots) has none here either. Pending writes
keep the order the source returns them in: each task's writes get a task path that
sorts in that order, which is the order LangGraph replays them in (`writes_sort_key`).
Whole-number channel versions (InMemorySaver's, DynamoDBSaver's) are written in this
saver's text form (`text_versions`), so the thread's next steps here compare with them.

Order, per thread (the commit order of `store/committer.py`, extended): a thread new
here is first hidden by a copy mark over each namespace (`records.Mark`); then every
pending write (a writes record without its checkpoint record is invisible to readers),
then the checkpoint records, parents before children; the marks last. Interrupted, a
new thread here shows nothing (a thread already here shows a part of its history whose
every checkpoint has its writes and its ancestors); a repeat of the import skips the
checkpoints already here, writes the rest and removes the marks (writes merge
idempotently: the first write of an index is kept). A thread that already has
checkpoints here that the source does not have, newer than those imported (written here
since), is reported as a conflict and left as it is: an import never overwrites. Older
ones the source dropped since (a ttl, a cleanup) are no conflict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
)

from langgraph.checkpoint.s3dynamo.config.runnable_config import checkpoint_id_of, thread_id_of
from langgraph.checkpoint.s3dynamo.deployment import Deployment
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    InvalidConfigError,
    ThreadDeletedError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt
from langgraph.checkpoint.s3dynamo.ops.plan import Plan, Progress, no_progress
from langgraph.checkpoint.s3dynamo.store import Present, ThreadStore


@dataclass
class ThreadImport:
    """One thread of an import: what the source holds, what is here already, and, once
    executed, what was copied."""

    thread_id: str
    checkpoints: int
    already_here: int
    # Why the thread is left alone (checkpoints here that the source does not have).
    conflict: str | None = None
    # Pending writes to copy: those of the checkpoints to copy and those `behind`.
    writes: int = 0
    copied: int = 0
    writes_copied: int = 0
    # Pending writes the source holds on checkpoints here that are not here (written there
    # since the last import: a resume, a step that failed), by checkpoint.
    behind: dict[tuple[str, str], list[PendingWrite]] = field(default_factory=dict, repr=False)


def plan_import(
    store: ThreadStore,
    deployment: Deployment,
    source: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str] | None = None,
) -> Plan:
    """Read what the source holds of these threads (None: every thread its `list(None)`
    shows; an empty list: none) and what is here already (`.threads`, `.conflicts`); nothing is
    written. `execute(progress)` copies every thread but the conflicting ones."""
    tids = (
        source_threads(source)
        if thread_ids is None
        else list(dict.fromkeys(map(thread_id_of, thread_ids)))
    )
    read = {tid: _thread_import(store, source, tid) for tid in tids}
    rows = [row for row in read.values() if row is not None]
    unknown = [tid for tid, row in read.items() if row is None]
    if unknown and thread_ids is None:  # its own listing names them
        raise ThreadNotFoundError(
            f"the source lists thread(s) {unknown} and gives no checkpoint of them: it "
            "cannot read what they hold (a DynamoDBSaver's checkpoints offloaded to S3 need "
            "its bucket and key prefix: dynamodb:TABLE?offload_bucket=NAME&key_prefix=PREFIX). "
            "Nothing was written"
        )
    if unknown:
        raise ThreadNotFoundError(
            f"the source holds no checkpoint of thread(s) {unknown}: check the id(s) "
            "(`s3dynamo import --from ... --json` without ids shows the threads it holds). "
            "Nothing was written"
        )
    todo = [t for t in rows if not t.conflict]

    def run(progress: Progress = no_progress) -> dict[str, Any]:
        progress(0, len(todo))
        for done, thread in enumerate(todo, 1):
            import_thread(store, deployment, source, thread)
            progress(done, len(todo))
        found.conflicts = [t for t in rows if t.conflict]  # with those a run made meanwhile
        return {
            "threads_copied": sum(1 for t in rows if t.copied),
            "checkpoints_copied": sum(t.copied for t in rows),
            "writes_copied": sum(t.writes_copied for t in rows),
            "conflicts": [t.thread_id for t in rows if t.conflict],
        }

    to_copy = sum(t.checkpoints - t.already_here for t in todo)
    writes = sum(t.writes for t in todo)
    counts = {
        "threads": [{k: v for k, v in vars(t).items() if k != "behind"} for t in rows],
        "checkpoints_to_copy": to_copy,
        "writes_to_copy": writes,
        "conflicts": len(rows) - len(todo),
    }
    found = SimpleNamespace(threads=rows, conflicts=[t for t in rows if t.conflict])
    return Plan("import", counts, run, to_copy > 0 or writes > 0, found)


def _is_checkpoint_id(value: str) -> bool:
    try:
        checkpoint_id_of(value)
    except InvalidConfigError:
        return False
    return True


def source_threads(source: BaseCheckpointSaver[Any]) -> list[str]:
    """Every thread id the source has: what its table-wide listing shows, in the order
    first seen, or for AWS's DynamoDBSaver (whose `list()` needs a thread id) the
    thread of each of its checkpoint partitions."""
    if type(source).__module__.startswith("langgraph_checkpoint_aws"):
        return _dynamodb_saver_threads(source)
    seen: dict[str, None] = {}
    try:
        for t in source.list(None):
            seen.setdefault(str(t.config["configurable"]["thread_id"]), None)
    except ValueError as e:
        raise InvalidConfigError(
            f"{type(source).__name__} cannot list its threads ({e}); name the threads to import"
        ) from e
    return list(seen)


def _dynamodb_saver_threads(source: Any) -> list[str]:
    # DynamoDBSaver keeps a thread's checkpoints in the partition "CHECKPOINT_<thread id>"
    # (langgraph_checkpoint_aws/checkpoint/dynamodb/unified_repository.py, `_checkpoint_pk`);
    # a scan of the partition keys alone finds every thread.
    prefix = "CHECKPOINT_"
    seen: dict[str, None] = {}
    pages = source.client.get_paginator("scan").paginate(
        TableName=source.table_name,
        ProjectionExpression="PK",
        FilterExpression="begins_with(PK, :p)",
        ExpressionAttributeValues={":p": {"S": prefix}},
    )
    for page in pages:
        for item in page.get("Items", []):
            seen.setdefault(item["PK"]["S"][len(prefix) :], None)
    return list(seen)


def read_thread(source: BaseCheckpointSaver[Any], tid: str) -> list[CheckpointTuple]:
    """Every checkpoint of every namespace of a thread, as the source stored them."""
    return list(source.list({"configurable": {"thread_id": tid}}))


def present(store: ThreadStore, tid: str) -> set[tuple[str, str]]:
    """(namespace, checkpoint id) of every checkpoint the thread has here."""
    return {(e.ns, e.checkpoint_id) for e in store.entries(tid)}


def _thread_import(
    store: ThreadStore, source: BaseCheckpointSaver[Any], tid: str
) -> ThreadImport | None:
    """What the source and this store hold of a thread, and why it is left alone if it
    is; None where neither holds anything of it (an id the source does not know)."""
    tuples = read_thread(source, tid)
    here = present(store, tid)
    if not tuples and not here:
        return None
    theirs = {_key(t) for t in tuples}
    foreign = _written_here(here, theirs)
    conflict = None
    if foreign:
        conflict = (
            f"thread {tid!r} has {len(foreign)} checkpoint(s) here that the source does not "
            "have, newer than those imported; an import never overwrites: to import the "
            "source's history in its place, delete the thread here first (`s3dynamo "
            "delete`, delete_thread), then import again"
        )
    elif odd := sorted(cid for _, cid in theirs if not _is_checkpoint_id(cid)):
        conflict = (
            f"thread {tid!r} has {len(odd)} checkpoint id(s) that are not UUIDs in "
            f"canonical form, as LangGraph makes them, such as {odd[0][:60]!r}: a config "
            "naming one would be refused here, so the thread is left in the source"
        )
    row = ThreadImport(tid, len(tuples), len(here & theirs), conflict)
    if not conflict:
        row.behind = writes_behind(store, tid, tuples, here)
        new = [t.pending_writes or [] for t in tuples if _key(t) not in here]
        row.writes = sum(map(len, [*new, *row.behind.values()]))
    return row


def _written_here(here: set[tuple[str, str]], theirs: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The checkpoints here that the source does not have and that were not imported
    from it: newer than the newest checkpoint both hold (ids are time-ordered; a run
    here after an import makes newer ones), or all of them where none is held by both.
    Older ones came from an earlier import and are gone from the source since (a ttl,
    a cleanup): the source's newer checkpoints are still copied."""
    shared = [cid for _, cid in here & theirs]
    if not shared:
        return here - theirs
    newest = max(shared)
    return {(ns, cid) for ns, cid in here - theirs if cid > newest}


def writes_behind(
    store: ThreadStore, tid: str, tuples: list[CheckpointTuple], here: set[tuple[str, str]]
) -> dict[tuple[str, str], list[PendingWrite]]:
    """The source's pending writes of checkpoints here that are not here, by checkpoint
    (one read of the thread here, decoding only those the source has writes on)."""
    theirs = {_key(t): t.pending_writes for t in tuples if _key(t) in here and t.pending_writes}
    if not theirs:
        return {}
    entries = [e for e in store.entries(tid) if (e.ns, e.checkpoint_id) in theirs]
    ours = {_key(t): t.pending_writes or [] for t in store.tuples(entries, None, None)}
    behind = {}
    for key, writes in theirs.items():
        had = Counter((w[0], w[1]) for w in ours.get(key, []))  # hidden since: none here
        missing = Counter((w[0], w[1]) for w in writes) - had
        if missing:  # a task with any write missing is written again whole: the same writes
            tasks = {task for task, _ in missing}
            behind[key] = [w for w in writes if w[0] in tasks]
    return behind


def parents_first(tuples: Iterable[CheckpointTuple]) -> list[CheckpointTuple]:
    """Checkpoints ordered so that each comes after its parent (ids are time-ordered;
    the parent links decide where they are not)."""
    by_key = {_key(t): t for t in tuples}
    done: set[tuple[str, str]] = set()
    out: list[CheckpointTuple] = []

    def visit(key: tuple[str, str]) -> None:
        chain = []
        while key in by_key and key not in done:
            chain.append(key)
            done.add(key)
            parent = by_key[key].parent_config
            if not parent:
                break
            key = (key[0], parent["configurable"]["checkpoint_id"])
        out.extend(by_key[k] for k in reversed(chain))

    for key in sorted(by_key, key=lambda k: k[1]):
        visit(key)
    return out


def import_thread(
    store: ThreadStore,
    deployment: Deployment,
    source: BaseCheckpointSaver[Any],
    thread: ThreadImport,
) -> None:
    """Copy one thread's missing checkpoints: writes first, then checkpoints, parents
    before children. A thread that reads as empty here is hidden meanwhile by a copy
    mark over each namespace, removed last (the root namespace's after the others):
    the copy protocol's, `store/copying.py`."""
    tid = thread.thread_id
    tuples = read_thread(source, tid)
    here = store.present(tid)
    if _written_here(here.checkpoints, {_key(t) for t in tuples}):  # a run since the plan
        thread.conflict = _moved_on(tid)
        return
    try:
        _import_present(store, deployment, thread, tuples, here)
    except ThreadDeletedError:  # deleted meanwhile: said as it is
        raise
    except (ThreadExistsError, ConcurrentUpdateError):
        # A run committed to the thread meanwhile: the thread stays as the run left it
        # (records this import wrote that no checkpoint shows are garbage collection's).
        thread.conflict = _moved_on(tid)


def _moved_on(tid: str) -> str:
    return (
        f"thread {tid!r} was written here (a run) while it was imported; the import stopped "
        "and left it as the run made it: an import never overwrites. To import the "
        "source's history in its place, delete the thread here first (`s3dynamo delete`, "
        "delete_thread), then import again"
    )


def _import_present(
    store: ThreadStore,
    deployment: Deployment,
    thread: ThreadImport,
    tuples: list[CheckpointTuple],
    here: Present,
) -> None:
    """`import_thread` once the thread here is read (`here`)."""
    tid = thread.thread_id
    for (ns, cid), writes in thread.behind.items():  # on checkpoints readers see already
        for task_id, task_path, task_writes in _tasks(writes):
            store.commit_writes(CheckpointAt(tid, ns, cid), task_id, task_path, task_writes)
            thread.writes_copied += len(task_writes)
    todo = [t for t in parents_first(tuples) if _key(t) not in here.checkpoints]
    if not todo and not here.copying:
        return
    if not here.checkpoints:
        deployment.verify(write=True)  # a new thread's first write records the keys
    store.import_hidden(
        here,
        {_key(t)[0] for t in todo},
        lambda: _write(store, thread, tuples, todo),
        [_key(t) for t in tuples],
    )


def _write(
    store: ThreadStore,
    thread: ThreadImport,
    tuples: list[CheckpointTuple],
    todo: list[CheckpointTuple],
) -> None:
    """A thread's missing checkpoints written: each one's writes first, then the
    checkpoints, parents before children."""
    tid = thread.thread_id
    tuples = [t._replace(checkpoint=text_versions(t.checkpoint)) for t in tuples]
    todo = [t._replace(checkpoint=text_versions(t.checkpoint)) for t in todo]
    for t in todo:
        ns, cid = _key(t)
        for task_id, task_path, writes in _tasks(t.pending_writes or []):
            store.commit_writes(CheckpointAt(tid, ns, cid), task_id, task_path, writes)
            thread.writes_copied += len(writes)
    versions_of = {_key(t): dict(t.checkpoint.get("channel_versions", {})) for t in tuples}
    for t in todo:
        ns, cid = _key(t)
        parent_id = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        parent_versions = versions_of.get((ns, parent_id), {}) if parent_id else {}
        versions = t.checkpoint.get("channel_versions", {})
        values = t.checkpoint.get("channel_values", {})
        # Changed since the parent, or absent from this checkpoint's values although its
        # version is the parent's (a DeltaChannel between snapshots, as some savers store
        # it): either way not what the parent stored.
        new_versions = {
            ch: v for ch, v in versions.items() if parent_versions.get(ch) != v or ch not in values
        }
        store.commit(CheckpointAt(tid, ns, cid), parent_id, t.checkpoint, t.metadata, new_versions)
        thread.copied += 1


def text_versions(checkpoint: Checkpoint) -> Checkpoint:
    """The checkpoint with whole-number channel versions (InMemorySaver's, DynamoDBSaver's)
    written in this saver's text form, counter first (`S3DynamoSaver.get_next_version`).
    LangGraph compares a thread's versions with each other, and an int does not compare
    with the text versions this saver gives the thread's next steps; the counter keeps
    the order, and the same int always becomes the same text, so a repeat writes the
    same checkpoint."""

    def text(v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            return f"{v:032}.{0:016}"
        return v

    out = dict(checkpoint)
    out["channel_versions"] = {k: text(v) for k, v in checkpoint["channel_versions"].items()}
    out["versions_seen"] = {
        node: {k: text(v) for k, v in seen.items()}
        for node, seen in checkpoint["versions_seen"].items()
    }
    return out  # type: ignore[return-value]


def _key(t: CheckpointTuple) -> tuple[str, str]:
    return t.config["configurable"].get("checkpoint_ns", "") or "", t.checkpoint["id"]


def _tasks(
    pending: Iterable[tuple[str, str, Any]],
) -> list[tuple[str, str, list[tuple[str, Any]]]]:
    """(task id, task path, writes) per put_writes call that stores the writes in the
    order given: tasks in order of first appearance (their task path sorts so), a task's
    regular writes in one call (their positions are their indexes), each special write
    (error, interrupt, ...: a fixed index) in a call of its own."""
    order: dict[str, int] = {}
    regular: dict[str, list[tuple[str, Any]]] = {}
    special: list[tuple[str, str, Any]] = []
    for task_id, channel, value in pending:
        order.setdefault(task_id, len(order))
        if channel in WRITES_IDX_MAP:
            special.append((task_id, channel, value))
        else:
            regular.setdefault(task_id, []).append((channel, value))
    calls = [(t, f"{order[t]:08}", writes) for t, writes in regular.items()]
    calls += [(t, f"{order[t]:08}", [(ch, v)]) for t, ch, v in special]
    return calls
