"""Long-term memory's maintenance, beside the threads', as `saver.ops.memory`
(`MemoryOperations`): the expiry sweep of the Store's items and the node cache's entries,
collection of objects no item references, re-encryption, statistics, and the
descendants marks that directory entries of older builds lack. Each reads the spaces'
directories, then each namespace's partition: never the rest of the table
(docs/OPERATIONS.md, "Long-term memory").

The expiry sweep finds expired items with one consistent Query of a space's directory,
then one Query of each namespace's partition, in one wave; it opens nothing (a
namespace's partition is named by its entry), so it needs no keys. Each item is deleted
only while still expired; then what it leaves (`memory.format.gone`), then the entries of
namespaces left empty are settled (docs/RELIABILITY.md, "The Store's namespace
directory"). What each writes is the memory format's (`memory/format.py`), read through
the spaces (`Space.reads`) and written through the blob engine.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.arguments import Boolean, Labels, MemorySpace, Span, Text
from langgraph.checkpoint.s3dynamo.blobs import collect
from langgraph.checkpoint.s3dynamo.boundary import public
from langgraph.checkpoint.s3dynamo.compose import Components, memory_space
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.errors import ObjectNotFoundError, S3DynamoError
from langgraph.checkpoint.s3dynamo.layout import (
    MANIFEST_SK,
    TOKEN_MARK,
    VECTOR_SK_RANGE,
    directory_pk,
    is_token_of,
    memory_pk,
    memory_scope,
    object_key,
)
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.core import Space
from langgraph.checkpoint.s3dynamo.memory.rows import DirectoryEntry, MemoryRow
from langgraph.checkpoint.s3dynamo.memory.tokens import TOP
from langgraph.checkpoint.s3dynamo.ops.inspect import VerifyReport, item_label, problem_kind
from langgraph.checkpoint.s3dynamo.ops.plan import Plan
from langgraph.checkpoint.s3dynamo.records import ItemKey
from langgraph.checkpoint.s3dynamo.waves import parallel

SPACES = {"store": "m", "cache": "c"}
# The spaces whose namespaces have search indexes (filter tokens, vectors): the Store's.
INDEXED = frozenset({"m"})


class MemoryOperations:
    """The Store's and the node cache's maintenance on one saver's parts
    (`saver.ops.memory`); each method reads what it needs afresh."""

    def __init__(self, parts: Components) -> None:
        self.parts = parts

    def stats(self) -> dict[str, dict[str, int]]:
        """Per space: namespaces, items, expired items not yet swept, bytes inline and
        in objects."""
        return memory_stats(self.parts)

    def plan_expiry(self) -> Plan:
        """The expired items of each space (nothing changes); `.execute()` removes them."""
        return plan_memory_expiry(self.parts)

    @public()
    def expire(self, *, dry_run: Boolean = False) -> MemoryExpiry:
        """Remove every expired Store item and cache entry now (`dry_run`: count them)."""
        return expire_memory(self.parts, dry_run=dry_run)

    @public()
    def expire_space(self, space: MemorySpace) -> tuple[int, int]:
        """The sweep of one space: (items deleted, namespaces dropped)."""
        return expire(space)

    @public()
    def collect_garbage(self, grace: Span) -> dict[str, int]:
        """Delete objects no item references, older than `grace`, per space."""
        return collect_memory_garbage(self.parts, grace)

    def reencrypt(self) -> dict[str, int]:
        """Re-seal what is not under the active key, per space."""
        return reencrypt_memory(self.parts)

    @public()
    def mark_ancestors(self, space: MemorySpace) -> int:
        """The descendants marks entries of older builds lack (`S3DynamoStore.setup`)."""
        return mark_ancestors(space)

    def live_leaves(self) -> collect.LiveLeaves:
        return live_leaves(self.parts)

    @public()
    def expired_at(self, namespace: Labels, key: Text) -> datetime | None:
        """When a Store item expired, if it is still stored (not yet swept) but no read
        returns it any more; None for an item that is live or not stored. One GetItem,
        consistent."""
        space = memory_space(self.parts, SPACES["store"])
        rows = space.reads.items_at([space.item_key(namespace, key)], consistent=True)
        expires_ms = rows[0].expires_ms if rows else None
        if expires_ms is None or expires_ms > space.now_ms():
            return None
        return datetime.fromtimestamp(expires_ms / 1000, tz=timezone.utc)


def spaces(parts: Components) -> dict[str, Space]:
    """The Store's and the node cache's spaces of a saver, by label."""
    return {label: memory_space(parts, code) for label, code in SPACES.items()}


def live_leaves(parts: Components) -> collect.LiveLeaves:
    """What a memory partition's items reference now (read consistently), for
    collecting the objects upload intents name; None for a partition no space has."""
    by_code = {code: memory_space(parts, code) for code in SPACES.values()}

    def live(owner: str) -> set[str] | None:
        scope = memory_scope(owner)
        space = by_code.get(scope[1]) if scope is not None else None
        return space.live_leaves(owner) if space is not None else None

    return live


# ------------------------------------------------------------------ statistics


@dataclass
class SpaceStats:
    namespaces: int = 0
    items: int = 0
    expired: int = 0
    inline_bytes: int = 0
    objects: int = 0
    object_bytes: int = 0


@telemetry.operation("memory.stats")
def memory_stats(parts: Components) -> dict[str, dict[str, int]]:
    """Per space: namespaces, items (and how many have expired, not yet swept), bytes
    inline in the table and in objects. One Query per namespace and one listing per
    namespace with objects."""
    out: dict[str, dict[str, int]] = {}
    for label, space in spaces(parts).items():
        stats = SpaceStats()
        with guarded(parts.deployment):
            namespaces = space.namespaces()
        stats.namespaces = len(namespaces)
        counted = parallel(
            functools.partial(_namespace_stats, space, space.now_ms()), [ns for ns, _ in namespaces]
        )
        for items, expired, inline, objects, object_bytes in counted:
            stats.items += items
            stats.expired += expired
            stats.inline_bytes += inline
            stats.objects += objects
            stats.object_bytes += object_bytes
        out[label] = asdict(stats)
    return out


def _namespace_stats(
    space: Space, now_ms: int, namespace: tuple[str, ...]
) -> tuple[int, int, int, int, int]:
    """(items, expired items, inline bytes, objects, object bytes) of one namespace: its
    items' large values and its vector segments among the objects."""
    pk = space.pk(namespace)
    rows = space.reads.items(pk)
    leaves = {object_key(pk, leaf) for leaf in space.live_leaves(pk) or ()}
    listed = space.engine.objects.list_owner(pk) if leaves else []
    sizes = [o.size for o in listed if o.key in leaves]
    expired = sum(1 for r in rows if not space.live(r, now_ms))
    return len(rows), expired, sum(len(r.blob or b"") for r in rows), len(sizes), sum(sizes)


