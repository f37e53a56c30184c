"""What this process knows about one memory space, shared by every `Space` on the same
table adapter (`BlobEngine.shared`): leases on namespaces' directory entries (a put into
a namespace it holds a lease on writes the item alone), the descendants marks it wrote or
knows exist (never deleted, so written at most once per process), the expiries of items
it read or wrote (a refresh it knows to be due is one request), and its own recent
writes (an eventually consistent read that misses one is read again consistently, so a
process reads its own writes; a data subject's put expects the objects it wrote).
The safety argument is in docs/RELIABILITY.md ("The Store's namespace directory").
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs.sealing import key_id
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory.rows import DirectoryEntry, IndexItem, MemoryRow

# How long after an entry's renewal a writer may put into its namespace without the
# entry, and how much longer a delete waits before it removes an empty namespace's
# entry (clock skew between processes and requests in flight must fit in it).
LEASE_SECONDS = 600
DROP_MARGIN_SECONDS = 600
# Writes remembered per space for read-your-writes; older ones are forgotten.
RECENT_MAX = 10_000
# Locks striping the namespaces whose entries puts renew (`SpaceState.renewing`).
RENEWAL_LOCKS = 64

Fingerprint = tuple[Any, ...] | None  # None: the item or entry is gone
# What this process knows of an item it read or wrote: its expiry, TTL and version.
Known = tuple[int | None, float | None, str]


def fingerprint(row: MemoryRow | DirectoryEntry | IndexItem | None) -> Fingerprint:
    """What tells a version of an item, entry or index item from another."""
    if row is None:
        return None
    if isinstance(row, DirectoryEntry):
        return ("entry", row.generation, row.emptied)
    if isinstance(row, IndexItem):
        return ("index", row.generation, hashlib.blake2b(row.blob or b"", digest_size=8).digest())
    digest = hashlib.blake2b(row.blob or (row.leaf or "").encode(), digest_size=8).digest()
    return ("row", row.updated_ms, digest)


class SpaceState:
    """Leases and recent writes of one space of one table, in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._leases: dict[str, float] = {}
        # The key each leased entry's name is sealed under: a lease holds for puts
        # sealed under that key only (a data subject's key changes after an erasure).
        self._named: dict[str, str | None] = {}
        self._renewals = [threading.Lock() for _ in range(RENEWAL_LOCKS)]
        self._recent: OrderedDict[ItemKey, Fingerprint] = OrderedDict()
        self._by_pk: dict[str, set[ItemKey]] = {}
        self._marked: OrderedDict[str, None] = OrderedDict()
        self._expiry: OrderedDict[ItemKey, Known] = OrderedDict()
        self._stamps: OrderedDict[str, int] = OrderedDict()
        # Items this process last wrote holding an object, without their blobs: what a
        # data subject's put expects to replace (`Directory._expecting`).
        self._objects: OrderedDict[ItemKey, MemoryRow] = OrderedDict()

    def stamp(self, pk: str, now_ms: int) -> int:
        """The time a write to partition `pk` is stamped with: `now_ms`, or a millisecond
        past this process's last stamp there, so that an update made within the
        millisecond of the put before it still reads as later (`updated_at`)."""
        with self._lock:
            stamp = max(now_ms, self._stamps.pop(pk, 0) + 1)
            self._stamps[pk] = stamp
            if len(self._stamps) > RECENT_MAX:
                self._stamps.popitem(last=False)
            return stamp

    # ------------------------------------------------------------ leases

    def lease_end(self, ns_name: str, kid: str | None = None) -> float:
        """Until when this process holds a lease on an entry; with `kid`, none unless
        the entry's name is sealed under that key."""
        with self._lock:
            if kid is not None and self._named.get(ns_name) != kid:
                return 0.0
            return self._leases.get(ns_name, 0.0)

    def saw(self, entry: DirectoryEntry) -> None:
        """An entry read or renewed: a lease until its renewal time plus the lease;
        none if a delete found the namespace empty (the next put renews the entry)."""
        name = entry.key.sk
        with self._lock:
            self._named[name] = key_id(entry.blob)
            if entry.emptied:
                self._leases.pop(name, None)
            else:
                end = entry.renewed + LEASE_SECONDS
                self._leases[name] = max(end, self._leases.get(name, 0.0))

    def lease(self, entry: DirectoryEntry, end: float) -> None:
        """A lease until `end` (seconds), taken from an entry this process read."""
        with self._lock:
            self._named[entry.key.sk] = key_id(entry.blob)
            self._leases[entry.key.sk] = max(end, self._leases.get(entry.key.sk, 0.0))

    def renewing(self, ns_name: str) -> threading.Lock:
        """Held while a put without a lease reads or renews a namespace's entry: puts of
        this process into it gathered at once wait for that one and then write under its
        lease, instead of each renewing (one transaction, not one each, contending for
        the entry). Striped: a few namespaces share a lock, never a lease."""
        return self._renewals[hash(ns_name) % RENEWAL_LOCKS]

    def forget(self, ns_name: str) -> None:
        with self._lock:
            self._leases.pop(ns_name, None)

    # ------------------------------------------------------------ descendants marks

    def unmarked(self, pks: Iterable[str]) -> list[str]:
        """Those of `pks` whose descendants mark this process has not written or seen
        implied."""
        with self._lock:
            return [pk for pk in pks if pk not in self._marked]

    def marked(self, pks: Iterable[str]) -> None:
        with self._lock:
            for pk in pks:
                self._marked[pk] = None
                self._marked.move_to_end(pk)
            while len(self._marked) > RECENT_MAX:
                self._marked.popitem(last=False)

    def has_marked(self, pk: str) -> bool:
        with self._lock:
            return pk in self._marked

    # ------------------------------------------------------------ expiries

    def knew(self, items: Iterable[tuple[ItemKey, int | None, float | None, str]]) -> None:
        """The expiry (ms), TTL and version of items read (sealed, as opened) or
        written: what deciding a refresh, and sealing its stamp, needs."""
        with self._lock:
            for key, expires_ms, ttl_minutes, version in items:
                self._expiry[key] = (expires_ms, ttl_minutes, version)
                self._expiry.move_to_end(key)
            while len(self._expiry) > RECENT_MAX:
                self._expiry.popitem(last=False)

    def expiry_of(self, key: ItemKey) -> Known | None:
        with self._lock:
            return self._expiry.get(key)

    # ------------------------------------------------------------ recent writes

    def wrote(self, key: ItemKey, now: Fingerprint) -> None:
        with self._lock:
            if now is None:
                self._expiry.pop(key, None)
                self._objects.pop(key, None)
            self._recent[key] = now
            self._recent.move_to_end(key)
            self._by_pk.setdefault(key.pk, set()).add(key)
            while len(self._recent) > RECENT_MAX:
                old, _ = self._recent.popitem(last=False)
                keys = self._by_pk.get(old.pk)
                if keys is not None:
                    keys.discard(old)
                    if not keys:
                        del self._by_pk[old.pk]

    def holds(self, rows: Iterable[MemoryRow]) -> None:
        """Items this process just wrote: which object each holds (if any)."""
        with self._lock:
            for row in rows:
                self._objects.pop(row.key, None)
                if row.leaf:
                    self._objects[row.key] = row._replace(blob=None)
            while len(self._objects) > RECENT_MAX:
                self._objects.popitem(last=False)

    def held(self, key: ItemKey) -> MemoryRow | None:
        """The item as this process last wrote it, if it held an object then."""
        with self._lock:
            return self._objects.get(key)

    def stale(
        self, read: Sequence[MemoryRow | DirectoryEntry | IndexItem], keys: Iterable[ItemKey]
    ) -> set[ItemKey]:
        """Those of `keys` this process wrote that `read` shows otherwise than written
        (an eventually consistent read from before the write, or a later write by
        another process: either way a consistent read settles it)."""
        with self._lock:
            mine = {k: self._recent[k] for k in keys if k in self._recent}
        if not mine:
            return set()
        shown = {r.key: fingerprint(r) for r in read}
        return {k for k, f in mine.items() if shown.get(k) != f}

    def written_in(self, pk: str) -> list[ItemKey]:
        """The keys of a partition this process wrote (recently)."""
        with self._lock:
            return list(self._by_pk.get(pk, ()))
