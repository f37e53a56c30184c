"""Inspecting stored data: the threads of a deployment, a thread's history with sizes,
statistics (sizes, compression, reuse) and verification (open and authenticate every
blob). Each returns a report of plain values; the command line only renders it (the
`--json` shapes are these reports' `to_dict()`).

Every blob is reached through the store's one walk (`ThreadStore.walk`) and opened with the
codec: nothing here knows the record layout or decodes on its own.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    KeyNotFoundError,
    ObjectNotFoundError,
    PlaintextRefusedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import owner_prefix
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    ItemKey,
    Record,
    referenced_leaves,
    shared_leaves,
)
from langgraph.checkpoint.s3dynamo.keys.codec import unpack_channel
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.store import Entry, Grouped, Sealed, SealedThread, ThreadStore
from langgraph.checkpoint.s3dynamo.table import Item

Progress = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    return None


def _by_thread(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = {}
    for e in entries:
        out.setdefault(e.tid, []).append(e)
    return out


def item_label(key: ItemKey) -> str:
    return f"{key.pk} {key.sk}"


# ---------------------------------------------------------------------- threads


@dataclass
class ThreadRow:
    """One thread as `threads` lists it; `checkpoints` and `namespaces` are None when the
    listing came from the thread catalog (which reads no thread whole)."""

    thread_id: str
    checkpoints: int | None
    namespaces: int | None
    last_checkpoint_id: str
    last_step: Any
    last_updated: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class ThreadsReport:
    """Every thread with checkpoints here (with a filter, those whose latest checkpoint
    matches it), and the checkpoint records that did not open (other keys or naming
    secret, or altered)."""

    threads: list[ThreadRow]
    unreadable_records: int
    opened_records: int


def threads(store: ThreadStore, metadata: Mapping[str, Any] | None = None) -> ThreadsReport:
    """Each thread's checkpoints, namespaces and latest step, from one Scan; with
    `metadata`, the threads whose latest checkpoint (root namespace) holds each pair,
    through the thread catalog when it asks a value of a declared field whose catalog is
    complete: only those threads are read, their checkpoints not counted (search.py)."""
    if store.catalog_answers(metadata):
        found = store.search(metadata, sys.maxsize, None)
        rows = [
            ThreadRow(
                t.thread_id,
                None,
                None,
                t.checkpoint_id,
                t.metadata.get("step"),
                t.updated_at.isoformat(),
            )
            for t in found
        ]
        return ThreadsReport(rows, 0, len(rows))
    records = (r for r in store.records() if isinstance(r, CheckpointRecord))
    grouped = store.pair(records)
    counts: dict[str, int] = {}
    namespaces: dict[str, set[str]] = {}
    latest: dict[str, Entry] = {}
    for e in grouped.entries:
        counts[e.tid] = counts.get(e.tid, 0) + 1
        namespaces.setdefault(e.tid, set()).add(e.ns)
        best = latest.get(e.tid)
        # The root namespace's newest checkpoint stands for the thread.
        if best is None or (e.ns == "", e.checkpoint_id) > (best.ns == "", best.checkpoint_id):
            latest[e.tid] = e
    rows = []
    for tid, e in latest.items():
        md: Mapping[str, Any] = {}
        ts = None
        with contextlib.suppress(IntegrityError):  # `verify` reports it; the listing goes on
            md, body = store.opened(e)
            ts = body.get("ts")
        if metadata and not all(md.get(k) == v for k, v in metadata.items()):
            continue
        rows.append(
            ThreadRow(tid, counts[tid], len(namespaces[tid]), e.checkpoint_id, md.get("step"), ts)
        )
    return ThreadsReport(rows, len(grouped.unopened), len(grouped.entries))


# ---------------------------------------------------------------------- history


@dataclass
class HistoryItem:
    """One checkpoint of a history, decoded, with what it costs to keep: `item_bytes`
    (its records), `stored_bytes` (its records plus the objects its parent did not
    reference: what it added) and `referenced_bytes` (its records plus every object it
    references: everything it needs)."""

    entry: Entry
    tuple: CheckpointTuple
    item_bytes: int
    stored_bytes: int
    referenced_bytes: int


def history(store: ThreadStore, entries: Sequence[Entry]) -> list[HistoryItem]:
    """Decode a thread's entries (newest first) with their sizes."""
    if not entries:
        return []
    sizes = {o.key: o.size for o in store.objects_of(entries[0].record.pk)}
    by_id = {(e.ns, e.checkpoint_id): e for e in entries}
    size = store.item_size
    out = []
    for e, t in zip(entries, store.tuples(entries, None, None), strict=True):
        parent_id = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        own = set(store.referenced([e]))
        parent = by_id.get((e.ns, parent_id)) if parent_id else None
        inherited = set(store.referenced([parent])) if parent else set()
        items = size(e.record) + sum(size(w) for w in e.writes)
        out.append(
            HistoryItem(
                e,
                t,
                items,
                items + sum(sizes.get(k, 0) for k in own - inherited),
                items + sum(sizes.get(k, 0) for k in own),
            )
        )
    return out


