"""A memory space's namespace directory: one entry per namespace that has (or may have)
items, so `list_namespaces` and a search of a prefix with namespaces below are Queries of
the directory, never a Scan (`layout.directory_pk`).

An entry is renewed (a new generation and renewal time) with the items of a put that
holds no lease on it, in one transaction; for `LEASE_SECONDS` after a renewal, or after a
read that saw the entry renewed that recently, a put writes its items alone. A delete that
leaves a namespace empty marks the entry emptied, or drops it once no lease on it can be
running; every step is conditional on the generation, so a namespace that has items is
never missing (docs/RELIABILITY.md, "The Store's namespace directory").

Each renewal also records a time until which an item written with it lives
(`DirectoryEntry.live_until_ms`): a listing lists an entry whose bound lies ahead without
reading its namespace, and checks the others with one Query (a namespace whose items have
all expired is not listed). A put that shortens an item's life, or a delete of an item
that may back the bound, makes it unknown again.

Descendants marks (the Store only): the first renewal in a process also marks the
partition of each of the namespace's ancestors it does not know to be marked, and marks are
never removed, so a partition without the mark has no namespace below it (the argument:
docs/RELIABILITY.md, "Descendants marks").
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Sequence

from langgraph.checkpoint.s3dynamo.backoff import CONFLICT_ATTEMPTS
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer, key_id, padded
from langgraph.checkpoint.s3dynamo.blobs.steps import Apply, NameOrphans, Steps, each
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    ItemReplacedError,
    SubjectErasedError,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory import format, reads
from langgraph.checkpoint.s3dynamo.memory.format import ns_text
from langgraph.checkpoint.s3dynamo.memory.names import Names
from langgraph.checkpoint.s3dynamo.memory.recent import (
    DROP_MARGIN_SECONDS,
    LEASE_SECONDS,
    SpaceState,
    fingerprint,
)
from langgraph.checkpoint.s3dynamo.memory.rows import (
    NEVER_MS,
    Batch,
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    Namespace,
    row_from,
)
from langgraph.checkpoint.s3dynamo.table import Write, Written

# Payload type tag of a sealed namespace tuple (directory entries).
NAMESPACE_TYPE = "json"
# A lease taken from an entry read (not renewed) by this process ends this much earlier
# than the renewal's: the renewal's time is another process's clock.
READ_LEASE_SLACK = 30


def expiry_of(row: MemoryRow) -> int:
    return NEVER_MS if row.expires_ms is None else row.expires_ms


class Directory:
    """The directory of one space (module docstring). Each read and write is a protocol
    (`blobs/steps.py`); `state` is what this process knows of the space, `clock` its
    time in seconds."""

    def __init__(
        self,
        names: Names,
        sealer: Sealer,
        state: Callable[[], SpaceState],
        clock: Callable[[], float],
    ) -> None:
        self.names = names
        self.sealer = sealer
        self.state = state
        self.clock = clock
        # What seals a namespace's name: its data subject's key (`Space`), else `sealer`.
        self.sealer_for: Callable[[Namespace], Sealer] = lambda _namespace: sealer

    def key(self, namespace: Namespace) -> ItemKey:
        return self.names.entry_key(namespace)

    def aad(self, sk: str) -> bytes:
        return format.entry_aad(self.names.space, sk)

    # ------------------------------------------------------------ marks

    def unwritten_marks(self, namespace: Namespace) -> list[ItemKey]:
        # They go in one transaction with the entry and at least one item: the Store
        # refuses a deeper namespace before anything is written (`put_namespace`).
        marks = self.names.ancestor_marks(namespace)
        unmarked = set(self.state().unmarked(k.pk for k in marks))
        return [k for k in marks if k.pk in unmarked]

    def marks_exist(self, namespaces: Iterable[Namespace]) -> None:
        # A namespace with an item has a directory entry, and an entry is written with its
        # ancestors' marks, which nothing removes: this process need not write them again.
        marks = (k.pk for ns in set(namespaces) for k in self.names.ancestor_marks(ns))
        self.state().marked(marks)

    # ------------------------------------------------------------ writing items

    def commit(
        self,
        batch: Batch,
        indexes: Sequence[IndexItem],
        marks: list[ItemKey],
        now: float,
        subject: Sequence[Write] = (),
    ) -> Steps[list[MemoryRow | None]]:
        """Write a namespace's items (after `indexes`, the search entries they need): alone
        while this process holds a lease on its entry (taking one from a read of the
        entry when it holds none and the entry was renewed lately), else with the entry
        renewed, in one transaction per `MEMORY_PUT_MAX` items (`format.put`); one put of
        the process at a time reads or renews an entry, the others wait for its lease.
        The items replaced: a transaction returns no old item, so its items go only
        while they hold the objects last seen there (`_expecting`); every object replaced
        is named for collection, before the commit where seen (`_each`). A data subject's
        items (`subject`: its fence, and the item naming the namespace its own, written
        with each renewal) go in transactions that check the fence, with or without the
        entry."""
        ek, state = self.key(batch.namespace), self.state()
        # A data subject's puts hold a lease only on an entry named under their key.
        kid = self.sealer_for(batch.namespace).key
        named = None if kid is None else kid.kid
        lease_end = state.lease_end(ek.sk, named)
        found: dict[ItemKey, MemoryRow] = {}
        if now >= lease_end:
            with state.renewing(ek.sk):
                lease_end = state.lease_end(ek.sk, named)  # another put may have renewed it
                if now >= lease_end:
                    lease_end, found = yield from self._lease_from_read(batch, ek, now, named)
                if now >= lease_end:
                    entry = self._entry(batch.namespace, ek, batch.rows)
                    replaced = yield from self._expecting(  # the read just now saw them all
                        batch, found, indexes, entry=entry, marks=marks, also=subject
                    )
                    self._renewed(entry, marks)
                    return replaced
        held = (state.held(r.key) for r in batch.rows)
        seen = {old.key: old for old in held if old is not None} | found
        if subject:
            # The fence alone: the item naming the namespace the subject's went with the
            # renewal this lease comes from (a lease holds under the subject's key only).
            replaced = yield from self._expecting(batch, seen, indexes, also=subject[:1])
        else:
            replaced = yield from self._each(batch, seen, indexes)
        if self.clock() >= lease_end:
            # The lease ran out while the items were written: they may have landed
            # after it, so the entry is renewed as if there had been none.
            yield from self.renew(batch.namespace, marks)
        if any(
            old is not None and expiry_of(new) < expiry_of(old)
            for new, old in zip(batch.rows, replaced, strict=True)
        ):
            # An item that now expires sooner than it did may have been what the entry's
            # liveness bound stood on: the bound becomes unknown (a listing checks it).
            yield Apply(format.bound(ek, None))
        return replaced

    def _expecting(
        self,
        batch: Batch,
        seen: dict[ItemKey, MemoryRow],
        indexes: Sequence[IndexItem],
        *,
        entry: DirectoryEntry | None = None,
        marks: Sequence[ItemKey] = (),
        also: Sequence[Write] = (),
    ) -> Steps[list[MemoryRow | None]]:
        """Items written in transactions (`format.put` with `entry`, `marks` and `also`,
        after the search entries `indexes`), which return no old item: each item goes
        only while it holds the object last seen there (`seen`: by the read before, or
        as this process last wrote it; none where unseen). A refusal hands back the item
        as it is, and that transaction is sent again expecting it (its uploads and
        `indexes` went already; their intent stays for collection to close). The items
        replaced: every object is named; an inline value replaced is known only where it
        was seen (the filter tokens of the others stay: a search checks what it finds).
        docs/RELIABILITY.md, "Garbage collection"."""
        seen = dict(seen)
        expect = {key: row.leaf for key, row in seen.items()}

        def plans(search: Sequence[IndexItem]) -> list[format.Plan]:
            return format.put(
                batch, entry=entry, marks=marks, indexes=search, also=also, expect=expect
            )

        first = plans(indexes)
        attempts = len(batch.rows) + CONFLICT_ATTEMPTS  # one per item, then conflicts
        for at, plan in enumerate(first):
            for attempt in range(1, attempts + 1):
                try:
                    yield plan
                    break
                except ItemReplacedError as refused:
                    if attempt == attempts:
                        raise
                    key = ItemKey(*refused.key)
                    now = None if refused.found is None else row_from(refused.found)
                    seen.pop(key, None)
                    if now is not None:
                        seen[key] = now
                    expect[key] = None if now is None else now.leaf
                plan = dataclasses.replace(plans(())[at], uploads=())
        return [seen.get(row.key) for row in batch.rows]

    def _each(
        self, batch: Batch, seen: dict[ItemKey, MemoryRow], indexes: Sequence[IndexItem]
    ) -> Steps[list[MemoryRow | None]]:
        """Items written alone (`format.put` without `entry`), each answering with the
        item it replaced. The objects last seen there (`seen`) are named for collection
        in the put's intent, before the commit; one the answers show that was not seen
        (another process's), after it (docs/RELIABILITY.md, "Garbage collection")."""
        (plan,) = format.put(batch, indexes=indexes)
        expected = format.replaced_objects(batch.rows, {k: r.leaf for k, r in seen.items()})
        written: list[Written] = yield dataclasses.replace(plan, orphans=expected)
        replaced = [None if w.item is None else row_from(w.item) for w in written]
        leaves = {old.key: old.leaf for old in replaced if old is not None}
        unseen = set(format.replaced_objects(batch.rows, leaves)) - set(expected)
        if unseen:
            yield NameOrphans(batch.pk, sorted(unseen))
        return replaced

    def _lease_from_read(
        self, batch: Batch, ek: ItemKey, now: float, named: str | None
    ) -> Steps[tuple[float, dict[ItemKey, MemoryRow]]]:
        """A process's first put into a namespace it has not renewed: one consistent read
        of the entry and of the items the put replaces (what a renewal replaces, which its
        transaction does not return). Renewed lately and not emptied (and, with `named`,
        its name sealed under that key), the entry gives a lease (a read's ends
        `READ_LEASE_SLACK` early) and its ancestors' marks exist; 0 when it gives none."""
        entry, found = yield from reads.entry_and_items(ek, [r.key for r in batch.rows])
        if entry is None or entry.emptied:
            return 0.0, found
        if named is not None and key_id(entry.blob) != named:
            return 0.0, found
        end = entry.renewed + LEASE_SECONDS - READ_LEASE_SLACK
        if now >= end:
            return 0.0, found
        self.state().lease(entry, end)
        self.marks_exist([batch.namespace])
        return end, found

    def renew(self, namespace: Namespace, marks: Sequence[ItemKey] = ()) -> Steps[None]:
        """Renew a namespace's directory entry alone (its liveness bound left as it is),
        with the descendants `marks` in the same request."""
        entry = self._entry(namespace, self.key(namespace), None)
        yield format.renewal(entry, marks)
        self._renewed(entry, marks)

    def _entry(
        self, namespace: Namespace, ek: ItemKey, rows: Sequence[MemoryRow] | None
    ) -> DirectoryEntry:
        # A new generation, renewed now; its liveness bound is the latest expiry of the
        # items written with it (none without).
        text = padded(ns_text(namespace).encode())  # its size: the length to a power of two
        sealer = self.sealer_for(namespace)
        sealed_ns = sealer.seal(NAMESPACE_TYPE, text, self.aad(ek.sk), compress=False)
        bound = max((expiry_of(r) for r in rows), default=None) if rows else None
        return DirectoryEntry(ek, sealed_ns, os.urandom(6).hex(), int(self.clock()), False, bound)

    def _renewed(self, entry: DirectoryEntry, marks: Sequence[ItemKey]) -> None:
        state = self.state()
        state.marked(k.pk for k in marks)
        state.saw(entry)
        state.wrote(entry.key, fingerprint(entry))

    # ------------------------------------------------------------ deletes

    def settle(
        self,
        entry: DirectoryEntry,
        pk: str,
        now: float | None = None,
        deleted: MemoryRow | None = None,
    ) -> Steps[int]:
        """Bring an entry in line with its namespace: marked emptied if it has no live
        item, dropped if it has no item at all and no lease on it can still be running,
        unmarked if it has live ones (whose bound is made unknown when `deleted`, the item
        just deleted, may have been what it stood on). Each step is conditional on the
        generation read before the checks, so a renewal since wins. 1 if dropped."""
        state = self.state()
        # The time is read before the checks: a drop needs a check made after every lease
        # on the entry ended.
        now = self.clock() if now is None else now
        if (yield from reads.has_live(pk, int(now * 1000))):
            if entry.emptied and (yield Apply(format.mark_entry(entry, False))).applied:
                state.wrote(entry.key, fingerprint(entry._replace(emptied=False)))
            bound = entry.live_until_ms
            if deleted is not None and bound is not None and expiry_of(deleted) >= bound:
                yield Apply(format.bound(entry.key, None))
            return 0
        state.forget(entry.key.sk)
        empty = not (yield from reads.items(pk, limit=1, consistent=True))
        if empty and now > entry.renewed + LEASE_SECONDS + DROP_MARGIN_SECONDS:
            if (yield Apply(format.drop_entry(entry))).applied:
                state.wrote(entry.key, None)
                return 1
        elif not entry.emptied and (yield Apply(format.mark_entry(entry, True))).applied:
            state.wrote(entry.key, fingerprint(entry._replace(emptied=True)))
        return 0

    # ------------------------------------------------------------ reading

    def entries(self, consistent: bool = False) -> Steps[list[tuple[Namespace, DirectoryEntry]]]:
        """Every namespace in the directory, opened (one Query, paged, eventually
        consistent unless `consistent`; again consistently if it misses this process's
        own changes)."""
        pk, state = self.names.directory, self.state()
        found = yield from reads.entries(pk, consistent=consistent)
        if not consistent and state.stale(found, state.written_in(pk)):
            found = yield from reads.entries(pk, consistent=True)
        out = []
        for entry in found:
            try:
                namespace = self.namespace_of(entry)
            except SubjectErasedError:
                continue  # an erased subject's, whose erasure took its items: none to list
            state.saw(entry)
            out.append((namespace, entry))
        self.marks_exist(ns for ns, _ in out)
        return out

    def namespace_of(self, entry: DirectoryEntry) -> Namespace:
        """The namespace an entry names, opened; one altered or moved to another entry is
        an `IntegrityError`."""
        space = self.names.space
        what = f"{'store' if space == 'm' else 'cache'} directory entry {entry.key.sk!r}"
        _typ, data = self.sealer.open(entry.blob, self.aad(entry.key.sk), what)
        namespace = tuple(json.loads(data))
        if self.names.namer.memory_namespace(space, namespace) != entry.key.sk:
            raise IntegrityError(f"{what}: it names another namespace; it was moved")
        return namespace

    def listed(self, now_ms: Callable[[], int]) -> Steps[list[Namespace]]:
        """The namespaces that have a live item: those whose entry's bound lies ahead,
        and, checked with one Query each in one wave, the rest (bound passed or unknown,
        or emptied by a delete)."""
        found = yield from self.entries()
        at = now_ms()
        sure = [ns for ns, e in found if not e.emptied and (e.live_until_ms or 0) > at]
        doubt = [ns for ns, e in found if e.emptied or (e.live_until_ms or 0) <= at]
        live = yield from each([reads.has_live(self.names.pk(ns), at) for ns in doubt])
        return sure + [ns for ns, ok in zip(doubt, live, strict=True) if ok]
