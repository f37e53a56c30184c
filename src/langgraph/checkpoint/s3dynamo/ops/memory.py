"""Long-term memory's maintenance, beside the threads', as `saver.ops.memory`
(`MemoryOperations`): the expiry sweep of the Store's items and the node cache's entries,
collection of objects no item references, re-encryption, statistics, the plan of a
Store namespace's delete, and the descendants marks that directory entries of older
builds lack. Each reads a space's directory (the plan: only where the prefix's partition
says namespaces lie below it), then namespaces' partitions: never the rest of the table
(docs/OPERATIONS.md, "Long-term memory").

Each reads and writes through a space's methods (`memory.core.Space`), which run the
memory parts' protocols on the blob engine (the expiry sweep's: `memory/writes.py`);
statistics and re-encryption, like verification (`ops/verification.py`), fold over the
one list of a namespace's sealed blobs (`memory/sealed.py`).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.blobs import collect
from langgraph.checkpoint.s3dynamo.boundary import public
from langgraph.checkpoint.s3dynamo.compose import Components, memory_space
from langgraph.checkpoint.s3dynamo.config.arguments import Boolean, Span, Text
from langgraph.checkpoint.s3dynamo.config.memory_arguments import Labels, MemorySpace, Prefix
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.format.layout import memory_scope
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory.core import Space, Stored
from langgraph.checkpoint.s3dynamo.ops.plan import Plan
from langgraph.checkpoint.s3dynamo.waves import parallel

SPACES = {"store": "m", "cache": "c"}


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
        self.parts.deployment.verify(write=False)
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
    def plan_namespace_delete(self, prefix: Prefix) -> Plan:
        """What `S3DynamoStore.delete_namespace(prefix)` removes (nothing changes):
        each Store namespace at or below `prefix` that holds anything, with its items
        (counted now); `.execute()` reads them again and deletes, so what was written
        since goes too, and returns the items deleted."""
        self.parts.deployment.verify(write=False)
        space = memory_space(self.parts, SPACES["store"])
        with guarded(self.parts.deployment):
            found = space.under(prefix)

        def run() -> dict[str, int]:
            with guarded(self.parts.deployment):
                return {"items": space.delete_namespace(prefix)}

        return Plan(
            "namespace_delete", namespaces_found([prefix], found), run, bool(found), gives="items"
        )

    @public()
    def expired_at(self, namespace: Labels, key: Text) -> datetime | None:
        """When a Store item expired, if it is still stored (not yet swept) but no read
        returns it any more; None for an item that is live or not stored. One GetItem,
        consistent."""
        space = memory_space(self.parts, SPACES["store"])
        expires_ms = space.expiry(namespace, key)
        if expires_ms is None or expires_ms > space.now_ms():
            return None
        return datetime.fromtimestamp(expires_ms / 1000, tz=timezone.utc)


def namespaces_found(
    prefixes: list[tuple[str, ...]], found: dict[tuple[str, ...], int]
) -> dict[str, Any]:
    """A namespace delete's counts: the prefixes, each namespace found with its items."""
    return {
        "prefixes": [list(p) for p in prefixes],
        "namespaces": [{"namespace": list(ns), "items": n} for ns, n in sorted(found.items())],
        "items": sum(found.values()),
    }


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


# What `stats` counts per space.
STATS = ("namespaces", "items", "expired", "inline_bytes", "objects", "object_bytes")


@telemetry.operation("memory.stats")
def memory_stats(parts: Components) -> dict[str, dict[str, int]]:
    """Per space: namespaces that hold an item or an object, items (and how many have
    expired, not yet swept), bytes inline in the table and in objects. One Query per
    namespace and one listing per namespace with objects."""
    out: dict[str, dict[str, int]] = {}
    for label, space in spaces(parts).items():
        with guarded(parts.deployment):
            namespaces = [ns for ns, _ in space.namespaces()]
        counted = parallel(functools.partial(_namespace_stats, space, space.now_ms()), namespaces)
        totals = [sum(column) for column in zip(*counted, strict=True)] if counted else [0] * 5
        # Those holding anything: an emptied entry stays in the directory a while.
        held = sum(1 for items, _, _, objects, _ in counted if items or objects)
        out[label] = dict(zip(STATS, [held, *totals], strict=True))
    return out


def _namespace_stats(
    space: Space, now_ms: int, namespace: tuple[str, ...]
) -> tuple[int, int, int, int, int]:
    """(items, expired items, inline bytes, objects, object bytes) of one namespace: its
    items' large values and its vector segments among the objects. The statistics fold
    over its sealed blobs: each item's payload, inline or an object."""
    rows, sizes = space.usage(namespace)
    stored = Stored(space.space, namespace, space.pk(namespace), rows=rows)
    inline = [s.blob or b"" for s in space.sealed(stored) if s.kind == "item" and s.attribute]
    expired = sum(1 for r in rows if r.expires_ms is not None and r.expires_ms <= now_ms)
    return len(rows), expired, sum(map(len, inline)), len(sizes), sum(sizes.values())


# ------------------------------------------------------------------ expiry


def expire(space: Space, now: float | None = None) -> tuple[int, int]:
    """Delete the expired items and their objects, and settle the directory entries of
    namespaces left empty; in the Store, the deleted items' filter tokens go, and the
    vector index learns they are gone (`memory/writes.py`). (items deleted, namespaces
    dropped)."""
    return space.expire(space.clock() if now is None else now)


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
    never returned by a read whether or not this has run. Another deployment's keys
    remove nothing (`DeploymentMismatchError`)."""
    parts.deployment.verify(write=False)
    result = MemoryExpiry(dry_run)
    for label, space in spaces(parts).items():
        if dry_run:
            found = len(space.expired(space.now_ms()))
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
    return space.sweep_objects(pk, cutoff)


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
        out[label] = sum(parallel(space.reseal, namespaces))
    return out


# ------------------------------------------------------------------ descendants marks


def mark_ancestors(space: Space) -> int:
    """Write the descendants marks that directory entries written before marks existed
    lack (docs/FORMAT.md): one renewal, with the marks, per entry that needs a mark not
    yet written by this call. The number of entries renewed."""
    pending: set[ItemKey] = set()
    renewed = 0
    for namespace, _ in space.namespaces():
        marks = [k for k in space.ancestor_marks(namespace) if k not in pending]
        if marks:
            space.renew(namespace, marks)
            pending.update(marks)
            renewed += 1
    return renewed