# ------------------------------------------------------------------ expiry


def expired(space: Space, at_ms: int) -> tuple[dict[str, DirectoryEntry], list[MemoryRow]]:
    """The directory's entries by name, and the items whose expiry is at or before
    `at_ms`."""
    pk = directory_pk(space.prefix, space.space)
    entries = {e.key.sk: e for e in space.reads.entries(pk, consistent=True)}
    pks = [memory_pk(space.prefix, name, space.space) for name in sorted(entries)]
    rows = [r for found in parallel(space.reads.items, pks) for r in found]
    return entries, [r for r in rows if not space.live(r, at_ms)]


def expire(space: Space, now: float | None = None) -> tuple[int, int]:
    """Delete the expired items and their objects, and settle the directory entries of
    namespaces left empty; in the Store, the deleted items' filter tokens go, and the
    vector index learns they are gone (tombstones, sealed under the active key: nothing
    is opened). (items deleted, namespaces dropped)."""
    at = space.clock() if now is None else now
    at_ms = round(at * 1000)
    entries, found = expired(space, at_ms)
    deleted = space.delete_items([r.key for r in found], expired_at_ms=at_ms)
    space.forget(_gone(space, deleted, at_ms))
    # Namespaces left empty leave the directory, and entries marked emptied whose
    # namespace has items again lose the mark.
    names = {scope[2] for r in deleted if (scope := memory_scope(r.key.pk)) and scope[2]}
    names |= {name for name, e in entries.items() if e.emptied}
    dropped = 0
    for name in sorted(names):
        entry = entries.get(name)
        if entry is not None:
            dropped += space.directory.settle(entry, memory_pk(space.prefix, name, space.space), at)
    return len(deleted), dropped


def _gone(space: Space, deleted: list[MemoryRow], at_ms: int) -> format.Gone:
    """What the items deleted leave: their objects, and in the Store, read with one
    consistent Query of each namespace's indexes in one wave, the tokens naming them (an
    item's key is the last part of each token's sort key) and, where the namespace has a
    vector index, tombstones telling it they are gone."""
    if space.space not in INDEXED or not deleted:
        return format.gone(deleted)
    by_pk: dict[str, set[str]] = {}
    for r in deleted:
        by_pk.setdefault(r.key.pk, set()).add(r.key.sk)
    bounds = (MANIFEST_SK, TOKEN_MARK + TOP)
    pks = sorted(by_pk)
    found = parallel(lambda pk: space.reads.index_items(pk, bounds, consistent=True), pks)
    tokens = [
        i.key
        for pk, f in zip(pks, found, strict=True)
        for i in f
        if is_token_of(i.key.sk, by_pk[pk])
    ]
    indexed = {
        pk for pk, f in zip(pks, found, strict=True) if any(i.key.sk == MANIFEST_SK for i in f)
    }
    return format.gone(
        deleted, tokens, indexed=indexed, at_ms=at_ms, sealer=space.sealer, space=space.space
    )


