"""Verification, the fold over every sealed blob that opens each one: a thread's (the
store's enumeration, `ThreadStore.sealed`) and a Store or cache namespace's (the memory
side's, `Space.stored`), the records and items themselves, the catalog and the
tombstones (`store/audit.py`), and the bucket's objects against what references them or
names them for collection. `verify` and `verify_memory` fill one `VerifyReport` of plain
values; the command line only renders it (`--json`: its `to_dict()`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.compose import Components
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    KeyNotFoundError,
    ObjectNotFoundError,
    PlaintextRefusedError,
    S3DynamoError,
    SubjectErasedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import memory_scope
from langgraph.checkpoint.s3dynamo.format.records import (
    ItemKey,
    Record,
    referenced_leaves,
    shared_leaves,
)
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.core import Space, Stored
from langgraph.checkpoint.s3dynamo.ops.inspect import (
    Progress,
    entries_by_thread,
    item_label,
    no_progress,
    scope,
)
from langgraph.checkpoint.s3dynamo.ops.memory import spaces
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.store import (
    Audit,
    Entry,
    Grouped,
    Sealed,
    SealedThread,
    ThreadStore,
)
from langgraph.checkpoint.s3dynamo.table import Item

# ------------------------------------------------------------------ threads


def problem_kind(exc: Exception) -> str:
    if isinstance(exc, ObjectNotFoundError):
        return "missing"
    if isinstance(exc, (KeyNotFoundError, PlaintextRefusedError)):
        return "unopenable"
    if isinstance(exc, IntegrityError):
        return "tampered"
    if isinstance(exc, SubjectErasedError):
        return "erased subject"
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
    named: set[str] | None = None,
) -> VerifyReport:
    """Open and authenticate every item and object in scope (one thread, or every thread
    of the deployment; `scoped`: its records and objects, if read already, with the
    control and catalog items its Scan read in `control`; `named`: the object keys upload
    intents name, if known): what is missing, unreferenced, altered or sealed under a key
    this saver does not hold, and what the catalog and the tombstones do not agree with
    (`store/audit.py`)."""
    if scoped is None:
        control = []
        scoped = scope(store, thread_id, control)
    records, objects = scoped
    listed = {o.key: o for o in objects if store.object_owner(o.key)}
    report = VerifyReport(thread_id)
    report.checked.update(items=len(records), objects=len(listed))
    grouped = store.pair(records)
    _verify_records(report, grouped)
    by_thread = entries_by_thread(grouped.entries)
    progress(0, len(by_thread))
    live = _live_leaves(records)
    audit = store.audit(report.thread_id, records, grouped.entries, control or ())
    gone: Counter[tuple[str, str]] = Counter()  # objects an unfinished delete's records name
    for done, entries in enumerate(by_thread.values(), 1):
        _verify_thread(store, store.sealed(None, entries), report, _Deleted(audit.deleted, gone))
        progress(done, len(by_thread))
    _verify_catalog(report, audit, gone)
    scope_pk = store.name_of(thread_id) if thread_id is not None else None
    if named is None:
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


def _verify_catalog(report: VerifyReport, audit: Audit, gone: Counter[tuple[str, str]]) -> None:
    """The catalog's and the tombstones' checks (`store/audit.py`), counted and reported
    as the blobs' are; an unfinished delete says how many objects its records name are
    gone already."""
    report.checked["blobs"] += audit.entries
    report.checked["opened"] += audit.opened
    for f in audit.findings:
        kind = problem_kind(f.error) if f.error is not None else f.kind
        detail = f.detail
        if missed := sum(gone[where] for where in f.covers):
            detail += (
                f"; {missed} object(s) those records name are gone already, which no "
                "reader misses: no reader sees those records"
            )
        report.problem(kind, "item", f.key, None, detail, tid=f.tid)


class _Deleted(NamedTuple):
    """The checkpoints unfinished deletes left (`Audit.deleted`), and a count per
    namespace of the objects they name that are not in the bucket."""

    checkpoints: Mapping[tuple[str, str], set[str]]
    gone: Counter[tuple[str, str]]

    def missing(self, s: Sealed) -> bool:
        """Whether `s`, not in the bucket, is a deleted thread's (then counted here)."""
        if s.entry is None:
            return False
        where = (s.entry.record.pk, s.entry.record.ns_name)
        if s.entry.checkpoint_id not in self.checkpoints.get(where, ()):
            return False
        self.gone[where] += 1
        return True


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


