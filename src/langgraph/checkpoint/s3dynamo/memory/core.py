"""One memory space (the Store's items, or the node cache's entries) on the saver's table
and bucket, behind one API: `Space`, the sync core that `S3DynamoStore`,
`S3DynamoCache` and their maintenance (`ops/memory.py`) call; its parts are private.
Each part writes its reads and writes as protocols (`blobs/steps.py`), which the Space
runs on its blob engine:

    items.py         the items: sealed and placed, read by key or namespace, opened
    writes.py        the put, the Store's deletes (of items, of a namespace prefix),
                     the cache's clear, the sweep's deletes
    directory.py     the namespace directory, its leases and descendants marks
    tokens.py        the Store's filter tokens
    vector_index.py  the Store's vector indexes; vectors.py: their int8 vectors
    search.py        how the Store answers a search
    sealed.py        the one enumeration of a namespace's sealed blobs
    reads.py         what memory reads of the table
    format.py        what it writes, and what each sealed blob is bound to
    rows.py          its items as plain values; recent.py: what a process knows of them
    names.py         where a space's items live: partitions and keys

Layout: `layout.memory_pk`; format and costs: docs/FORMAT.md and docs/ARCHITECTURE.md
("Long-term memory").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from langgraph.checkpoint.s3dynamo.backoff import CONFLICT_ATTEMPTS, tries
from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, Steps
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer, SealingKey
from langgraph.checkpoint.s3dynamo.blobs.steps import ListObjects, each
from langgraph.checkpoint.s3dynamo.errors import (
    InvalidConfigError,
    ObjectNotFoundError,
    StorageError,
    SubjectErasedError,
    SubjectKeyChangedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import VECTOR_SK_RANGE, memory_scope, object_key
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.keys.subjects import SubjectKey, Subjects, sealing_key
from langgraph.checkpoint.s3dynamo.memory import reads, sealed
from langgraph.checkpoint.s3dynamo.memory.directory import Directory
from langgraph.checkpoint.s3dynamo.memory.items import Items
from langgraph.checkpoint.s3dynamo.memory.names import Names
from langgraph.checkpoint.s3dynamo.memory.recent import SpaceState
from langgraph.checkpoint.s3dynamo.memory.rows import DirectoryEntry, Found, MemoryRow, Namespace
from langgraph.checkpoint.s3dynamo.memory.sealed import Sealed, Stored
from langgraph.checkpoint.s3dynamo.memory.search import Hit, Searcher
from langgraph.checkpoint.s3dynamo.memory.tokens import FilterTokens
from langgraph.checkpoint.s3dynamo.memory.vector_index import OpenBody, VectorIndex
from langgraph.checkpoint.s3dynamo.memory.writes import NewItem, Writes
from langgraph.checkpoint.s3dynamo.table import ItemKey, Write, Written

__all__ = ["Found", "Indexes", "Namespace", "NewItem", "Sealed", "Space", "Stored", "checked_ttl"]

_R = TypeVar("_R")


@dataclass(frozen=True)
class Indexes:
    """What a space's searches go through (the Store's): filter tokens of `fields`, and,
    with `vectors`, a vector index; `open_body` is the Store's opener of an item's
    payload, `{"value": ..., "vectors": ...}`."""

    fields: Sequence[str] = ()
    open_body: OpenBody | None = None
    vectors: bool = False


class Space:
    """The items of one memory space (`"m"`: the Store; `"c"`: the node cache), on a
    deployment's blob engine (module docstring). Constructing one makes no request."""

    def __init__(
        self,
        space: str,
        *,
        engine: BlobEngine,
        namer: Namer,
        indexes: Indexes | None = None,
        subjects: Subjects | None = None,
    ) -> None:
        indexes = indexes or Indexes()
        self.space = space
        self._engine = engine
        self._sealer = engine.sealer
        # Whose data a namespace is (the Store's: `keys/subjects.py`); None: nobody's.
        self._subjects = subjects if subjects is not None and subjects.declared else None
        self._names = Names(space, engine.prefix, namer)
        # Stamps items and judges expiry (seconds); tests replace it.
        self.clock: Callable[[], float] = time.time
        now = lambda: self.clock()  # noqa: E731 - read when called: tests replace the clock
        self._directory = Directory(self._names, self._sealer, self._state, now)
        self._directory.sealer_for = self._sealer_for
        self._items = Items(self._directory, self._sealer, self._state, now, engine.budget)
        self._items.sealer_for = self._sealer_for
        self._tokens = FilterTokens(self._names, indexes.fields)
        open_body, value_of = indexes.open_body, _value_of(indexes.open_body)
        self._vectors = (
            VectorIndex(self._items, engine.opened, open_body)
            if indexes.vectors and open_body is not None
            else None
        )
        self._writes = Writes(self._items, self._tokens, self._vectors, value_of)
        self._writes.subject_writes = self._subject_writes
        self._searcher = Searcher(self._items, self._tokens, self._vectors, value_of, self._run)

    def _run(self, protocol: Steps[_R]) -> _R:
        """Run a protocol of the space's parts on the engine."""
        return self._engine.run(protocol)

    def _state(self) -> SpaceState:
        # Shared by every Space of this space on the same table adapter in the process.
        return self._engine.shared(("memory", self._names.prefix, self.space), SpaceState)

    # ------------------------------------------------------------ names, time

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    def pk(self, namespace: Namespace) -> str:
        """The partition of a namespace's items."""
        return self._names.pk(namespace)

    def item_key(self, namespace: Namespace, key: str) -> ItemKey:
        return self._names.item_key(namespace, key)

    # ------------------------------------------------------------ the contracts

    def get(
        self,
        keys: Sequence[tuple[Namespace, str]],
        refresh: Iterable[tuple[Namespace, str]] = (),
        *,
        consistent: bool = False,
    ) -> dict[tuple[Namespace, str], Found]:
        """The live items among `keys`, opened, with the expiries of those in `refresh`
        pushed out (`Items.get`)."""
        return self._run(self._items.get(keys, refresh, consistent))

    def put(self, writes: Mapping[Namespace, Sequence[NewItem]]) -> None:
        """Write items, one protocol per namespace (`Writes.put`), the namespaces in one
        wave. A data subject's are sealed under its key and checked against its fence;
        found changed since they were sealed (`SubjectKeyChangedError`: an erasure ended,
        or another process made the subject's first key), sealed again and sent once
        more."""
        for attempt in range(2):
            for namespace in writes:  # a subject's refusal comes before any namespace's write
                self._subject(namespace)
            try:
                self._run(each([self._writes.put(ns, new) for ns, new in writes.items()]))
                self._landed(writes)
                return
            except SubjectKeyChangedError:
                assert self._subjects is not None
                for namespace in writes:  # their entries are renewed with the new key
                    if (subject := self._subjects.of_namespace(namespace)) is not None:
                        self._subjects.forget(self._subjects.token(subject))
                    self._state().forget(self._names.entry_key(namespace).sk)
                if attempt:
                    raise

    def _landed(self, namespaces: Iterable[Namespace]) -> None:
        """A put's commits went through: a subject key one of them made is the subject's
        now, so later puts check its fence instead of making it again (and renewing the
        namespace's entry each time, as a new key needs)."""
        for namespace in namespaces:
            key, _, fresh = self._subject(namespace)
            if key is not None and fresh:
                assert self._subjects is not None
                self._subjects.committed(key)

    def _subject(self, namespace: Namespace) -> tuple[SubjectKey | None, list[Write], bool]:
        """The key of the data subject a namespace is of (None: none), what a put into it
        carries (`Subjects.for_namespace`), and whether the key is new."""
        if self._subjects is None:
            return None, [], False
        return self._subjects.for_namespace(namespace, self._names.pk(namespace))

    def _sealer_for(self, namespace: Namespace) -> Sealer:
        """What seals a namespace's items, vectors and name: its subject's key, if any."""
        key, _, _ = self._subject(namespace)
        return self._sealer.under(sealing_key(key))

    def _subject_writes(self, namespace: Namespace) -> list[Write]:
        """What a put into a namespace carries; under a new key, with its entry renewed
        (its lease forgotten here), so that its name is sealed under the key in force."""
        _, writes, fresh = self._subject(namespace)
        if fresh:
            self._state().forget(self._names.entry_key(namespace).sk)
        return writes

    def put_many(self, namespace: Namespace, new: Sequence[NewItem]) -> None:
        """Write items of one namespace (`put`)."""
        self.put({namespace: new})

    def delete(self, deletes: Mapping[Namespace, Sequence[str]]) -> None:
        """Delete items by key, one protocol per namespace (`Writes.delete`), the
        namespaces in one wave."""
        self._run(each([self._writes.delete(ns, keys) for ns, keys in deletes.items()]))

    def namespaces_of(self, pks: Sequence[str], erased: list[str] | None = None) -> list[Namespace]:
        """The namespaces of these partitions that are in the directory, each entry read
        (one GetItem each, in one wave) and opened; one an erasure made unreadable (a
        backup restored after it) left out, its partition noted in `erased`."""
        named = [(pk, scope[2]) for pk in pks if (scope := memory_scope(pk)) and scope[2]]
        keys = [ItemKey(self._names.directory, name) for _, name in named]
        entries = self._run(each([reads.entry(k) for k in keys]))
        found: list[Namespace] = []
        for (pk, _), entry in zip(named, entries, strict=True):
            try:
                if entry is not None:
                    found.append(self._directory.namespace_of(entry))
            except SubjectErasedError:
                if erased is not None:
                    erased.append(pk)
        return found

    def items_of(self, namespace: Namespace) -> list[Found]:
        """Every live item of one namespace, opened (`Items.scan_namespace`)."""
        return self._run(self._items.scan_namespace(namespace))

    def drop_partitions(self, pks: Sequence[str]) -> int:
        """Delete everything of the namespaces of these partitions, opening nothing
        (`Writes.drop_partitions`: an erasure's); how many items."""
        return self._run(self._writes.drop_partitions(pks))

    def clear(self, namespaces: Iterable[Namespace] | None) -> int:
        """Delete every item of these namespaces (all of the space's when None)."""
        return self._run(self._writes.clear(None if namespaces is None else list(namespaces)))

    def under(self, prefix: Namespace) -> dict[Namespace, int]:
        """What `delete_namespace(prefix)` would remove, read as it reads it (nothing
        changes): each namespace at or below `prefix` that holds anything, with how many
        items it stores (expired ones not yet swept included) (`Writes.under`)."""
        return {h.namespace: len(h.rows) for h in self._run(self._writes.under(prefix))}

    def delete_namespace(self, prefix: Namespace) -> int:
        """Delete every item of the namespace `prefix` and of every namespace below it,
        with their objects, search indexes and directory entries; how many items
        (`Writes.delete_namespace`)."""
        return self._run(self._writes.delete_namespace(prefix))

    def list_namespaces(self) -> list[Namespace]:
        """The namespaces that have a live item (`Directory.listed`)."""
        return self._run(self._directory.listed(self.now_ms))

    def search(
        self,
        prefix: Namespace,
        *,
        query: Sequence[float] | None,
        filter: Mapping[str, Any] | None,
        offset: int,
        limit: int,
    ) -> list[Hit]:
        """A search of the namespaces under `prefix` (`search.py`)."""
        return self._searcher.search(prefix, query=query, filter=filter, offset=offset, limit=limit)

    def touch(self, found: Sequence[Found]) -> None:
        """Push out the expiries of items read that are due a refresh (`Items.touch`)."""
        self._run(self._items.touch(found))

    def check_dimensions(self, embedded: Mapping[tuple[Namespace, str], Mapping[str, Any]]) -> None:
        """Refuse, before anything is written, puts whose vectors have other dimensions
        than their namespace's index holds (`VectorIndex.check_puts`)."""
        if self._vectors is not None and embedded:
            self._run(self._vectors.check_puts(embedded))

    # ------------------------------------------------------------ maintenance

    def namespaces(self) -> list[tuple[Namespace, DirectoryEntry]]:
        """Every namespace in the directory, opened (`Directory.entries`)."""
        return self._run(self._directory.entries())

    def entries(self) -> list[DirectoryEntry]:
        """Every entry of the directory as stored (read consistently; none opened)."""
        return self._run(reads.entries(self._names.directory, consistent=True))

    def namespace_of(self, entry: DirectoryEntry) -> Namespace:
        """The namespace a directory entry names, opened (`Directory.namespace_of`)."""
        return self._directory.namespace_of(entry)

    def ancestor_marks(self, namespace: Namespace) -> list[ItemKey]:
        """The descendants marks a namespace's entry needs."""
        return self._names.ancestor_marks(namespace)

    def renew(self, namespace: Namespace, marks: Sequence[ItemKey] = ()) -> None:
        """Renew a namespace's directory entry, with the descendants `marks`."""
        self._run(self._directory.renew(namespace, marks))

    def expire(self, at: float) -> tuple[int, int]:
        """The expiry sweep at `at` (seconds): (items deleted, namespaces dropped)
        (`Writes.expire`)."""
        return self._run(self._writes.expire(at))

    def expired(self, at_ms: int) -> list[MemoryRow]:
        """The items expired at `at_ms`, as the sweep finds them (nothing changes)."""
        return self._run(self._writes.expired(at_ms))[1]

    def expiry(self, namespace: Namespace, key: str) -> int | None:
        """The clear expiry of a stored item, expired or not (ms), read consistently;
        None for an item without one, or not stored."""
        rows = self._run(reads.items_at([self.item_key(namespace, key)], consistent=True))
        return rows[0].expires_ms if rows else None

    def live_leaves(self, pk: str) -> set[str] | None:
        """The object leaves a namespace's partition references now (`Items.live_leaves`):
        garbage collection's mark."""
        return self._run(self._items.live_leaves(pk))

    def sweep_objects(self, pk: str, cutoff: datetime) -> int:
        """Delete the objects of a namespace no item references, older than `cutoff`
        (`blobs/collect.py`); how many."""
        return self._engine.collector.sweep(pk, self.live_leaves, cutoff)

    def usage(self, namespace: Namespace) -> tuple[list[MemoryRow], dict[str, int]]:
        """A namespace's items (one Query, eventually consistent), and the size of each
        object it references (`live_leaves`, then a listing of its objects if it has
        any)."""
        pk = self.pk(namespace)
        rows = self._run(reads.items(pk))
        leaves = {object_key(pk, leaf) for leaf in self.live_leaves(pk) or ()}
        listed = self._engine.do(ListObjects(pk)) if leaves else []
        return rows, {o.key: o.size for o in listed if o.key in leaves}

    def stored(
        self,
        found: tuple[Namespace, DirectoryEntry | None],
        bounds: tuple[str, str],
        listed: Iterable[str] | None = None,
    ) -> Stored:
        """What a namespace holds, read consistently, objects from the bucket
        (`sealed.read`)."""
        shown = None if listed is None else set(listed)
        return self._run(sealed.read(self._names, found, bounds, shown))

    @staticmethod
    def sealed(stored: Stored) -> list[Sealed]:
        """Every sealed blob of what was read (`sealed.sealed`)."""
        return list(sealed.sealed(stored))

    def open(self, namespace: Namespace, s: Sealed) -> object:
        """One sealed blob of `namespace` (read: not None) opened and authenticated, as a
        read opens it: an item's payload with its stamps, checked to name the item
        (`Items.open`). An `S3DynamoError` if it does not open."""
        assert s.blob is not None
        if s.kind == "item" and s.row is not None:
            whole = s.row._replace(blob=s.blob, leaf=None)
            return self._run(self._items.open([(namespace, whole)]))[0]
        return self._sealer.open(s.blob, s.aad, s.what)

    def reseal(self, found: tuple[Namespace, DirectoryEntry], key: SealingKey | None = None) -> int:
        """Seal again under the active key (with `key`, under that key: a data subject's)
        what one namespace holds (`sealed.resealed`): its directory entry, its items,
        their stamps and objects, and in the Store its vector index. How many blobs."""
        missing: set[str] = set()
        for _ in tries(CONFLICT_ATTEMPTS):
            try:
                stored = self.stored(found, VECTOR_SK_RANGE)
            except ObjectNotFoundError as exc:
                # A delete or expiry removes an item, then its object: read again. The
                # same object named and missing twice is that object's loss.
                if exc.key in missing:
                    raise
                missing.add(exc.key)
                continue
            plan = sealed.resealed(stored, self._sealer.under(key))
            written: list[Written] = self._engine.do(plan)
            return len(plan.overwrites) + sum(w.applied for w in written)
        raise StorageError(
            f"reencrypt of namespace {found[0]!r}: its items kept changing under concurrent "
            f"deletes for {CONFLICT_ATTEMPTS} attempts; run it again when it is quieter"
        )


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


def _value_of(open_body: OpenBody | None) -> Callable[[Found], Any]:
    """An opened item's value (`{"value": ...}` of its payload), for filters and tokens;
    a space whose items have none (the node cache) never asks."""
    if open_body is None:
        return lambda found: None
    return lambda found: open_body(found)["value"]
