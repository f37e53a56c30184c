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
shows all or nothing; a put refused for good takes its checkpoint's back (`taking_back`).

Concurrent runs. The record is written in one transaction with the namespace's head (the
id of its newest checkpoint, a control item). A put that continues what its run holds as
the namespace's latest (`runs.py`) commits only if the head still names that parent,
else it raises `ConcurrentUpdateError` and writes nothing; any other put (a fork, a
replay, direct API use) moves the head without condition. Under `thread_lock` every
commit also carries the lease's fencing token (`fences.py`) and is refused
(`LeaseLostError`) once another holder took it over; accepted, the same request pushes
the lease's expiry out, so a holder that keeps writing keeps its lease.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.base import WRITES_IDX_MAP, Checkpoint, CheckpointMetadata

from langgraph.checkpoint.s3dynamo import runs
from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, WritePlan
from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.blobs.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.blobs.placement import (
    ITEM_MAX,
    MAX_DELTA_BASE,
    needs_bundle,
)
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.codec import (
    NONE_OF_IT,
    Codec,
    delta_id,
    serializing,
    value_id,
)
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    DeploymentMismatchError,
    InvalidConfigError,
    ItemTooLargeError,
    StorageError,
    ThreadDeletedError,
)
from langgraph.checkpoint.s3dynamo.identities import CheckpointAt, ValueAt, checkpoint_time
from langgraph.checkpoint.s3dynamo.layout import (
    checkpoint_sk,
    parse_sk,
    write_ref,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    HeadMove,
    WritesRecord,
    head_key,
    pack_bundle,
    record_item,
)
from langgraph.checkpoint.s3dynamo.runnable_config import describe
from langgraph.checkpoint.s3dynamo.store.catalog import Catalog
from langgraph.checkpoint.s3dynamo.store.fences import holding
from langgraph.checkpoint.s3dynamo.store.finder import Finder
from langgraph.checkpoint.s3dynamo.store.format import (
    DeletedSince,
    catalog_items,
    commit_checkpoint,
    commit_writes,
)
from langgraph.checkpoint.s3dynamo.store.handoff import Handoff
from langgraph.checkpoint.s3dynamo.store.policy import StorePolicy
from langgraph.checkpoint.s3dynamo.store.walker import (
    STORE_KEYS,
    StoredValue,
    StoredValues,
    Typed,
    Walker,
)

log = logging.getLogger(__name__)
CommitCheckpoint = Callable[..., str]

# Special writes (error, interrupt, ...): the last one of an index wins.
LAST_WINS = frozenset(WRITES_IDX_MAP.values())
# What the store adds to a checkpoint's body; never taken from the caller's checkpoint.
INTERNAL_KEYS = STORE_KEYS | {"channel_values"}
# Opened delta bases kept (see `_delta_base`), each of at most 1 MiB.
OPENED_BASES = 4
OPENED_BASE_MAX = 1 << 20


class Fresh(NamedTuple):
    """A changed value, sealed whole or (with `base`) as a delta."""

    channel: str
    version: str
    sealed: bytes
    typed: Typed
    base: str | None