# ------------------------------------------------------------------------ stats


@dataclass
class ChannelStats:
    values: int = 0
    references: int = 0
    inline: int = 0
    objects: int = 0
    stored_bytes: int = 0
    logical_bytes: int = 0
    referenced_logical_bytes: int = 0


@dataclass
class StatsReport:
    thread_id: str | None
    threads: int
    checkpoints: int
    items: int
    item_bytes: int
    objects: int
    object_bytes: int
    unreferenced_objects: int
    channels: dict[str, ChannelStats]

    def to_dict(self) -> dict[str, Any]:
        channels = self.channels.values()
        logical = sum(c.logical_bytes for c in channels)
        sealed = sum(c.stored_bytes for c in channels)
        referenced_logical = sum(c.referenced_logical_bytes for c in channels)
        return {
            "thread_id": self.thread_id,
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "items": {"count": self.items, "bytes": self.item_bytes},
            "objects": {
                "count": self.objects,
                "bytes": self.object_bytes,
                "unreferenced": self.unreferenced_objects,
            },
            "stored_bytes": self.item_bytes + self.object_bytes,
            "values": {
                "count": sum(c.values for c in channels),
                "references": sum(c.references for c in channels),
                "sealed_bytes": sealed,
                "logical_bytes": logical,
                "referenced_logical_bytes": referenced_logical,
            },
            "compression_ratio": _ratio(logical, sealed),
            "reuse_ratio": _ratio(referenced_logical, logical),
            "channels": [
                {"channel": name, **vars(c)}
                for name, c in sorted(self.channels.items(), key=lambda kv: -kv[1].stored_bytes)
            ],
        }


def _ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def scope(
    store: ThreadStore, thread_id: str | None, control: list[Item] | None = None
) -> tuple[list[Record], list[ObjectInfo]]:
    """The records and objects of one thread (with those it shares of other threads, as
    a copy), or of the whole deployment (its control and catalog items into `control`,
    if given: the same Scan read them)."""
    if thread_id is None:
        return store.records(None, control), list(store.deployment_objects())
    records, objects = store.records(thread_id), store.objects_of(store.name_of(thread_id))
    for lender, leaves in sorted(shared_leaves(records).items()):
        prefix = owner_prefix(lender)
        objects += [o for o in store.objects_of(lender) if o.key[len(prefix) :] in leaves]
    return records, objects


def stats(
    store: ThreadStore, thread_id: str | None, progress: Progress = no_progress
) -> StatsReport:
    """Sizes, compression and reuse, by channel, of one thread or the whole deployment."""
    records, listed = scope(store, thread_id)
    objects = [o for o in listed if store.object_owner(o.key)]
    entries = store.pair(records).entries
    by_thread = _by_thread(entries)
    channels: dict[str, ChannelStats] = {}
    seen: set[tuple[str, str, str, str | None]] = set()
    referenced: set[str] = set()
    progress(0, len(by_thread))
    for done, (tid, thread_entries) in enumerate(by_thread.items(), 1):
        referenced |= set(store.referenced(thread_entries))
        _count(store, store.sealed(None, thread_entries), tid, channels, seen)
        progress(done, len(by_thread))
    size = store.item_size
    return StatsReport(
        thread_id=thread_id,
        threads=len(by_thread),
        checkpoints=len(entries),
        items=len(records),
        item_bytes=sum(size(r) for r in records),
        objects=len(objects),
        object_bytes=sum(o.size for o in objects),
        unreferenced_objects=sum(1 for o in objects if o.key not in referenced),
        channels=channels,
    )


