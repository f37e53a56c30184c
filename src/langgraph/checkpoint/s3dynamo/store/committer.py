"""Committing a checkpoint or a task's writes: placing values, sealing, then the commit.

Placement. A channel value is stored once per (thread, ns, channel, version): inline in
the checkpoint record when small (`blobs/placement.py`), else as an object named by that
identity. A checkpoint whose channel did not change points at what its parent stored
(usually cached from the read that started the run), so unchanged values are never
uploaded again. A changed value whose parent is (or is a delta of) a full version this
process holds is sealed as a delta against it when the delta fits inline and `delta_max`.

Commit protocol. `commit_checkpoint` seals everything first (bad input writes nothing),
then hands the blob engine a plan (`blobs.WritePlan`): the new values too large to
inline, and the record's write. The engine writes an upload intent naming the objects
(only when there are any), uploads them in one wave with `If-None-Match: *` (one found
there is written again, which keeps garbage collection off it: `ObjectIO.upload`), then
runs the commit: one request writing the record, which also deletes the intent
(detection off: a plain write, the intent's delete after it). The record is the commit
point: a crash before it leaves the old state plus unreferenced objects the intent
names, which garbage collection removes after a grace period; after it, the new state.
`commit_writes` does the same with one merge per (checkpoint, task): a `put_writes`
shows all or nothing; a put refused for good takes its checkpoint's back.

Concurrent runs. The record is written in one transaction with the namespace's head (the
id of its newest checkpoint, a control item). A put that continues what its run holds as
the namespace's latest (the run record, `store/handoff.py`) commits only if the head
names that parent or an older one (detection off moves none), else it raises
`ConcurrentUpdateError`, writing nothing; other puts (forks, replays, direct API use)
move the head without condition. Under `thread_lock` every commit also carries the
lease's fencing token (`fences.py`), refused (`LeaseLostError`) once another holder took
it over; accepted, it pushes the lease's expiry out: a holder writing keeps its lease.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.base import WRITES_IDX_MAP, Checkpoint, CheckpointMetadata

from langgraph.checkpoint.s3dynamo.backoff import CONFLICT_ATTEMPTS, tries
from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, WritePlan
from langgraph.checkpoint.s3dynamo.blobs.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.blobs.placement import (
    ITEM_MAX,
    needs_bundle,
)
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import Apply, Batch, Steps
from langgraph.checkpoint.s3dynamo.config.runnable_config import describe
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    DeploymentMismatchError,
    ForgedTombstoneError,
    InvalidConfigError,
    ItemTooLargeError,
    StorageError,
    SubjectKeyChangedError,
    ThreadDeletedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    checkpoint_sk,
    parse_sk,
    write_ref,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    HeadMove,
    ItemKey,
    WritesRecord,
    head_key,
    pack_bundle,
    record_item,
)
from langgraph.checkpoint.s3dynamo.keys.codec import (
    NONE_OF_IT,
    Codec,
    serializing,
)
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt, checkpoint_time
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.catalog import Catalog
from langgraph.checkpoint.s3dynamo.store.fences import holding
from langgraph.checkpoint.s3dynamo.store.finder import Finder
from langgraph.checkpoint.s3dynamo.store.format import (
    DeletedSince,
    catalog_items,
    commit_checkpoint,
    commit_writes,
    unforge,
)
from langgraph.checkpoint.s3dynamo.store.handoff import (
    Handoff,
    RunKey,
    committed_by,
    continues_latest,
    run_committed,
)
from langgraph.checkpoint.s3dynamo.store.placing import Placer
from langgraph.checkpoint.s3dynamo.store.policy import StorePolicy
from langgraph.checkpoint.s3dynamo.store.walker import (
    STORE_KEYS,
    StoredValues,
    Walker,
)
from langgraph.checkpoint.s3dynamo.table import Write

log = logging.getLogger(__name__)

# Special writes (error, interrupt, ...): the last one of an index wins.
LAST_WINS = frozenset(WRITES_IDX_MAP.values())
# What the store adds to a checkpoint's body; never taken from the caller's checkpoint.
INTERNAL_KEYS = STORE_KEYS | {"channel_values"}


class Sealing(NamedTuple):
    """How a commit seals: `codec` under the thread's key (`subjects.py`; the store's own
    codec, under the deployment's), and `subject`, the subject's fence its transaction
    carries (checked, or made with the subject's first key)."""

    codec: Codec
    subject: Write | None = None


class Committer:
    """Writes what the walker reads: it names, seals and keeps objects through the
    walker's namer, codec and object cache, so the two cannot disagree."""

    def __init__(
        self,
        *,
        engine: BlobEngine,
        finder: Finder,
        walker: Walker,
        handoff: Handoff,
        catalog: Catalog,
        policy: StorePolicy,
    ) -> None:
        self.engine = engine
        self.finder = finder
        self.walker = walker
        self.handoff = handoff
        self.catalog = catalog
        self.detect_concurrent_runs = policy.detect_concurrent_runs
        self.placer = Placer(engine, finder, walker, handoff, policy.delta_max)
        # Stamps every record written (`written_at`) and its upload intent; tests replace it.
        self.clock: Callable[[], float] = time.time

    def now(self) -> int:
        """The stamp of a record written now: whole seconds since the epoch."""
        return int(self.clock())

    @property
    def namer(self) -> Namer:
        return self.walker.namer

    @property
    def codec(self) -> Codec:
        return self.walker.codec

    @property
    def sealer(self) -> Sealer:
        return self.walker.codec.sealer

    @property
    def objects(self) -> ObjectIO:
        return self.walker.objects

    @property
    def inline_max(self) -> int:
        return self.engine.inline_max

    def _stamp_ms(self) -> int:
        return int(self.clock() * 1000)

    # ------------------------------------------------------------ checkpoints

    def commit_checkpoint(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, Any],
        before_write: Callable[[], None] | None = None,
        sealing: Sealing | None = None,
    ) -> Steps[str]:
        """Store a checkpoint: new large values in one wave, then its record. Returns
        the checkpoint id. `before_write` runs after everything is sealed, before the
        first write. A put refused for good (another run committed first; a value,
        setting or deployment refused before any request) never commits: the writes
        records this store wrote for its checkpoint are deleted, and writes still to
        come for it are refused with the put's own error (`Handoff.refused`), so it
        leaves none behind (LangGraph sends a task's writes while its put is on the way)."""
        try:
            return (
                yield from self._commit_checkpoint(
                    tid,
                    ns,
                    parent_id,
                    checkpoint,
                    metadata,
                    new_versions,
                    before_write,
                    sealing or Sealing(self.codec),
                )
            )
        except (
            ConcurrentUpdateError,
            InvalidConfigError,
            DeploymentMismatchError,
            ForgedTombstoneError,
        ) as exc:
            # A deleted thread took back the namespace's writes; a changed subject key is
            # sealed again and sent once more (`ThreadStore.commit`).
            if not isinstance(exc, (ThreadDeletedError, SubjectKeyChangedError)):
                writes = self.handoff.refused(tid, ns, checkpoint["id"], exc)
                try:
                    yield Batch(deletes=writes)
                except StorageError as failed:  # the refusal is what to say; gc takes them
                    log.warning("writes of a refused put not deleted: %s", failed)
            raise

    def _commit_checkpoint(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, Any],
        before_write: Callable[[], None] | None,
        sealing: Sealing,
    ) -> Steps[str]:
        cid = checkpoint["id"]
        codec = sealing.codec
        at = CheckpointAt(tid, ns, cid)
        self.handoff.committing(tid, ns, cid)  # its writes may come while it is sent
        sealed = self._sealed(at, parent_id, checkpoint, metadata, new_versions, codec)
        record, stored, uploads = yield from sealed
        run_key = self.handoff.run_key(tid, ns)
        head = self._head(record, run_key, parent_id)
        lease = holding(self.handoff.store_id, record.pk)
        if before_write is not None:
            before_write()
        # After the deployment check: the fields it files under are the deployment's.
        filed = self.catalog.entries_for(tid, ns, parent_id, metadata, codec)
        log.debug("commit checkpoint: %d inline, %d objects", len(record.inline), len(uploads))
        held = lease.stamp() if lease is not None else None
        # The commit deletes the intent in its own transaction; a plain PutItem commit
        # (detection off: a store without transactions may be in use) leaves that to the
        # engine. Catalog entries go in the transaction, or in a batch before the write.
        transaction = head is not None or lease is not None or sealing.subject is not None
        written_at = record.written_at or self.now()
        filing = filed if transaction else ()
        plan = WritePlan(
            record.pk,
            writes=commit_checkpoint(record, head, held, written_at, filing, sealing.subject),
            uploads=uploads,
            batched=() if transaction else catalog_items(filed),
            closes_intent=transaction,
            at_ms=self._stamp_ms(),
        )
        yield from self._send(at, plan, head, parent_id, run_key)
        if lease is not None and held is not None and held.expires_ms is not None:
            lease.extended(held.expires_ms)
        self.handoff.keep(tid, ns, cid, stored)
        self.handoff.committed(tid, ns, cid)
        self.catalog.written(tid, filed)
        run_committed(run_key, cid)
        return cid

    def _sealed(
        self,
        at: CheckpointAt,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, Any],
        codec: Codec,
    ) -> Steps[tuple[CheckpointRecord, StoredValues, list[tuple[str, bytes]]]]:
        """The checkpoint's record, where each of its values is, and the objects to
        upload: everything serialized and sealed, and the record's size checked, before
        the first write (placing may read what the parent stored, if not cached)."""
        # Serialize and seal everything before the first request: bad input writes nothing.
        with serializing(lambda: f"{at.what}: the metadata", metadata, NONE_OF_IT):
            sealed_metadata = codec.seal_metadata(at, metadata)
        versions = {**checkpoint.get("channel_versions", {}), **new_versions}
        values = checkpoint.get("channel_values", {})
        placing = self.placer.place(at, parent_id, values, versions, new_versions, codec)
        stored, uploads = yield from placing
        record = self._record(at, parent_id, checkpoint, stored, sealed_metadata, codec)
        record.run_key = self.namer.run(str(metadata["run_id"])) if metadata.get("run_id") else None
        self.refuse_oversized(at.tid, at.ns, at.checkpoint_id, record, metadata)
        return record, stored, uploads

    def _send(
        self,
        at: CheckpointAt,
        plan: WritePlan,
        head: HeadMove | None,
        parent_id: str | None,
        run_key: RunKey,
    ) -> Steps[None]:
        """Send the commit's plan: refused by a forged tombstone on the head, which
        `_unforged` puts back, it is sent again without its uploads (they are there);
        any other refusal is raised, saying what it refused and what the run committed
        before it (`handoff.committed_by`)."""
        for attempt in tries(CONFLICT_ATTEMPTS):
            try:
                yield plan
                break
            except ConcurrentUpdateError as exc:  # LeaseLostError too: each says it in full
                if head is not None and (yield from self._unforged(at, head.key, exc, attempt)):
                    plan = dataclasses.replace(plan, uploads=())  # uploaded: sent again alone
                    continue
                exc.refusing(at.what, parent_id, committed_by(run_key))
                if isinstance(exc, ThreadDeletedError):
                    # The writes this store made since the delete are its records' only
                    # trace: nothing of the run stays (docs/RELIABILITY.md, "Deletes stay
                    # deleted").
                    yield Batch(deletes=self.handoff.deleted(at.tid, at.ns))
                raise

    def _unforged(
        self, at: CheckpointAt, head: ItemKey, refused: ConcurrentUpdateError, attempt: int
    ) -> Steps[bool]:
        """Whether a commit refused by a tombstone on the namespace's `head` is to be sent
        again: the tombstone is forged (`Namer.genuine_tombstone`: no seal, or another
        one) over a namespace that still shows a checkpoint, whose id (authenticated by
        its sealed reference) the head is set back to, while it holds that forged text.
        A genuine tombstone is a delete; so is one over a namespace that shows nothing,
        as a finished delete leaves it (an earlier release's tombstone has no seal): the
        refusal stands. Forged again after `CONFLICT_ATTEMPTS` tries:
        `ForgedTombstoneError`. docs/SECURITY.md, "Tombstones"."""
        forged = refused.tombstone if isinstance(refused, ThreadDeletedError) else None
        if forged is None or self.namer.genuine_tombstone(head.pk, head.sk, forged):
            return False
        latest = yield from self.finder.read_latest(at.tid, at.ns)
        if latest is None:
            return False
        self.finder.open_thread_ref(latest.record)  # a record made without keys: raised
        if attempt >= CONFLICT_ATTEMPTS:
            raise ForgedTombstoneError(at.what, forged, attempt)
        log.warning("%s: a forged tombstone on its head (%r) put back", at.what, forged)
        yield Apply(unforge(head, forged, latest.checkpoint_id))
        return True

    def _head(
        self, record: CheckpointRecord, run_key: Any, parent_id: str | None
    ) -> HeadMove | None:
        """How the commit moves its namespace's head (the run record); None without detection."""
        if not self.detect_concurrent_runs:
            return None
        expect = continues_latest(run_key, parent_id)
        return HeadMove(head_key(record.pk, run_key[2]), record.checkpoint_id, parent_id, expect)

    def _record(
        self,
        at: CheckpointAt,
        parent_id: str | None,
        checkpoint: Checkpoint,
        stored: StoredValues,
        sealed_metadata: bytes,
        codec: Codec,
    ) -> CheckpointRecord:
        """The checkpoint's record: its body (LangGraph's keys, the parent, and where each
        value is and whose it is), sealed with its metadata and thread reference."""
        tid, ns = at.tid, at.ns
        body: dict[str, Any] = {k: v for k, v in checkpoint.items() if k not in INTERNAL_KEYS}
        body["parent"] = parent_id
        bases = {ch: v.base for ch, v in stored.items() if v.base is not None}
        if bases:
            body["bases"] = bases
        shared = {ch: v.owner for ch, v in stored.items() if v.owner is not None}
        if shared:
            body["shared"] = shared
        # Sealed with the body, so an inline value or object reference removed from the
        # record is detected instead of silently dropping the channel.
        body["stored"] = sorted(stored)
        pk = self.namer.thread(tid)
        sk = checkpoint_sk(self.namer.namespace(tid, ns), at.checkpoint_id)
        base_leaves = [
            self.walker.value_leaf(ValueAt(shared.get(ch) or tid, ns, ch, base), shared.get(ch))
            for ch, base in bases.items()
        ]
        return CheckpointRecord(
            pk=pk,
            sk=sk,
            body=codec.seal_body(at, body),
            metadata=sealed_metadata,
            thread_ref=codec.seal_ref(pk, sk, tid, ns),
            objects=frozenset(
                [v.leaf for v in stored.values() if v.leaf is not None] + base_leaves
            ),
            inline={
                self.namer.channel(tid, ns, ch): v.blob
                for ch, v in stored.items()
                if v.blob is not None
            },
            written_at=self.now(),
        )

    def refuse_oversized(
        self, tid: str, ns: str, cid: str, record: CheckpointRecord, metadata: Mapping[str, Any]
    ) -> None:
        """Raise `ItemTooLargeError` before any request if the record would exceed an index
        item's limit, naming the metadata key (usually a string LangGraph copied from
        config["configurable"]) or the part of the checkpoint that is too large."""
        size = self.engine.item_size(record_item(record))
        if size <= ITEM_MAX:
            return
        what = describe(tid, ns, cid)
        if len(record.metadata) >= len(record.body):
            sizes = {str(k): len(repr(v)) for k, v in metadata.items()}
            key = max(sizes, key=lambda k: sizes[k]) if sizes else "?"
            raise ItemTooLargeError(
                f"{what}: metadata is {len(record.metadata)} bytes sealed, the record "
                f"{size} bytes, over the {ITEM_MAX}-byte limit of one index item; its largest "
                f"key is {key!r} (about {sizes.get(key, 0)} characters). LangGraph copies "
                "every string of config['configurable'] and the metadata you pass into the "
                "checkpoint's metadata: keep large data in the graph state instead"
            )
        raise ItemTooLargeError(
            f"{what}: the checkpoint body (channel versions and versions_seen) is "
            f"{len(record.body)} bytes sealed, the record {size} bytes, over the "
            f"{ITEM_MAX}-byte limit of one index item; the graph has too many channels or "
            "tasks for one checkpoint"
        )

    # ----------------------------------------------------------------- writes

    def commit_writes(
        self,
        tid: str,
        ns: str,
        cid: str,
        task_id: str,
        task_path: str,
        writes: Sequence[tuple[str, Any]],
        sealing: Sealing | None = None,
    ) -> Steps[None]:
        """Store a task's pending writes: large ones in one wave, then one merge."""
        at = CheckpointAt(tid, ns, cid)
        sealing = sealing or Sealing(self.codec)
        record, uploads = self._writes_record(at, task_id, task_path, writes, sealing.codec)
        pk, sk = record.pk, record.sk
        lease = holding(self.handoff.store_id, pk)
        log.debug("commit writes: %d inline, %d objects", len(record.writes), len(uploads))

        held = lease.stamp() if lease is not None else None
        # Writes to a checkpoint a run loaded and this store did not commit: held to its
        # namespace not deleted since (docs/RELIABILITY.md, "Deletes stay deleted").
        made = self.handoff.writing(tid, ns, cid, record.key)
        writes_of = f"{at.what}: writes of task {task_id!r}"
        self.handoff.refuse_if_dead(tid, ns, cid, made, writes_of)
        guard = None
        if made.loaded and not made.ours and self.detect_concurrent_runs:
            guard = DeletedSince(head_key(pk, parse_sk(sk)[0]), checkpoint_time(cid))
        plan = WritePlan(
            pk,
            writes=commit_writes(record, LAST_WINS, held, guard, sealing.subject),
            uploads=uploads,
            closes_intent=self.detect_concurrent_runs or lease is not None,
            at_ms=self._stamp_ms(),
        )
        for attempt in tries(CONFLICT_ATTEMPTS):
            try:
                yield plan
                break
            except ConcurrentUpdateError as exc:  # a lease lost, or the thread deleted
                if guard is not None and (yield from self._unforged(at, guard.head, exc, attempt)):
                    plan = dataclasses.replace(plan, uploads=())
                    continue
                exc.refusing(writes_of)
                raise
        if self.handoff.is_dead(tid, ns, cid, made):  # found deleted while it was sent
            yield Batch(deletes=[record.key])
            self.handoff.refuse_if_dead(tid, ns, cid, made, writes_of)
        if lease is not None and held is not None and held.expires_ms is not None:
            lease.extended(held.expires_ms)

    def _writes_record(
        self,
        at: CheckpointAt,
        task_id: str,
        task_path: str,
        writes: Sequence[tuple[str, Any]],
        codec: Codec,
    ) -> tuple[WritesRecord, list[tuple[str, bytes]]]:
        """A task's writes record and the objects it references: each write sealed (bad
        input writes nothing), the regular ones in a bundle object when one update could
        not carry them, each inline while the budget lasts, else an object of its own."""
        tid, ns = at.tid, at.ns
        pk = self.namer.thread(tid)
        sk = writes_sk(
            self.namer.namespace(tid, ns), at.checkpoint_id, self.namer.task(at, task_id)
        )
        ref = codec.seal_ref(pk, sk, task_id, task_path)
        record = WritesRecord(pk=pk, sk=sk, task_ref=ref, written_at=self.now())
        indexed = [(WRITES_IDX_MAP.get(ch, pos), ch, v) for pos, (ch, v) in enumerate(writes)]
        channels = {idx: channel for idx, channel, _ in indexed}
        sealed = []
        for idx, channel, value in indexed:
            subject = f"{at.what}: the write of task {task_id!r} to channel {channel!r}"
            with serializing(subject, value):
                sealed.append((idx, codec.seal_write(at.write(task_id, idx), channel, value)))
        uploads: list[tuple[str, bytes]] = []
        regular = {idx: blob for idx, blob in sealed if idx not in LAST_WINS}
        if needs_bundle(len(regular)):
            leaf = self.namer.write(at.write(task_id, len(regular)), os.urandom(16).hex())
            uploads.append((self.walker.object_key(tid, leaf), pack_bundle(regular)))
            record.bundle = leaf
            sealed = [(i, b) for i, b in sealed if i in LAST_WINS]
        budget = self.engine.budget()
        for idx, blob in sealed:
            if budget.take(blob):
                record.writes[idx] = blob
            else:
                leaf = self.namer.write(at.write(task_id, idx), os.urandom(16).hex())
                uploads.append((self.walker.object_key(tid, leaf), blob))
                record.writes[idx] = write_ref(leaf, self.namer.channel(tid, ns, channels[idx]))
        return record, uploads

    # ------------------------------------------------------ where values live
