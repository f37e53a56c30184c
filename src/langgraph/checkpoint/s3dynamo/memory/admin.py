"""What the command line and the retention job do with long-term memory: its share of
the storage (`memory_stats`) and the expiry sweep (`expire_memory`) over the Store's
items and the node cache's entries; and `mark_ancestors`, which `S3DynamoStore.setup`
runs. All three read the spaces' directories; the sweep then reads each namespace's
partition, never the rest of the table (docs/OPERATIONS.md, "Long-term memory").
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.compose import Components, memory_space
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.layout import memory_object_key
from langgraph.checkpoint.s3dynamo.memory import expiry
from langgraph.checkpoint.s3dynamo.memory.core import Space
from langgraph.checkpoint.s3dynamo.records import ItemKey
from langgraph.checkpoint.s3dynamo.waves import parallel

SPACES = {"store": "m", "cache": "c"}


@dataclass
class SpaceStats:
    namespaces: int = 0
    items: int = 0
    expired: int = 0
    inline_bytes: int = 0
    objects: int = 0
    object_bytes: int = 0


@dataclass
class MemoryExpiry:
    """What an expiry sweep removed (or, as a dry run, found) per space."""

    dry_run: bool
    items: dict[str, int] = field(default_factory=dict)
    namespaces_dropped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@telemetry.operation("memory.stats")
def memory_stats(parts: Components) -> dict[str, dict[str, int]]:
    """Per space: namespaces, items (and how many have expired, not yet swept), bytes
    inline in the table and in objects. One Query per namespace and one listing per
    namespace with objects."""
    out: dict[str, dict[str, int]] = {}
    for label, code in SPACES.items():
        space = memory_space(parts, code)
        stats = SpaceStats()
        with guarded(parts.deployment):
            namespaces = space.namespaces()
        stats.namespaces = len(namespaces)
        now = space.clock()

        counted = parallel(
            functools.partial(_namespace_stats, space, now), [ns for ns, _ in namespaces]
        )
        for items, expired, inline, objects, object_bytes in counted:
            stats.items += items
            stats.expired += expired
            stats.inline_bytes += inline
            stats.objects += objects
            stats.object_bytes += object_bytes
        out[label] = asdict(stats)
    return out


@telemetry.operation("memory.gc")
def collect_memory_garbage(parts: Components, grace: timedelta) -> dict[str, int]:
    """Delete the objects of Store items and cache entries that no item references any
    more (a large value replaced by a later put, or a put interrupted before its commit)
    and that are older than `grace`, longer than any put takes; each only while it is
    unchanged since it was listed. Per space: objects deleted. One directory Query per
    space, then per namespace one listing and one Query."""
    out: dict[str, int] = {}
    for label, code in SPACES.items():
        space = memory_space(parts, code)
        with guarded(parts.deployment):
            namespaces = [ns for ns, _ in space.namespaces()]
        cutoff = datetime.now(timezone.utc) - grace
        deleted = parallel(functools.partial(_collect_namespace, space, cutoff), namespaces)
        out[label] = sum(deleted)
    return out


def _collect_namespace(space: Space, cutoff: datetime, namespace: tuple[str, ...]) -> int:
    pk = space.pk(namespace)
    listed = list(space.objects.list(pk + "/"))
    if not listed:
        return 0
    # Listed before the items are read: an object written since is not in `listed`, and
    # one listed and referenced by a put committed since is too young to go (grace).
    rows = space.index.memory_query(pk, consistent=True)
    referenced = {memory_object_key(pk, r.leaf) for r in rows if r.leaf}
    unreferenced = [o for o in listed if o.key not in referenced and o.modified < cutoff]
    return len(space.objects.delete_unchanged(unreferenced)) if unreferenced else 0


def _namespace_stats(
    space: Space, now: float, namespace: tuple[str, ...]
) -> tuple[int, int, int, int, int]:
    """(items, expired items, inline bytes, objects, object bytes) of one namespace."""
    pk = space.pk(namespace)
    rows = space.index.memory_query(pk)
    leaves = {memory_object_key(pk, r.leaf) for r in rows if r.leaf}
    sizes = [o.size for o in space.objects.list(pk + "/") if o.key in leaves] if leaves else []
    expired = sum(1 for r in rows if not space.live(r, now))
    return len(rows), expired, sum(len(r.blob or b"") for r in rows), len(sizes), sum(sizes)


def mark_ancestors(space: Space) -> int:
    """Write the descendants marks that directory entries written before marks existed
    lack (docs/FORMAT.md): one renewal, with the marks, per entry that needs a mark not
    yet written by this call. The number of entries renewed."""
    pending: set[ItemKey] = set()
    renewed = 0
    for namespace, entry in space.namespaces():
        marks = [k for k in space.ancestor_marks(namespace) if k not in pending]
        if marks:
            space.renew(namespace, entry.key, in_rows=None, marks=marks)
            pending.update(marks)
            renewed += 1
    return renewed


@telemetry.operation("memory.expire")
def expire_memory(parts: Components, *, dry_run: bool = False) -> MemoryExpiry:
    """Remove the expired Store items and cache entries of this deployment (each only
    while still expired: a read that refreshed it, or a new put, keeps it), their
    objects, and the directory entries of namespaces left empty. An expired item is
    never returned by a read whether or not this has run."""
    result = MemoryExpiry(dry_run)
    for label, code in SPACES.items():
        space = memory_space(parts, code)
        if dry_run:
            found = len(expiry.expired(space, int(space.clock()))[1])
            result.items[label], result.namespaces_dropped[label] = found, 0
        else:
            result.items[label], result.namespaces_dropped[label] = expiry.expire(space)
    return result


def reencrypt_memory(parts: Components) -> dict[str, int]:
    """Re-seal every Store item, cache entry and directory entry not sealed under the
    active key (as `reencrypt` does for threads), so an old key can leave the keyring.
    Inline blobs and entries are replaced only while unchanged since read (a put since
    sealed under the active key already); objects are overwritten in place (same name,
    same value). Per space: blobs re-sealed. One directory Query per space, then per
    namespace one Query, and one request per blob re-sealed."""
    out: dict[str, int] = {}
    for label, code in SPACES.items():
        space = memory_space(parts, code)
        with guarded(parts.deployment):
            namespaces = space.namespaces()
        resealed = parallel(functools.partial(_reseal_namespace, space), namespaces)
        out[label] = sum(resealed)
    return out


def _reseal_namespace(space: Space, found: tuple[tuple[str, ...], Any]) -> int:
    namespace, entry = found
    sealer = space.sealer
    active = sealer.keyring.active if sealer.keyring else None

    def stale(blob: bytes) -> bool:
        return sealer.key_id_of(blob) != active

    def resealed(blob: bytes, aad: bytes, what: str) -> bytes:
        typ, data = sealer.open(blob, aad, what)
        return sealer.seal(typ, data, aad)

    count = 0
    if stale(entry.blob):
        new = resealed(
            entry.blob, space.entry_aad(entry.key.sk), f"directory entry of {namespace!r}"
        )
        count += int(space.index.memory_reseal(entry.key, entry.blob, new))
    pk = space.pk(namespace)
    for row in space.index.memory_query(pk, consistent=True):
        what = f"item {row.key.sk!r} of {namespace!r}"
        if row.blob is not None and stale(row.blob):
            new = resealed(row.blob, space.aad(namespace, row.key.sk), what)
            count += int(space.index.memory_reseal(row.key, row.blob, new))
        elif row.blob is None and row.leaf:
            key = memory_object_key(pk, row.leaf)
            blob = space.objects.get(key)
            if stale(blob):
                space.objects.overwrite(key, resealed(blob, space.aad(namespace, row.key.sk), what))
                count += 1
    return count