@dataclass
class MemoryExpiry:
    """What an expiry sweep removed (or, as a plan, found) per space."""

    dry_run: bool
    items: dict[str, int] = field(default_factory=dict)
    namespaces_dropped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_memory_expiry(parts: Components) -> Plan:
    """The expired items of each space, found as the sweep finds them (no change);
    `execute()` removes them, each only while it is still expired."""
    found = expire_memory(parts, dry_run=True)
    work = sum(found.items.values()) > 0
    return Plan("memory_expiry", found.to_dict(), lambda: expire_memory(parts).to_dict(), work)


@telemetry.operation("memory.expire")
def expire_memory(parts: Components, *, dry_run: bool = False) -> MemoryExpiry:
    """Remove the expired Store items and cache entries of this deployment (each only
    while still expired: a read that refreshed it, or a new put, keeps it), their
    objects, and the directory entries of namespaces left empty. An expired item is
    never returned by a read whether or not this has run."""
    result = MemoryExpiry(dry_run)
    for label, space in spaces(parts).items():
        if dry_run:
            found = len(expired(space, space.now_ms())[1])
            result.items[label], result.namespaces_dropped[label] = found, 0
        else:
            result.items[label], result.namespaces_dropped[label] = expire(space)
    return result


# ------------------------------------------------------------------ garbage collection


@telemetry.operation("memory.gc")
def collect_memory_garbage(parts: Components, grace: timedelta) -> dict[str, int]:
    """Delete the objects of Store items and cache entries that no item references any
    more (a large value replaced by a later put, or a put interrupted before its commit)
    and that are older than `grace`, longer than any put takes; each only while it is
    unchanged since it was listed (`blobs/collect.py`). Per space: objects deleted. One
    directory Query per space, then per namespace one listing and one Query."""
    out: dict[str, int] = {}
    cutoff = datetime.now(timezone.utc) - grace
    for label, space in spaces(parts).items():
        with guarded(parts.deployment):
            owners = [space.pk(ns) for ns, _ in space.namespaces()]
        swept = parallel(functools.partial(_collect_namespace, space, cutoff), owners)
        out[label] = sum(swept)
    return out


def _collect_namespace(space: Space, cutoff: datetime, pk: str) -> int:
    return space.engine.collector.sweep(pk, space.live_leaves, cutoff)


# ------------------------------------------------------------------ re-encryption


def reencrypt_memory(parts: Components) -> dict[str, int]:
    """Re-seal every Store item, cache entry, directory entry and vector index (manifest,
    log, segments) not sealed under the active key (as `reencrypt` does for threads), so
    an old key can leave the keyring. Inline blobs and entries are replaced only while
    unchanged since read (a put since sealed under the active key already); objects are
    overwritten in place (same name, same value). Per space: blobs re-sealed. One
    directory Query per space, then per namespace one Query of its items (and one of its
    vector index), a GET per object (large values, segments), and one request per blob
    re-sealed."""
    out: dict[str, int] = {}
    for label, space in spaces(parts).items():
        with guarded(parts.deployment):
            namespaces = space.namespaces()
        resealed = parallel(functools.partial(_reseal_namespace, space), namespaces)
        out[label] = sum(resealed)
    return out


def _reseal_namespace(space: Space, found: tuple[tuple[str, ...], DirectoryEntry]) -> int:
    """Re-seal what one namespace holds (`memory.format.resealed`): its directory entry,
    its items and their objects (read consistently; a rotation must see what is stored,
    not what this process cached before), and in the Store its vector index's manifest,
    log entries and segments."""
    namespace, entry = found
    pk = space.pk(namespace)
    rows = space.reads.items(pk, consistent=True)
    needed = {
        object_key(pk, r.leaf): f"item of {namespace!r}" for r in rows if r.blob is None and r.leaf
    }
    index = (
        space.reads.index_items(pk, VECTOR_SK_RANGE, consistent=True)
        if space.space in INDEXED
        else []
    )
    # Every segment the manifest names, whatever sealed the manifest: a compaction after
    # a rotation seals a new one under the active key beside older segments.
    for item in index:
        needed.update(
            {object_key(pk, leaf): f"vector segment of {namespace!r}" for leaf in item.leaves}
        )
    bodies = space.engine.objects.fetch(needed, cached=False)
    stored = format.Stored(space.space, namespace, pk, entry, rows, index, bodies)
    plan = format.resealed(stored, space.sealer)
    written = space.engine.write(plan)
    return len(plan.overwrites) + sum(w.applied for w in written)


# ------------------------------------------------------------------ descendants marks