def _count(
    store: ThreadStore,
    thread: SealedThread,
    tid: str,
    channels: dict[str, ChannelStats],
    seen: set[tuple[str, str, str, str | None]],
) -> None:
    """The statistics fold over one thread's sealed blobs: each value by channel (every
    checkpoint referencing it, and once as stored), every pending write present."""
    bases: dict[str, tuple[str, bytes]] = {}
    for s in thread.blobs:
        if s.entry is None or s.kind not in ("value", "write") or s.blob is None:
            continue
        if s.kind == "write":
            pending = channels.setdefault("(pending writes)", ChannelStats())
            _, data = store.open(s, bases)
            logical = len(unpack_channel(data, s.what)[1])
            pending.values += 1
            pending.references += 1
            pending.stored_bytes += len(s.blob)
            pending.logical_bytes += logical
            pending.referenced_logical_bytes += logical
            pending.inline += s.where == "item"
            pending.objects += s.where == "object"
            continue
        c = channels.setdefault(s.channel or "", ChannelStats())
        present = s.base is None or s.base.blob is not None
        logical = len(store.open(s, bases)[1]) if present else 0
        c.references += 1
        c.referenced_logical_bytes += logical
        ident = (tid, s.entry.ns, s.channel or "", s.version)
        if ident in seen:
            continue
        seen.add(ident)
        c.values += 1
        c.logical_bytes += logical
        c.stored_bytes += len(s.blob)
        c.inline += s.where == "item"
        c.objects += s.where == "object"


# ----------------------------------------------------------------------- verify


def problem_kind(exc: Exception) -> str:
    if isinstance(exc, ObjectNotFoundError):
        return "missing"
    if isinstance(exc, (KeyNotFoundError, PlaintextRefusedError)):
        return "unopenable"
    if isinstance(exc, IntegrityError):
        return "tampered"
    return "unopenable"


@dataclass
class VerifyReport:
    thread_id: str | None
    checked: dict[str, int] = field(
        default_factory=lambda: {"items": 0, "objects": 0, "blobs": 0, "opened": 0}
    )
    problems: list[dict[str, Any]] = field(default_factory=list)
    # Writes records whose checkpoint record is not there (`verify`): counted, no problem.
    leftover_writes: int = 0
    # Unreferenced objects an upload intent names: incremental collection takes them
    # after its grace (what a write in flight, a replacement or a crash leaves). Counted,
    # no problem.
    awaiting_collection: int = 0
    # Long-term memory, per space ("store", "cache"), counted apart from the threads:
    # namespaces, items, index items, objects, sealed blobs and those that opened.
    memory: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def nothing_opened(self) -> bool:
        """Sealed blobs were met and none opened (threads' and memory's alike)."""
        counts = [self.checked, *self.memory.values()]
        blobs, opened = (sum(c[k] for c in counts) for k in ("blobs", "opened"))
        return blobs > 0 and opened == 0

    def problem(
        self, kind: str, where: str, key: str, e: Entry | None, detail: str, tid: str | None = None
    ) -> None:
        self.problems.append(
            {
                "kind": kind,
                "where": where,
                "key": key,
                "thread_id": e.tid if e else tid,
                "checkpoint_ns": e.ns if e else None,
                "checkpoint_id": e.checkpoint_id if e else None,
                "detail": detail,
            }
        )

    def attempt(
        self, where: str, key: str, e: Entry | None, fn: Callable[..., Any], *args: Any
    ) -> Any:
        """fn(*args), counted; None (and a problem recorded) if it raises."""
        self.checked["blobs"] += 1
        try:
            result = fn(*args)
        except Exception as exc:
            self.problem(problem_kind(exc), where, key, e, f"{type(exc).__name__}: {exc}")
            return None
        self.checked["opened"] += 1
        return result if result is not None else True

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "ok": self.ok,
            "checked": dict(self.checked),
            "leftover_writes": self.leftover_writes,
            "awaiting_collection": self.awaiting_collection,
            "memory": {space: dict(counts) for space, counts in self.memory.items()},
            "problems": list(self.problems),
        }


