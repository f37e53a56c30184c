"""Finding a thread's records and grouping them into checkpoints (`Entry`): a checkpoint
record with its writes records, and the thread and namespace its sealed reference names.

"Latest" is one descending query over the namespace with a small limit (the newest
checkpoint record comes right after its own writes records), strongly consistent, so a
run continues what the last commit left even when another process made it a moment ago;
"by id" is one query over the checkpoint's sort-key prefix. Nothing here opens a value.

Marks. An operation that changes a thread in many requests (delete, copy or import at
the target, prune) first writes a mark over each namespace it changes, saying which
checkpoints it hides (`records.Mark`), and removes it last. A mark sorts above every
record of its namespace, so the reads that go newest first from the top of a namespace
(latest, a namespace listing, a history read) meet it in their first page, and a thread
listing reads the whole partition anyway: each applies it and shows the hidden
checkpoints nowhere, at no request more. Reads by checkpoint id, and listings with
`before`, start below the mark and do not see it. Why this is safe:
docs/RELIABILITY.md, "Deleting, copying, pruning".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Emit,
    GetMany,
    Query,
    Steps,
    every_item,
    keys_of,
    mapped,
)
from langgraph.checkpoint.s3dynamo.config.runnable_config import describe
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    KeyNotFoundError,
    PlaintextRefusedError,
    SubjectErasedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    HEAD_PREFIX,
    checkpoint_sk,
    control_pk,
    head_namespace,
    is_mark_key,
    is_writes_key,
    mark_operation,
    namespace_prefix,
    namespace_range,
    object_key,
    owner_sk,
    parse_sk,
    split_shared,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    HEAD,
    CheckpointRecord,
    ItemKey,
    Mark,
    Record,
    Stamp,
    Veil,
    WritesRecord,
    is_mark,
    mark_from,
    named_leaves,
    record_from,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.keys.codec import Codec
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.scope import Scope
from langgraph.checkpoint.s3dynamo.table import Between, Item, begins, key_of

log = logging.getLogger(__name__)

# First page of a "latest" query: the newest checkpoint record plus a few writes records.
LATEST_PAGE = 8
LATER_PAGES = 100


@dataclass
class Entry:
    """One checkpoint as read from the index, before its values are fetched."""

    tid: str
    ns: str
    record: CheckpointRecord
    writes: list[WritesRecord]
    # Opened on demand and kept, so filtering and decoding open it once.
    metadata: Any = None

    @property
    def checkpoint_id(self) -> str:
        return self.record.checkpoint_id

    @property
    def what(self) -> str:
        return describe(self.tid, self.ns, self.checkpoint_id)


@dataclass(frozen=True)
class Skipped:
    """A thread a table-wide operation could not open, named as stored (its partition
    key) with the key id its records are sealed under, never by thread id, and why, as
    `verify` tells it (`kind`): "other keys" (sealed under a key not given here),
    "erased subject" (its data subject's key destroyed: a backup restored after the
    erasure, or an erasure under way) or "tampered" (altered, moved, or named under
    another naming secret)."""

    partition: str
    key_id: str | None
    reason: str
    kind: str = "tampered"

    @classmethod
    def of(cls, partition: str, key_id: str | None, error: Exception) -> Skipped:
        if isinstance(error, SubjectErasedError):
            return cls(partition, key_id, str(error), "erased subject")
        unopened = isinstance(error, (KeyNotFoundError, PlaintextRefusedError))
        return cls(partition, key_id, str(error), "other keys" if unopened else "tampered")


@dataclass
class Grouped:
    """Records paired up: checkpoints with their writes (`entries`), checkpoint records
    whose reference did not open (`unopened`, with the error), and writes records whose
    checkpoint record is gone (`orphan_writes`, left by an interrupted delete)."""

    entries: list[Entry]
    unopened: list[tuple[CheckpointRecord, IntegrityError | SubjectErasedError]]
    orphan_writes: list[WritesRecord]


def leftover_writes(stamped: Iterable[Record | Stamp | Mark], before_s: int) -> list[ItemKey]:
    """Of these records (a thread's with its marks, or every thread's keys and write
    times), the writes records written before `before_s` (or unstamped: by an older
    release) whose checkpoint record is not among them, outside any namespace under a
    copy's mark (an unfinished copy or import writes its records in any order; a
    removal's marks only hide what goes, and one whose process died may stay: a
    `delete_for_runs` no repeat finds once its checkpoint records went): LangGraph's
    writes for a checkpoint whose put never committed, or a removal's. No reader sees
    them (`pair` pairs writes with their checkpoint only); garbage collection deletes
    them (docs/RELIABILITY.md, "Garbage collection: leftover writes records")."""
    records: set[ItemKey] = set()
    marked: set[tuple[str, str]] = set()
    writes: dict[ItemKey, ItemKey] = {}
    for record in stamped:
        key = record.key
        if is_mark_key(key.sk):
            if mark_operation(key.sk) == "copy":
                marked.add((key.pk, parse_sk(key.sk)[0]))
            continue
        records.add(key)
        written_at = getattr(record, "written_at", None)
        if is_writes_key(key.sk) and (written_at is None or written_at < before_s):
            writes[key] = ItemKey(key.pk, owner_sk(key.sk))
    return [
        key
        for key, owner in writes.items()
        if owner not in records and (key.pk, parse_sk(key.sk)[0]) not in marked
    ]


def warn_skipped(operation: str, skipped: Sequence[Skipped]) -> None:
    """One warning per skipped thread, then a summary (logger `langgraph.checkpoint.s3dynamo`)."""
    for s in skipped:
        log.warning(
            "%s: skipped thread %s (key id %s), %s: %s",
            operation,
            s.partition,
            s.key_id,
            s.kind,
            s.reason,
        )
    if skipped:
        ids = sorted({str(s.key_id) for s in skipped})
        kinds = sorted({s.kind for s in skipped})
        log.warning(
            "%s: skipped %d thread(s) that do not open (%s; key ids %s); the rest was done",
            operation,
            len(skipped),
            " or ".join(kinds),
            ", ".join(ids),
        )


def newest_first(entries: list[Entry], before_id: str | None) -> list[Entry]:
    if before_id is not None:
        entries = [e for e in entries if e.checkpoint_id < before_id]
    return sorted(entries, key=lambda e: e.checkpoint_id, reverse=True)


class Page(NamedTuple):
    """One page of a partition's records, and the marks among its items."""

    records: list[Record]
    cursor: Item | None
    marks: tuple[Mark, ...] = ()


