"""One memory space's items, each read and write a protocol (`blobs/steps.py`): sealed
and placed for a put, read back by key or by namespace, opened, refreshed and deleted.

Sealing: a payload is sealed with associated data (space, namespace tuple, item name),
where the item name is the keyed hash of (namespace, key); the payload names the key, the
item's version (a nonce each put draws, which the search indexes refer to) and the put's
time, expiry and TTL, and opening checks that the key hashes to the name. A payload moved
to another item, or another namespace, is refused (`IntegrityError`). What a reader
honours of an item's times is sealed: the payload's, its creation stamp (kept by later
puts) and its refresh stamp (the expiry a read pushed out); the clear copies beside them
serve the expiry sweep and may make a reader skip an item, never return one.

Expiry is kept in milliseconds and decided on every read: an expired item is never
returned, whatever the sweep (`ops/memory.py`) has done yet. Reads are eventually
consistent, and read again consistently where they miss what this process wrote
(`recent.py`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs.placement import InlineBudget
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Apply,
    DeleteObjects,
    Fetch,
    Steps,
    each,
    one,
)
from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Batch as BatchStep,
)
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.format.layout import DESCENDANTS_SK, MANIFEST_SK, object_key
from langgraph.checkpoint.s3dynamo.memory import format, reads
from langgraph.checkpoint.s3dynamo.memory.directory import Directory
from langgraph.checkpoint.s3dynamo.memory.names import Names
from langgraph.checkpoint.s3dynamo.memory.recent import SpaceState
from langgraph.checkpoint.s3dynamo.memory.rows import (
    Batch,
    Found,
    Header,
    MemoryRow,
    Namespace,
    parse_payload,
    payload,
    row_from,
)
from langgraph.checkpoint.s3dynamo.table import ItemKey, Written

Typed = tuple[str, bytes]
# A read leaves an item's expiry alone when refreshing it would move it by less than
# this share of its TTL, and at most this many ms: one write saved per item read again
# soon, for an expiry at most that much earlier than exact.
REFRESH_SLACK, REFRESH_SLACK_MAX_MS = 0.01, 60_000


class Items:
    """The items of one space (module docstring): `state` is what this process knows
    of the space, `clock` its time in seconds, `budget` the inline room of one item."""

    def __init__(
        self,
        directory: Directory,
        sealer: Sealer,
        state: Callable[[], SpaceState],
        clock: Callable[[], float],
        budget: Callable[[], InlineBudget],
    ) -> None:
        self.directory = directory
        self.names: Names = directory.names
        self.sealer = sealer
        # What seals a namespace's data: its data subject's key (`Space`), else `sealer`.
        self.sealer_for: Callable[[Namespace], Sealer] = lambda _namespace: sealer
        self.state = state
        self.clock = clock
        self.budget = budget

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    def live(self, row: MemoryRow, now_ms: int) -> bool:
        """Not expired at `now_ms` by its clear expiry (whatever the sweeper has done
        yet), to the millisecond."""
        return row.expires_ms is None or row.expires_ms > now_ms

    # ------------------------------------------------------------ writes

    def prepare(
        self, namespace: Namespace, items: Sequence[tuple[str, Typed, float | None]]
    ) -> Batch:
        """Seal and place items of one namespace (a value past the inline rule becomes an
        object); nothing is written."""
        names = self.names
        pk = names.pk(namespace)
        clock_ms = self.now_ms()
        now_ms = self.state().stamp(pk, clock_ms)
        batch = Batch(namespace, pk, at_ms=now_ms)
        sealer = self.sealer_for(namespace)
        for key, typed, ttl_minutes in items:
            ik = names.item_key(namespace, key)
            version = os.urandom(6).hex()
            # By the clock, not the stamp: a stamp a millisecond past the last one here
            # would keep an item with a TTL of 0 readable for that millisecond.
            expires = None if ttl_minutes is None else clock_ms + round(ttl_minutes * 60_000)
            # The namespace is bound by the associated data; the payload names the key,
            # and the times a reader honours.
            header = Header(key, typed[0], version, now_ms, expires, ttl_minutes)
            raw = payload(header, typed[1])
            blob: bytes | None = sealer.seal("memory", raw, names.aad(namespace, ik.sk))
            leaf = None
            # One blob an item: the item's own inline room (`blobs/placement.py`).
            if not self.budget().take(blob or b""):
                leaf = names.namer.memory_leaf(names.space, namespace, key, os.urandom(12).hex())
                batch.uploads.append((object_key(batch.pk, leaf), blob or b""))
                blob = None
            created = self.stamp(namespace, ik.sk, "created", {"c": now_ms})
            batch.rows.append(
                MemoryRow(ik, blob, leaf, expires, ttl_minutes, now_ms, now_ms, created)
            )
            batch.keys.append(key)
            batch.versions.append(version)
        return batch

    def delete(
        self, keys: Sequence[ItemKey], expired_at_ms: int | None = None
    ) -> Steps[list[MemoryRow]]:
        """Delete items, one request each, in one wave; with `expired_at_ms`, each only
        while it is still expired then (a put or a read that renewed it since keeps it).
        The items deleted, as they were."""
        deletes = [Apply(format.delete_row(k, expired_at_ms), returning="old") for k in keys]
        written: list[Written] = yield from each([one(d) for d in deletes])
        state = self.state()
        for key, w in zip(keys, written, strict=True):
            if w.applied:
                state.wrote(key, None)
        return [row_from(w.item) for w in written if w.item is not None]

    def forget(self, gone: format.Gone) -> Steps[None]:
        """Clean what deleted items leave (`format.gone`): their objects, then each
        partition's search entries (one batch each, in one wave)."""
        yield DeleteObjects(gone.objects)
        yield from each([one(BatchStep(*gone.indexes[pk])) for pk in sorted(gone.indexes)])

    def touch(self, found: Sequence[Found]) -> Steps[None]:
        """Push the expiry of items read that have a TTL out by it, from now (their
        sealed expiry and TTL; the refresh stamp says it for the version read); not an
        item whose expiry that would move by less than `REFRESH_SLACK` of its TTL (at
        most `REFRESH_SLACK_MAX_MS`): reads in a row refresh once."""
        now_ms = self.now_ms()
        due = [(f, t) for f in found if (t := refresh_to(f.expires_ms, f.ttl_minutes, now_ms))]
        touches = [
            Apply(
                format.touch(
                    f.row.key, to, self._refresh_stamp(f.namespace, f.row.key, f.version, to)
                )
            )
            for f, to in due
        ]
        yield from each([one(t) for t in touches])
        self.state().knew((f.row.key, t, f.ttl_minutes, f.version) for f, t in due)

    def stamp(self, namespace: Namespace, sk: str, what: str, fields: dict[str, object]) -> bytes:
        """An item's sealed stamp (`format.seal_stamp`)."""
        return format.seal_stamp(self.sealer, self.names.space, namespace, sk, what, dict(fields))

    def _refresh_stamp(self, namespace: Namespace, key: ItemKey, version: str, to: int) -> bytes:
        return self.stamp(namespace, key.sk, "refreshed", {"v": version, "e": to})

    # ------------------------------------------------------------ reads by key

    def get(
        self,
        keys: Sequence[tuple[Namespace, str]],
        refresh: Iterable[tuple[Namespace, str]] = (),
        consistent: bool = False,
    ) -> Steps[dict[tuple[Namespace, str], Found]]:
        """The live items among `keys`, opened, with the expiries of those in `refresh`
        pushed out (`touch`). A key whose refresh this process knows to be due (it read
        or wrote the item) is one UpdateItem that refreshes and returns it. The rest are
        one BatchGetItem (eventually consistent unless `consistent`; a second,
        consistent, for keys this process wrote that it shows otherwise), then the
        refreshes found due. Then one wave of object GETs for large ones."""
        now_ms = self.now_ms()
        wanted = {self.names.item_key(ns, key): (ns, key) for ns, key in keys}
        renew = {self.names.item_key(ns, key) for ns, key in refresh} & wanted.keys()
        refreshes = [
            Apply(
                format.refresh(
                    k, to, ttl, now_ms, self._refresh_stamp(wanted[k][0], k, version, to)
                ),
                returning="new",
                found_on_refusal=True,
            )
            for k in renew
            for to, ttl, version in self._known_due(k, now_ms)
        ]
        refreshed: list[Written] = yield from each([one(r) for r in refreshes])
        answers = [(w.applied, row_from(w.item)) for w in refreshed if w.item is not None]
        read = [row for _, row in answers]
        done = {row.key for applied, row in answers if applied}
        # Not answered (gone, or a store that does not return a refused item): read.
        rest = [k for k in wanted if k not in {r.key for r in read}]
        found = (yield from self._fresh(rest, consistent)) if rest else []
        opened = yield from self.open_live(
            [(wanted[r.key][0], r) for r in read + found], self.now_ms()
        )
        yield from self.touch([f for f in opened if f.row.key in renew and f.row.key not in done])
        return {(f.namespace, f.key): f for f in opened}

    def read(
        self, pairs: Sequence[tuple[Namespace, ItemKey]]
    ) -> Steps[dict[tuple[Namespace, str], Found]]:
        """Live items named by key (as an index names them), opened, by (namespace, sort
        key): one BatchGetItem per 100 (eventually consistent; again consistently for keys
        this process wrote that it shows otherwise), then one wave of object GETs."""
        namespaces = {k: ns for ns, k in pairs}
        found = yield from self._fresh([k for _, k in pairs], False)
        opened = yield from self.open_live([(namespaces[r.key], r) for r in found], self.now_ms())
        return {(f.namespace, f.row.key.sk): f for f in opened}

    def _fresh(self, keys: list[ItemKey], consistent: bool) -> Steps[list[MemoryRow]]:
        """The items at `keys`; read again consistently, unless read so already, those
        this process wrote that the read shows otherwise."""
        found = yield from reads.items_at(keys, consistent=consistent)
        stale = self.state().stale(found, keys)
        if stale and not consistent:
            fresh = yield from reads.items_at(list(stale), consistent=True)
            found = [r for r in found if r.key not in stale] + fresh
        return found

    def _known_due(self, key: ItemKey, now_ms: int) -> list[tuple[int, float, str]]:
        # [(new expiry, TTL, version)] when this process knows the item (its sealed
        # expiry, from its own read or write), unexpired, due a refresh.
        known = self.state().expiry_of(key)
        if known is None or known[1] is None or not (known[0] or 0) > now_ms:
            return []
        target = refresh_to(known[0], known[1], now_ms)
        return [(target, known[1], known[2])] if target else []

    # ------------------------------------------------------------ reads by namespace

    def below(self, prefix: Namespace) -> Steps[list[Namespace]]:
        """The namespaces strictly below `prefix`, from the directory."""
        found = yield from self.directory.entries()
        return [ns for ns, _ in found if ns[: len(prefix)] == prefix and len(ns) > len(prefix)]

    def rows(self, pk: str) -> Steps[list[MemoryRow]]:
        """Every item of a partition, eventually consistent, then consistently if that
        misses this process's writes."""
        rows = yield from reads.items(pk)
        if self.state().stale(rows, self.written(pk)):
            rows = yield from reads.items(pk, consistent=True)
        return rows

    def written(self, pk: str) -> list[ItemKey]:
        """The items of a partition this process wrote: not its tokens, vector log or
        manifest, which a read of the items does not show (sort keys from the mark on)."""
        return [k for k in self.state().written_in(pk) if k.sk < DESCENDANTS_SK]

    def live_leaves(self, pk: str) -> Steps[set[str] | None]:
        """The object leaves a namespace's partition references, read consistently (the
        mark of garbage collection): its items' large values and the vector segments its
        manifest names (a plain list: no key needed). None if it has neither."""
        rows = yield from reads.items(pk, consistent=True)
        manifests = yield from reads.index_items(pk, (MANIFEST_SK, MANIFEST_SK), consistent=True)
        if not rows and not manifests:
            return None
        return {r.leaf for r in rows if r.leaf} | {leaf for m in manifests for leaf in m.leaves}

    def scan_namespace(self, namespace: Namespace) -> Steps[list[Found]]:
        """Every live item of one namespace, opened (one Query, paged, eventually
        consistent, as `get`; then one wave of object GETs)."""
        rows = yield from self.rows(self.names.pk(namespace))
        return (yield from self.open_live([(namespace, r) for r in rows], self.now_ms()))

    def scan(self, prefix: Namespace) -> Steps[list[Found]]:
        """Every live item of the namespaces under `prefix` (itself included), opened:
        one Query of the prefix's partition, and only if that partition holds the
        descendants mark, the directory and one Query per namespace below it."""
        found: list[Found] = []
        if prefix:
            rows, marked = yield from self._prefix_rows(prefix)
            found = yield from self.open_live([(prefix, r) for r in rows], self.now_ms())
            if not marked:
                return found
        below = yield from self.below(prefix)
        scanned = yield from each([self.scan_namespace(ns) for ns in below])
        return found + [f for batch in scanned for f in batch]

    def _prefix_rows(self, prefix: Namespace) -> Steps[tuple[list[MemoryRow], bool]]:
        """A prefix's own items and whether namespaces lie below it (its partition holds
        the descendants mark): one Query, again consistently if it misses this process's
        writes or a mark this process knows of."""
        pk, state = self.names.pk(prefix), self.state()
        rows, marked = yield from reads.items_and_mark(pk)
        if state.stale(rows, self.written(pk)) or (not marked and state.has_marked(pk)):
            rows, marked = yield from reads.items_and_mark(pk, consistent=True)
        return rows, marked

    # ------------------------------------------------------------ opening

    def open_live(
        self, rows: Sequence[tuple[Namespace, MemoryRow]], now_ms: int
    ) -> Steps[list[Found]]:
        """The items of `rows` live at `now_ms`, opened: those whose clear expiry says
        so (a hint: an item it calls expired is not fetched), then kept only if their
        sealed expiry says so too."""
        opened = yield from self.open([(ns, r) for ns, r in rows if self.live(r, now_ms)])
        return [f for f in opened if f.live(now_ms)]

    def open(self, rows: Sequence[tuple[Namespace, MemoryRow]]) -> Steps[list[Found]]:
        """Open items: large values in one wave, through the engine's cache (objects
        never change)."""
        needed = {
            object_key(r.key.pk, r.leaf): self.names.what(ns)
            for ns, r in rows
            if r.blob is None and r.leaf
        }
        fetched: dict[str, bytes] = yield Fetch(needed)
        out = []
        for ns, row in rows:
            blob = row.blob
            if blob is None and row.leaf:
                blob = fetched[object_key(row.key.pk, row.leaf)]
            if blob is not None:
                out.append(self.open_one(ns, row, blob))
        self.state().knew((f.row.key, f.expires_ms, f.ttl_minutes, f.version) for f in out)
        self.directory.marks_exist(f.namespace for f in out)
        return out

    def open_one(self, namespace: Namespace, row: MemoryRow, blob: bytes) -> Found:
        """One item opened from its payload `blob` (inline, or its object's), and its
        stamps: what a read honours of it."""
        what = self.names.what(namespace)
        _typ, raw = self.sealer.open(blob, self.names.aad(namespace, row.key.sk), what)
        header, data = parse_payload(raw, namespace, what)
        if self.names.namer.memory_key(self.names.space, namespace, header.key) != row.key.sk:
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
        return format.open_stamp(self.sealer, blob, self.names.space, namespace, sk, what)


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise IntegrityError(f"{what}: a stamp holds {value!r}, not a time in ms")
    return value


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
