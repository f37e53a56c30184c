"""A space's writes, each one protocol (`blobs/steps.py`) whose order keeps the Store's
invariants (docs/RELIABILITY.md, "The Store's namespace directory", "The Store's vector
index"): the put of the Store and the node cache, the Store's delete and namespace
delete, the node cache's clear, and the expiry sweep.

A put of one namespace's items: sealed and placed (`Items.prepare`); the search entries
that must exist before the items (their filter tokens, their vector log entry); then the
items, alone under a lease on the namespace's directory entry or with the entry renewed
(`Directory.commit`), behind one intent naming the objects they upload and those of the
values they replace where last seen (left for incremental collection); last, the tokens
of replaced values that the new ones do not repeat. A delete of one item: its entry and
the item read, the item's object named for collection, the item deleted, the entry
settled (`Directory.settle`); then what the items deleted leave (`format.gone`). The
sweep finds expired items with one consistent Query of the directory, then one Query of
each namespace's partition, in one wave; it opens nothing (a namespace's partition is
named by its entry), so it needs no keys. The objects of the items found are named for
collection, one intent a namespace; each item is then deleted only while still expired;
then what it leaves, then the entries of namespaces left empty are settled. A namespace
delete reads each namespace at and below its prefix consistently (the descendants mark
sends it to the directory), then, per namespace: the objects it references named for
collection, its items deleted, their objects and its search indexes, its entry settled
(docs/RELIABILITY.md, "Deleting a namespace of the Store").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.blobs.steps import Batch as BatchStep
from langgraph.checkpoint.s3dynamo.blobs.steps import DeleteObjects, NameOrphans, Steps, each, one
from langgraph.checkpoint.s3dynamo.format.layout import (
    MANIFEST_SK,
    is_token_of,
    memory_scope,
    object_key,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory import format, reads
from langgraph.checkpoint.s3dynamo.memory.items import Items, Typed
from langgraph.checkpoint.s3dynamo.memory.recent import (
    DROP_MARGIN_SECONDS,
    LEASE_SECONDS,
    fingerprint,
)
from langgraph.checkpoint.s3dynamo.memory.rows import (
    DirectoryEntry,
    Found,
    IndexItem,
    MemoryRow,
    Namespace,
)
from langgraph.checkpoint.s3dynamo.memory.tokens import FilterTokens
from langgraph.checkpoint.s3dynamo.memory.vector_index import VectorIndex
from langgraph.checkpoint.s3dynamo.table import Write


class NewItem(NamedTuple):
    """An item a put writes: its key, its payload serialized, its TTL in minutes, and
    for the Store's search indexes its value and its vectors by field path."""

    key: str
    typed: Typed
    ttl_minutes: float | None
    value: Any = None
    vectors: Mapping[str, Sequence[float]] = {}


class Held(NamedTuple):
    """What a namespace held when a delete of it read it (consistently): its directory
    entry (None: it has none), its items, and its search index items."""

    namespace: Namespace
    entry: DirectoryEntry | None
    rows: list[MemoryRow]
    indexes: list[IndexItem]
    # The namespace's partition, where its namespace is not known (an erasure's).
    pk: str = ""