def verify(
    store: ThreadStore,
    thread_id: str | None,
    progress: Progress = no_progress,
    scoped: tuple[list[Record], list[ObjectInfo]] | None = None,
    control: list[Item] | None = None,
) -> VerifyReport:
    """Open and authenticate every item and object in scope (one thread, or every thread
    of the deployment; `scoped`: its records and objects, if read already, with the
    control and catalog items its Scan read in `control`): what is missing, unreferenced,
    altered or sealed under a key this saver does not hold, and what the catalog and the
    tombstones do not agree with (`store/audit.py`)."""
    if scoped is None:
        control = []
        scoped = scope(store, thread_id, control)
    records, objects = scoped
    listed = {o.key: o for o in objects if store.object_owner(o.key)}
    report = VerifyReport(thread_id)
    report.checked.update(items=len(records), objects=len(listed))
    grouped = store.pair(records)
    _verify_records(report, grouped)
    by_thread = _by_thread(grouped.entries)
    progress(0, len(by_thread))
    live = _live_leaves(records)
    for done, entries in enumerate(by_thread.values(), 1):
        _verify_thread(store, store.sealed(None, entries), report)
        progress(done, len(by_thread))
    _verify_catalog(store, report, records, grouped.entries, control or ())
    scope_pk = store.name_of(thread_id) if thread_id is not None else None
    named = store.collector().named(scope_pk, control or ())
    _unreferenced_objects(store, report, listed, (live, named), scope_pk)
    _unbacked_loans(store, report, listed, scope_pk)
    return report


def _verify_records(report: VerifyReport, grouped: Grouped) -> None:
    """What pairing the records found: a problem for each record that did not open; the
    leftover writes records, and the thread references `pair` opened, counted."""
    for rec, exc in grouped.unopened:
        report.checked["blobs"] += 1
        report.problem(
            problem_kind(exc), "item", item_label(rec.key), None, f"{type(exc).__name__}: {exc}"
        )
    # Writes records of a checkpoint never committed (LangGraph sends a task's writes
    # before its checkpoint's put may be refused), or one a stopped delete removed: no
    # reader sees them, and the full collection deletes them after its grace. No problem.
    report.leftover_writes = len(grouped.orphan_writes)
    report.checked["blobs"] += len(grouped.entries)  # the thread references, opened by `pair`
    report.checked["opened"] += len(grouped.entries)


def _live_leaves(records: Sequence[Record]) -> dict[str, set[str]]:
    """The object leaves the records reference, by the thread that owns them (a copy's
    shared leaves under their lender)."""
    live: dict[str, set[str]] = {}
    for r in records:
        live.setdefault(r.pk, set()).update(referenced_leaves(r))
    for lender, leaves in shared_leaves(records).items():
        live.setdefault(lender, set()).update(leaves)
    return live


def _verify_catalog(
    store: ThreadStore,
    report: VerifyReport,
    records: Sequence[Record],
    entries: Sequence[Entry],
    control: Sequence[Item],
) -> None:
    """The catalog's and the tombstones' checks (`store/audit.py`), counted and reported
    as the blobs' are."""
    audit = store.audit(report.thread_id, records, entries, control)
    report.checked["blobs"] += audit.entries
    report.checked["opened"] += audit.opened
    for f in audit.findings:
        kind = problem_kind(f.error) if f.error is not None else f.kind
        report.problem(kind, "item", f.key, None, f.detail, tid=f.tid)


