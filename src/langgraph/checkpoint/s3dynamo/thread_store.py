"""The storage protocol of a thread: how checkpoints and writes are placed, committed,
found and opened. The saver, history, garbage collection and maintenance all build on
`ThreadStore`; only it decides where a value lives.

Layout. A thread's records share one partition (`records.py`); its objects share the key
prefix `<prefix><thread name>/`. A channel value is stored once per (thread, ns, channel,
version): inline in the checkpoint record when small (`placement.py`), else as an object
named by that identity. A checkpoint whose channel did not change points at what its
parent stored (`stored_values` of the parent, usually cached from the read that started
the run), so unchanged values are never uploaded again.

Commit protocol. `commit_checkpoint` seals everything first (bad input writes nothing),
uploads the new values too large to inline in one parallel wave, each with
`If-None-Match: *` (objects are named by their identity, so an existing one already
holds the same value; it is written again anyway, which keeps garbage collection off it:
see `upload` and `gc.py`), then writes the checkpoint record with one request: the
record is the commit point. A crash before it leaves the old state plus unreferenced
objects, which garbage collection (`gc.py`) removes after a grace period; a crash after
it leaves the new state. `commit_writes` does the same with one merge per (checkpoint,
task), so a `put_writes` call becomes visible all at once or not at all.

Concurrent runs. The record is written in one transaction with the namespace's head (the
id of its newest checkpoint, a control item). A put that continues what its run holds as
the namespace's latest (`runs.py`: the checkpoint the run loaded as the latest, or its
own last commit there) commits only if the head still names that parent: if another run
committed meanwhile, the commit raises `ConcurrentUpdateError` and writes nothing. Any
other put (a fork: `update_state` on an old checkpoint, a replay, direct API use) moves
the head without condition; `runs.py` argues why a single writer is never refused. Under
`thread_lock` every commit also carries the lease's fencing token and is refused
(`LeaseLostError`) once another holder took it over.

Reading. "Latest" is one descending query over the namespace with a small limit (the
newest checkpoint record comes right after its own writes records); "by id" is one query
over the checkpoint's sort-key prefix. Values kept as objects come back in one parallel
wave for every checkpoint being decoded.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    writes_sort_key,
)

from langgraph.checkpoint.s3dynamo import runs
from langgraph.checkpoint.s3dynamo.codec import Codec, delta_id, value_id
from langgraph.checkpoint.s3dynamo.config import describe, make_config
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    IntegrityError,
    ItemTooLargeError,
    LeaseLostError,
    ObjectNotFoundError,
)
from langgraph.checkpoint.s3dynamo.list_reuse import GrowingLists
from langgraph.checkpoint.s3dynamo.naming import (
    LEASE_SK,
    SEPARATOR,
    Namer,
    checkpoint_sk,
    control_pk,
    head_sk,
    object_key,
    parse_sk,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.object_cache import ObjectCache
from langgraph.checkpoint.s3dynamo.placement import (
    DEFAULT_DELTA_MAX,
    ITEM_MAX,
    MAX_DELTA_BASE,
    InlineBudget,
    needs_bundle,
)
from langgraph.checkpoint.s3dynamo.ports import Cursor, Index, ObjectStore
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    Fence,
    HeadMove,
    ItemKey,
    Record,
    WritesRecord,
    is_writes_key,
    owner_sk,
    pack_bundle,
    record_size,
    referenced_leaves,
    split_write_ref,
    unpack_bundle,
    write_ref,
)
from langgraph.checkpoint.s3dynamo.sealing import Sealer
from langgraph.checkpoint.s3dynamo.waves import parallel

log = logging.getLogger(__name__)

# First page of a "latest" query: the newest checkpoint record plus a few writes records.
LATEST_PAGE = 8
LATER_PAGES = 100
# Checkpoints whose values are fetched in one S3 wave while listing.
LIST_PAGE = 32
CARRY_CACHE_SIZE = 256
# Checkpoints a history walk keeps opened: a few long threads' worth.
SKELETONS = 4096
# Opened delta bases kept (see `_delta_base`), each of at most 1 MiB.
OPENED_BASES = 4
OPENED_BASE_MAX = 1 << 20
# Special writes (error, interrupt, ...): the last one of an index wins.
LAST_WINS = frozenset(WRITES_IDX_MAP.values())
# Above every checkpoint id, so an open-ended range needs no id to bound it.
TOP = "\uffff"
# Leases held in this context (thread of execution or task): (store, thread name) -> fence.
# Copied into LangGraph's worker threads and asyncio.to_thread with the context.
HELD: ContextVar[Mapping[tuple[int, str], Fence] | None] = ContextVar(
    "s3dynamo_held_leases", default=None
)


class StoredValue(NamedTuple):
    """Where one channel's value at one checkpoint is kept: inline (`blob`) or as an
    object (`leaf`). With `base`, the inline blob is a delta against that version of the
    channel, which is an object of its own."""

    version: str
    blob: bytes | None
    leaf: str | None
    base: str | None = None


StoredValues = dict[str, StoredValue]


class KeptWrite(NamedTuple):
    """One pending write of a kept checkpoint: opened (channel and serialized data) when
    it was inline, else where its object is (`leaf`) and its channel tag."""

    order: tuple[str, str, int]
    task_id: str
    idx: int
    channel: str | None
    typed: tuple[str, bytes] | None
    leaf: str | None = None
    tag: str | None = None


class KeptBundle(NamedTuple):
    task_id: str
    task_path: str
    leaf: str


class Skeleton(NamedTuple):
    """A checkpoint that has a child, opened: its parent, where its values are stored,
    and its writes, inline ones decrypted and decompressed but not deserialized. None of
    it changes once a child exists (the writes that produced the child are all in), so a
    history walk keeps it and never reads, decrypts or decompresses it again; each walk
    deserializes only the writes it returns, into objects of its own."""

    parent: str | None
    stored: StoredValues
    writes: tuple[KeptWrite, ...]
    bundles: tuple[KeptBundle, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A thread a table-wide operation could not open, named as stored (its partition
    key) with the key id its records are sealed under, never by thread id."""

    partition: str
    key_id: str | None
    reason: str


