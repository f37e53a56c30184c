"""Every sealed blob of a memory namespace, listed once (`sealed`): verification,
statistics and re-sealing (`ops/memory.py`, `resealed`) fold over this list, so a sealed
kind added here is verified, counted and re-sealed by construction.

A namespace's sealed blobs (`Sealed`): its directory entry's namespace; each item's
payload (inline, or its object) and its creation and refresh stamps; and in the Store its
vector index: the manifest, log entries, tombstones and the segments the manifest names.
Each comes with where it lives (an item's attribute, or an object), what its sealing is
bound to, and what it is, as errors name it. An object not read (missing from the bucket)
is listed without its bytes.

What verification and re-sealing read of a namespace is read consistently (a rotation
must see what is stored), objects from the bucket, not a cache (`read`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from langgraph.checkpoint.s3dynamo.blobs import WritePlan
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import Fetch, Steps, present
from langgraph.checkpoint.s3dynamo.format.layout import MANIFEST_SK, object_key
from langgraph.checkpoint.s3dynamo.memory import format, reads
from langgraph.checkpoint.s3dynamo.memory.names import Names
from langgraph.checkpoint.s3dynamo.memory.rows import (
    ENTRY_NS,
    INDEX_BLOB,
    ROW_BLOB,
    ROW_CREATED_SEAL,
    ROW_REFRESH_SEAL,
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    Namespace,
)
from langgraph.checkpoint.s3dynamo.table import ItemKey, Write


@dataclass(frozen=True)
class Stored:
    """What was read of one namespace of `space` (partition `pk`): its directory entry,
    its items, its search indexes (`index`), and the bodies of objects (items' large
    values, segments) by object key."""

    space: str
    namespace: Namespace
    pk: str
    entry: DirectoryEntry | None = None
    rows: Sequence[MemoryRow] = ()
    index: Sequence[IndexItem] = ()
    objects: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Sealed:
    """One sealed blob (module docstring). `kind`: "entry", "item" (a payload), "stamp",
    "tombstone", "manifest", "log" or "segment"; `at` the item's key, or the object's;
    `attribute` the item's attribute holding it (None: an object); `blob` None for an
    object not read; `row` the item a payload or stamp is of."""

    kind: str
    at: ItemKey | str
    attribute: str | None
    blob: bytes | None
    aad: bytes
    what: str
    row: MemoryRow | None = None


def sealed(stored: Stored) -> Iterator[Sealed]:
    """Each sealed blob of `stored`, and what it is bound to (module docstring)."""
    space, ns, pk = stored.space, stored.namespace, stored.pk
    if (entry := stored.entry) is not None:
        aad, what = format.entry_aad(space, entry.key.sk), f"directory entry of {ns!r}"
        yield Sealed("entry", entry.key, ENTRY_NS, entry.blob, aad, what)
    for row in stored.rows:
        aad = format.item_aad(space, ns, row.key.sk)
        if row.blob is not None:
            yield Sealed(
                "item", row.key, ROW_BLOB, row.blob, aad, f"item {row.key.sk!r} of {ns!r}", row
            )
        elif row.leaf:
            key = object_key(pk, row.leaf)
            yield Sealed("item", key, None, stored.objects.get(key), aad, f"item of {ns!r}", row)
        for attribute, blob, what in (
            (ROW_CREATED_SEAL, row.created_seal, "created"),
            (ROW_REFRESH_SEAL, row.refresh_seal, "refreshed"),
        ):
            if blob is not None:
                label = f"{what} stamp of {row.key.sk!r} in {ns!r}"
                aad = format.stamp_aad(space, ns, row.key.sk, what)
                yield Sealed("stamp", row.key, attribute, blob, aad, label, row)
    for item in stored.index:
        yield from _index_item(stored, item)


def _index_item(stored: Stored, item: IndexItem) -> Iterator[Sealed]:
    space, ns = stored.space, stored.namespace
    if item.blob is not None and format.tombstone_of(item) is not None:
        label = f"vector log tombstone {item.key.sk!r} of namespace {ns!r}"
        aad = format.tombstone_aad(space, *item.key)
        yield Sealed("tombstone", item.key, INDEX_BLOB, item.blob, aad, label)
    elif item.blob is not None:
        kind = "manifest" if item.key.sk == MANIFEST_SK else "log"
        label = f"vector {kind} {item.key.sk!r} of namespace {ns!r}"
        aad = format.vector_aad(space, ns, kind, item.key.sk)
        yield Sealed(kind, item.key, INDEX_BLOB, item.blob, aad, label)
    for leaf in sorted(item.leaves):
        key = object_key(stored.pk, leaf)
        label = f"vector segment {leaf!r} of namespace {ns!r}"
        aad = format.vector_aad(space, ns, "segment", leaf)
        yield Sealed("segment", key, None, stored.objects.get(key), aad, label)


def objects_of(stored: Stored) -> dict[str, str]:
    """The objects `stored` references (its items' large values, its segments), each
    with what it is."""
    return {s.at: s.what for s in sealed(stored) if isinstance(s.at, str)}


def read(
    names: Names,
    found: tuple[Namespace, DirectoryEntry | None],
    bounds: tuple[str, str],
    listed: Collection[str] | None = None,
) -> Steps[Stored]:
    """What one namespace holds (`found`: it and its directory entry), read consistently:
    its items, in the Store its index items within `bounds`, then the objects they
    reference in one wave, from the bucket; with `listed`, only the objects listed there,
    one gone meanwhile left out (else that is an `ObjectNotFoundError`)."""
    namespace, entry = found
    pk = names.pk(namespace)
    rows = yield from reads.items(pk, consistent=True)
    index = (yield from reads.index_items(pk, bounds, consistent=True)) if names.searched else []
    stored = Stored(names.space, namespace, pk, entry, rows, index)
    needed = objects_of(stored)
    if listed is None:
        bodies = yield Fetch(needed, cached=False)
    else:
        bodies = yield from present({k: w for k, w in needed.items() if k in listed})
    return Stored(names.space, namespace, pk, entry, rows, index, bodies)


def resealed(stored: Stored, sealer: Sealer) -> WritePlan:
    """The re-sealing fold: every blob of `stored` that `sealer` would move
    (`Sealer.stale`: under another key than it seals with, a subject's left where it
    is by a rotation), sealed again by it, bound to what it was: objects overwritten in
    place (same name, same value) after an intent names them (a delete that removed one
    meanwhile would otherwise see it written again, named by nothing: incremental
    collection checks each), blobs of items replaced each while unchanged
    (`format.reseal`), each write one request."""
    writes: list[Write] = []
    overwrites: list[tuple[str, bytes]] = []
    for s in sealed(stored):
        if s.blob is None or not sealer.stale(s.blob):
            continue
        typ, data = sealer.open(s.blob, s.aad, s.what)
        new = sealer.seal(typ, data, s.aad, compress=sealer.compressed(s.blob))
        if isinstance(s.at, str):
            overwrites.append((s.at, new))
        else:
            writes.append(format.reseal(s.at, s.blob, new, s.attribute))
    rewritten = [key for key, _ in overwrites]
    return WritePlan(stored.pk, overwrites=overwrites, writes=writes, each=True, orphans=rewritten)
