"""The expiry sweep of one memory space (`expire`, which the retention job, the command
line and `S3DynamoStore.sweep_ttl` run). It finds expired items through the
directory: one consistent Query of it, then one Query of each namespace's partition, in
one wave, so it reads what the space holds and never the rest of the table, and opens
nothing (a namespace's partition is named by its entry), so it needs no keys. Each item
is deleted only while still expired; then its object, then the entries of namespaces
left empty are settled (docs/RELIABILITY.md, "The Store's namespace directory").
"""

from __future__ import annotations

from langgraph.checkpoint.s3dynamo.layout import (
    directory_pk,
    memory_object_key,
    memory_pk,
    memory_scope,
)
from langgraph.checkpoint.s3dynamo.memory.core import Space
from langgraph.checkpoint.s3dynamo.records import DirectoryEntry, MemoryRow
from langgraph.checkpoint.s3dynamo.waves import parallel


def expired(space: Space, at: int) -> tuple[dict[str, DirectoryEntry], list[MemoryRow]]:
    """The directory's entries by name, and the items whose expiry is at or before `at`."""
    pk = directory_pk(space.prefix, space.space)
    entries = {e.key.sk: e for e in space.index.directory(pk, consistent=True)}
    pks = [memory_pk(space.prefix, name, space.space) for name in sorted(entries)]
    rows = [r for found in parallel(space.index.memory_query, pks) for r in found]
    return entries, [r for r in rows if not space.live(r, at)]


def expire(space: Space, now: float | None = None) -> tuple[int, int]:
    """Delete the expired items and their objects, and settle the directory entries of
    namespaces left empty. (items deleted, namespaces dropped)."""
    at = int(space.clock() if now is None else now)
    entries, found = expired(space, at)
    gone = parallel(lambda r: space.index.memory_delete(r.key, expired_at=at), found)
    deleted = [r for r in gone if r is not None]
    leaves = [memory_object_key(r.key.pk, r.leaf) for r in deleted if r.leaf]
    if leaves:
        space.objects.delete(leaves)
    # Namespaces left empty leave the directory, and entries marked emptied whose
    # namespace has items again lose the mark.
    names = {scope[2] for r in deleted if (scope := memory_scope(r.key.pk)) and scope[2]}
    names |= {name for name, e in entries.items() if e.emptied}
    dropped = 0
    for name in sorted(names):
        entry = entries.get(name)
        if entry is not None:
            dropped += space.settle(entry, memory_pk(space.prefix, name, space.space), at)
    return len(deleted), dropped