def warn_skipped(operation: str, skipped: Sequence[Skipped]) -> None:
    """One warning per skipped thread, then a summary (logger `langgraph.checkpoint.s3dynamo`)."""
    for s in skipped:
        log.warning(
            "%s: skipped thread %s (key id %s): %s", operation, s.partition, s.key_id, s.reason
        )
    if skipped:
        ids = sorted({str(s.key_id) for s in skipped})
        log.warning(
            "%s: skipped %d thread(s) this saver cannot open (key ids %s); the rest was done",
            operation,
            len(skipped),
            ", ".join(ids),
        )


@dataclass
class Entry:
    """One checkpoint as read from the index, before its values are fetched."""

    tid: str
    ns: str
    record: CheckpointRecord
    writes: list[WritesRecord]
    # Opened on demand and kept, so filtering and decoding open it once.
    metadata: Any = None

    @property
    def checkpoint_id(self) -> str:
        return self.record.checkpoint_id

    @property
    def what(self) -> str:
        return describe(self.tid, self.ns, self.checkpoint_id)


class ThreadStore:
    """Places, commits, finds and opens a thread's checkpoints on an index and an object
    store. Ports are built on first use, so constructing one makes no request."""

    def __init__(
        self,
        *,
        index: Callable[[], Index],
        objects: Callable[[], ObjectStore],
        namer: Namer,
        codec: Codec,
        sealer: Sealer,
        prefix: str,
        inline_max: int,
        delta_max: int = DEFAULT_DELTA_MAX,
        cache: ObjectCache | None = None,
        detect_concurrent_runs: bool = True,
    ) -> None:
        self._make_index = index
        self._make_objects = objects
        self.namer = namer
        self.codec = codec
        self.sealer = sealer
        self.prefix = prefix
        self.inline_max = inline_max
        self.delta_max = delta_max
        self.cache = cache if cache is not None else ObjectCache()
        self.detect_concurrent_runs = detect_concurrent_runs
        self._carry: OrderedDict[tuple[str, str, str], StoredValues] = OrderedDict()
        self._skeletons: OrderedDict[tuple[str, str, str], Skeleton] = OrderedDict()
        # Object key -> opened data of recent delta bases.
        self._bases: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._carry_lock = threading.Lock()
        # Stamps every record written (`written_at`); tests replace it.
        self.clock: Callable[[], float] = time.time

    def now(self) -> int:
        """The stamp of a record written now: whole seconds since the epoch."""
        return int(self.clock())

    # Two threads racing here at worst build one spare client.
    @cached_property
    def index(self) -> Index:
        return self._make_index()

    @cached_property
    def objects(self) -> ObjectStore:
        return self._make_objects()

    # ----------------------------------------------------------------- names

    def object_key(self, tid: str, leaf: str) -> str:
        return object_key(self.prefix, self.namer.thread(tid), leaf)

    def thread_prefix(self, thread_name: str) -> str:
        """Key prefix shared by every object of one thread."""
        return f"{self.prefix}{thread_name}/"

    # --------------------------------------------------------------- objects

    def fetch(self, needed: Mapping[str, str], *, cached: bool = True) -> dict[str, bytes]:
        """Read objects in one parallel wave; `needed` maps each key to what needs it,
        named in the error if the object is gone. Objects this process wrote or read
        lately come from the cache (see `object_cache.py`) unless `cached` is False."""
        found: dict[str, bytes] = {}
        if cached:
            for key in needed:
                if (body := self.cache.get(key)) is not None:
                    found[key] = body
        keys = [k for k in needed if k not in found]
        log.debug("object read wave: %d objects (%d cached)", len(keys), len(found))
        try:
            bodies = parallel(self.objects.get, keys)
        except ObjectNotFoundError as exc:
            raise ObjectNotFoundError(
                f"{needed.get(exc.key, 'a checkpoint')}: object {exc.key!r} is referenced "
                "by the index but missing from the bucket; it was deleted outside s3dynamo",
                exc.key,
            ) from exc
        for key, body in zip(keys, bodies, strict=True):
            self.cache.put(key, body)
            found[key] = body
        return found

    def upload(self, objects: Sequence[tuple[str, bytes]]) -> None:
        """Write new objects in one parallel wave (If-None-Match). An object already
        there holds the same value (names are identities) but may be an orphan that
        garbage collection is about to delete: it is written again (a second request,
        only in that case), which restarts its grace period and changes its ETag, so a
        collection that listed it before can no longer delete it (see `gc.py`)."""
        log.debug("object write wave: %d objects, %d bytes", len(objects), _size(objects))

        def put(key: str, body: bytes) -> None:
            if not self.objects.put_new(key, body):
                self.objects.overwrite(key, body)

        parallel(lambda kb: put(*kb), objects)
        for key, body in objects:
            self.cache.put(key, body)

    def overwrite(self, objects: Sequence[tuple[str, bytes]]) -> None:
        """Replace objects in place, in one wave: the same value sealed anew (rotation)."""
        parallel(lambda kb: self.objects.overwrite(*kb), objects)
        for key, body in objects:
            self.cache.put(key, body)

    # ------------------------------------------------------------ committing

    def commit_checkpoint(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, Any],
    ) -> str:
        """Store a checkpoint: new large values in one wave, then its record. Returns
        the checkpoint id."""
        cid = checkpoint["id"]
        values: dict[str, Any] = checkpoint.get("channel_values", {})
        versions = {**checkpoint.get("channel_versions", {}), **new_versions}
        body: dict[str, Any] = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        body["parent"] = parent_id
        # Serialize and seal everything before the first request: bad input writes nothing.
        sealed_metadata = self.codec.seal_metadata(tid, ns, cid, metadata)

        carried = self._parent_values(tid, ns, parent_id, versions, new_versions)
        what = describe(tid, ns, cid)
        budget = InlineBudget(self.inline_max)
        stored: StoredValues = {}
        fresh: list[_Fresh] = []
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
                fresh.append(self._seal_fresh(tid, ns, channel, version, values[channel], old))
        uploads: list[tuple[str, bytes]] = []
        # Smallest first, so the inline budget keeps as many values out of S3 as it can.
        for f in sorted(fresh, key=lambda f: len(f.sealed)):
            if budget.take(f.sealed):
                stored[f.channel] = StoredValue(f.version, f.sealed, None, f.base)
                continue
            full = f.sealed
            if f.base is not None:
                # The delta did not fit after all: a full version, which later deltas use.
                full = self.codec.seal_value_typed(tid, ns, f.channel, f.version, f.typed)
            leaf = self.namer.value(tid, ns, f.channel, f.version)
            uploads.append((self.object_key(tid, leaf), full))
            stored[f.channel] = StoredValue(f.version, None, leaf)
        bases = {ch: v.base for ch, v in stored.items() if v.base is not None}
        if bases:
            body["bases"] = bases

        # Sealed with the body, so an inline value or object reference removed from the
        # record is detected instead of silently dropping the channel.
        body["stored"] = sorted(stored)
        pk = self.namer.thread(tid)
        sk = checkpoint_sk(self.namer.namespace(tid, ns), cid)
        run_id = metadata.get("run_id")
        record = CheckpointRecord(
            pk=pk,
            sk=sk,
            body=self.codec.seal_body(tid, ns, cid, body),
            metadata=sealed_metadata,
            thread_ref=self.codec.seal_ref(pk, sk, tid, ns),
            run_key=self.namer.run(str(run_id)) if run_id else None,
            objects=frozenset(
                [v.leaf for v in stored.values() if v.leaf is not None]
                + [self.namer.value(tid, ns, ch, base) for ch, base in bases.items()]
            ),
            inline={
                self.namer.channel(tid, ns, ch): v.blob
                for ch, v in stored.items()
                if v.blob is not None
            },
            written_at=self.now(),
        )
        self.refuse_oversized(tid, ns, cid, record, metadata)
        run_key = self.run_key(tid, ns)
        head = (
            HeadMove(
                ItemKey(control_pk(pk), head_sk(run_key[2])),
                cid,
                parent_id,
                runs.continues_latest(run_key, parent_id),
            )
            if self.detect_concurrent_runs
            else None
        )
        fence = self.fence(tid)
        if uploads:
            self.upload(uploads)
        log.debug("commit checkpoint: %d inline, %d objects", len(record.inline), len(uploads))
        try:
            self.index.put_checkpoint(record, head, fence)
        except LeaseLostError as exc:
            raise LeaseLostError(
                f"{describe(tid, ns, cid)}: not written: the thread's lease expired and "
                "another holder took it over; this run must stop (its writes are refused). "
                "Use a longer ttl or renew the lease during long runs"
            ) from exc
        except ConcurrentUpdateError as exc:
            raise ConcurrentUpdateError(
                f"{describe(tid, ns, cid)}: not written: another run committed to this "
                f"thread since this run continued checkpoint {parent_id or '(none: a new thread)'} "
                f"as the latest ({exc}). Retry the run: it will load the new latest state. "
                "To run one at a time instead, wrap runs in saver.thread_lock(thread_id)"
            ) from exc
        self.remember(tid, ns, cid, stored)
        runs.committed(run_key, cid)
        return cid

    def refuse_oversized(
        self, tid: str, ns: str, cid: str, record: CheckpointRecord, metadata: Mapping[str, Any]
    ) -> None:
        """Raise `ItemTooLargeError` before any request if the record would exceed an index
        item's limit, naming the metadata key (usually a string LangGraph copied from
        config["configurable"]) or the part of the checkpoint that is too large."""
        size = record_size(record)
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

    # ---------------------------------------------------- runs and leases

    def run_key(self, tid: str, ns: str) -> runs.Key:
        return (id(self), self.namer.thread(tid), self.namer.namespace(tid, ns))

    def loaded(self, tid: str, ns: str, latest_id: str | None) -> None:
        """This context's run loaded the namespace: as the latest, getting `latest_id`
        (`runs.EMPTY` if it was empty), or (None) by id or by position. Call it in the
        caller's context, not in a worker thread's copy (see `runs.py`)."""
        runs.loaded(self.run_key(tid, ns), latest_id)

    def loaded_thread(self, tid: str) -> None:
        """This context's run listed every namespace of the thread."""
        runs.loaded_thread(id(self), self.namer.thread(tid))

    def lease_key(self, tid: str) -> ItemKey:
        return ItemKey(control_pk(self.namer.thread(tid)), LEASE_SK)

    def fence(self, tid: str) -> Fence | None:
        """The fence of the lease this context holds on the thread, if any."""
        return (HELD.get() or {}).get((id(self), self.namer.thread(tid)))

    def hold(self, tid: str, fence: Fence | None) -> Any:
        """Make this context's writes to the thread carry `fence` (None: no longer);
        returns the token to pass to `HELD.reset`."""
        held = dict(HELD.get() or {})
        key = (id(self), self.namer.thread(tid))
        if fence is None:
            held.pop(key, None)
        else:
            held[key] = fence
        return HELD.set(held)

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
        pk = self.namer.thread(tid)
        sk = writes_sk(self.namer.namespace(tid, ns), cid, self.namer.task(tid, ns, cid, task_id))
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
        sealed = [
            (idx, self.codec.seal_write(tid, ns, cid, task_id, idx, channel, value))
            for idx, channel, value in indexed
        ]
        uploads: list[tuple[str, bytes]] = []
        regular = {idx: blob for idx, blob in sealed if idx not in LAST_WINS}
        if needs_bundle(len(regular)):
            leaf = self.namer.write(tid, ns, cid, task_id, len(regular), uuid.uuid4().hex)
            uploads.append((self.object_key(tid, leaf), pack_bundle(regular)))
            record.bundle = leaf
            sealed = [(i, b) for i, b in sealed if i in LAST_WINS]
        budget = InlineBudget(self.inline_max)
        for idx, blob in sealed:
            if budget.take(blob):
                record.writes[idx] = blob
            else:
                leaf = self.namer.write(tid, ns, cid, task_id, idx, uuid.uuid4().hex)
                uploads.append((self.object_key(tid, leaf), blob))
                record.writes[idx] = write_ref(leaf, self.namer.channel(tid, ns, channels[idx]))
        fence = self.fence(tid)
        if uploads:
            self.upload(uploads)
        log.debug("commit writes: %d inline, %d objects", len(record.writes), len(uploads))
        try:
            self.index.merge_writes(record, LAST_WINS, fence)
        except LeaseLostError as exc:
            raise LeaseLostError(
                f"{describe(tid, ns, cid)}: writes of task {task_id!r} not written: the "
                "thread's lease expired and another holder took it over"
            ) from exc

    # ------------------------------------------------------ where values live

    def stored_values(self, entry: Entry, body: Mapping[str, Any]) -> StoredValues:
        """Where each channel's value at this checkpoint is kept: inline in the record,
        in an object, or (channels absent here) nowhere."""
        tid, ns, rec = entry.tid, entry.ns, entry.record
        bases: Mapping[str, str] = body.get("bases") or {}
        out: StoredValues = {}
        for channel, raw_version in body.get("channel_versions", {}).items():
            version = str(raw_version)
            blob = rec.inline.get(self.namer.channel(tid, ns, channel))
            if blob is not None:
                out[channel] = StoredValue(version, blob, None, bases.get(channel))
                continue
            leaf = self.namer.value(tid, ns, channel, version)
            if leaf in rec.objects:
                out[channel] = StoredValue(version, None, leaf)
        return out

    def remember(self, tid: str, ns: str, cid: str, stored: StoredValues) -> None:
        with self._carry_lock:
            self._carry[(tid, ns, cid)] = stored
            self._carry.move_to_end((tid, ns, cid))
            while len(self._carry) > CARRY_CACHE_SIZE:
                self._carry.popitem(last=False)

    def forget(self) -> None:
        """Drop what is cached about stored values (after anything rewrote records)."""
        with self._carry_lock:
            self._carry.clear()
            self._skeletons.clear()
            self._bases.clear()

    def skeleton(self, tid: str, ns: str, cid: str) -> Skeleton | None:
        with self._carry_lock:
            return self._skeletons.get((tid, ns, cid))

    def keep_skeleton(self, tid: str, ns: str, cid: str, skeleton: Skeleton) -> None:
        """Keep an opened checkpoint that has a child (see `Skeleton`)."""
        with self._carry_lock:
            self._skeletons[(tid, ns, cid)] = skeleton
            self._skeletons.move_to_end((tid, ns, cid))
            while len(self._skeletons) > SKELETONS:
                self._skeletons.popitem(last=False)

    def open_skeleton(
        self,
        entry: Entry,
        body: Mapping[str, Any] | None = None,
        tasks: Mapping[str, tuple[str, str]] | None = None,
    ) -> Skeleton:
        """Open a checkpoint that has a child (`body`: its body, and `tasks`: its writes
        records' (task id, task path) by sort key, if opened already)."""
        tid, ns, cid, what = entry.tid, entry.ns, entry.checkpoint_id, entry.what
        if body is None:
            body = self.open_body(entry)
        writes: list[KeptWrite] = []
        bundles: list[KeptBundle] = []
        for w in entry.writes:
            task_id, task_path = tasks[w.sk] if tasks is not None else self.open_task(w, what)
            for idx, blob in w.writes.items():
                order = writes_sort_key(task_path, task_id, idx)
                if isinstance(blob, str):
                    leaf, tag = split_write_ref(blob)
                    writes.append(KeptWrite(order, task_id, idx, None, None, leaf, tag))
                    continue
                channel, typed = self.codec.write_data(tid, ns, cid, task_id, idx, blob, what)
                writes.append(KeptWrite(order, task_id, idx, channel, typed))
            if w.bundle:
                bundles.append(KeptBundle(task_id, task_path, w.bundle))
        stored = self.stored_values(entry, body)
        return Skeleton(body.get("parent"), stored, tuple(writes), tuple(bundles))

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
        with self._carry_lock:
            cached = self._carry.get((tid, ns, parent_id))
        if cached is not None:
            return cached  # also tells where the bases of new deltas are
        if all(ch in new_versions for ch in versions):
            return {}
        entry = self.read_checkpoint(tid, ns, parent_id)
        if entry is None:
            return {}
        return self.stored_values(entry, self.open_body(entry))

    def _stale(self, blob: bytes) -> bool:
        keyring = self.sealer.keyring
        return keyring is not None and self.sealer.key_id_of(blob) != keyring.active

    def _seal_fresh(
        self,
        tid: str,
        ns: str,
        channel: str,
        version: str,
        value: Any,
        previous: StoredValue | None,
    ) -> _Fresh:
        """Seal a changed value: as a delta against the channel's last full version when
        this process holds that version and the delta is at most `delta_max` (and fits
        inline), else whole."""
        typed = self.codec.dump(value)
        base = self._delta_base(tid, ns, channel, previous)
        if base is not None:
            base_version, base_data = base
            delta = self.codec.seal_value_delta(
                tid, ns, channel, version, typed, base_version, base_data
            )
            if delta is not None and len(delta) <= min(self.inline_max, self.delta_max):
                return _Fresh(channel, version, delta, typed, base_version)
        sealed = self.codec.seal_value_typed(tid, ns, channel, version, typed)
        return _Fresh(channel, version, sealed, typed, None)

    def _delta_base(
        self, tid: str, ns: str, channel: str, previous: StoredValue | None
    ) -> tuple[str, tuple[str, bytes]] | None:
        """(version, opened data) of the full version a new delta of `channel` is made
        against: the one the parent's value is, or is a delta of. Only an object can be
        a base, and only one this process holds: the write path never reads S3."""
        if previous is None or (previous.base is None and previous.leaf is None):
            return None
        version = previous.base if previous.base is not None else previous.version
        key = self.object_key(tid, self.namer.value(tid, ns, channel, version))
        with self._carry_lock:
            opened = self._bases.get(key)
        if opened is not None:
            return version, opened
        body = self.cache.get(key)
        if body is None:
            return None
        what = f"{describe(tid, ns, version)} (delta base)"
        data = self.codec.value_data(tid, ns, channel, version, body, what)
        if len(data[1]) > MAX_DELTA_BASE:
            return None
        # Consecutive deltas share their base: keep it opened (objects never change).
        if len(data[1]) <= OPENED_BASE_MAX:
            with self._carry_lock:
                self._bases[key] = data
                while len(self._bases) > OPENED_BASES:
                    self._bases.popitem(last=False)
        return version, data

    def _reseal_carried(
        self, tid: str, ns: str, channel: str, old: StoredValue, what: str
    ) -> StoredValue:
        if old.blob is None:
            return old
        if old.base is None:
            ident = value_id(tid, ns, channel, old.version)
            return old._replace(blob=self.codec.reseal(old.blob, ident, ident, what))
        base = self._delta_base(tid, ns, channel, old)
        if base is None:
            return old  # still opens under its key; reencrypt() moves it later
        ident = delta_id(tid, ns, channel, old.version, old.base)
        return old._replace(blob=self.codec.reseal_delta(old.blob, ident, ident, base[1], what))

    # ------------------------------------------------------------- opening

    def open_body(self, entry: Entry) -> dict[str, Any]:
        rec = entry.record
        return self.codec.open_body(entry.tid, entry.ns, rec.checkpoint_id, rec.body, entry.what)

    def open_metadata(self, entry: Entry) -> Any:
        if entry.metadata is None:
            rec = entry.record
            entry.metadata = self.codec.open_metadata(
                entry.tid, entry.ns, rec.checkpoint_id, rec.metadata, entry.what
            )
        return entry.metadata

    def base_key(self, tid: str, ns: str, channel: str, base_version: str) -> str:
        """Key of the object holding the full version a delta is made against."""
        return self.object_key(tid, self.namer.value(tid, ns, channel, base_version))

    def open_task(self, writes: WritesRecord, what: str) -> tuple[str, str]:
        """(task id, task path) of a writes record."""
        task_id, task_path = self.codec.open_ref(writes.pk, writes.sk, writes.task_ref, what)
        return task_id, task_path

    def open_thread_ref(self, rec: CheckpointRecord) -> tuple[str, str]:
        """(thread id, namespace) a checkpoint record belongs to, checked against its key."""
        what = f"checkpoint {rec.checkpoint_id} (thread reference)"
        tid, ns = self.codec.open_ref(rec.pk, rec.sk, rec.thread_ref, what)
        if self.namer.thread(tid) != rec.pk or self.namer.namespace(tid, ns) != rec.ns_name:
            raise IntegrityError(
                f"{what}: names thread {tid!r}, whose records this saver would store under "
                "another key: the saver's naming secret differs from the writer's (set the "
                "same secret / S3DYNAMO_SECRET), or the record was moved"
            )
        return tid, ns

    # ---------------------------------------------------------------- finding

    def read_checkpoint(self, tid: str, ns: str, cid: str) -> Entry | None:
        """One checkpoint by id, with its writes: one query."""
        pk = self.namer.thread(tid)
        sk = checkpoint_sk(self.namer.namespace(tid, ns), cid)
        found: CheckpointRecord | None = None
        writes: list[WritesRecord] = []
        for rec in self._query_all(pk, prefix=sk):
            # The prefix also matches longer ids that start with this one.
            if owner_sk(rec.sk) != sk:
                continue
            if isinstance(rec, WritesRecord):
                writes.append(rec)
            else:
                found = rec
        return Entry(tid, ns, found, writes) if found else None

    def read_latest(self, tid: str, ns: str) -> Entry | None:
        """The newest checkpoint of a namespace, with its writes: one query, more only
        when writes records fill the first page."""
        pk = self.namer.thread(tid)
        prefix = self.namer.namespace(tid, ns) + SEPARATOR
        writes: list[WritesRecord] = []
        cursor: Cursor | None = None
        limit = LATEST_PAGE
        while True:
            # Strongly consistent: a run continues what the last commit left, even when
            # that commit came from another process a moment ago (`runs.py`).
            page = self.index.query(
                pk, prefix=prefix, descending=True, limit=limit, cursor=cursor, consistent=True
            )
            for rec in page.records:
                if isinstance(rec, WritesRecord):
                    writes.append(rec)
                    continue
                # Descending order meets a checkpoint's writes just before the checkpoint.
                own = [w for w in writes if w.checkpoint_id == rec.checkpoint_id]
                return Entry(tid, ns, rec, own)
            if page.cursor is None:
                return None
            cursor, limit = page.cursor, LATER_PAGES

    def namespace_records(
        self, tid: str, ns: str, *, upper_id: str | None = None
    ) -> Iterator[Record]:
        """A namespace's records newest first, from checkpoint `upper_id` (inclusive)
        down, page by page as the caller consumes them."""
        pk, ns_name = self.namer.thread(tid), self.namer.namespace(tid, ns)
        upper = checkpoint_sk(ns_name, upper_id) if upper_id else ns_name + SEPARATOR + TOP
        return self._query_all(pk, between=(ns_name + SEPARATOR, upper), descending=True)

    def namespace_entries(self, tid: str, ns: str, before_id: str | None) -> Iterator[Entry]:
        """A namespace's checkpoints newest first, strictly before `before_id` if given."""
        pk = self.namer.thread(tid)
        ns_name = self.namer.namespace(tid, ns)
        records = (
            self._query_all(
                pk,
                between=(ns_name + SEPARATOR, checkpoint_sk(ns_name, before_id)),
                descending=True,
            )
            if before_id
            else self._query_all(pk, prefix=ns_name + SEPARATOR, descending=True)
        )
        writes: dict[str, list[WritesRecord]] = {}
        for rec in records:
            if isinstance(rec, WritesRecord):
                writes.setdefault(rec.checkpoint_id, []).append(rec)
                continue
            if before_id is not None and rec.checkpoint_id >= before_id:
                continue
            yield Entry(tid, ns, rec, writes.pop(rec.checkpoint_id, []))

    def thread_records(self, tid: str) -> list[Record]:
        """Every record of a thread, every namespace."""
        return list(self._query_all(self.namer.thread(tid)))

    def thread_keys(self, tid: str) -> list[ItemKey]:
        return list(self.index.query_keys(self.namer.thread(tid)))

    def thread_entries(self, tid: str, before_id: str | None = None) -> list[Entry]:
        """Every checkpoint of a thread, every namespace, newest first."""
        entries = self.group(self.thread_records(tid), known_tid=tid)
        return newest_first(entries, before_id)

    def all_entries(
        self, before_id: str | None = None, skipped: list[Skipped] | None = None
    ) -> list[Entry]:
        """Every checkpoint of every thread, newest first (a scan: admin operations).
        With `skipped`, threads whose records do not open are left out and listed there."""
        return newest_first(self.group(self.index.scan(), skipped=skipped), before_id)

    def group(
        self,
        records: Iterable[Record],
        known_tid: str | None = None,
        skipped: list[Skipped] | None = None,
    ) -> list[Entry]:
        """Pair checkpoint records with their writes records; learn (thread, ns) from the
        sealed reference each checkpoint record carries. With `skipped`, a partition with
        a reference that does not open (other keys, another naming secret) is left out
        whole and reported there instead of raising."""
        checkpoints: dict[ItemKey, CheckpointRecord] = {}
        writes: dict[ItemKey, list[WritesRecord]] = {}
        for rec in records:
            if isinstance(rec, WritesRecord):
                writes.setdefault(ItemKey(rec.pk, rec.owner_sk), []).append(rec)
            else:
                checkpoints[rec.key] = rec
        entries = []
        bad: set[str] = set()
        for key, rec in checkpoints.items():
            if rec.pk in bad:
                continue
            try:
                tid, ns = self.open_thread_ref(rec)
            except IntegrityError as exc:
                if skipped is None:
                    raise
                bad.add(rec.pk)
                skipped.append(Skipped(rec.pk, self.sealer.key_id_of(rec.thread_ref), str(exc)))
                continue
            if known_tid is not None and tid != known_tid:
                raise IntegrityError(
                    f"checkpoint {rec.checkpoint_id} in the partition of thread "
                    f"{known_tid!r} claims thread {tid!r}: the record was moved"
                )
            entries.append(Entry(tid, ns, rec, writes.get(key, [])))
        return [e for e in entries if e.record.pk not in bad]

    def _query_all(self, pk: str, **bounds: Any) -> Iterator[Record]:
        cursor: Cursor | None = None
        while True:
            page = self.index.query(pk, cursor=cursor, **bounds)
            yield from page.records
            if page.cursor is None:
                return
            cursor = page.cursor

    def live_leaves(
        self, thread_name: str, skipped: list[Skipped] | None = None
    ) -> set[str] | None:
        """Every object leaf a thread's records reference (the mark of garbage
        collection), read strongly consistent; None if the thread has no record here.
        With `skipped`, a thread whose first checkpoint record does not open is reported
        there (the caller leaves it alone)."""
        live: set[str] = set()
        found = tried = False
        cursor: Cursor | None = None
        while True:
            page = self.index.query(thread_name, cursor=cursor, consistent=True)
            for rec in page.records:
                found = True
                live |= referenced_leaves(rec)
                if skipped is not None and not tried and isinstance(rec, CheckpointRecord):
                    tried = True
                    try:
                        self.open_thread_ref(rec)
                    except IntegrityError as exc:
                        key_id = self.sealer.key_id_of(rec.thread_ref)
                        skipped.append(Skipped(rec.pk, key_id, str(exc)))
            if page.cursor is None:
                return live if found else None
            cursor = page.cursor

    def referenced_keys(self, entries: Sequence[Entry]) -> dict[str, str]:
        """Object key -> the checkpoint that references it, for every object the entries
        reference."""
        keys: dict[str, str] = {}
        for e in entries:
            records: list[Record] = [e.record, *e.writes]
            for rec in records:
                for leaf in referenced_leaves(rec):
                    keys[self.object_key(e.tid, leaf)] = e.what
        return keys

    # --------------------------------------------------------------- decoding

    def tuples(
        self, entries: Iterable[Entry], filter: Mapping[str, Any] | None, limit: int | None
    ) -> Iterator[CheckpointTuple]:
        """Decode entries page by page: metadata first (filtering costs no object
        request), then one wave per page for the survivors' values."""
        remaining = limit
        page: list[Entry] = []
        # Checkpoints named as a parent by one listed earlier (newest first: a child comes
        # before its parent): they have a child, so they are kept for history walks.
        parents: set[tuple[str, str, str]] = set()
        lists = GrowingLists(self.codec.serde)
        for entry in entries:
            if filter:
                md = self.open_metadata(entry)
                if not all(md.get(k) == v for k, v in filter.items()):
                    continue
            page.append(entry)
            if remaining is not None:
                remaining -= 1
                if remaining == 0:
                    break
            if len(page) >= LIST_PAGE:
                yield from self.decode(page, parents=parents, lists=lists)
                page = []
        if page:
            yield from self.decode(page, parents=parents, lists=lists)

    def decode(
        self,
        entries: Sequence[Entry],
        *,
        remember: bool = False,
        parents: set[tuple[str, str, str]] | None = None,
        lists: GrowingLists | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Turn entries into checkpoint tuples with one parallel wave for all of them.
        With `parents` (listing newest first), the parents of these entries are added to
        it, and every entry found there is kept opened for history walks (`Skeleton`).
        With `lists`, a list value that begins the one listed before it is copied from
        that one rather than deserialized again (`list_reuse.py`).

        The wave is sent before the first tuple is yielded; each tuple's values are then
        deserialized as it is taken, so a caller walking a history holds the objects of
        the snapshot it is at, not those of a whole page."""
        plans = [self._plan(entry, remember) for entry in entries]
        if parents is not None:
            for plan in plans:
                if (parent := plan.body.get("parent")) is not None:
                    parents.add((plan.entry.tid, plan.entry.ns, parent))
            for plan in plans:
                e = plan.entry
                key = (e.tid, e.ns, e.checkpoint_id)
                if key in parents and self.skeleton(*key) is None:
                    kept = self.open_skeleton(e, plan.body, plan.tasks)
                    self.keep_skeleton(*key, kept)
                    # Its inline writes are now open: the tuple deserializes those.
                    opened = {
                        (k.task_id, k.idx): (k.channel, k.typed)
                        for k in kept.writes
                        if k.channel is not None and k.typed is not None
                    }
                    plan.writes = [
                        w._replace(opened=opened.get((w.task_id, w.idx)))
                        if isinstance(w.blob, bytes)
                        else w
                        for w in plan.writes
                    ]
        needed: dict[str, str] = {}
        for plan in plans:
            needed.update(plan.needed)
        fetched = self.fetch(needed) if needed else {}
        opened_bases: dict[str, tuple[str, bytes]] = {}  # many deltas share one base
        return (self._assemble(plan, fetched, opened_bases, lists) for plan in plans)

    def _plan(self, entry: Entry, remember: bool) -> _Plan:
        tid, ns, what = entry.tid, entry.ns, entry.what
        body = self.open_body(entry)
        stored = self.stored_values(entry, body)
        plan = _Plan(entry, body, self.open_metadata(entry), stored)
        for channel, value in stored.items():
            if value.blob is not None:
                plan.values[channel] = (value.version, value.blob)
                if value.base is not None:
                    base_leaf = self.namer.value(tid, ns, channel, value.base)
                    if base_leaf not in entry.record.objects:
                        raise IntegrityError(
                            f"{what}: channel value is a delta whose base is not among the "
                            "item's objects; the item was altered"
                        )
                    key = self.object_key(tid, base_leaf)
                    plan.bases[channel] = (value.base, key)
                    plan.needed[key] = what
            else:
                key = self.object_key(tid, value.leaf or "")
                plan.values[channel] = (value.version, key)
                plan.needed[key] = what
        for w in entry.writes:
            task_id, task_path = self.open_task(w, what)
            plan.tasks[w.sk] = (task_id, task_path)
            if w.bundle is not None:
                key = self.object_key(tid, w.bundle)
                plan.needed[key] = what
                plan.bundles.append(_TaskBlob(task_path, task_id, 0, key))
            for idx, blob in w.writes.items():
                if isinstance(blob, str):
                    blob = self.object_key(tid, split_write_ref(blob)[0])
                    plan.needed[blob] = what
                plan.writes.append(_TaskBlob(task_path, task_id, idx, blob))
        if remember:
            self.remember(tid, ns, entry.checkpoint_id, stored)
        return plan

    def _assemble(
        self,
        plan: _Plan,
        fetched: Mapping[str, bytes],
        opened_bases: dict[str, tuple[str, bytes]],
        lists: GrowingLists | None,
    ) -> CheckpointTuple:
        entry, body = plan.entry, plan.body
        tid, ns, cid, what = entry.tid, entry.ns, entry.checkpoint_id, entry.what

        def resolve(blob: bytes | str) -> bytes:
            return fetched[blob] if isinstance(blob, str) else blob

        def open_value(channel: str, version: str, blob: bytes | str) -> Any:
            where = f"{what}, channel value"
            if channel not in plan.bases:
                typed = self.codec.value_data(tid, ns, channel, version, resolve(blob), where)
            else:
                base_version, key = plan.bases[channel]
                if key not in opened_bases:
                    opened_bases[key] = self.codec.value_data(
                        tid, ns, channel, base_version, fetched[key], f"{where} (delta base)"
                    )
                typed = self.codec.delta_data(
                    tid, ns, channel, version, resolve(blob), base_version, opened_bases[key], where
                )
            return lists.load(channel, typed) if lists else self.codec.load(typed)

        writes = list(plan.writes)
        for bundle in plan.bundles:
            try:
                unpacked = unpack_bundle(fetched[str(bundle.blob)])
            except ValueError as exc:
                raise IntegrityError(f"{what}: writes bundle {bundle.blob!r}: {exc}") from exc
            writes += [bundle._replace(idx=i, blob=b) for i, b in unpacked.items()]
        channel_values = {
            channel: open_value(channel, version, blob)
            for channel, (version, blob) in plan.values.items()
        }
        pending: list[PendingWrite] = []
        for w in sorted(writes, key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx)):
            if w.opened is not None:
                channel, value = w.opened[0], self.codec.load(w.opened[1])
            else:
                channel, value = self.codec.open_write(
                    tid, ns, cid, w.task_id, w.idx, resolve(w.blob), f"{what}, pending write"
                )
            pending.append((w.task_id, channel, value))
        listed = body.pop("stored", None)
        if listed is not None and (lost := set(listed) - set(plan.stored)):
            raise IntegrityError(
                f"{what}: {len(lost)} stored channel value(s) are missing from its index "
                "item; the item was altered"
            )
        parent = body.pop("parent", None)
        checkpoint: Checkpoint = {**body, "channel_values": channel_values}  # type: ignore[typeddict-item]
        return CheckpointTuple(
            config=make_config(tid, ns, cid),
            checkpoint=checkpoint,
            metadata=plan.metadata,
            parent_config=make_config(tid, ns, parent) if parent else None,
            pending_writes=pending,
        )

    # --------------------------------------------------------------- deleting

    def delete_thread(self, tid: str) -> None:
        """Delete every record and object of a thread (all namespaces), in the order of
        `delete_records`, objects last. Interrupted, the thread reads as an earlier
        checkpoint of its history (never a checkpoint without its ancestors or its
        writes) until the call is repeated; a repeat finishes it."""
        # Heads first: an interruption then leaves records without heads, which only
        # relaxes the next commit's check, never blocks it.
        self.index.drop_heads(self.namer.thread(tid))
        keys = self.thread_keys(tid)
        if keys:
            self.delete_records(keys)
        prefix = self.thread_prefix(self.namer.thread(tid))
        leftover = [o.key for o in self.objects.list(prefix)]
        if leftover:
            self.objects.delete(leftover)
        self.forget()

    def delete_records(self, keys: Iterable[ItemKey]) -> None:
        """Delete records so that no reader ever sees a wrong state in between.

        Checkpoint records go first, each namespace's newest first, one request each
        (namespaces in parallel): a batch applies its items in no set order, so two
        checkpoints of one namespace in one batch could leave the newer without its
        parent. Whatever survives an interruption is therefore each namespace's history
        cut from the newest end: every surviving checkpoint keeps all its ancestors (which
        DeltaChannel rebuilds from) and all its writes. Writes records go last, in bulk:
        by then no checkpoint record shows them."""
        chains: dict[tuple[str, str], list[ItemKey]] = {}
        writes: list[ItemKey] = []
        for key in keys:
            if is_writes_key(key.sk):
                writes.append(key)
            else:
                chains.setdefault((key.pk, parse_sk(key.sk)[0]), []).append(key)

        def newest_first(chain: list[ItemKey]) -> None:
            for key in sorted(chain, key=lambda k: k.sk, reverse=True):
                self.index.write_batch(deletes=[key])

        parallel(newest_first, list(chains.values()))
        if writes:
            self.index.write_batch(deletes=writes)


class _Fresh(NamedTuple):
    """A changed value, sealed whole or (with `base`) as a delta."""

    channel: str
    version: str
    sealed: bytes
    typed: tuple[str, bytes]
    base: str | None


class _TaskBlob(NamedTuple):
    """One pending write to open: sealed bytes, or the key of the object holding them."""

    task_path: str
    task_id: str
    idx: int
    blob: bytes | str
    # (channel, serialized data) when already decrypted and decompressed
    opened: tuple[str, tuple[str, bytes]] | None = None


@dataclass
class _Plan:
    """What decoding one entry needs once its objects are fetched."""

    entry: Entry
    body: dict[str, Any]
    metadata: Any
    stored: StoredValues
    # channel -> (version, sealed bytes or the key of the object holding them)
    values: dict[str, tuple[str, bytes | str]] = field(default_factory=dict)
    # channel -> (base version, key of its object), for values stored as deltas
    bases: dict[str, tuple[str, str]] = field(default_factory=dict)
    writes: list[_TaskBlob] = field(default_factory=list)
    bundles: list[_TaskBlob] = field(default_factory=list)
    # writes record sort key -> (task id, task path)
    tasks: dict[str, tuple[str, str]] = field(default_factory=dict)
    # object key -> the checkpoint that needs it (for errors)
    needed: dict[str, str] = field(default_factory=dict)


def _size(objects: Sequence[tuple[str, bytes]]) -> int:
    return sum(len(body) for _, body in objects)


def newest_first(entries: list[Entry], before_id: str | None) -> list[Entry]:
    if before_id is not None:
        entries = [e for e in entries if e.checkpoint_id < before_id]
    return sorted(entries, key=lambda e: e.checkpoint_id, reverse=True)
