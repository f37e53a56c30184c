"""Inspecting stored data: the threads of a deployment, a thread's history with sizes and
statistics (sizes, compression, reuse); verification is `verification.py`'s. Each returns
a report of plain values; the command line only renders it (the `--json` shapes are these
reports' `to_dict()`).

Every blob is reached through the store's one walk (`ThreadStore.walk`) and opened with the
codec: nothing here knows the record layout or decodes on its own.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    KeyNotFoundError,
    PlaintextRefusedError,
    SubjectErasedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import owner_prefix
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    ItemKey,
    Record,
    shared_leaves,
)
from langgraph.checkpoint.s3dynamo.keys.codec import unpack_channel
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.store import Entry, SealedThread, ThreadStore
from langgraph.checkpoint.s3dynamo.table import Item

Progress = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    return None


def entries_by_thread(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
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
    unopened = (KeyNotFoundError, PlaintextRefusedError)
    other_keys = [e for _, e in grouped.unopened if isinstance(e, unopened)]
    if other_keys and not grouped.entries:
        raise other_keys[0]  # not one opened: other keys than the deployment's, never empty
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
        with contextlib.suppress(IntegrityError, SubjectErasedError):  # `verify` reports it
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
    by_thread = entries_by_thread(entries)
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