class Writes:
    """The writes of one space (module docstring), over its `items`, its filter `tokens`
    and its vector index (None: it has none); `value_of` is an opened item's value."""

    def __init__(
        self,
        items: Items,
        tokens: FilterTokens,
        vectors: VectorIndex | None,
        value_of: Callable[[Found], Any],
    ) -> None:
        self.items = items
        self.tokens = tokens
        self.vectors = vectors
        self.value_of = value_of
        # What a put into a namespace carries in its commit: its data subject's fence
        # and the item naming it the subject's (`Space`); none without a subject.
        self.subject_writes: Callable[[Namespace], list[Write]] = lambda _namespace: []

    def put(self, namespace: Namespace, new: Sequence[NewItem]) -> Steps[None]:
        """Write items of one namespace (module docstring)."""
        items, tokens = self.items, self.tokens
        batch = items.prepare(namespace, [(n.key, n.typed, n.ttl_minutes) for n in new])
        before = tokens.entries(batch, [n.value for n in new])
        if self.vectors is not None:
            before += self.vectors.log_entries(batch, [n.vectors for n in new])
        # Refused before anything is written: a namespace too deep for one transaction.
        marks = items.directory.unwritten_marks(namespace)
        subject = self.subject_writes(namespace)
        replaced = yield from items.directory.commit(batch, before, marks, items.clock(), subject)
        state = items.state()
        for row in batch.rows:
            state.wrote(row.key, fingerprint(row))
        state.holds(batch.rows)
        state.knew(
            (r.key, r.expires_ms, r.ttl_minutes, v)
            for r, v in zip(batch.rows, batch.versions, strict=True)
        )
        if tokens.fields:
            # The tokens of values replaced (inline ones: no request to open them).
            old = [(namespace, r) for r in replaced if r is not None and r.blob is not None]
            opened = yield from items.open(old)
            stale = tokens.stale(namespace, [(f, self.value_of(f)) for f in opened], before)
            yield BatchStep(deletes=stale)

    def delete(self, namespace: Namespace, keys: Sequence[str]) -> Steps[None]:
        """Delete items of one namespace, one after the other (module docstring), then
        what they leave: their objects, their filter tokens, and where the namespace has
        a vector index, tombstones telling it they are gone."""
        items = self.items
        gone: list[MemoryRow] = []
        for key in keys:
            gone += yield from self._delete_one(namespace, key)
        if not gone:
            return
        stale: list[ItemKey] = []
        if self.tokens.fields:
            # The tokens of values deleted (inline ones: no request to open them).
            opened = yield from items.open([(namespace, r) for r in gone if r.blob is not None])
            stale = self.tokens.stale(namespace, [(f, self.value_of(f)) for f in opened], [])
        indexed = [items.names.pk(namespace)] if self.vectors else []
        yield from items.forget(self._gone(gone, stale, indexed, items.now_ms()))

    def _delete_one(self, namespace: Namespace, key: str) -> Steps[list[MemoryRow]]:
        """Delete one item, its object named for collection first (read with its entry);
        mark its namespace's directory entry emptied, or drop it, if the namespace is left
        without live items. The item as it was, if there was one."""
        items, directory = self.items, self.items.directory
        item_key = items.names.item_key(namespace, key)
        entry, found = yield from reads.entry_and_items(directory.key(namespace), [item_key])
        gone = yield from self._delete(list(found.values()), [item_key])
        if entry is not None:
            pk = items.names.pk(namespace)
            yield from directory.settle(entry, pk, deleted=gone[0] if gone else None)
        return gone

    def _delete(
        self, read: Sequence[MemoryRow], keys: Sequence[ItemKey], expired_at_ms: int | None = None
    ) -> Steps[list[MemoryRow]]:
        """Delete items (`Items.delete`), the objects of those `read` named for collection
        first, and after, one another process wrote since the read (as a put names what
        it never saw). The items deleted, as they were."""
        yield from _name_objects(read)
        gone = yield from self.items.delete(keys, expired_at_ms)
        seen = {r.leaf for r in read}
        yield from _name_objects([r for r in gone if r.leaf not in seen])
        return gone

    def clear(self, namespaces: Sequence[Namespace] | None) -> Steps[int]:
        """Delete every item of these namespaces (all of the space's when None), the
        namespaces in one wave; how many."""
        if namespaces is None:
            namespaces = [ns for ns, _ in (yield from self.items.directory.entries())]
        cleared = yield from each([self._clear_one(ns) for ns in namespaces])
        return sum(cleared)

    def _clear_one(self, namespace: Namespace) -> Steps[int]:
        items, directory = self.items, self.items.directory
        entry = yield from reads.entry(directory.key(namespace))
        pk = items.names.pk(namespace)
        rows = yield from reads.items(pk, consistent=True)
        gone = yield from self._delete(rows, [r.key for r in rows])
        yield from items.forget(format.gone(gone))
        if entry is not None:
            yield from directory.settle(entry, pk)
        return len(gone)

    # ------------------------------------------------------------ a namespace's delete

    def under(self, prefix: Namespace) -> Steps[list[Held]]:
        """What the namespaces at and below `prefix` hold, read consistently: the prefix's
        partition (one Query, paged); if it holds the descendants mark, the directory (one
        Query), else the prefix's entry (one GetItem); then the partition of each
        namespace below it (one Query each, in one wave). Left out: namespaces holding
        nothing whose entry, if any, is marked emptied (the expiry sweep drops it)."""
        names, directory = self.items.names, self.items.directory
        rows, marked, indexes = yield from reads.partition(names.pk(prefix), consistent=True)
        below: list[tuple[Namespace, DirectoryEntry]] = []
        if marked:
            found = yield from directory.entries(consistent=True)
            entry = next((e for ns, e in found if ns == prefix), None)
            depth = len(prefix)
            below = [(ns, e) for ns, e in found if len(ns) > depth and ns[:depth] == prefix]
        else:
            entry = yield from reads.entry(directory.key(prefix))
        read = yield from each([reads.partition(names.pk(ns), consistent=True) for ns, _ in below])
        held = [Held(prefix, entry, rows, indexes)]
        held += [Held(ns, e, r, i) for (ns, e), (r, _, i) in zip(below, read, strict=True)]
        return [h for h in held if h.rows or h.indexes or (h.entry and not h.entry.emptied)]

    def delete_namespace(self, prefix: Namespace) -> Steps[int]:
        """Delete every item of the namespaces at and below `prefix` and what search and
        listing find of them (`under`, then `_drop` each, in one wave); how many items."""
        held = yield from self.under(prefix)
        return sum((yield from each([self._drop(h) for h in held])))

    def _drop(self, held: Held) -> Steps[int]:
        """One namespace: the objects it references named for incremental collection
        (one intent, before anything changes); its items deleted (one request each, in
        one wave); then its search indexes, in full batches, and only then their objects
        (`format.dropped`); last, its directory entry settled (`Directory.settle`)."""
        items, pk = self.items, held.pk or self.items.names.pk(held.namespace)
        named = [object_key(pk, r.leaf) for r in held.rows if r.leaf]
        named += [object_key(pk, leaf) for i in held.indexes for leaf in sorted(i.leaves)]
        if named:
            yield NameOrphans(pk, named)
        gone = yield from items.delete([r.key for r in held.rows])
        settled = items.now_ms() - (LEASE_SECONDS + DROP_MARGIN_SECONDS) * 1000
        dropped = format.dropped(pk, held.rows, gone, held.indexes, settled)
        indexes = dropped.indexes.get(pk, ([], []))[1]
        yield BatchStep(deletes=indexes)
        state = items.state()
        for key in indexes:
            state.wrote(key, None)
        yield DeleteObjects(dropped.objects)
        if self.vectors is not None:
            self.vectors.known_dims.pop(pk, None)
        if held.entry is not None:
            yield from items.directory.settle(held.entry, pk)
        return len(gone)

    def drop_partitions(self, pks: Sequence[str]) -> Steps[int]:
        """Delete everything of these namespaces, known by their partitions only (an
        erasure's: nothing of them opens), each as a namespace delete drops it (`_drop`),
        then their directory entries: a data subject's put renews its namespace's entry
        whenever the entry's name is sealed under another key than the put's (no lease
        covers it: `SpaceState.lease_end`), so none is left without one. How many
        items."""
        names = self.items.names
        held = []
        for pk in pks:
            scope = memory_scope(pk)
            if scope is None or scope[1] != names.space or scope[2] is None:
                continue
            rows, _, indexes = yield from reads.partition(pk, consistent=True)
            held.append(Held((), None, rows, indexes, pk))
        gone = yield from each([self._drop(h) for h in held])
        named = [scope[2] for h in held if (scope := memory_scope(h.pk)) and scope[2]]
        entries = [ItemKey(names.directory, name) for name in named]
        yield BatchStep(deletes=entries)
        state = self.items.state()
        for key in entries:
            state.wrote(key, None)
            state.forget(key.sk)
        return sum(gone)

    # ------------------------------------------------------------ the expiry sweep

    def expire(self, at: float) -> Steps[tuple[int, int]]:
        """Name the objects of the items expired at `at` (seconds) for collection, delete
        those items and what they leave (`swept`), then settle the entries of namespaces
        left empty, and of those marked emptied whose namespace has items again. (items
        deleted, namespaces dropped)."""
        at_ms, directory = round(at * 1000), self.items.directory
        entries, found = yield from self.expired(at_ms)
        deleted = yield from self._delete(found, [r.key for r in found], at_ms)
        yield from self._swept(deleted, at_ms)
        names = {scope[2] for r in deleted if (scope := memory_scope(r.key.pk)) and scope[2]}
        names |= {name for name, e in entries.items() if e.emptied}
        dropped = 0
        for name in sorted(n for n in names if n in entries):
            dropped += yield from directory.settle(entries[name], self.items.names.pk_of(name), at)
        return len(deleted), dropped

    def expired(self, at_ms: int) -> Steps[tuple[dict[str, DirectoryEntry], list[MemoryRow]]]:
        """The directory's entries by name (one consistent Query; none opened), and the
        items whose expiry is at or before `at_ms` (one Query of each namespace's
        partition, in one wave)."""
        names = self.items.names
        found = yield from reads.entries(names.directory, consistent=True)
        entries = {e.key.sk: e for e in found}
        pks = [names.pk_of(name) for name in sorted(entries)]
        rows = yield from each([reads.items(pk) for pk in pks])
        return entries, [r for got in rows for r in got if not self.items.live(r, at_ms)]

    def _swept(self, deleted: Sequence[MemoryRow], at_ms: int) -> Steps[None]:
        """Clean what the items the sweep deleted leave: their objects, and in the Store,
        read with one consistent Query of each namespace's indexes in one wave, the
        tokens naming them (an item's key is the last part of each token's sort key)
        and, where the namespace has a vector index, tombstones telling it they are
        gone (sealed under the active key: nothing is opened)."""
        if not self.items.names.searched or not deleted:
            yield from self.items.forget(format.gone(deleted))
            return
        by_pk: dict[str, set[str]] = {}
        for r in deleted:
            by_pk.setdefault(r.key.pk, set()).add(r.key.sk)
        pks = sorted(by_pk)
        read = [reads.index_items(pk, format.INDEXES, consistent=True) for pk in pks]
        found = list(zip(pks, (yield from each(read)), strict=True))
        tokens = [i.key for pk, got in found for i in got if is_token_of(i.key.sk, by_pk[pk])]
        indexed = [pk for pk, got in found if any(i.key.sk == MANIFEST_SK for i in got)]
        yield from self.items.forget(self._gone(deleted, tokens, indexed, at_ms))

    def _gone(
        self,
        deleted: Sequence[MemoryRow],
        tokens: Sequence[ItemKey],
        indexed: Sequence[str],
        at_ms: int,
    ) -> format.Gone:
        items = self.items
        return format.gone(
            deleted,
            tokens,
            indexed=indexed,
            at_ms=at_ms,
            sealer=items.sealer,
            space=items.names.space,
        )


def _name_objects(rows: Sequence[MemoryRow]) -> Steps[None]:
    """Name the objects of items about to be deleted for incremental collection, one
    intent a namespace, in one wave, before the first delete: an operation that stops
    for good after a delete leaves that object to incremental collection, not to the full
    one (docs/RELIABILITY.md, "A process that never comes back")."""
    owners: dict[str, list[str]] = {}
    for r in rows:
        if r.leaf:
            owners.setdefault(r.key.pk, []).append(object_key(r.key.pk, r.leaf))
    yield from each([one(NameOrphans(pk, keys)) for pk, keys in sorted(owners.items())])
