"""The blob engine: every byte string that threads, the Store and the node cache keep
is sealed, placed, uploaded, cached, read back and collected here, once.

    steps.py       the steps a protocol yields and the engine runs (`BlobEngine.run`)
    sealing.py     envelopes: compress, then encrypt, then frame (`Sealer`)
    placement.py   inline in its index item, or an object of its own (`InlineBudget`)
    objects.py     object reads and writes in parallel waves, through one cache
    cache.py       the one cache type (least recently used)
    journal.py     upload intents: written before an upload, deleted by its commit
    collect.py     mark and sweep of unreferenced objects, for any owner
    lazy_ports.py  the table and the bucket, built on first use

Writers (the thread store's committer and rewriter, a memory space) decide what their
items hold and hand the engine a `WritePlan`: the objects to upload or re-seal in place,
then one commit, the index write that makes them referenced. The engine runs every plan
in the same order (intent, one wave of objects, commit, intent closed unless it names
what the write lets go), so what a crash can orphan is always named in the journal
(docs/ARCHITECTURE.md, "The blob engine"; docs/RELIABILITY.md, "Garbage collection: the
upload journal").
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.blobs.lazy_ports import LazyPorts
from langgraph.checkpoint.s3dynamo.blobs.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.blobs.placement import InlineBudget
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Apply,
    Batch,
    DeleteObjects,
    Emit,
    Fetch,
    Get,
    GetMany,
    ListObjects,
    NameOrphans,
    Query,
    Scan,
    Steps,
    Together,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.table import Delete, Item, Write, Written
from langgraph.checkpoint.s3dynamo.waves import parallel

if TYPE_CHECKING:
    from langgraph.checkpoint.s3dynamo.blobs.collect import Collector
    from langgraph.checkpoint.s3dynamo.blobs.journal import Journal

__all__ = ["BlobEngine", "BlobPolicy", "LazyPorts", "Steps", "WritePlan"]

_R = TypeVar("_R")
_T = TypeVar("_T")

# Bytes of decoded objects kept (`BlobEngine.opened`): a 10,000-vector segment of 256
# dimensions takes about 13 MB decoded.
OPENED_BYTES = 64 << 20

# What processes keep per table adapter (`BlobEngine.shared`), gone with the adapter.
_SHARED: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


class BlobPolicy(NamedTuple):
    """`inline_max`: the largest sealed blob kept in its index item rather than an
    object; `cache_bytes`: the object bodies this process keeps (0: none)."""

    inline_max: int
    cache_bytes: int


@dataclass
class WritePlan:
    """What one write stores: objects first, then the items that reference them.

    `owner` is the partition whose items reference the objects (a thread's name, a Store
    or cache namespace's partition); `uploads` are new objects (`If-None-Match`),
    `overwrites` objects re-sealed in place (same name, same value: a key rotation),
    `orphans` objects the write leaves unreferenced once committed, named before it in
    the intent that names its uploads (one of their own without uploads), which stays for
    incremental collection to delete them after its grace.

    `batched` are items written whole, unconditionally, in full batches before the
    commit: a copy's records (then the commit itself), a Store item's search entries
    (which must exist before the item does). `writes` are the commit, the items with their
    conditions: one transaction (one write alone: a plain request), which also deletes the
    upload intent when `closes_intent`; or, with `each`, one request per write, sent in
    parallel, each answering `returning`. `at_ms` stamps the intents (the writer's
    clock)."""

    owner: str
    uploads: Sequence[tuple[str, bytes]] = ()
    overwrites: Sequence[tuple[str, bytes]] = ()
    at_ms: int | None = None
    orphans: Sequence[str] = field(default_factory=tuple)
    writes: Sequence[Write] = ()
    batched: Sequence[Item] = ()
    closes_intent: bool = False
    each: bool = False
    returning: Literal["old", "new"] | None = None


class BlobEngine:
    """The sealer, the object waves and cache, the journal and the inline rule of one
    deployment, shared by its thread store, its Store and its node cache."""

    def __init__(
        self, *, ports: LazyPorts, sealer: Sealer, prefix: str, policy: BlobPolicy
    ) -> None:
        self.ports = ports
        self.sealer = sealer
        self.prefix = prefix
        self.inline_max = policy.inline_max
        self.objects = ObjectIO(ports, policy.cache_bytes)
        # Objects kept opened and decoded by what reads them (a namespace's vector
        # segments), with the bytes each takes: objects never change, so neither do they.
        self.opened: Lru[str, tuple[object, int]] = Lru(
            OPENED_BYTES, weigh=lambda entry: entry[1], largest=OPENED_BYTES // 2
        )
        # Stamps intents of plans that bring no time of their own; tests replace it.
        self.clock: Callable[[], float] = time.time

    @cached_property
    def journal(self) -> Journal:
        """The upload journal: loaded by the first write that uploads an object."""
        from langgraph.checkpoint.s3dynamo.blobs.journal import Journal

        return Journal(self.ports)

    @cached_property
    def collector(self) -> Collector:
        """Garbage collection of this engine's objects: loaded when maintenance runs it."""
        from langgraph.checkpoint.s3dynamo.blobs.collect import Collector

        return Collector(self.objects, self.journal, self.prefix)

    # ------------------------------------------------------------ protocols

    def run(self, protocol: Steps[_R]) -> _R:
        """Run a protocol (`steps.py`) to its end: each step it yields is sent, and its
        answer (or the error it raised) goes back where it yielded; its return value."""
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = protocol.throw(error) if error is not None else protocol.send(answer)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            answer, error = None, None
            try:
                answer = self.do(step)
            except Exception as exc:  # handed to the protocol, which may answer it
                error = exc

    def stream(self, protocol: Steps[Any]) -> Iterator[Any]:
        """Run a protocol that hands values out as it goes (`Emit`), lazily: a step is
        sent only when the caller asks for the next value."""
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = protocol.throw(error) if error is not None else protocol.send(answer)
            except StopIteration:
                return
            answer, error = None, None
            if isinstance(step, Emit):
                yield step.value
                continue
            try:
                answer = self.do(step)
            except Exception as exc:
                error = exc

    def do(self, step: object) -> Any:
        """One step: one request, or one wave of requests of one kind."""
        table = self.ports.table if isinstance(step, (Query, Scan, Get, GetMany)) else None
        if isinstance(step, Query):
            assert table is not None
            return table.query(
                step.partition,
                where=step.where,
                index=step.index_name,
                descending=step.descending,
                limit=step.limit,
                cursor=step.cursor,
                consistent=step.consistent,
                filter=step.filter,
                attributes=step.attributes,
            )
        if isinstance(step, Get):
            assert table is not None
            return table.get(step.key, consistent=step.consistent)
        if isinstance(step, Scan):
            assert table is not None
            return table.scan(
                segment=step.segment,
                segments=step.segments,
                cursor=step.cursor,
                filter=step.filter,
                attributes=step.attributes,
            )
        if isinstance(step, GetMany):
            assert table is not None
            return table.get_many(step.keys, consistent=step.consistent) if step.keys else []
        if isinstance(step, Batch):
            return self._batch(step.puts, step.deletes)
        if isinstance(step, Apply):
            return self._apply(
                step.write, returning=step.returning, found_on_refusal=step.found_on_refusal
            )
        if isinstance(step, WritePlan):
            return self._write(step)
        if isinstance(step, ListObjects):
            return self.objects.list_owner(step.owner)
        if isinstance(step, DeleteObjects):
            self.objects.delete(step.keys)
            return self.objects.delete_unchanged(step.unchanged)
        if isinstance(step, Fetch):
            return self.objects.fetch(step.needed, cached=step.cached)
        if isinstance(step, NameOrphans):
            return self.name_orphans(step.owner, step.keys)
        if isinstance(step, Together):
            return parallel(self.run, step.protocols)
        raise TypeError(f"not a step the blob engine runs: {step!r}")

    def shared(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """What this process keeps of the table rather than of one engine (what it knows
        of a memory space: `memory/recent.py`): made on first use, shared by every
        engine on the same table adapter, and gone with the adapter."""
        with _SHARED_LOCK:
            per_table = _SHARED.setdefault(self.ports.table, {})
            if key not in per_table:
                per_table[key] = make()
            return per_table[key]  # type: ignore[no-any-return]

    # ------------------------------------------------------------ placing

    def item_size(self, item: Item) -> int:
        """The size the table bills for an item (no request)."""
        return self.ports.table.item_size(item)

    def budget(self) -> InlineBudget:
        """The inline room of one index item, for placing its blobs one by one."""
        return InlineBudget(self.inline_max)

    # ------------------------------------------------------------ writing

    def _write(self, plan: WritePlan) -> list[Written]:
        """Run a plan: one intent naming what it uploads and what it will orphan (when it
        does either), one wave of uploads and overwrites, the commit, then the upload
        intent's delete (unless the commit carried it, or the intent names orphans: then
        it stays for collection, which deletes them after its grace). A failure stops
        there: an intent left names every object the plan may have written that nothing
        references."""
        at_ms = plan.at_ms if plan.at_ms is not None else int(self.clock() * 1000)
        named = [*(key for key, _ in plan.uploads), *plan.orphans]
        intent = self.journal.open(plan.owner, named, at_ms) if named else None
        if plan.uploads:
            self.objects.upload(plan.uploads)
        if plan.overwrites:
            self.objects.overwrite(plan.overwrites)
        if plan.batched:
            self.ports.table.batch(plan.batched)
        if plan.orphans:
            intent = None  # left for collection
        written, closed = self._commit(plan, intent)
        if intent is not None and not closed:
            self.journal.close([intent])
        return written

    def _commit(self, plan: WritePlan, intent: ItemKey | None) -> tuple[list[Written], bool]:
        """Write a plan's items; whether the upload intent's delete went with them."""
        table = self.ports.table
        if plan.each:
            written = parallel(lambda w: table.write(w, returning=plan.returning), plan.writes)
            return written, False
        closes = intent is not None and plan.closes_intent
        writes = [*plan.writes, *([Delete(intent)] if closes and intent is not None else [])]
        if len(writes) == 1:
            return [table.write(writes[0], returning=plan.returning)], closes
        if writes:
            table.transact(writes)
        return [Written(True)] * len(plan.writes), closes

    def _apply(
        self,
        write: Write,
        *,
        returning: Literal["old", "new"] | None = None,
        found_on_refusal: bool = False,
    ) -> Written:
        """One write that references no new object (a lease, a directory entry's mark, a
        refreshed expiry): one request; a refused condition raises the write's refusal or
        is an answer (`Written.applied`)."""
        return self.ports.table.write(write, returning=returning, found_on_refusal=found_on_refusal)

    def _batch(self, puts: Sequence[Item] = (), deletes: Sequence[ItemKey] = ()) -> None:
        """Items written whole and deleted, unconditionally, in full batches (records of
        a copy or an import, records and control items deleted behind marks)."""
        if puts or deletes:
            self.ports.table.batch(puts, deletes)

    def name_orphans(self, owner: str, keys: Sequence[str], at_ms: int | None = None) -> None:
        """Write an intent naming objects of `owner` that a change is about to leave (or
        has left) unreferenced, so incremental collection checks them after its grace (in
        parts past what one item holds: `Journal.name`)."""
        stamp = at_ms if at_ms is not None else int(self.clock() * 1000)
        self.journal.name(owner, keys, stamp)

    # ------------------------------------------------------------ the storage

    def create_if_missing(self) -> tuple[bool, bool]:
        """Create the table and the bucket if missing; whether each was made."""
        return self.ports.table.create_if_missing(), self.ports.objects.create_if_missing()

    def prime(self, objects: bool = True) -> None:
        """Build the table's port now (and, with `objects`, the object store's), still
        without a request."""
        for name in ("table", "objects") if objects else ("table",):
            getattr(self.ports, name)

    def create_table_if_missing(self) -> bool:
        """Create the table alone if missing (an engine without objects: the key table's)."""
        return self.ports.table.create_if_missing()

    def resources(self) -> tuple[str, str]:
        """What the table and the object store are, as reports name them."""
        return self.table_resource(), str(getattr(self.ports.objects, "resource", "object store"))

    def table_resource(self) -> str:
        """What the table is, as reports name it."""
        return str(getattr(self.ports.table, "resource", "index"))

    def probe_objects(self) -> None:
        """List the deployment's objects once (`check`)."""
        self.ports.objects.probe(self.prefix)

    def deployment_objects(self) -> Iterator[ObjectInfo]:
        """Every object of this deployment."""
        return self.ports.objects.list(self.prefix)
