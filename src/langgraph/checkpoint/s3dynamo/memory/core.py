"""One memory space (the Store's items, or the node cache's entries) on the saver's table
and bucket, through its blob engine: the sync core that `S3DynamoStore` and
`S3DynamoCache` share. Layout: `layout.memory_pk`; format and costs: docs/FORMAT.md and
docs/ARCHITECTURE.md ("Long-term memory").

Sealing: a payload is sealed with associated data (space, namespace tuple, item name),
where the item name is the keyed hash of (namespace, key); the payload names the key, the
item's version (a nonce each put draws, which the search indexes refer to) and the put's
time, expiry and TTL, and opening checks that the key hashes to the name. A payload moved
to another item, or another namespace, is refused (`IntegrityError`). What a reader
honours of an item's times is sealed: the payload's, its creation stamp (kept by later
puts) and its refresh stamp (the expiry a read pushed out); the clear copies beside them
serve the expiry sweep and may make a reader skip an item, never return one.

A put hands the engine the plans `format.put` makes: large values as objects (behind an
upload intent), then what must precede the items (the search indexes' entries,
`before`), then the items (`directory.py` decides whether with the namespace's directory
entry). Reads go to the table (`reads.py`). Expiry is kept in milliseconds and decided
on every read: an expired item is never returned, whatever the sweep (`ops/memory.py`)
has done yet.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, InvalidConfigError
from langgraph.checkpoint.s3dynamo.layout import (
    DESCENDANTS_SK,
    MANIFEST_SK,
    memory_pk,
    object_key,
)
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.directory import Directory
from langgraph.checkpoint.s3dynamo.memory.reads import Reads
from langgraph.checkpoint.s3dynamo.memory.recent import SpaceState, fingerprint, space_state
from langgraph.checkpoint.s3dynamo.memory.rows import (
    Batch,
    DirectoryEntry,
    Header,
    IndexItem,
    MemoryRow,
    Namespace,
    parse_payload,
    payload,
    row_from,
)
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.table import ItemKey, Written
from langgraph.checkpoint.s3dynamo.waves import parallel

__all__ = ["Batch", "Found", "Namespace", "Space", "Typed", "checked_ttl", "refresh_to"]

Typed = tuple[str, bytes]
# A read leaves an item's expiry alone when refreshing it would move it by less than
# this share of its TTL, and at most this many ms: one write saved per item read again
# soon, for an expiry at most that much earlier than exact.
REFRESH_SLACK, REFRESH_SLACK_MAX_MS = 0.01, 60_000


@dataclass(frozen=True)
class Found:
    """An item read back and opened; `version` is "" for an item of the first layouts.
    Its times are what a reader honours: sealed (its payload's header and stamps), or,
    for an item whose payload predates sealed times, the clear copies (docs/FORMAT.md)."""

    namespace: Namespace
    key: str
    typed: Typed
    row: MemoryRow
    version: str = ""
    created_ms: int = 0
    updated_ms: int = 0
    expires_ms: int | None = None
    ttl_minutes: float | None = None

    def live(self, now_ms: int) -> bool:
        """Not expired at `now_ms`, by its sealed expiry."""
        return self.expires_ms is None or self.expires_ms > now_ms


class Space:
    """The items of one memory space (`"m"`: the Store; `"c"`: the node cache)."""

    def __init__(self, space: str, *, engine: BlobEngine, namer: Namer) -> None:
        self.space = space
        # Seals, places, uploads, caches and journals what the items hold, as the thread
        # store's does; its ports are built on first use.
        self.engine = engine
        # What the space reads of the table; it writes through the engine.
        self.reads = Reads(engine.ports)
        self.namer = namer
        self.sealer = engine.sealer
        self.prefix = engine.prefix
        self.directory = Directory(self)
        # Stamps items and judges expiry (seconds); tests replace it.
        self.clock: Callable[[], float] = time.time

    # ------------------------------------------------------------ names

    @property
    def state(self) -> SpaceState:
        # Shared by every Space of this space on the same table adapter in the process.
        return space_state(self.reads.table, self.prefix, self.space)

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    def pk(self, namespace: Namespace) -> str:
        return memory_pk(
            self.prefix, self.namer.memory_namespace(self.space, namespace), self.space
        )

    def item_key(self, namespace: Namespace, key: str) -> ItemKey:
        return ItemKey(self.pk(namespace), self.namer.memory_key(self.space, namespace, key))

    def aad(self, namespace: Namespace, sk: str) -> bytes:
        return format.item_aad(self.space, namespace, sk)

    def what(self, namespace: Namespace, key: str | None = None) -> str:
        kind = "store item" if self.space == "m" else "cache entry"
        return f"{kind} in namespace {namespace!r}" + (f", key {key!r}" if key else "")

    # ------------------------------------------------------------ writes

    def prepare(
        self, namespace: Namespace, items: Sequence[tuple[str, Typed, float | None]]
    ) -> Batch:
        """Seal and place items of one namespace (a value past the inline rule becomes an
        object); nothing is written."""
        now_ms = self.now_ms()
        batch = Batch(namespace, self.pk(namespace), at_ms=now_ms)
        for key, typed, ttl_minutes in items:
            ik = self.item_key(namespace, key)
            version = os.urandom(6).hex()
            expires = None if ttl_minutes is None else now_ms + round(ttl_minutes * 60_000)
            # The namespace is bound by the associated data; the payload names the key,
            # and the times a reader honours.
            header = Header(key, typed[0], version, now_ms, expires, ttl_minutes)
            raw = payload(header, typed[1])
            blob: bytes | None = self.sealer.seal("memory", raw, self.aad(namespace, ik.sk))
            leaf = None
            # One blob an item: the item's own inline room (`blobs/placement.py`).
            if not self.engine.budget().take(blob or b""):
                leaf = self.namer.memory_leaf(self.space, namespace, key, os.urandom(12).hex())
                batch.uploads.append((object_key(batch.pk, leaf), blob or b""))
                blob = None
            created = self._stamp(namespace, ik.sk, "created", {"c": now_ms})
            batch.rows.append(
                MemoryRow(ik, blob, leaf, expires, ttl_minutes, now_ms, now_ms, created)
            )
            batch.keys.append(key)
            batch.versions.append(version)
        return batch

    def write(self, batch: Batch, before: Sequence[IndexItem] = ()) -> list[MemoryRow | None]:
        """Write a prepared batch (`directory.commit`), objects first, then `before` (the
        index entries that must exist before the items do), then the items: the commit
        point. The items replaced, where known; a replaced value's object is named for
        incremental collection."""
        marks = self.directory.unwritten_marks(batch.namespace)
        replaced = self.directory.commit(batch, before, marks, self.clock())
        state = self.state
        for row in batch.rows:
            state.wrote(row.key, fingerprint(row))
        state.knew(
            (r.key, r.expires_ms, r.ttl_minutes, v)
            for r, v in zip(batch.rows, batch.versions, strict=True)
        )
        orphans = [
            object_key(old.key.pk, old.leaf)
            for old, new in zip(replaced, batch.rows, strict=True)
            if old is not None and old.leaf and old.leaf != new.leaf
        ]
        if orphans:
            self.engine.name_orphans(batch.pk, orphans)
        return replaced

    def put_many(
        self, namespace: Namespace, items: Sequence[tuple[str, Typed, float | None]]
    ) -> list[MemoryRow | None]:
        """Write items of one namespace (`prepare`, then `write`)."""
        return self.write(self.prepare(namespace, items))

    def delete(self, namespace: Namespace, key: str) -> MemoryRow | None:
        """Delete one item; mark its namespace's directory entry emptied, or drop it, if
        the namespace is left without live items. The item as it was, or None if there
        was none; what it leaves (its object, its search entries) is the caller's to clean
        (`forget`)."""
        entry = self.reads.entry(self.directory.key(namespace))
        gone = self.delete_items([self.item_key(namespace, key)])
        old = gone[0] if gone else None
        if entry is not None:
            self.directory.settle(entry, self.pk(namespace), deleted=old)
        return old

    def delete_items(
        self, keys: Sequence[ItemKey], expired_at_ms: int | None = None
    ) -> list[MemoryRow]:
        """Delete items, one request each, in one wave; with `expired_at_ms`, each only
        while it is still expired then (a put or a read that renewed it since keeps it).
        The items deleted, as they were."""
        written = parallel(
            lambda k: self.engine.apply(format.delete_row(k, expired_at_ms), returning="old"),
            keys,
        )
        for key, w in zip(keys, written, strict=True):
            if w.applied:
                self.state.wrote(key, None)
        return [row_from(w.item) for w in written if w.item is not None]

    def forget(self, gone: format.Gone) -> None:
        """Clean what deleted items leave (`format.gone`): their objects, then each
        partition's search entries (one batch each, in one wave)."""
        self.engine.objects.delete(gone.objects)
        parallel(lambda pk: self.engine.batch(*gone.indexes[pk]), sorted(gone.indexes))

    def clear(self, namespaces: Iterable[Namespace] | None) -> int:
        """Delete every item of these namespaces (all of the space's when None)."""
        targets = [ns for ns, _ in self.namespaces()] if namespaces is None else list(namespaces)
        return sum(parallel(self._clear_one, targets))

    def _clear_one(self, namespace: Namespace) -> int:
        entry = self.reads.entry(self.directory.key(namespace))
        pk = self.pk(namespace)
        gone = self.delete_items([r.key for r in self.reads.items(pk, consistent=True)])
        self.forget(format.gone(gone))
        if entry is not None:
            self.directory.settle(entry, pk)
        return len(gone)

    def touch(self, found: Sequence[Found]) -> None:
        """Push the expiry of items read that have a TTL out by it, from now (their
        sealed expiry and TTL; the refresh stamp says it for the version read); not an
        item whose expiry that would move by less than `REFRESH_SLACK` of its TTL (at
        most `REFRESH_SLACK_MAX_MS`): reads in a row refresh once."""
        now_ms = self.now_ms()
        due = [(f, t) for f in found if (t := refresh_to(f.expires_ms, f.ttl_minutes, now_ms))]

        def one(ft: tuple[Found, int]) -> None:
            f, to = ft
            stamp = self._stamp(f.namespace, f.row.key.sk, "refreshed", {"v": f.version, "e": to})
            self.engine.apply(format.touch(f.row.key, to, stamp))

        parallel(one, due)
        self.state.knew((f.row.key, t, f.ttl_minutes, f.version) for f, t in due)

    def _stamp(self, namespace: Namespace, sk: str, what: str, fields: dict[str, object]) -> bytes:
        return format.seal_stamp(self.sealer, self.space, namespace, sk, what, dict(fields))

    # ------------------------------------------------------------ reads

    def live(self, row: MemoryRow, now_ms: int | None = None) -> bool:
        """Not expired (whatever the sweeper has done yet), to the millisecond."""
        return row.expires_ms is None or row.expires_ms > (
            self.now_ms() if now_ms is None else now_ms
        )

    def get(
        self,
        keys: Sequence[tuple[Namespace, str]],
        refresh: Iterable[tuple[Namespace, str]] = (),
        *,
        consistent: bool = False,
    ) -> dict[tuple[Namespace, str], Found]:
        """The live items among `keys`, opened, with the expiries of those in `refresh`
        pushed out (`touch`). A key whose refresh this process knows to be due (it read
        or wrote the item) is one UpdateItem that refreshes and returns it. The rest are
        one BatchGetItem (eventually consistent unless `consistent`; a second,
        consistent, for keys this process wrote that it shows otherwise), then the
        refreshes found due. Then one wave of object GETs for large ones."""
        now_ms = self.now_ms()
        wanted = {self.item_key(ns, key): (ns, key) for ns, key in keys}
        renew = {self.item_key(ns, key) for ns, key in refresh} & wanted.keys()
        direct = [(k, *due) for k in renew for due in self._known_due(k, now_ms)]

        def refreshed_one(d: tuple[ItemKey, int, float, str]) -> Written:
            key, to, ttl, version = d
            stamp = self._stamp(wanted[key][0], key.sk, "refreshed", {"v": version, "e": to})
            return self.engine.apply(
                format.refresh(key, to, ttl, now_ms, stamp),
                returning="new",
                found_on_refusal=True,
            )

        refreshed = parallel(refreshed_one, direct)
        answers = [(w.applied, row_from(w.item)) for w in refreshed if w.item is not None]
        read = [row for _, row in answers]
        done = {row.key for applied, row in answers if applied}
        # Not answered (gone, or a store that does not return a refused item): read.
        rest = [k for k in wanted if k not in {r.key for r in read}]
        found = self.reads.items_at(rest, consistent=consistent) if rest else []
        stale = self.state.stale(found, rest)
        if stale and not consistent:
            fresh = self.reads.items_at(list(stale), consistent=True)
            found = [r for r in found if r.key not in stale] + fresh
        now_ms = self.now_ms()
        opened = self.open_live([(wanted[r.key][0], r) for r in read + found], now_ms)
        self.touch([f for f in opened if f.row.key in renew and f.row.key not in done])
        return {(f.namespace, f.key): f for f in opened}

    def read(
        self, pairs: Sequence[tuple[Namespace, ItemKey]]
    ) -> dict[tuple[Namespace, str], Found]:
        """Live items named by key (as an index names them), opened, by (namespace, sort
        key): one BatchGetItem per 100 (eventually consistent; again consistently for keys
        this process wrote that it shows otherwise), then one wave of object GETs."""
        keys = [k for _, k in pairs]
        namespaces = {k: ns for ns, k in pairs}
        found = self.reads.items_at(keys)
        stale = self.state.stale(found, keys)
        if stale:
            fresh = self.reads.items_at(list(stale), consistent=True)
            found = [r for r in found if r.key not in stale] + fresh
        opened = self.open_live([(namespaces[r.key], r) for r in found], self.now_ms())
        return {(f.namespace, f.row.key.sk): f for f in opened}

    def _known_due(self, key: ItemKey, now_ms: int) -> list[tuple[int, float, str]]:
        # [(new expiry, TTL, version)] when this process knows the item (its sealed
        # expiry, from its own read or write), unexpired, due a refresh.
        known = self.state.expiry_of(key)
        if known is None or known[1] is None or not (known[0] or 0) > now_ms:
            return []
        target = refresh_to(known[0], known[1], now_ms)
        return [(target, known[1], known[2])] if target else []

    def namespaces(self) -> list[tuple[Namespace, DirectoryEntry]]:
        """Every namespace in the directory, opened (`Directory.entries`)."""
        return self.directory.entries()

    def below(self, prefix: Namespace) -> list[Namespace]:
        """The namespaces strictly below `prefix`, from the directory."""
        return [
            ns
            for ns, _ in self.namespaces()
            if ns[: len(prefix)] == prefix and len(ns) > len(prefix)
        ]

    def rows(self, pk: str) -> list[MemoryRow]:
        """Every item of a partition, eventually consistent, then consistently if that
        misses this process's writes."""
        rows = self.reads.items(pk)
        if self.state.stale(rows, self.items_written(pk)):
            rows = self.reads.items(pk, consistent=True)
        return rows

    def items_written(self, pk: str) -> list[ItemKey]:
        """The items of a partition this process wrote: not its tokens, vector log or
        manifest, which a read of the items does not show (sort keys from the mark on)."""
        return [k for k in self.state.written_in(pk) if k.sk < DESCENDANTS_SK]

    def live_leaves(self, pk: str) -> set[str] | None:
        """The object leaves a namespace's partition references, read consistently (the
        mark of garbage collection): its items' large values and the vector segments its
        manifest names (a plain list: no key needed). None if it has neither."""
        rows = self.reads.items(pk, consistent=True)
        manifests = self.reads.index_items(pk, (MANIFEST_SK, MANIFEST_SK), consistent=True)
        if not rows and not manifests:
            return None
        return {r.leaf for r in rows if r.leaf} | {leaf for m in manifests for leaf in m.leaves}

    def scan_namespace(self, namespace: Namespace) -> list[Found]:
        """Every live item of one namespace, opened (one Query, paged, eventually
        consistent, as `get`; then one wave of object GETs)."""
        rows = self.rows(self.pk(namespace))
        return self.open_live([(namespace, r) for r in rows], self.now_ms())

    def scan(self, prefix: Namespace) -> list[Found]:
        """Every live item of the namespaces under `prefix` (itself included), opened:
        one Query of the prefix's partition, and only if that partition holds the
        descendants mark, the directory and one Query per namespace below it."""
        found: list[Found] = []
        if prefix:
            rows, marked = self.prefix_rows(prefix)
            found = self.open_live([(prefix, r) for r in rows], self.now_ms())
            if not marked:
                return found
        return found + [
            f for batch in parallel(self.scan_namespace, self.below(prefix)) for f in batch
        ]

    def prefix_rows(self, prefix: Namespace) -> tuple[list[MemoryRow], bool]:
        """A prefix's own items and whether namespaces lie below it (its partition holds
        the descendants mark): one Query, again consistently if it misses this process's
        writes or a mark this process knows of."""
        pk = self.pk(prefix)
        rows, marked = self.reads.items_and_mark(pk)
        if self.state.stale(rows, self.items_written(pk)) or (
            not marked and self.state.has_marked(pk)
        ):
            rows, marked = self.reads.items_and_mark(pk, consistent=True)
        return rows, marked

    def open_live(self, rows: Sequence[tuple[Namespace, MemoryRow]], now_ms: int) -> list[Found]:
        """The items of `rows` live at `now_ms`, opened: those whose clear expiry says
        so (a hint: an item it calls expired is not fetched), then kept only if their
        sealed expiry says so too."""
        opened = self.open([(ns, r) for ns, r in rows if self.live(r, now_ms)])
        return [f for f in opened if f.live(now_ms)]

    def open(self, rows: Sequence[tuple[Namespace, MemoryRow]]) -> list[Found]:
        """Open items: large values in one wave, through the engine's cache (objects
        never change)."""
        fetched = self.engine.objects.fetch(
            {
                object_key(r.key.pk, r.leaf): self.what(ns)
                for ns, r in rows
                if r.blob is None and r.leaf
            }
        )
        out = []
        for ns, row in rows:
            blob = row.blob
            if blob is None and row.leaf:
                blob = fetched[object_key(row.key.pk, row.leaf)]
            if blob is not None:
                out.append(self._open_one(ns, row, blob))
        self.state.knew((f.row.key, f.expires_ms, f.ttl_minutes, f.version) for f in out)
        self.directory.marks_exist(f.namespace for f in out)
        return out

    def _open_one(self, namespace: Namespace, row: MemoryRow, blob: bytes) -> Found:
        what = self.what(namespace)
        _typ, raw = self.sealer.open(blob, self.aad(namespace, row.key.sk), what)
        header, data = parse_payload(raw, namespace, what)
        if self.namer.memory_key(self.space, namespace, header.key) != row.key.sk:
            raise IntegrityError(
                f"{what}: the payload names key {header.key!r}, which is not the item it is "
                "stored as; it was moved or altered"
            )
        found = Found(namespace, header.key, (header.typ, data), row, header.version)
        if header.at_ms is None:
            # A payload of the layouts before times were sealed: the clear copies.
            return replace(
                found,
                created_ms=row.created_ms,
                updated_ms=row.updated_ms,
                expires_ms=row.expires_ms,
                ttl_minutes=row.ttl_minutes,
            )
        created, expires = header.at_ms, header.expires_ms
        if row.created_seal is not None:
            stamp = self._open_stamp(namespace, row.key.sk, "created", row.created_seal)
            created = _int(stamp.get("c"), what)
        if row.refresh_seal is not None and expires is not None:
            stamp = self._open_stamp(namespace, row.key.sk, "refreshed", row.refresh_seal)
            # A stamp of another version (a read that raced a put) stands for nothing.
            if stamp.get("v") == header.version:
                expires = max(expires, _int(stamp.get("e"), what))
        return replace(
            found,
            created_ms=created,
            updated_ms=header.at_ms,
            expires_ms=expires,
            ttl_minutes=header.ttl_minutes,
        )

    def _open_stamp(self, namespace: Namespace, sk: str, what: str, blob: bytes) -> dict[str, Any]:
        return format.open_stamp(self.sealer, blob, self.space, namespace, sk, what)


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise IntegrityError(f"{what}: a stamp holds {value!r}, not a time in ms")
    return value


def checked_ttl(ttl: object, unit: str, where: str) -> float | None:
    """A TTL as given (`unit`: "minutes" for the Store, "seconds" for the node cache),
    refused before anything is written unless it is None or a finite number of at least
    0; 0 expires at once, as in LangGraph's stores."""
    if ttl is None:
        return None
    number = isinstance(ttl, (int, float)) and not isinstance(ttl, bool)
    if not number or not math.isfinite(cast(float, ttl)) or cast(float, ttl) < 0:
        raise InvalidConfigError(
            f"{where}: expected a TTL in {unit} (a number of at least 0), got {ttl!r}; "
            "pass None to keep it with no expiry"
        )
    return float(cast(float, ttl))


def refresh_to(expires_ms: int | None, ttl_minutes: float | None, now_ms: int) -> int | None:
    """The expiry a read at `now_ms` pushes an item's out to, if that is due: it has a
    TTL, and the expiry would move by `REFRESH_SLACK` of it or more
    (`REFRESH_SLACK_MAX_MS` at most); else None."""
    if ttl_minutes is None:
        return None
    ttl_ms = round(ttl_minutes * 60_000)
    target = now_ms + ttl_ms
    slack = min(ttl_ms * REFRESH_SLACK, REFRESH_SLACK_MAX_MS)
    return target if expires_ms is None or expires_ms < target - slack else None
