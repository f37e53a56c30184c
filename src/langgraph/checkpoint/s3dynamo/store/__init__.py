"""The storage protocol of a thread, behind one facade: `ThreadStore`. The saver,
history, leases and the operations (garbage collection, maintenance, retention: what the
command line runs) call its methods (finding, opening, decoding, committing, deleting,
objects, control items); only it decides where a thread's value lives. What becomes
stored bytes (sealing, inline or object, waves, the object cache, the upload journal)
is the blob engine's (`blobs/`), which its parts hand their writes as plans. Its parts
are private to this package (the architecture test checks that nothing outside names
them):

    finder.py     finding records and grouping them into checkpoints (`Entry`)
    catalog.py    the thread catalog: threads filed by declared metadata values
    search.py     threads through the catalog, newest activity first
    walker.py     the one walk over a checkpoint's blobs, and how each opens
    decoder.py    entries into LangGraph's checkpoint tuples; history skeletons
    committer.py  what a checkpoint's or a task's records hold, as the engine's plans
    deleter.py    deleting records and objects: marks first, full batches, marks last
    rewriter.py   a copy's records, sharing its source's blobs; a rotation's, re-sealed
    fences.py     which leases this context holds
    scope.py      the deployment's share of a table that tenants share
    handoff.py    what the read path hands the write path (stored values, run keys)
    policy.py     the settings the parts take, as one value
    upkeep.py     the facade's maintenance methods: scans, marks, objects, control items

The read path hands the write path what it opened, through one named object
(`handoff.py`): `decode` keeps where a checkpoint's values are stored, which the next
`commit` on it reuses instead of reading or uploading them again, and `loaded` records
under the hand-off's run key what the run continues (concurrent-run detection).
The storage layout is in `layout.py`; the commit protocol in `committer.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine
from langgraph.checkpoint.s3dynamo.codec import Codec
from langgraph.checkpoint.s3dynamo.identities import CheckpointAt
from langgraph.checkpoint.s3dynamo.layout import SHARING_FORMAT
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.records import loan_parts
from langgraph.checkpoint.s3dynamo.store.catalog import Catalog, Catalogued
from langgraph.checkpoint.s3dynamo.store.committer import Committer
from langgraph.checkpoint.s3dynamo.store.decoder import Decoder, Skeleton
from langgraph.checkpoint.s3dynamo.store.deleter import Deleter
from langgraph.checkpoint.s3dynamo.store.fences import Holding, hold, holding, release
from langgraph.checkpoint.s3dynamo.store.finder import (
    Entry,
    Finder,
    Grouped,
    Skipped,
    leftover_writes,
    warn_skipped,
)
from langgraph.checkpoint.s3dynamo.store.format import borrowing, lend
from langgraph.checkpoint.s3dynamo.store.handoff import Handoff
from langgraph.checkpoint.s3dynamo.store.policy import StorePolicy
from langgraph.checkpoint.s3dynamo.store.rewriter import Rewrite, Rewriter
from langgraph.checkpoint.s3dynamo.store.scope import EVERY_DEPLOYMENT, Scope
from langgraph.checkpoint.s3dynamo.store.search import (
    Before,
    ThreadSearch,
    ThreadSummaries,
    ThreadSummary,
)
from langgraph.checkpoint.s3dynamo.store.upkeep import Upkeep
from langgraph.checkpoint.s3dynamo.store.walker import (
    Blobs,
    BundleBlob,
    StoredValues,
    ValueBlob,
    Walker,
    WriteBlob,
)
from langgraph.checkpoint.s3dynamo.waves import parallel

__all__ = [
    "EVERY_DEPLOYMENT",
    "Before",
    "Blobs",
    "BundleBlob",
    "Catalogued",
    "CheckpointAt",
    "Entry",
    "Grouped",
    "Holding",
    "Rewrite",
    "Skeleton",
    "Skipped",
    "StorePolicy",
    "StoredValues",
    "ThreadStore",
    "ThreadSummaries",
    "ThreadSummary",
    "ValueBlob",
    "WriteBlob",
    "hold",
    "holding",
    "leftover_writes",
    "release",
    "warn_skipped",
]

_Part = TypeVar("_Part")


class ThreadStore(Upkeep):
    """A deployment's threads on its ports (module docstring). The ports are built on
    first use, so constructing one makes no request. Code outside this package calls
    the methods below and those of `Upkeep`; the parts stay attributes only so that
    white-box tests can count what they hold."""

    def __init__(
        self, *, engine: BlobEngine, namer: Namer, codec: Codec, policy: StorePolicy
    ) -> None:
        self.engine = engine
        self.ports = ports = engine.ports
        # Called with a storage format before the first write only it describes (the
        # saver records it in the deployment record: `Deployment.require_format`).
        self.format_gate: Callable[[int], None] = lambda _format: None
        self.namer = namer
        self.codec = codec
        self.sealer = codec.sealer
        self.prefix = engine.prefix
        self.scope = Scope(ports, self.prefix)
        self.objects = engine.objects
        self.finder = Finder(ports, namer, codec, self.sealer, self.scope)
        self.walker = Walker(namer, codec, self.objects)
        # What a read hands the next write on the same checkpoint (handoff.py).
        self.handoff = Handoff(namer, id(self))
        self.decoder = Decoder(self.walker, self.handoff)
        self.catalog = Catalog(engine, namer, codec, self.handoff, policy.catalog_fields)
        self.threads = ThreadSearch(self.catalog, self.finder, self.walker)
        self.committer = Committer(
            engine=engine,
            finder=self.finder,
            walker=self.walker,
            handoff=self.handoff,
            catalog=self.catalog,
            policy=policy,
        )
        self.deleter = Deleter(engine, self.finder, namer, self.now, lambda: self.clock())
        self.rewriter = Rewriter(self.walker, self.finder, self.now)

    def with_codec(self, codec: Codec) -> ThreadStore:
        """This store serializing through another codec (a saver's copy with its own
        serializer, `S3DynamoSaver.__copy__`). Only the parts that hold the codec are new,
        shallow copies: ports, object cache, carried values, kept skeletons, opened bases,
        run records and leases (keyed by the hand-off's `store_id`) stay shared."""
        clone = copy.copy(self)
        clone.codec = codec
        clone.finder = _rebound(self.finder, codec=codec)
        clone.walker = _rebound(self.walker, codec=codec)
        clone.decoder = _rebound(self.decoder, walker=clone.walker)
        clone.catalog = _rebound(self.catalog, codec=codec)
        clone.threads = _rebound(
            self.threads, catalog=clone.catalog, finder=clone.finder, walker=clone.walker
        )
        clone.committer = _rebound(
            self.committer, finder=clone.finder, walker=clone.walker, catalog=clone.catalog
        )
        clone.deleter = _rebound(self.deleter, finder=clone.finder)
        clone.rewriter = _rebound(self.rewriter, walker=clone.walker, finder=clone.finder)
        return clone

    @property
    def clock(self) -> Callable[[], float]:
        """What stamps records (`written_at`) and judges idleness; tests replace it."""
        return self.committer.clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self.committer.clock = value

    def now(self) -> int:
        return self.committer.now()

    def forget(self) -> None:
        """Drop what is cached about stored records (after anything rewrote them)."""
        self.handoff.clear()
        self.decoder.skeletons.clear()
        self.committer.bases.clear()

    def delete_thread(self, tid: str) -> int:
        """Delete a thread whole (`Deleter.delete_thread`); how many records and objects."""
        found = self.deleter.delete_thread(tid)
        self.forget()
        return found

    # ------------------------------------------------- what a run continues

    # ------------------------------------------------- reading: the read path

    def lend(self, borrower: str, lenders: Mapping[str, set[str]]) -> None:
        """Record that `borrower` shares these leaves of each lender's objects: its
        borrowings first (its deletion then finds the loans), then the loans."""
        self.format_gate(SHARING_FORMAT)
        for lender in sorted(lenders):
            self.engine.apply(borrowing(borrower, lender))
        loans = [
            lend(key, part)
            for lender in sorted(lenders)
            for key, part in loan_parts(lender, borrower, lenders[lender])
        ]
        parallel(self.engine.apply, loans)

    # ------------------------------------------------- opening: the one walk

    # ------------------------------------------------- decoding

    def decode(self, entry: Entry) -> CheckpointTuple:
        """One checkpoint decoded for a run that continues from it: its stored values
        and skeleton are kept for the next `commit` on it, and its declared metadata
        values for the catalog (the read-to-write hand-off)."""
        found = next(self.decoder.decode([entry], remember=True))
        self.catalog.seen(entry.tid, found.metadata)
        return found

    # ------------------------------------------------- committing: the write path


def _rebound(part: _Part, **attributes: Any) -> _Part:
    """A shallow copy of a store part with some attributes replaced; its caches are the
    same objects as the original's."""
    clone = copy.copy(part)
    vars(clone).update(attributes)
    return clone
