"""Every sealed blob of a thread, listed once: verification, statistics and re-sealing
fold over this list, so a sealed kind added here is verified, counted and re-sealed by
construction.

A thread's sealed blobs (`Sealed`): each checkpoint record's thread reference, body and
metadata; each writes record's task reference; every channel value (inline, an object,
or an inline delta opened against its base object); every pending write (inline, an
object, or one of a task's bundle object); and each of the thread's catalog entries.
Each comes with where it lives (a field of an item, or an object), the identity its
sealing is bound to, and, for a delta, the base it opens against. What says where the
others are (a checkpoint's body, a task's reference) is opened while listing; one that
does not open is listed with its error, and what it would have named is not listed.

Objects are read in one wave per thread (`cached=False`: what is stored, not what this
process kept); one missing from the bucket is listed without its bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import GetMany, Steps, keys_of, present
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, ObjectNotFoundError
from langgraph.checkpoint.s3dynamo.format.catalog_records import (
    CatalogEntry,
    entry_from,
    entry_of_ref,
)
from langgraph.checkpoint.s3dynamo.format.layout import CATALOG_REF, control_pk
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    ItemKey,
    Record,
    WritesRecord,
    pack_bundle,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.keys.codec import (
    body_id,
    catalog_id,
    delta_id,
    metadata_id,
    ref_id,
    value_id,
    write_id,
)
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt, WriteAt
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder
from langgraph.checkpoint.s3dynamo.store.walker import Walker
from langgraph.checkpoint.s3dynamo.table import begins

Typed = tuple[str, bytes]


def item_label(key: ItemKey) -> str:
    return f"{key.pk} {key.sk}"


@dataclass
class Sealed:
    """One sealed blob (module docstring). `kind`: "reference", "body", "metadata",
    "task", "value", "write" or "catalog entry"; `where`: "item" or "object", `key`
    the item's label or the object's key; `blob` None for an object not in the bucket.
    `slot` says where in its record (`record`) or bundle object it sits, for putting a
    re-sealed copy back; `error`, a blob that did not open while listing."""

    kind: str
    where: str
    key: str
    entry: Entry | None
    blob: bytes | None
    ident: bytes
    record: Record | CatalogEntry | None = None
    slot: Any = None
    base: Sealed | None = None
    channel: str | None = None
    version: str | None = None
    owner: str | None = None
    error: Exception | None = None

    @property
    def what(self) -> str:
        return self.entry.what if self.entry else self.key


@dataclass
class SealedThread:
    """A thread's sealed blobs, and what listing them found wrong beyond a blob."""

    blobs: list[Sealed] = field(default_factory=list)
    # Checkpoints whose listing stopped at their structure: (entry, the error).
    tampered: list[tuple[Entry, Exception]] = field(default_factory=list)


def missing(s: Sealed) -> ObjectNotFoundError:
    """What a blob whose object is not in the bucket is."""
    error = ObjectNotFoundError(s.key, "the object store")
    error.referenced_by(s.what)
    return error


def open_sealed(sealer: Sealer, s: Sealed, bases: dict[str, Typed]) -> Typed:
    """Open (authenticate, decompress) one sealed blob; a delta against its base, opened
    first and kept in `bases` by key."""
    if s.blob is None:
        raise missing(s)
    dictionary = None
    if s.base is not None:
        base = bases.get(s.base.key)
        if base is None:
            base = bases[s.base.key] = open_sealed(sealer, s.base, bases)
        dictionary = base[1]
    return sealer.open(s.blob, s.ident, f"{s.what}, {s.kind}", dictionary=dictionary)


def resealed(sealer: Sealer, s: Sealed, bases: dict[str, Typed]) -> bytes:
    """The blob sealed again under the active key, bound to the same identity."""
    typ, data = open_sealed(sealer, s, bases)
    dictionary = bases[s.base.key][1] if s.base is not None else None
    compress = s.blob is not None and sealer.compressed(s.blob)
    return sealer.seal(typ, data, s.ident, dictionary=dictionary, compress=compress)


