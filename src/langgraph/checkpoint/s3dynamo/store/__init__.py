"""The storage protocol of a thread, behind one facade: `ThreadStore`. The saver,
history, leases and the operations (garbage collection, maintenance, retention: what the
command line runs) call its methods (finding, opening, decoding, committing, deleting,
objects, control items); only it decides where a thread's value lives. What becomes
stored bytes (sealing, inline or object, waves, the object cache, the upload journal)
is the blob engine's (`blobs/`), which its parts hand their writes as plans. Its parts
are private to this package (the architecture test checks that nothing outside names
them):

    finder.py     finding records and grouping them into checkpoints (`Entry`)
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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine
from langgraph.checkpoint.s3dynamo.codec import Codec
from langgraph.checkpoint.s3dynamo.identities import CheckpointAt
from langgraph.checkpoint.s3dynamo.layout import SHARING_FORMAT
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.records import (
    ItemKey,
    Loan,
    Mark,
    Record,
    WritesRecord,
    loan_parts,
)
from langgraph.checkpoint.s3dynamo.store.committer import Committer
from langgraph.checkpoint.s3dynamo.store.decoder import Decoder, Skeleton
from langgraph.checkpoint.s3dynamo.store.deleter import Deleter
from langgraph.checkpoint.s3dynamo.store.fences import Holding, hold, holding, release
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder, Grouped, Skipped, warn_skipped
from langgraph.checkpoint.s3dynamo.store.format import borrowing, lend
from langgraph.checkpoint.s3dynamo.store.handoff import Handoff
from langgraph.checkpoint.s3dynamo.store.policy import StorePolicy
from langgraph.checkpoint.s3dynamo.store.rewriter import Rewrite, Rewriter
from langgraph.checkpoint.s3dynamo.store.scope import EVERY_DEPLOYMENT, Scope
from langgraph.checkpoint.s3dynamo.store.upkeep import Upkeep
from langgraph.checkpoint.s3dynamo.store.walker import (
    Blobs,
    BundleBlob,
    Located,
    StoredValues,
    Typed,
    ValueBlob,
    Walker,
    WriteBlob,
)
from langgraph.checkpoint.s3dynamo.waves import parallel

__all__ = [
    "EVERY_DEPLOYMENT",
    "Blobs",
    "BundleBlob",
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
    "ValueBlob",
    "WriteBlob",
    "hold",
    "holding",
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
        self.committer = Committer(
            engine=engine,
            finder=self.finder,
            walker=self.walker,
            handoff=self.handoff,
            policy=policy,
        )
        self.deleter = Deleter(engine, self.finder, namer, self.now)
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
        clone.committer = _rebound(self.committer, finder=clone.finder, walker=clone.walker)
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

    def loaded(self, tid: str, ns: str, latest_id: str | None) -> None:
        """This context's run loaded the namespace: as the latest, getting `latest_id`
        (`runs.EMPTY` if it was empty), or (None) by id or by position. Call it in the
        caller's context, not in a worker thread's copy (see `runs.py`)."""
        self.handoff.loaded(tid, ns, latest_id)

    def loaded_thread(self, tid: str) -> None:
        """This context's run listed every namespace of the thread."""
        self.handoff.loaded_thread(tid)

    # ------------------------------------------------- reading: the read path

    def latest(self, tid: str, ns: str) -> Entry | None:
        """A namespace's latest checkpoint with its writes: one query."""
        return self.finder.read_latest(tid, ns)

    def by_id(self, tid: str, ns: str, cid: str) -> Entry | None:
        """One checkpoint by id, with its writes: one query."""
        return self.finder.read_checkpoint(tid, ns, cid)

    def namespace_entries(self, tid: str, ns: str, before_id: str | None) -> Iterator[Entry]:
        """A namespace's checkpoints newest first, strictly before `before_id` if given."""
        return self.finder.namespace_entries(tid, ns, before_id)

    def namespace_records(
        self, tid: str, ns: str, *, upper_id: str | None = None
    ) -> Iterator[Record]:
        """A namespace's records newest first from checkpoint `upper_id` down, paged."""
        return self.finder.namespace_records(tid, ns, upper_id=upper_id)

    def thread_entries(self, tid: str, before_id: str | None = None) -> list[Entry]:
        """Every checkpoint of a thread no mark hides, every namespace, newest first."""
        return self.finder.thread_entries(tid, before_id)

    def all_entries(
        self, before_id: str | None = None, skipped: list[Skipped] | None = None
    ) -> list[Entry]:
        """Every checkpoint of every thread, newest first (a scan)."""
        return self.finder.all_entries(before_id, skipped=skipped)

    def thread_records(self, tid: str) -> list[Record]:
        """Every record of a thread, hidden by a mark or not."""
        return self.finder.thread_records(tid)

    def thread_keys(self, tid: str) -> list[ItemKey]:
        """Keys of every record and mark of a thread."""
        return self.finder.thread_keys(tid)

    def partition_items(
        self, thread_name: str, *, consistent: bool = False
    ) -> tuple[list[Record], list[Mark]]:
        """Every record and every mark of a thread named as stored."""
        return self.finder.partition_items(thread_name, consistent=consistent)

    def group(
        self,
        records: Iterable[Record],
        known_tid: str | None = None,
        skipped: list[Skipped] | None = None,
    ) -> list[Entry]:
        """Records grouped into checkpoints with their writes."""
        return self.finder.group(records, known_tid=known_tid, skipped=skipped)

    def pair(self, records: Iterable[Record]) -> Grouped:
        """Records grouped into checkpoints, and the writes without one."""
        return self.finder.pair(records)

    def live_leaves(
        self, thread_name: str, skipped: list[Skipped] | None = None
    ) -> set[str] | None:
        """Every object leaf a thread's records reference or its loans lend; None if it
        has neither."""
        return self.finder.live_leaves(thread_name, skipped)

    def lent_leaves(self, thread_name: str) -> set[str]:
        """Leaves of a thread's objects its loans lend to copies."""
        return self.finder.lent_leaves(thread_name)

    def unbacked_loans(self, thread_name: str) -> list[Loan]:
        """A thread's loans that no borrowing backs: written by someone else, they keep
        nothing (`Finder.backed`)."""
        loans = self.finder.loans(thread_name)
        kept = set(self.finder.backed(thread_name, loans))
        return [loan for loan in loans if loan not in kept]

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

    def release(self, borrower: str, lender: str, keep: set[str]) -> int:
        """End what a copy shares of a lender's objects but `keep` (`Deleter.release`)."""
        return self.deleter.release(borrower, lender, keep)

    def referenced_keys(self, entries: Sequence[Entry]) -> dict[str, str]:
        """Object keys these checkpoints reference, each with what it holds."""
        return self.finder.referenced_keys(entries)

    # ------------------------------------------------- opening: the one walk

    def walk(
        self,
        entry: Entry,
        body: dict[str, Any] | None = None,
        tasks: Mapping[str, tuple[str, str]] | None = None,
    ) -> Blobs:
        """Every blob of a checkpoint and of its writes, placed (`Walker.walk`): what the
        decoder, history, stats, verify and `rewrite` all go through."""
        return self.walker.walk(entry, body, tasks)

    def value_data(
        self,
        entry: Located,
        value: ValueBlob,
        fetched: Mapping[str, bytes],
        bases: dict[str, Typed] | None = None,
    ) -> Typed:
        """A channel value opened but not deserialized (`bases`: opened delta bases)."""
        return self.walker.value_data(entry, value, fetched, bases)

    def write_blob_data(
        self, entry: Located, task_id: str, idx: int, blob: bytes, owner: str | None = None
    ) -> tuple[str, Typed]:
        """A pending write's sealed blob opened but not deserialized (`owner`: the
        thread it was written for, when a copy shares it)."""
        return self.walker.write_blob_data(entry, task_id, idx, blob, owner)

    def open_body(self, entry: Entry) -> dict[str, Any]:
        return self.walker.open_body(entry)

    def open_metadata(self, entry: Entry) -> Any:
        return self.walker.open_metadata(entry)

    def open_task(self, writes: WritesRecord, what: str) -> tuple[str, str]:
        """A writes record's (task id, task path)."""
        return self.walker.open_task(writes, what)

    def stored_values(self, entry: Entry, body: Mapping[str, Any]) -> StoredValues:
        """The values a checkpoint stores itself, by channel."""
        return self.walker.stored_values(entry, body)

    def write_data(
        self, entry: Entry, write: WriteBlob, fetched: Mapping[str, bytes]
    ) -> tuple[str, Typed]:
        """A pending write opened but not deserialized: (channel, (type, data))."""
        return self.walker.write_data(entry, write, fetched)

    def bundle_blobs(
        self, entry: Located, key: str, fetched: Mapping[str, bytes]
    ) -> dict[int, bytes]:
        """The sealed writes a bundle object holds, by index."""
        return self.walker.bundle_blobs(entry, key, fetched)

    def bundle_writes(
        self,
        entry: Located,
        task_id: str,
        key: str,
        fetched: Mapping[str, bytes],
        owner: str | None = None,
    ) -> dict[int, tuple[str, Typed]]:
        """A task's bundled writes opened but not deserialized, by index."""
        return self.walker.bundle_writes(entry, task_id, key, fetched, owner)

    def share(self, src: str, dst: str, entries: Sequence[Entry]) -> Rewrite:
        """`src`'s checkpoints as records of `dst` (a copy) that share `src`'s blobs.
        Builds them and writes nothing (`Rewriter.share`)."""
        return self.rewriter.share(src, dst, entries)

    def rewrite(self, tid: str, entries: Sequence[Entry]) -> Rewrite:
        """The blobs of `tid` not sealed under the active key, re-sealed in place (a
        rotation). Builds them and writes nothing (`Rewriter.rewrite`)."""
        return self.rewriter.rewrite(tid, entries)

    def rewritten_keys(self, dst: str, entry: Entry) -> set[str]:
        """Sort keys `rewrite` writes for one entry in `dst`'s partition."""
        return self.rewriter.target_keys(dst, entry)

    # ------------------------------------------------- decoding

    def tuples(
        self, entries: Iterable[Entry], filter: Mapping[str, Any] | None, limit: int | None
    ) -> Iterator[CheckpointTuple]:
        """Entries decoded page by page into LangGraph's tuples."""
        return self.decoder.tuples(entries, filter, limit)

    def decode(self, entry: Entry) -> CheckpointTuple:
        """One checkpoint decoded for a run that continues from it: its stored values
        and skeleton are kept for the next `commit` on it (the read-to-write hand-off)."""
        return next(self.decoder.decode([entry], remember=True))

    def skeleton_of(self, blobs: Blobs) -> Skeleton:
        return self.decoder.skeleton_of(blobs)

    def skeleton(self, tid: str, ns: str, cid: str) -> Skeleton | None:
        return self.decoder.skeleton(tid, ns, cid)

    def keep_skeleton(self, tid: str, ns: str, cid: str, skeleton: Skeleton) -> None:
        self.decoder.keep_skeleton(tid, ns, cid, skeleton)

    # ------------------------------------------------- committing: the write path

    def commit(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, Any],
        before_write: Callable[[], None] | None = None,
    ) -> str:
        """Store a checkpoint (`Committer.commit_checkpoint`); its id."""
        return self.committer.commit_checkpoint(
            tid, ns, parent_id, checkpoint, metadata, new_versions, before_write=before_write
        )

    def commit_writes(
        self,
        tid: str,
        ns: str,
        cid: str,
        task_id: str,
        task_path: str,
        writes: Sequence[tuple[str, Any]],
    ) -> None:
        """Store a task's pending writes (`Committer.commit_writes`)."""
        self.committer.commit_writes(tid, ns, cid, task_id, task_path, writes)


def _rebound(part: _Part, **attributes: Any) -> _Part:
    """A shallow copy of a store part with some attributes replaced; its caches are the
    same objects as the original's."""
    clone = copy.copy(part)
    vars(clone).update(attributes)
    return clone