def taking_back(commit: CommitCheckpoint) -> CommitCheckpoint:
    """A put refused for good (another run committed first; a value, setting or
    deployment refused before any request) never commits: the writes records this store
    wrote for its checkpoint are deleted, and writes still to come for it are refused
    with the put's own error (`Handoff.refused`), so it leaves none behind. LangGraph
    sends a task's writes while its checkpoint's put is on the way."""

    @functools.wraps(commit)
    def committing(
        self: Committer, tid: str, ns: str, parent_id: str | None, checkpoint: Checkpoint,
        *rest: Any, **options: Any,
    ) -> str:  # fmt: skip
        try:
            return commit(self, tid, ns, parent_id, checkpoint, *rest, **options)
        except (ConcurrentUpdateError, InvalidConfigError, DeploymentMismatchError) as exc:
            if not isinstance(exc, ThreadDeletedError):  # which took back the namespace's
                writes = self.handoff.refused(tid, ns, checkpoint["id"], exc)
                try:
                    self.engine.batch(deletes=writes)
                except StorageError as failed:  # the refusal is what to say; gc takes them
                    log.warning("writes of a refused put not deleted: %s", failed)
            raise

    return committing


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
        self.delta_max = policy.delta_max
        self.detect_concurrent_runs = policy.detect_concurrent_runs
        # Object key -> opened data of recent delta bases.
        self.bases: Lru[str, Typed] = Lru(OPENED_BASES)
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
    ) -> str:
        """Store a checkpoint: new large values in one wave, then its record. Returns
        the checkpoint id. `before_write` runs after everything is sealed, before the
        first write. Refused for good, it takes back its writes (`taking_back`)."""
        cid = checkpoint["id"]
        values: dict[str, Any] = checkpoint.get("channel_values", {})
        versions = {**checkpoint.get("channel_versions", {}), **new_versions}
        body: dict[str, Any] = {k: v for k, v in checkpoint.items() if k not in INTERNAL_KEYS}
        body["parent"] = parent_id
        # Known before anything is sent: LangGraph may send a task's writes to the
        # checkpoint while its put is on the way.
        self.handoff.committing(tid, ns, cid)
        # Serialize and seal everything before the first request: bad input writes nothing.
        at = CheckpointAt(tid, ns, cid)
        what = at.what
        with serializing(f"{what}: the metadata", metadata, NONE_OF_IT):
            sealed_metadata = self.codec.seal_metadata(at, metadata)

        # What a copy shares of its source (`StoredValue.owner`) is carried forward shared.
        carried = self._parent_values(tid, ns, parent_id, versions, new_versions)
        budget = self.engine.budget()
        stored: StoredValues = {}
        fresh: list[Fresh] = []
        for channel, raw_version in versions.items():
            version = str(raw_version)
            old = carried.get(channel)
            if channel not in new_versions and old is not None and old.version == version:
                if old.blob is not None and self._stale(old.blob):
                    # Carried forward from before a rotation: seal it under the active key.
                    old = self._reseal_carried(tid, ns, channel, old, what)
                if old.blob is not None and budget.take(old.blob, carried=True):
                    stored[channel] = old
                    continue
                if old.leaf is not None:
                    stored[channel] = old
                    continue
            if channel in values:
                value_at = ValueAt(tid, ns, channel, version)
                with serializing(f"{what}: channel {channel!r}", values[channel], NONE_OF_IT):
                    fresh.append(self._seal_fresh(value_at, values[channel], old))
        uploads: list[tuple[str, bytes]] = []
        # Smallest first, so the inline budget keeps as many values out of S3 as it can.
        for f in sorted(fresh, key=lambda f: len(f.sealed)):
            if budget.take(f.sealed):
                stored[f.channel] = StoredValue(f.version, f.sealed, None, f.base)
                continue
            full = f.sealed
            value_at = ValueAt(tid, ns, f.channel, f.version)
            if f.base is not None:
                # The delta did not fit after all: a full version, which later deltas use.
                full = self.codec.seal_value_typed(value_at, f.typed)
            leaf = self.namer.value(value_at)
            uploads.append((self.walker.object_key(tid, leaf), full))
            stored[f.channel] = StoredValue(f.version, None, leaf)
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
        sk = checkpoint_sk(self.namer.namespace(tid, ns), cid)
        run_id = metadata.get("run_id")
        record = CheckpointRecord(
            pk=pk,
            sk=sk,
            body=self.codec.seal_body(at, body),
            metadata=sealed_metadata,
            thread_ref=self.codec.seal_ref(pk, sk, tid, ns),
            run_key=self.namer.run(str(run_id)) if run_id else None,
            objects=frozenset(
                [v.leaf for v in stored.values() if v.leaf is not None]
                + [
                    self.walker.value_leaf(ValueAt(owner or tid, ns, ch, base), owner)
                    for ch, base in bases.items()
                    for owner in (shared.get(ch),)
                ]
            ),
            inline={
                self.namer.channel(tid, ns, ch): v.blob
                for ch, v in stored.items()
                if v.blob is not None
            },
            written_at=self.now(),
        )
        self.refuse_oversized(tid, ns, cid, record, metadata)
        filed = self.catalog.entries_for(tid, ns, parent_id, metadata)
        run_key = self.handoff.run_key(tid, ns)
        head = (
            HeadMove(
                head_key(pk, run_key[2]),
                cid,
                parent_id,
                runs.continues_latest(run_key, parent_id),
            )
            if self.detect_concurrent_runs
            else None
        )
        lease = holding(self.handoff.store_id, pk)
        if before_write is not None:
            before_write()
        log.debug("commit checkpoint: %d inline, %d objects", len(record.inline), len(uploads))

        held = lease.stamp() if lease is not None else None
        # The commit deletes the intent in its own transaction; a plain PutItem commit
        # (detection off: a store without transactions may be in use) leaves that to
        # the engine, right after it. Catalog entries go in the transaction, or in one
        # batch before the plain write.
        transaction = head is not None or lease is not None
        plan = WritePlan(
            pk,
            writes=commit_checkpoint(
                record, head, held, record.written_at or self.now(), filed if transaction else ()
            ),
            uploads=uploads,
            batched=() if transaction else catalog_items(filed),
            closes_intent=transaction,
            at_ms=self._stamp_ms(),
        )
        try:
            self.engine.write(plan)
        except ConcurrentUpdateError as exc:  # LeaseLostError too: each says it in full
            exc.refusing(what, parent_id, runs.committed_by(run_key))
            if isinstance(exc, ThreadDeletedError):
                # The writes this store made since the delete are its records' only trace:
                # nothing of the run stays (docs/RELIABILITY.md, "Deletes stay deleted").
                self.engine.batch(deletes=self.handoff.deleted(tid, ns))
            raise
        if lease is not None and held is not None and held.expires_ms is not None:
            lease.extended(held.expires_ms)
        self.handoff.keep(tid, ns, cid, stored)
        self.handoff.committed(tid, ns, cid)
        self.catalog.written(tid, filed)
        runs.committed(run_key, cid)
        return cid

    def refuse_oversized(
        self, tid: str, ns: str, cid: str, record: CheckpointRecord, metadata: Mapping[str, Any]
    ) -> None:
        """Raise `ItemTooLargeError` before any request if the record would exceed an index
        item's limit, naming the metadata key (usually a string LangGraph copied from
        config["configurable"]) or the part of the checkpoint that is too large."""
        size = self.engine.ports.table.item_size(record_item(record))
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
    ) -> None:
        """Store a task's pending writes: large ones in one wave, then one merge."""
        at = CheckpointAt(tid, ns, cid)
        pk = self.namer.thread(tid)
        sk = writes_sk(self.namer.namespace(tid, ns), cid, self.namer.task(at, task_id))
        record = WritesRecord(
            pk=pk,
            sk=sk,
            task_ref=self.codec.seal_ref(pk, sk, task_id, task_path),
            written_at=self.now(),
        )
        indexed = [
            (WRITES_IDX_MAP.get(channel, position), channel, value)
            for position, (channel, value) in enumerate(writes)
        ]
        channels = {idx: channel for idx, channel, _ in indexed}
        sealed = []
        for idx, channel, value in indexed:
            subject = f"{at.what}: the write of task {task_id!r} to channel {channel!r}"
            with serializing(subject, value):
                sealed.append((idx, self.codec.seal_write(at.write(task_id, idx), channel, value)))
        uploads: list[tuple[str, bytes]] = []
        regular = {idx: blob for idx, blob in sealed if idx not in LAST_WINS}
        if needs_bundle(len(regular)):
            leaf = self.namer.write(at.write(task_id, len(regular)), uuid.uuid4().hex)
            uploads.append((self.walker.object_key(tid, leaf), pack_bundle(regular)))
            record.bundle = leaf
            sealed = [(i, b) for i, b in sealed if i in LAST_WINS]
        budget = self.engine.budget()
        for idx, blob in sealed:
            if budget.take(blob):
                record.writes[idx] = blob
            else:
                leaf = self.namer.write(at.write(task_id, idx), uuid.uuid4().hex)
                uploads.append((self.walker.object_key(tid, leaf), blob))
                record.writes[idx] = write_ref(leaf, self.namer.channel(tid, ns, channels[idx]))
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
            writes=commit_writes(record, LAST_WINS, held, guard),
            uploads=uploads,
            closes_intent=self.detect_concurrent_runs or lease is not None,
            at_ms=self._stamp_ms(),
        )
        try:
            self.engine.write(plan)
        except ConcurrentUpdateError as exc:  # a lease lost, or the thread deleted
            exc.refusing(writes_of)
            raise
        if self.handoff.is_dead(tid, ns, cid, made):  # found deleted while it was sent
            self.engine.batch(deletes=[record.key])
            self.handoff.refuse_if_dead(tid, ns, cid, made, writes_of)
        if lease is not None and held is not None and held.expires_ms is not None:
            lease.extended(held.expires_ms)

    # ------------------------------------------------------ where values live

    def _parent_values(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        versions: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> StoredValues:
        """Where the parent keeps the values this checkpoint did not change: usually
        cached from the read that started the run; otherwise one query reads the
        parent's record (no object request)."""
        if parent_id is None:
            return {}
        cached = self.handoff.stored(tid, ns, parent_id)
        if cached is not None:
            return cached  # also tells where the bases of new deltas are
        if all(ch in new_versions for ch in versions):
            return {}
        entry = self.finder.read_checkpoint(tid, ns, parent_id)
        if entry is None:
            return {}
        return self.walker.stored_values(entry, self.walker.open_body(entry))

    def _stale(self, blob: bytes) -> bool:
        keyring = self.sealer.keyring
        return keyring is not None and self.sealer.key_id_of(blob) != keyring.active

    def _seal_fresh(self, at: ValueAt, value: Any, previous: StoredValue | None) -> Fresh:
        """Seal a changed value: as a delta against the channel's last full version when
        this process holds that version and the delta is at most `delta_max` (and fits
        inline), else whole."""
        typed = self.codec.dump(value)
        base = self._delta_base(at.tid, at.ns, at.channel, previous)
        if base is not None:
            base_version, base_data = base
            delta = self.codec.seal_value_delta(at, typed, base_version, base_data)
            if delta is not None and len(delta) <= min(self.inline_max, self.delta_max):
                return Fresh(at.channel, at.version, delta, typed, base_version)
        sealed = self.codec.seal_value_typed(at, typed)
        return Fresh(at.channel, at.version, sealed, typed, None)

    def _delta_base(
        self, tid: str, ns: str, channel: str, previous: StoredValue | None
    ) -> tuple[str, Typed] | None:
        """(version, opened data) of the full version a new delta of `channel` is made
        against: the one the parent's value is, or is a delta of. Only an object can be
        a base, and only one this process holds: the write path never reads S3."""
        if previous is None or (previous.base is None and previous.leaf is None):
            return None
        if previous.owner is not None:
            # Shared by a copy: a delta and its base always belong to one thread.
            return None
        version = previous.base if previous.base is not None else previous.version
        at = ValueAt(tid, ns, channel, version)
        key = self.walker.object_key(tid, self.namer.value(at))
        opened = self.bases.get(key)
        if opened is not None:
            return version, opened
        body = self.objects.cached(key)
        if body is None:
            return None
        what = f"{describe(tid, ns, version)} (delta base)"
        data = self.codec.value_data(at, body, what)
        if len(data[1]) > MAX_DELTA_BASE:
            return None
        # Consecutive deltas share their base: keep it opened (objects never change).
        if len(data[1]) <= OPENED_BASE_MAX:
            self.bases.put(key, data)
        return version, data

    def _reseal_carried(
        self, tid: str, ns: str, channel: str, old: StoredValue, what: str
    ) -> StoredValue:
        if old.blob is None:
            return old
        if old.owner is not None:
            # Sealed for the thread it is shared from; a delta's base is that thread's.
            at = ValueAt(old.owner, ns, channel, old.version)
            if old.base is not None:
                return old  # still opens under its key; reencrypt() moves it later
            ident = value_id(at)
            return old._replace(blob=self.codec.reseal(old.blob, ident, ident, what))
        at = ValueAt(tid, ns, channel, old.version)
        if old.base is None:
            ident = value_id(at)
            return old._replace(blob=self.codec.reseal(old.blob, ident, ident, what))
        base = self._delta_base(tid, ns, channel, old)
        if base is None:
            return old  # still opens under its key; reencrypt() moves it later
        ident = delta_id(at, old.base)
        return old._replace(blob=self.codec.reseal_delta(old.blob, ident, ident, base[1], what))


# A put refused for good takes back its checkpoint's writes (`taking_back`).
Committer.commit_checkpoint = taking_back(Committer.commit_checkpoint)  # type: ignore[method-assign]