class Lister:
    """Lists a thread's sealed blobs (module docstring)."""

    def __init__(self, finder: Finder, walker: Walker) -> None:
        self.finder = finder
        self.walker = walker

    def thread(self, entries: Sequence[Entry], tid: str | None) -> Steps[SealedThread]:
        """The sealed blobs of these checkpoints of one thread, and, with `tid`, of its
        catalog entries."""
        fetched = yield from present(self.finder.referenced_keys(entries))
        out = SealedThread()
        for e in entries:
            self._entry(e, fetched, out)
        if tid is not None:
            out.blobs += yield from self._catalog(tid)
        return out

    def _entry(self, e: Entry, fetched: Mapping[str, bytes], out: SealedThread) -> None:
        rec, at = e.record, CheckpointAt(e.tid, e.ns, e.checkpoint_id)
        label = item_label(rec.key)

        def item(kind: str, blob: bytes, ident: bytes, slot: Any, record: Record = rec) -> Sealed:
            return Sealed(kind, "item", label, e, blob, ident, record, slot)

        out.blobs.append(item("reference", rec.thread_ref, ref_id(rec.pk, rec.sk), "thread_ref"))
        body_blob = item("body", rec.body, body_id(at), "body")
        out.blobs += [body_blob, item("metadata", rec.metadata, metadata_id(at), "metadata")]
        try:
            body = self.walker.open_body(e)
        except Exception as exc:
            body_blob.error = exc
            return
        tasks: dict[str, tuple[str, str]] = {}
        for w in e.writes:
            task = Sealed(
                "task", "item", item_label(w.key), e, w.task_ref, ref_id(w.pk, w.sk), w, "task_ref"
            )
            out.blobs.append(task)
            try:
                tasks[w.sk] = self.walker.open_task(w, e.what)
            except Exception as exc:
                task.error = exc
        opened = Entry(e.tid, e.ns, rec, [w for w in e.writes if w.sk in tasks], e.metadata)
        try:
            blobs = self.walker.walk(opened, body, tasks)
            if blobs.lost:
                raise IntegrityError(
                    f"{len(blobs.lost)} stored channel value(s) missing from the item: it "
                    "was altered"
                )
        except IntegrityError as exc:
            out.tampered.append((e, exc))
            return
        out.blobs += self._values(e, blobs.values, fetched, label)
        out.blobs += self._writes(e, blobs, fetched)

    def _values(
        self, e: Entry, values: Any, fetched: Mapping[str, bytes], label: str
    ) -> Iterator[Sealed]:
        namer = self.walker.namer
        for v in values:
            at = ValueAt(v.owner or e.tid, e.ns, v.channel, v.version)
            tag = namer.channel(e.tid, e.ns, v.channel)
            if v.blob is None:
                key = v.key or ""
                yield Sealed(
                    "value",
                    "object",
                    key,
                    e,
                    fetched.get(key),
                    value_id(at),
                    None,
                    key,
                    channel=v.channel,
                    version=v.version,
                    owner=v.owner,
                )
                continue
            base = None
            ident = value_id(at)
            if v.base is not None:
                base_version, base_key = v.base
                base = Sealed(
                    "value",
                    "object",
                    base_key,
                    e,
                    fetched.get(base_key),
                    value_id(at._replace(version=base_version)),
                    None,
                    base_key,
                    channel=v.channel,
                    version=base_version,
                    owner=v.owner,
                )
                ident = delta_id(at, base_version)
            yield Sealed(
                "value",
                "item",
                label,
                e,
                v.blob,
                ident,
                e.record,
                ("inline", tag),
                base,
                v.channel,
                v.version,
                v.owner,
            )

    def _writes(self, e: Entry, blobs: Any, fetched: Mapping[str, bytes]) -> Iterator[Sealed]:
        for w in blobs.writes:
            ident = write_id(WriteAt(w.owner or e.tid, e.ns, e.checkpoint_id, w.task_id, w.idx))
            if w.blob is not None:
                yield Sealed(
                    "write",
                    "item",
                    item_label(w.record.key),
                    e,
                    w.blob,
                    ident,
                    w.record,
                    ("writes", w.idx),
                    owner=w.owner,
                )
            else:
                key = w.key or ""
                yield Sealed(
                    "write", "object", key, e, fetched.get(key), ident, None, key, owner=w.owner
                )
        for b in blobs.bundles:
            if b.key not in fetched:
                yield Sealed("write", "object", b.key, e, None, b"", None, b.key, owner=b.owner)
                continue
            owner_at = CheckpointAt(b.owner or e.tid, e.ns, e.checkpoint_id)
            try:
                parts = self.walker.bundle_blobs(e, b.key, fetched)
            except IntegrityError as exc:
                yield Sealed(
                    "write",
                    "object",
                    b.key,
                    e,
                    fetched[b.key],
                    b"",
                    None,
                    b.key,
                    owner=b.owner,
                    error=exc,
                )
                continue
            for idx, blob in parts.items():
                ident = write_id(owner_at.write(b.task_id, idx))
                yield Sealed(
                    "write", "object", b.key, e, blob, ident, None, (b.key, idx), owner=b.owner
                )

    def _catalog(self, tid: str) -> Steps[list[Sealed]]:
        """The thread's catalog entries, found through their back-references (one Query
        of its control partition, one BatchGetItem)."""
        name = self.walker.namer.thread(tid)
        refs = yield from keys_of(
            control_pk(name), where=begins(SORT_KEY, CATALOG_REF), consistent=True
        )
        keys = [k for r in refs if (k := entry_of_ref(r)) is not None]
        found = [entry_from(i) for i in (yield GetMany(keys, consistent=True))] if keys else []
        return [
            Sealed(
                "catalog entry",
                "item",
                item_label(c.key),
                None,
                c.sealed,
                catalog_id(c.key.pk, c.key.sk),
                c,
                "sealed",
            )
            for c in found
        ]


