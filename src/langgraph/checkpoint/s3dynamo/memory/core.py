"""One memory space (the Store's items, or the node cache's entries) on the saver's
table and bucket, with its sealer, namer and placement: the sync core that
`S3DynamoStore` and `S3DynamoCache` share. Layout: `layout.memory_pk`; format and costs:
docs/FORMAT.md and docs/ARCHITECTURE.md ("Long-term memory").

Sealing: a payload is sealed with associated data (space, namespace tuple, item name),
where the item name is the keyed hash of (namespace, key); the payload holds the key,
and opening checks that it hashes to the name. A payload moved to another item, or
another namespace, is refused (`IntegrityError`).

The directory: a put renews its namespace's entry in the same transaction as the items
unless this process holds a lease on the entry (`memory/recent.py`), then writes the
items alone. A delete that leaves a namespace empty marks the entry emptied, or drops it
once no lease on it can be running; a namespace with items is never missing from the
directory (docs/RELIABILITY.md, "The Store's namespace directory").

Descendants marks (the Store only): the first renewal in a process also marks the
partition of each of the namespace's ancestors (unless the process read an item or entry
of the namespace, which implies the marks), and marks are never removed, so a
partition without the mark has no namespace below it: a search of its namespace is one
Query of it, and reads the directory only when it holds the mark (the argument:
docs/RELIABILITY.md, "Descendants marks").
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, WritePlan
from langgraph.checkpoint.s3dynamo.blobs.sealing import identity
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.layout import (
    DESCENDANTS_SK,
    directory_pk,
    memory_pk,
    object_key,
)
from langgraph.checkpoint.s3dynamo.memory.recent import (
    DROP_MARGIN_SECONDS,
    LEASE_SECONDS,
    SpaceState,
    fingerprint,
    space_state,
)
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.ports import MEMORY_PUT_MAX, MemoryItems
from langgraph.checkpoint.s3dynamo.records import DirectoryEntry, ItemKey, MemoryRow
from langgraph.checkpoint.s3dynamo.waves import parallel

Namespace = tuple[str, ...]
# Payload type tag of a sealed namespace tuple (directory entries).
NAMESPACE_TYPE = "json"
# A read leaves an item's expiry alone when refreshing it would move it by less than
# this share of its TTL, and at most this many seconds: one write saved per item read
# again soon, for an expiry at most that much earlier than exact.
REFRESH_SLACK, REFRESH_SLACK_MAX = 0.01, 60.0
# Spaces searched by namespace prefix, whose ancestors' partitions carry descendants
# marks: the Store; the node cache reads exact namespaces only.
PREFIX_SEARCHED = frozenset({"m"})


@dataclass(frozen=True)
class Found:
    """An item read back and opened."""

    namespace: Namespace
    key: str
    typed: tuple[str, bytes]
    row: MemoryRow


def _ns_text(namespace: Namespace) -> str:
    return json.dumps(list(namespace), ensure_ascii=False)


class Space:
    """The items of one memory space (`"m"`: the Store; `"c"`: the node cache)."""

    def __init__(self, space: str, *, engine: BlobEngine, namer: Namer) -> None:
        self.space = space
        # Seals, places, uploads, caches and journals what the items hold, as the thread
        # store's does; its ports are built on first use.
        self.engine = engine
        self._ports = engine.ports
        self.namer = namer
        self.sealer = engine.sealer
        self.prefix = engine.prefix
        # Stamps items and judges expiry; tests replace it.
        self.clock: Callable[[], float] = time.time

    # ------------------------------------------------------------ names

    @property
    def index(self) -> MemoryItems:
        # The table's adapter serves this port too (`DynamoTableIndex`, `MemoryIndex`).
        return cast("MemoryItems", self._ports.index)

    @property
    def state(self) -> SpaceState:
        # Shared by every Space of this space on the same table adapter in the process.
        return space_state(self._ports.index, self.prefix, self.space)

    def pk(self, namespace: Namespace) -> str:
        return memory_pk(
            self.prefix, self.namer.memory_namespace(self.space, namespace), self.space
        )

    def item_key(self, namespace: Namespace, key: str) -> ItemKey:
        return ItemKey(self.pk(namespace), self.namer.memory_key(self.space, namespace, key))

    def ancestor_marks(self, namespace: Namespace) -> list[ItemKey]:
        """The descendants marks a namespace's entry needs: one in the partition of
        each of its ancestors (none in the node cache)."""
        if self.space not in PREFIX_SEARCHED:
            return []
        return [ItemKey(self.pk(namespace[:i]), DESCENDANTS_SK) for i in range(1, len(namespace))]

    def entry_key(self, namespace: Namespace) -> ItemKey:
        name = self.namer.memory_namespace(self.space, namespace)
        return ItemKey(directory_pk(self.prefix, self.space), name)

    def aad(self, namespace: Namespace, sk: str) -> bytes:
        return identity("memory", self.space, _ns_text(namespace), sk)

    def _what(self, namespace: Namespace, key: str | None = None) -> str:
        kind = "store item" if self.space == "m" else "cache entry"
        return f"{kind} in namespace {namespace!r}" + (f", key {key!r}" if key else "")

    # ------------------------------------------------------------ writes

    def put(
        self,
        namespace: Namespace,
        key: str,
        typed: tuple[str, bytes],
        ttl_minutes: float | None,
    ) -> None:
        """Write one item (`put_many`)."""
        self.put_many(namespace, [(key, typed, ttl_minutes)])

    def put_many(
        self,
        namespace: Namespace,
        items: Sequence[tuple[str, tuple[str, bytes], float | None]],
    ) -> None:
        """Write items of one namespace: objects first for large ones (one wave), then
        the items, each one request while this process holds a lease on the namespace's
        directory entry, else with the entry in one transaction per `MEMORY_PUT_MAX`
        items (each a commit point). One writer per namespace never races itself for
        the directory entry, as parallel one-item transactions would."""
        marks = self._unwritten_marks(namespace)
        now = self.clock()
        ms = int(now * 1000)
        pk = self.pk(namespace)
        rows: list[MemoryRow] = []
        uploads: list[tuple[str, bytes]] = []
        for key, typed, ttl_minutes in items:
            ik = self.item_key(namespace, key)
            # The namespace is bound by the associated data; the payload names the key.
            payload = json.dumps([key, typed[0]]).encode() + b"\n" + typed[1]
            blob: bytes | None = self.sealer.seal("memory", payload, self.aad(namespace, ik.sk))
            leaf = None
            # One blob an item: the item's own inline room (`blobs/placement.py`).
            if not self.engine.budget().take(blob or b""):
                leaf = self.namer.memory_leaf(self.space, namespace, key, os.urandom(12).hex())
                uploads.append((object_key(pk, leaf), blob or b""))
                blob = None
            expires = None if ttl_minutes is None else math.ceil(now + ttl_minutes * 60)
            rows.append(MemoryRow(ik, blob, leaf, expires, ttl_minutes, ms, ms))
        # Objects first (behind an upload intent), then the items: the commit point.
        self.engine.write(
            WritePlan(pk, lambda _: self._commit(namespace, rows, marks, now), uploads, at_ms=ms)
        )

    def _commit(
        self, namespace: Namespace, rows: list[MemoryRow], marks: list[ItemKey], now: float
    ) -> None:
        ek = self.entry_key(namespace)
        state = self.state
        lease_end = state.lease_end(ek.sk)
        if now < lease_end:
            self.index.memory_put(rows, None)
            if self.clock() >= lease_end:
                # The lease ran out while the items were written: they may have landed
                # after it, so the entry is renewed as if there had been none.
                self.renew(namespace, ek, in_rows=None, marks=marks)
        else:
            # The first transaction also carries the marks; later ones have none left.
            start = 0
            while start < len(rows):
                end = start + MEMORY_PUT_MAX - len(marks)
                self.renew(namespace, ek, in_rows=rows[start:end], marks=marks)
                start, marks = end, []
        for row in rows:
            state.wrote(row.key, fingerprint(row))
        state.knew(rows)

    def _unwritten_marks(self, namespace: Namespace) -> list[ItemKey]:
        # Refused before anything is written: the marks go in one transaction with the
        # entry and at least one item.
        marks = self.ancestor_marks(namespace)
        if len(marks) > MEMORY_PUT_MAX - 1:
            raise ValueError(
                f"namespace of {len(namespace)} levels: at most {MEMORY_PUT_MAX} levels are "
                "supported (a put marks each level above it in one transaction); use a "
                "shallower namespace"
            )
        unmarked = set(self.state.unmarked(k.pk for k in marks))
        return [k for k in marks if k.pk in unmarked]

    def renew(
        self,
        namespace: Namespace,
        ek: ItemKey,
        in_rows: Sequence[MemoryRow] | None,
        marks: Sequence[ItemKey] = (),
    ) -> None:
        """Renew a namespace's directory entry, with `in_rows` and `marks` in the same
        request."""
        sealed_ns = self.sealer.seal(
            NAMESPACE_TYPE, _ns_text(namespace).encode(), self.entry_aad(ek.sk)
        )
        entry = DirectoryEntry(ek, sealed_ns, uuid.uuid4().hex[:12], int(self.clock()))
        if in_rows is None:
            self.index.directory_renew(entry, marks)
        else:
            self.index.memory_put(in_rows, entry, marks)
        self.state.marked(k.pk for k in marks)
        self.state.saw(entry)
        self.state.wrote(ek, fingerprint(entry))

    def delete(self, namespace: Namespace, key: str) -> bool:
        """Delete one item (and its object); mark its namespace's directory entry
        emptied, or drop it, if the namespace is left empty. True if there was an item."""
        ek = self.entry_key(namespace)
        entry = self.index.directory_get(ek)
        ik = self.item_key(namespace, key)
        old = self.index.memory_delete(ik)
        self.state.wrote(ik, None)
        if old is not None and old.leaf:
            self.engine.delete([object_key(old.key.pk, old.leaf)])
        if entry is not None:
            self.settle(entry, self.pk(namespace))
        return old is not None

    def settle(self, entry: DirectoryEntry, pk: str, now: float | None = None) -> int:
        """Bring an entry in line with its namespace: marked emptied if empty, dropped
        if empty and no lease on it can still be running, unmarked if not empty. Each
        step is conditional on the generation read before the emptiness check, so a
        renewal since wins. 1 if the entry was dropped."""
        state = self.state
        # The time is read before the emptiness check: a drop needs a check made after
        # every lease on the entry ended.
        now = self.clock() if now is None else now
        if self.index.memory_query(pk, limit=1, consistent=True):
            if entry.emptied and self.index.directory_mark(entry, False):
                state.wrote(entry.key, fingerprint(entry._replace(emptied=False)))
            return 0
        state.forget(entry.key.sk)
        if now > entry.renewed + LEASE_SECONDS + DROP_MARGIN_SECONDS:
            if self.index.directory_drop(entry):
                state.wrote(entry.key, None)
                return 1
        elif not entry.emptied and self.index.directory_mark(entry, True):
            state.wrote(entry.key, fingerprint(entry._replace(emptied=True)))
        return 0

    def clear(self, namespaces: Iterable[Namespace] | None) -> int:
        """Delete every item of these namespaces (all of the space's when None)."""
        targets = [ns for ns, _ in self.namespaces()] if namespaces is None else list(namespaces)
        counts = parallel(self._clear_one, targets)
        return sum(counts)

    def _clear_one(self, namespace: Namespace) -> int:
        ek = self.entry_key(namespace)
        entry = self.index.directory_get(ek)
        pk = self.pk(namespace)
        rows = self.index.memory_query(pk, consistent=True)
        gone = parallel(lambda r: self.index.memory_delete(r.key), rows)
        for r in rows:
            self.state.wrote(r.key, None)
        leaves = [object_key(pk, r.leaf) for r in gone if r is not None and r.leaf]
        self.engine.delete(leaves)
        if entry is not None:
            self.settle(entry, pk)
        return sum(1 for r in gone if r is not None)

    def touch(self, rows: Sequence[MemoryRow]) -> None:
        """Push the expiry of items that have a TTL out by it, from now; not an item
        whose expiry that would move by less than `REFRESH_SLACK` of its TTL (at most
        `REFRESH_SLACK_MAX` seconds): reads in a row refresh once."""
        now = self.clock()
        due = [(r, t) for r in rows if (t := _refresh_to(r.expires, r.ttl_minutes, now))]
        parallel(lambda rt: self.index.memory_touch(rt[0].key, rt[1]), due)
        self.state.knew(r._replace(expires=t) for r, t in due)

    # ------------------------------------------------------------ reads

    def live(self, row: MemoryRow, now: float | None = None) -> bool:
        """Not expired (whatever the sweeper has done yet)."""
        return row.expires is None or row.expires > (self.clock() if now is None else now)

    def get(
        self,
        keys: Sequence[tuple[Namespace, str]],
        refresh: Iterable[tuple[Namespace, str]] = (),
    ) -> dict[tuple[Namespace, str], Found]:
        """The live items among `keys`, opened, with the expiries of those in `refresh`
        pushed out (`touch`). A key whose refresh this process knows to be due (it read
        or wrote the item) is one UpdateItem that refreshes and returns it. The rest are
        one BatchGetItem (eventually consistent; a second, consistent, for keys this
        process wrote that it shows otherwise), then the refreshes found due. Then one
        wave of object GETs for large ones."""
        now = self.clock()
        wanted = {self.item_key(ns, key): (ns, key) for ns, key in keys}
        renew = {self.item_key(ns, key) for ns, key in refresh} & wanted.keys()
        direct = [(k, t, ttl) for k in renew for t, ttl in self._known_due(k, now)]
        answers = parallel(lambda d: self.index.memory_refresh(d[0], d[1], d[2], int(now)), direct)
        read = [row for row, _ in answers if row is not None]
        done = {row.key for row, refreshed in answers if refreshed and row is not None}
        # Not answered (gone, or a store that does not return a refused item): read.
        rest = [k for k in wanted if k not in {r.key for r in read}]
        found = self.index.memory_get(rest) if rest else []
        stale = self.state.stale(found, rest)
        if stale:
            fresh = self.index.memory_get(list(stale), consistent=True)
            found = [r for r in found if r.key not in stale] + fresh
        now = self.clock()
        rows = [r for r in read + found if self.live(r, now)]
        self.touch([r for r in rows if r.key in renew and r.key not in done])
        opened = self._open([(wanted[r.key][0], r) for r in rows])
        return {(f.namespace, f.key): f for f in opened}

    def _known_due(self, key: ItemKey, now: float) -> list[tuple[int, float]]:
        # [(new expiry, TTL)] when this process knows the item, unexpired, due a refresh.
        known = self.state.expiry_of(key)
        if known is None or known[1] is None or not (known[0] or 0) > now:
            return []
        target = _refresh_to(known[0], known[1], now)
        return [(target, known[1])] if target else []

    def namespaces(self) -> list[tuple[Namespace, DirectoryEntry]]:
        """Every namespace in the directory, opened (one Query, paged, eventually
        consistent; again consistently if it misses this process's own changes)."""
        pk = directory_pk(self.prefix, self.space)
        entries = self.index.directory(pk)
        if self.state.stale(entries, self.state.written_in(pk)):
            entries = self.index.directory(pk, consistent=True)
        out = []
        for entry in entries:
            what = f"{self._what(())[: -len(' in namespace ()')]} directory entry {entry.key.sk!r}"
            _typ, data = self.sealer.open(entry.blob, self.entry_aad(entry.key.sk), what)
            namespace = tuple(json.loads(data))
            if self.namer.memory_namespace(self.space, namespace) != entry.key.sk:
                raise IntegrityError(f"{what}: it names another namespace; it was moved")
            self.state.saw(entry)
            out.append((namespace, entry))
        self._marks_exist(ns for ns, _ in out)
        return out

    def entry_aad(self, sk: str) -> bytes:
        return identity("memory-directory", self.space, sk)

    def _rows(self, pk: str) -> list[MemoryRow]:
        # Eventually consistent, then consistently if it misses this process's writes.
        rows = self.index.memory_query(pk)
        if self.state.stale(rows, self.state.written_in(pk)):
            rows = self.index.memory_query(pk, consistent=True)
        return rows

    def live_leaves(self, pk: str) -> set[str] | None:
        """The object leaves the items of a namespace's partition reference, read
        consistently (the mark of garbage collection); None if it has no item."""
        rows = self.index.memory_query(pk, consistent=True)
        return {r.leaf for r in rows if r.leaf} if rows else None

    def has_live(self, namespace: Namespace) -> bool:
        """Whether a namespace has a live item (one Query)."""
        now = self.clock()
        return any(self.live(r, now) for r in self._rows(self.pk(namespace)))

    def scan_namespace(self, namespace: Namespace) -> list[Found]:
        """Every live item of one namespace, opened (one Query, paged, eventually
        consistent, as `get`; then one wave of object GETs)."""
        now = self.clock()
        rows = [r for r in self._rows(self.pk(namespace)) if self.live(r, now)]
        return self._open([(namespace, r) for r in rows])

    def search(self, prefix: Namespace) -> list[Found]:
        """Every live item of the namespaces under `prefix` (itself included), opened:
        one Query of the prefix's partition, and only if that partition holds the
        descendants mark, the directory and one Query per namespace below it."""
        found: list[Found] = []
        if prefix:
            pk = self.pk(prefix)
            rows, marked = self.index.memory_search(pk)
            if self.state.stale(rows, self.state.written_in(pk)) or (
                not marked and self.state.has_marked(pk)
            ):
                rows, marked = self.index.memory_search(pk, consistent=True)
            now = self.clock()
            found = self._open([(prefix, r) for r in rows if self.live(r, now)])
            if not marked:
                return found
        below = [
            ns
            for ns, _ in self.namespaces()
            if ns[: len(prefix)] == prefix and len(ns) > len(prefix)
        ]
        return found + [f for batch in parallel(self.scan_namespace, below) for f in batch]

    def _open(self, rows: Sequence[tuple[Namespace, MemoryRow]]) -> list[Found]:
        # Large values in one wave, through the engine's cache (objects never change).
        fetched = self.engine.fetch(
            {
                object_key(r.key.pk, r.leaf): self._what(ns)
                for ns, r in rows
                if r.blob is None and r.leaf
            }
        )
        self.state.knew(r for _, r in rows)
        out = []
        for ns, row in rows:
            blob = row.blob
            if blob is None and row.leaf:
                blob = fetched[object_key(row.key.pk, row.leaf)]
            if blob is None:
                continue
            out.append(self._open_one(ns, row, blob))
        self._marks_exist(f.namespace for f in out)
        return out

    def _marks_exist(self, namespaces: Iterable[Namespace]) -> None:
        # A namespace with an item has a directory entry, and an entry is written with its
        # ancestors' marks, which nothing removes: this process need not write them again.
        self.state.marked(k.pk for ns in set(namespaces) for k in self.ancestor_marks(ns))

    def _open_one(self, namespace: Namespace, row: MemoryRow, blob: bytes) -> Found:
        what = self._what(namespace)
        _typ, payload = self.sealer.open(blob, self.aad(namespace, row.key.sk), what)
        head, _, data = payload.partition(b"\n")
        try:
            header = json.loads(head)
            # [key, type]; in the first layout [namespace, key, type] (the namespace is bound by
            # the associated data either way).
            ns_list, (key, typ) = (
                (header[0], header[1:]) if len(header) == 3 else (namespace, header)
            )
        except (ValueError, TypeError) as exc:
            raise IntegrityError(f"{what}: the payload's header does not parse ({exc})") from exc
        if (
            self.namer.memory_key(self.space, namespace, key) != row.key.sk
            or tuple(ns_list) != namespace
        ):
            raise IntegrityError(
                f"{what}: the payload names key {key!r} in {tuple(ns_list)!r}, which is not "
                "the item it is stored as; it was moved or altered"
            )
        return Found(namespace, key, (typ, data), row)


def _refresh_to(expires: int | None, ttl_minutes: float | None, now: float) -> int | None:
    """The expiry a read at `now` pushes an item's out to, if that is due: it has a TTL,
    and the expiry would move by `REFRESH_SLACK` of it or more (`REFRESH_SLACK_MAX`
    seconds at most); else None."""
    if ttl_minutes is None:
        return None
    target = math.ceil(now + ttl_minutes * 60)
    slack = min(ttl_minutes * 60 * REFRESH_SLACK, REFRESH_SLACK_MAX)
    return target if expires is None or expires < target - slack else None