def _verify_thread(
    store: ThreadStore, thread: SealedThread, report: VerifyReport, deleted: _Deleted
) -> None:
    """The verification fold over one thread's sealed blobs: each opened and
    authenticated (an object however many checkpoints reference it, once), a delta
    after its base; what is missing, altered or sealed under another key reported (an
    object of a deleted thread's records only counted: `_Deleted`)."""
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
                _missing(report, base.key, s, deleted)
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
            _missing(report, s.key, s, deleted)
            continue
        report.attempt(s.where, s.key, s.entry, store.open, s, bases)


def _missing(report: VerifyReport, key: str, s: Sealed, deleted: _Deleted) -> None:
    if deleted.missing(s):
        return
    report.problem(
        "missing", "object", key, s.entry, f"{s.what}: referenced, but not in the bucket"
    )


# ------------------------------------------------------------------ long-term memory


Counts = dict[str, int]


def verify_memory(
    parts: Components, objects: Mapping[str, int], report: VerifyReport, named: set[str]
) -> None:
    """Open and authenticate every sealed blob of the Store and the node cache: each
    directory entry, each item (its payload, whose key must hash to the item's name, and
    its stamps) and its object, and in the Store each namespace's vector manifest, log
    entries, tombstones and segments; counted per space in `report.memory`. Objects of
    theirs that nothing references, or that are referenced and gone, are problems as a
    thread's are (one an upload intent names, in `named`, is awaiting collection). One
    directory Query per space, then per namespace one consistent Query of its items and
    one of its indexes, and one wave of object GETs (uncached)."""
    listed = {k: size for k, size in objects.items() if memory_scope(k.rpartition("/")[0])}
    live: set[str] = set()
    for label, space in spaces(parts).items():
        counts = {"namespaces": 0, "items": 0, "index items": 0, "objects": 0}
        counts.update(blobs=0, opened=0)
        report.memory[label] = counts
        entries = space.entries()
        counts["namespaces"] = len(entries)
        for entry in entries:
            where, key = f"{label} directory", item_label(entry.key)
            namespace = _opened(counts, report, where, key, space.namespace_of, entry)
            if namespace is not None:
                stored = space.stored((namespace, None), format.INDEXES, listed)
                _verify_namespace(space, label, stored, (listed, live), counts, report)
    for key, size in sorted(listed.items()):
        if key in live:
            continue
        if key in named:
            report.awaiting_collection += 1
        else:
            report.problem(
                "unreferenced",
                "object",
                key,
                None,
                f"{size} bytes, referenced by no Store item, cache entry or vector "
                "manifest, named by no upload intent (`saver.ops.memory.collect_garbage("
                "grace)` removes it once older than the grace)",
            )


def _verify_namespace(
    space: Space,
    label: str,
    stored: Stored,
    objects: tuple[dict[str, int], set[str]],
    counts: Counts,
    report: VerifyReport,
) -> None:
    """The verification fold over one namespace's sealed blobs: each opened as a read
    opens it (an item's stamps with its payload, counted apart); an object referenced
    and not in the bucket reported (its item left unopened)."""
    listed, live = objects
    what = f"{label} namespace {stored.namespace!r}"
    counts["items"] += len(stored.rows)
    counts["index items"] += len(stored.index)
    counts["objects"] += len(stored.objects)
    blobs = space.sealed(stored)
    needed = sorted({s.at for s in blobs if isinstance(s.at, str)})
    live.update(needed)
    for key in (k for k in needed if k not in listed):
        report.problem("missing", "object", key, None, f"{what}: referenced, but not in the bucket")
    opened: dict[ItemKey, bool] = {}
    for s in blobs:
        if s.blob is None:
            continue  # its object, missing, is a problem already
        if s.kind == "stamp" and s.row is not None:
            # Opened with its item's payload, as a read opens it.
            if s.row.key in opened:
                counts["blobs"] += 1
                counts["opened"] += opened[s.row.key]
            continue
        if s.kind == "item" and s.row is not None:
            where, key = f"{label} item", item_label(s.row.key)
        elif isinstance(s.at, ItemKey):
            where, key = f"{label} vector index", item_label(s.at)
        else:
            where, key = "object", s.at
        ok = _opened(counts, report, where, key, space.open, stored.namespace, s)
        if s.kind == "item" and s.row is not None:
            opened[s.row.key] = ok is not None


def _opened(counts: Counts, report: VerifyReport, where: str, key: str, fn: Any, *args: Any) -> Any:
    """fn(*args), counted as a sealed blob; None (and a problem recorded at `key`) if it
    raises."""
    counts["blobs"] += 1
    try:
        result = fn(*args)
    except S3DynamoError as exc:
        report.problem(problem_kind(exc), where, key, None, f"{type(exc).__name__}: {exc}")
        return None
    counts["opened"] += 1
    return result if result is not None else True