def mark_ancestors(space: Space) -> int:
    """Write the descendants marks that directory entries written before marks existed
    lack (docs/FORMAT.md): one renewal, with the marks, per entry that needs a mark not
    yet written by this call. The number of entries renewed."""
    pending: set[ItemKey] = set()
    renewed = 0
    for namespace, _ in space.namespaces():
        marks = [k for k in space.directory.ancestor_marks(namespace) if k not in pending]
        if marks:
            space.directory.renew(namespace, marks)
            pending.update(marks)
            renewed += 1
    return renewed


# ------------------------------------------------------------------ verification

Counts = dict[str, int]


def verify_memory(parts: Components, objects: Mapping[str, int], report: VerifyReport) -> None:
    """Open and authenticate every sealed blob of the Store and the node cache: each
    directory entry, each item (its payload, whose key must hash to the item's name, and
    its stamps) and its object, and in the Store each namespace's vector manifest, log
    entries, tombstones and segments; counted per space in `report.memory`. Objects of
    theirs that nothing references, or that are referenced and gone, are problems as a
    thread's are. One directory Query per space, then per namespace one consistent Query
    of its items and one of its indexes, and one wave of object GETs (uncached)."""
    listed = {k: size for k, size in objects.items() if memory_scope(k.rpartition("/")[0])}
    live: set[str] = set()
    for label, space in spaces(parts).items():
        counts = {"namespaces": 0, "items": 0, "index items": 0, "objects": 0}
        counts.update(blobs=0, opened=0)
        report.memory[label] = counts
        entries = space.reads.entries(directory_pk(space.prefix, space.space), consistent=True)
        counts["namespaces"] = len(entries)
        for entry in entries:
            where, key = f"{label} directory", item_label(entry.key)
            namespace = _opened(counts, report, where, key, space.directory.namespace_of, entry)
            if namespace is not None:
                _verify_namespace(space, label, namespace, (listed, live), counts, report)
    for key, size in sorted(listed.items()):
        if key not in live:
            report.problem(
                "unreferenced",
                "object",
                key,
                None,
                f"{size} bytes, referenced by no Store item, cache entry or vector "
                "manifest (`s3dynamo memory gc` removes it after the grace period)",
            )


def _verify_namespace(
    space: Space,
    label: str,
    namespace: tuple[str, ...],
    objects: tuple[dict[str, int], set[str]],
    counts: Counts,
    report: VerifyReport,
) -> None:
    listed, live = objects
    pk = space.pk(namespace)
    rows = space.reads.items(pk, consistent=True)
    index = (
        space.reads.index_items(pk, (MANIFEST_SK, TOKEN_MARK + TOP), consistent=True)
        if space.space in INDEXED
        else []
    )
    counts["items"] += len(rows)
    counts["index items"] += len(index)
    what = f"{label} namespace {namespace!r}"
    needed = {object_key(pk, r.leaf): what for r in rows if r.blob is None and r.leaf}
    needed.update({object_key(pk, leaf): what for item in index for leaf in item.leaves})
    live.update(needed)
    for key in sorted(k for k in needed if k not in listed):
        report.problem("missing", "object", key, None, f"{what}: referenced, but not in the bucket")
    bodies = _fetched(space, {k: w for k, w in needed.items() if k in listed})
    counts["objects"] += len(bodies)
    for row in rows:
        if row.blob is None and object_key(pk, row.leaf or "") not in bodies:
            continue  # its object, missing, is a problem already
        blob = row.blob if row.blob is not None else bodies[object_key(pk, row.leaf or "")]
        # Its payload, bound to its name, and its stamps: opened as a read opens them.
        whole = row._replace(blob=blob, leaf=None)
        stamps = (row.created_seal is not None) + (row.refresh_seal is not None)
        counts["blobs"] += stamps
        where, key = f"{label} item", item_label(row.key)
        if _opened(counts, report, where, key, space.open, [(namespace, whole)]):
            counts["opened"] += stamps
    stored = format.Stored(space.space, namespace, pk, index=index, objects=bodies)
    for at, _attribute, blob, aad, name in format.sealed_blobs(stored):
        if isinstance(at, ItemKey):
            where, key = f"{label} vector index", item_label(at)
        else:
            where, key = "object", at
        _opened(counts, report, where, key, space.sealer.open, blob, aad, name)


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


def _fetched(space: Space, needed: dict[str, str]) -> dict[str, bytes]:
    """Object bodies from the bucket (not a cache); one deleted since the listing is left
    out (its item, unopened, is not counted)."""
    try:
        return space.engine.objects.fetch(needed, cached=False)
    except ObjectNotFoundError:
        out: dict[str, bytes] = {}
        for key, what in needed.items():
            try:
                out.update(space.engine.objects.fetch({key: what}, cached=False))
            except ObjectNotFoundError:
                continue
        return out