class Finder:
    """Reads records and groups them into entries. Every read is a protocol (`Steps`):
    the thread store runs it on the engine, or another protocol reads with it
    (`yield from`); grouping and opening references are plain functions."""

    def __init__(self, namer: Namer, codec: Codec, sealer: Sealer, scope: Scope) -> None:
        self.namer = namer
        self.codec = codec
        self.sealer = sealer
        self.scope = scope

    def read_checkpoint(self, tid: str, ns: str, cid: str) -> Steps[Entry | None]:
        """One checkpoint by id, with its writes: one query."""
        pk = self.namer.thread(tid)
        sk = checkpoint_sk(self.namer.namespace(tid, ns), cid)
        found: CheckpointRecord | None = None
        writes: list[WritesRecord] = []
        records, _ = yield from self.items(pk, prefix=sk)
        for rec in records:
            # The prefix also matches longer ids that start with this one.
            if owner_sk(rec.sk) != sk:
                continue
            if isinstance(rec, WritesRecord):
                writes.append(rec)
            else:
                found = rec
        return Entry(tid, ns, found, writes) if found else None

    def read_latest(self, tid: str, ns: str) -> Steps[Entry | None]:
        """The newest checkpoint of a namespace that no mark hides, with its writes: one
        query, more only when writes records (or, while an operation runs, hidden
        records) fill the first page."""
        pk = self.namer.thread(tid)
        prefix = namespace_prefix(self.namer.namespace(tid, ns))
        writes: list[WritesRecord] = []
        cursor: Item | None = None
        limit = LATEST_PAGE
        veil = Veil()
        while True:
            page = yield from self.page(
                pk, prefix=prefix, descending=True, limit=limit, cursor=cursor, consistent=True
            )
            veil.add(page.marks)  # they sort first: in the first page
            for rec in page.records:
                if veil and veil.hides(rec.sk):
                    if veil.hides_below(rec.sk):
                        return None  # everything older is hidden too
                    continue
                if isinstance(rec, WritesRecord):
                    writes.append(rec)
                    continue
                # Descending order meets a checkpoint's writes just before the checkpoint.
                own = [w for w in writes if w.checkpoint_id == rec.checkpoint_id]
                return Entry(tid, ns, rec, own)
            if page.cursor is None:
                return None
            cursor, limit = page.cursor, LATER_PAGES

    def namespace_records(self, tid: str, ns: str, *, upper_id: str | None = None) -> Steps[None]:
        """A namespace's records newest first, from checkpoint `upper_id` (inclusive)
        down, handed out (`Emit`) page by page as the caller consumes them."""
        pk, ns_name = self.namer.thread(tid), self.namer.namespace(tid, ns)
        yield from self._unveiled(pk, between=namespace_range(ns_name, upper_id), descending=True)

    def namespace_entries(self, tid: str, ns: str, before_id: str | None) -> Steps[None]:
        """A namespace's checkpoints newest first, strictly before `before_id` if given,
        handed out (`Emit`) as the caller consumes them."""
        yield from self.named_entries(tid, self.namer.namespace(tid, ns), before_id, ns)

    def named_entries(
        self,
        tid: str,
        ns_name: str,
        before_id: str | None = None,
        ns: str | None = None,
        page: int | None = None,
    ) -> Steps[None]:
        """`namespace_entries` of the namespace named `ns_name` as stored (its clear name
        `ns`, where not given, opened from each record's reference), `page` items a
        Query if given."""
        pk = self.namer.thread(tid)
        bounds: dict[str, Any] = (
            {"between": (namespace_prefix(ns_name), checkpoint_sk(ns_name, before_id))}
            if before_id
            else {"prefix": namespace_prefix(ns_name)}
        )
        writes: dict[str, list[WritesRecord]] = {}

        def entries(rec: Record) -> tuple[Entry, ...]:
            if isinstance(rec, WritesRecord):
                writes.setdefault(rec.checkpoint_id, []).append(rec)
                return ()
            if before_id is not None and rec.checkpoint_id >= before_id:
                return ()
            own = writes.pop(rec.checkpoint_id, [])
            if ns is not None:
                return (Entry(tid, ns, rec, own),)
            return (self.group([rec, *own], known_tid=tid)[0],)

        yield from mapped(self._unveiled(pk, descending=True, limit=page, **bounds), entries)

    def items(
        self,
        thread_name: str,
        *,
        consistent: bool = False,
        prefix: str | None = None,
        slim: bool = False,
    ) -> Steps[tuple[list[Record], list[Mark]]]:
        """Every record and every mark of a thread named as stored (under a sort-key
        prefix, if given); `slim`, the records without the bytes of their inline values
        and writes (names and references kept), so that what a prune holds of a long
        thread is a page and the rest of each record."""
        records: list[Record] = []
        marks: list[Mark] = []
        cursor: Item | None = None
        while True:
            page = yield from self.page(
                thread_name, prefix=prefix, cursor=cursor, consistent=consistent
            )
            records += map(_slim, page.records) if slim else page.records
            marks += page.marks
            if page.cursor is None:
                return records, marks
            cursor = page.cursor

    def thread_entries(self, tid: str, before_id: str | None = None) -> Steps[list[Entry]]:
        """Every checkpoint of a thread no mark hides, every namespace, newest first."""
        records, marks = yield from self.items(self.namer.thread(tid))
        veil = Veil(marks)
        shown = [r for r in records if not veil.hides(r.sk)] if veil else records
        return newest_first(self.group(shown, known_tid=tid), before_id)

    def all_entries(
        self, before_id: str | None = None, skipped: list[Skipped] | None = None
    ) -> Steps[list[Entry]]:
        """Every checkpoint of every thread, newest first (a scan: admin operations).
        With `skipped`, threads whose records do not open are left out and listed there."""
        records = yield from self.scope.records()
        return newest_first(self.group(records, skipped=skipped), before_id)

    def group(
        self,
        records: Iterable[Record],
        known_tid: str | None = None,
        skipped: list[Skipped] | None = None,
    ) -> list[Entry]:
        """Pair checkpoint records with their writes records; learn (thread, ns) from the
        sealed reference each checkpoint record carries. With `skipped`, a partition with
        a reference that does not open (other keys, another naming secret) is left out
        whole and reported there instead of raising."""
        grouped = self.pair(records)
        if grouped.unopened and skipped is None:
            raise grouped.unopened[0][1]
        bad = {rec.pk for rec, _ in grouped.unopened}
        for rec, exc in grouped.unopened:
            if skipped is not None and not any(s.partition == rec.pk for s in skipped):
                skipped.append(Skipped.of(rec.pk, self.sealer.key_id_of(rec.thread_ref), exc))
        entries = [e for e in grouped.entries if e.record.pk not in bad]
        if known_tid is not None:
            for e in entries:
                if e.tid != known_tid:
                    raise IntegrityError(
                        f"checkpoint {e.checkpoint_id} in the partition of thread "
                        f"{known_tid!r} claims thread {e.tid!r}: the record was moved"
                    )
        return entries

    def pair(self, records: Iterable[Record]) -> Grouped:
        """Every record accounted for: entries, unopened checkpoint records and orphan
        writes (see `Grouped`). Opens one reference per checkpoint record."""
        checkpoints: dict[ItemKey, CheckpointRecord] = {}
        writes: dict[ItemKey, list[WritesRecord]] = {}
        for rec in records:
            if isinstance(rec, WritesRecord):
                writes.setdefault(ItemKey(rec.pk, rec.owner_sk), []).append(rec)
            else:
                checkpoints[rec.key] = rec
        out = Grouped([], [], [])
        for key, rec in checkpoints.items():
            try:
                tid, ns = self.open_thread_ref(rec)
            except (IntegrityError, SubjectErasedError) as exc:
                out.unopened.append((rec, exc))
                continue
            out.entries.append(Entry(tid, ns, rec, writes.pop(key, [])))
        out.orphan_writes = [w for ws in writes.values() for w in ws]
        return out

    def open_thread_ref(self, rec: CheckpointRecord) -> tuple[str, str]:
        """(thread id, namespace) a checkpoint record belongs to, checked against its key."""
        what = f"checkpoint {rec.checkpoint_id} (thread reference)"
        tid, ns = self.codec.open_ref(rec.pk, rec.sk, rec.thread_ref, what)
        if self.namer.thread(tid) != rec.pk or self.namer.namespace(tid, ns) != rec.ns_name:
            raise IntegrityError(
                f"{what}: names thread {tid!r}, whose records this saver would store under "
                "another key: the saver's naming secret differs from the writer's (set the "
                "same secret / S3DYNAMO_SECRET), or the record was moved"
            )
        return tid, ns

    def page(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        between: tuple[str, str] | None = None,
        descending: bool = False,
        limit: int | None = None,
        cursor: Item | None = None,
        consistent: bool = False,
    ) -> Steps[Page]:
        """One page of a partition's records whose sort key starts with `prefix` or lies
        in `between`, in sort-key order, and the marks among them (one Query)."""
        where = begins(SORT_KEY, prefix) if prefix is not None else None
        if between is not None:
            where = Between(SORT_KEY, *between)
        found = yield Query(
            pk,
            where=where,
            descending=descending,
            limit=limit,
            cursor=cursor,
            consistent=consistent,
        )
        marks = tuple(mark_from(i) for i in found.items if is_mark(i))
        return Page([record_from(i) for i in found.items if not is_mark(i)], found.cursor, marks)

    def keys(
        self, pk: str, *, prefix: str | None = None, consistent: bool = False
    ) -> Steps[list[ItemKey]]:
        """Keys of every item of a partition (optionally under a sort-key prefix)."""
        where = begins(SORT_KEY, prefix) if prefix is not None else None
        return (yield from keys_of(pk, where=where, consistent=consistent))

    def thread_heads(self, thread_name: str) -> Steps[dict[str, str]]:
        """What each namespace head of a thread names (a checkpoint id or a tombstone),
        by namespace name, read strongly consistent."""
        where = begins(SORT_KEY, HEAD_PREFIX)
        items = yield from every_item(control_pk(thread_name), where=where, consistent=True)
        return {head_namespace(key_of(i).sk) or "": str(i.get(HEAD, "")) for i in items}

    def has_records(self, thread_name: str) -> Steps[bool]:
        """Whether a thread named as stored holds any record or mark (one strongly
        consistent Query of one item)."""
        page = yield Query(thread_name, limit=1, consistent=True)
        return bool(page.items)

    def heads(self, keys: Sequence[ItemKey]) -> Steps[dict[ItemKey, str]]:
        """What these heads name (a checkpoint id, or a tombstone), those that exist: one
        BatchGetItem per 100, eventually consistent (a listing's order)."""
        found = yield GetMany(keys)
        return {key_of(i): str(i[HEAD]) for i in found if HEAD in i}

    def _unveiled(self, pk: str, **bounds: Any) -> Steps[None]:
        """A namespace's records, newest first, that no mark met on the way hides (a
        range that reaches the namespace's top meets its marks first), handed out."""
        veil = Veil()
        cursor: Item | None = None
        while True:
            page = yield from self.page(pk, cursor=cursor, **bounds)
            veil.add(page.marks)
            for rec in page.records:
                if not veil:
                    yield Emit(rec)
                elif veil.hides(rec.sk):
                    if veil.hides_below(rec.sk):
                        return
                else:
                    yield Emit(rec)
            if page.cursor is None:
                return
            cursor = page.cursor

    def referenced_keys(self, entries: Sequence[Entry]) -> dict[str, str]:
        """Object key -> the checkpoint that references it, for every object the entries
        reference (no blob is opened)."""
        keys: dict[str, str] = {}
        for e in entries:
            records: list[Record] = [e.record, *e.writes]
            for rec in records:
                for leaf in named_leaves(rec):
                    keys[leaf if split_shared(leaf) else object_key(rec.pk, leaf)] = e.what
        return keys


def _slim(record: Record) -> Record:
    """The record without the bytes of its inline values and writes."""
    if isinstance(record, CheckpointRecord):
        return replace(record, inline=dict.fromkeys(record.inline, b""))
    writes = {i: w if isinstance(w, str) else b"" for i, w in record.writes.items()}
    return replace(record, writes=writes)