def _unreferenced_objects(
    store: ThreadStore,
    report: VerifyReport,
    listed: Mapping[str, ObjectInfo],
    referenced: tuple[dict[str, set[str]], set[str]],
    scope_pk: str | None,
) -> None:
    """Each listed object of the threads in scope that no record references (nor a loan
    of its thread to a copy outside what was read): a problem, unless an upload intent
    names it (`named`): then counted as awaiting collection."""
    live, named = referenced
    now = datetime.now(timezone.utc)
    loans_read: set[str] = set()
    for key, info in sorted(listed.items()):
        parts = store.object_owner(key)
        assert parts is not None
        thread_name, leaf = parts
        if scope_pk is not None and thread_name != scope_pk:
            continue
        if leaf not in live.get(thread_name, set()) and thread_name not in loans_read:
            # Lent to a copy outside what was read: the loans say (read once a thread).
            loans_read.add(thread_name)
            live.setdefault(thread_name, set()).update(store.lent_leaves(thread_name))
        if leaf in live.get(thread_name, set()):
            continue
        if key in named:
            report.awaiting_collection += 1
        else:
            age = int((now - info.modified).total_seconds())
            report.problem(
                "unreferenced",
                "object",
                key,
                None,
                f"{info.size} bytes, {age} s old, referenced by no item and named by no "
                "upload intent (`s3dynamo gc --full` removes it once older than the grace)",
                tid=report.thread_id,
            )


def _unbacked_loans(
    store: ThreadStore,
    report: VerifyReport,
    listed: Mapping[str, ObjectInfo],
    scope_pk: str | None,
) -> None:
    """Each loan of a thread in scope that no borrowing backs: a problem."""
    # Loans only keep objects: those of a thread with objects, that no borrowing backs
    # (written by someone else: they keep nothing, docs/SECURITY.md).
    lenders = {parts[0] for key in listed if (parts := store.object_owner(key))}
    for lender in sorted(lenders):
        if scope_pk is not None and lender != scope_pk:
            continue
        for loan in store.unbacked_loans(lender):
            report.problem(
                "unbacked loan",
                "item",
                item_label(loan.key),
                None,
                f"a loan of {len(loan.leaves)} object(s) to thread {loan.borrower!r}, which "
                "holds no borrowing of them: no copy wrote it, and no deletion or collection "
                "keeps what it names; delete the item",
                tid=report.thread_id,
            )


def _verify_thread(store: ThreadStore, thread: SealedThread, report: VerifyReport) -> None:
    """The verification fold over one thread's sealed blobs: each opened and
    authenticated (an object however many checkpoints reference it, once), a delta
    after its base; what is missing, altered or sealed under another key reported."""
    bases: dict[str, tuple[str, bytes]] = {}
    done: set[str] = set()
    for e, exc in thread.tampered:
        label = item_label(e.record.key)
        report.problem("tampered", "item", label, e, f"{type(exc).__name__}: {exc}")
    for s in thread.blobs:
        if s.kind == "reference":
            continue  # opened, and counted, when its thread's records were paired
        if s.error is not None:
            report.checked["blobs"] += 1
            detail = f"{type(s.error).__name__}: {s.error}"
            report.problem(problem_kind(s.error), s.where, s.key, s.entry, detail)
            continue
        base = s.base
        if base is not None and base.key not in done:
            done.add(base.key)
            if base.blob is None:
                _missing(report, base.key, s)
            else:
                report.attempt("object", base.key, s.entry, store.open, base, bases)
        if base is not None and base.key not in bases:
            continue  # its base did not open: reported above
        bundled = isinstance(s.slot, tuple) and s.where == "object"
        if s.where == "object" and not bundled:
            if s.key in done:
                continue
            done.add(s.key)
        if s.blob is None:
            _missing(report, s.key, s)
            continue
        report.attempt(s.where, s.key, s.entry, store.open, s, bases)


def _missing(report: VerifyReport, key: str, s: Sealed) -> None:
    report.problem(
        "missing", "object", key, s.entry, f"{s.what}: referenced, but not in the bucket"
    )