def reseal(
    sealer: Sealer, thread: SealedThread, stale: Any
) -> tuple[list[tuple[Record, Record]], list[tuple[str, bytes]], list[CatalogEntry], int]:
    """The re-sealing fold: every blob `stale` says needs it sealed again (bound to the
    same identity), put back where it was: (records as read and as rewritten, objects
    to overwrite, catalog entries to replace, how many blobs)."""
    bases: dict[str, Typed] = {}
    records: dict[tuple[str, str], Record] = {}
    originals: dict[tuple[str, str], Record] = {}
    objects: dict[str, bytes] = {}
    bundles: dict[str, dict[int, bytes]] = {}
    entries: list[CatalogEntry] = []
    count = 0
    done: set[str] = set()  # an object many checkpoints reference is sealed again once
    for s in thread.blobs:
        if s.error is not None:
            raise s.error
        if s.blob is None:
            raise missing(s)
        bundled = s.where == "object" and isinstance(s.slot, tuple)
        if bundled:
            bundles.setdefault(s.slot[0], {})[s.slot[1]] = s.blob or b""
        if s.base is not None and s.base.key not in done:
            done.add(s.base.key)
            if stale(s.base):
                objects[s.base.key] = resealed(sealer, s.base, bases)
                count += 1
        if s.where == "object" and not bundled:
            if s.key in done:
                continue
            done.add(s.key)
        if not stale(s):
            continue
        fresh = resealed(sealer, s, bases)
        count += 1
        if isinstance(s.record, CatalogEntry):
            entries.append(CatalogEntry(s.record.key, fresh))
        elif bundled:
            bundles[s.slot[0]][s.slot[1]] = fresh
            objects[s.slot[0]] = b""  # packed below
        elif s.where == "object":
            objects[s.key] = fresh
        else:
            assert s.record is not None
            key = (s.record.pk, s.record.sk)
            originals.setdefault(key, s.record)
            records[key] = _put_back(records.get(key, s.record), s.slot, fresh)
    for object_key, body in list(objects.items()):
        if not body:
            objects[object_key] = pack_bundle(bundles[object_key])
    pairs = [(originals[k], records[k]) for k in sorted(records)]
    return pairs, sorted(objects.items()), entries, count


def _put_back(record: Record, slot: Any, blob: bytes) -> Record:
    """A copy of the record with `blob` in `slot`: a field, or an inline value or write."""
    if isinstance(slot, str):
        return replace(record, **{slot: blob})  # type: ignore[arg-type]
    where, at = slot
    if where == "inline" and isinstance(record, CheckpointRecord):
        return replace(record, inline={**record.inline, at: blob})
    assert isinstance(record, WritesRecord)
    return replace(record, writes={**record.writes, at: blob})
