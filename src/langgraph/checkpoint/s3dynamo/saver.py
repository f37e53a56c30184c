"""`S3DynamoSaver`: channel values in S3, one DynamoDB table as the index.

Commit protocol. A `put` first uploads the new channel values too large to inline, in one
parallel wave, each with `If-None-Match: *` (objects are immutable and named by
(thread, ns, channel, version), so an existing one already holds the same bytes). Then it
writes the checkpoint item with one PutItem: the item is the commit point. A crash before
it leaves the old state plus unreferenced objects, which garbage collection (`gc.py`)
removes after a grace period; a crash after it leaves the new state. `put_writes` does the
same with one UpdateItem per (checkpoint, task), so a call becomes visible all at once.

Sync and async share one core. The async methods run the sync core in a worker thread
(`asyncio.to_thread`): the work is blocking botocore I/O either way, and one code path
means one set of request budgets and one set of bugs.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import random
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.s3dynamo import gc, history, maintenance
from langgraph.checkpoint.s3dynamo import items as it
from langgraph.checkpoint.s3dynamo.codec import Codec, value_id
from langgraph.checkpoint.s3dynamo.config import (
    checkpoint_id_of,
    describe,
    make_config,
    resolve_keys,
    target,
    thread_id_of,
)
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    InvalidConfigError,
)
from langgraph.checkpoint.s3dynamo.naming import (
    SEPARATOR,
    Namer,
    checkpoint_sk,
    object_key,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.sealing import Keyring, Sealer
from langgraph.checkpoint.s3dynamo.stores import DynamoIndex, S3Objects

# Chosen from benchmarks/ (README, "Choosing inline_max"): an S3 PUT costs as much as
# 8 KB of DynamoDB writes, so values up to 8 KiB are cheaper inline, and they save a
# request each way. Larger settings lower latency further at a higher DynamoDB bill.
DEFAULT_INLINE_MAX = 8192
# Inline bytes allowed in one item, whatever inline_max is: items stay far below
# DynamoDB's 400 KB limit; anything beyond goes to S3.
ITEM_INLINE_BUDGET = 64 * 1024
# First page of a "latest" Query: the newest checkpoint item plus a few writes items.
LATEST_PAGE = 8
# Checkpoints whose values are fetched in one S3 wave while listing.
LIST_PAGE = 32
CARRY_CACHE_SIZE = 256
# Regular writes of one call kept as attributes of their own; past this, they go to one
# bundle object, since DynamoDB caps an UpdateExpression at 4 KB.
MAX_WRITE_ATTRIBUTES = 64
PRUNE_STRATEGIES = ("keep_latest", "delete")
_SPECIAL_IDX = set(WRITES_IDX_MAP.values())


@dataclass
class _Entry:
    """One checkpoint as read from the index, before its values are fetched."""

    tid: str
    ns: str
    record: it.CheckpointRecord
    writes: list[it.WritesRecord]


# channel -> (version, inline sealed blob or None, object leaf or None)
_Carry = dict[str, tuple[str, bytes | None, str | None]]


class S3DynamoSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpointer keeping channel values in S3 and an index in DynamoDB.

    Every stored value is compressed with zstd and, when keys are configured, sealed
    with AES-256-GCM bound to its identity. Names in S3 and DynamoDB are keyed hashes.

    Args:
        table: DynamoDB table name (see `schema.py` and `terraform/`).
        bucket: S3 bucket name.
        prefix: Key prefix for every object in the bucket.
        dynamodb_client: A boto3 DynamoDB client; built lazily from the environment if
            omitted (region, credentials and `AWS_ENDPOINT_URL_DYNAMODB` as the SDK reads them).
        s3_client: A boto3 S3 client; built lazily likewise (`AWS_ENDPOINT_URL_S3`).
        inline_max: Largest sealed value kept inside the DynamoDB item; 0 puts every
            value in S3.
        keys: Sealing keys by id (32 bytes each), or a `Keyring`. Enables encryption.
        active_key: Id of the key that seals new blobs (default: the first of `keys`).
        secret: Secret the naming key is derived from. Required with `keys`; never rotate it.
        compression_level: zstd level.
        allow_plaintext_read: Read unsealed blobs although encryption is on (migrations).
        serde: Serializer. `EncryptedSerializer` works; compression then happens inside
            its encryption.

    Example:
        ```python
        saver = S3DynamoSaver(table="checkpoints", bucket="my-checkpoints")
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "user-42"}})
        ```
    """

    def __init__(
        self,
        *,
        table: str,
        bucket: str,
        prefix: str = "",
        dynamodb_client: Any = None,
        s3_client: Any = None,
        inline_max: int = DEFAULT_INLINE_MAX,
        keys: Mapping[str, bytes] | Keyring | None = None,
        active_key: str | None = None,
        secret: bytes | str | None = None,
        compression_level: int = 3,
        allow_plaintext_read: bool = False,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if not table or not bucket:
            raise InvalidConfigError(
                f"table and bucket are required, got table={table!r} bucket={bucket!r}; "
                "set S3DYNAMO_TABLE and S3DYNAMO_BUCKET or pass them"
            )
        if inline_max < 0:
            raise InvalidConfigError(f"inline_max must be >= 0 bytes, got {inline_max}")
        self.table_name = table
        self.bucket_name = bucket
        self.prefix = prefix
        self.inline_max = inline_max
        self._dynamodb_client = dynamodb_client
        self._s3_client = s3_client
        keyring, naming_secret = resolve_keys(keys, active_key, secret)
        cipher = self.serde.cipher if isinstance(self.serde, EncryptedSerializer) else None
        self.sealer = Sealer(
            keyring=keyring,
            serde_cipher=cipher,
            compression_level=compression_level,
            allow_plaintext_read=allow_plaintext_read,
        )
        self.namer = Namer(naming_secret)
        self.codec = Codec(self.sealer, self._inner_serde)
        self._carry: OrderedDict[tuple[str, str, str], _Carry] = OrderedDict()
        self._carry_lock = threading.Lock()

    @classmethod
    def from_env(cls, **overrides: Any) -> S3DynamoSaver:
        """Build a saver from the environment.

        Reads `S3DYNAMO_TABLE`, `S3DYNAMO_BUCKET`, optional `S3DYNAMO_PREFIX`,
        `S3DYNAMO_INLINE_MAX`, `S3DYNAMO_KEYS` (`id:base64key,...`, first is active) and
        `S3DYNAMO_SECRET`. Region, credentials and endpoints are left to the AWS SDK's own
        variables (`AWS_REGION`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL_DYNAMODB`, ...).
        Keyword arguments override what the environment says.
        """
        env = os.environ
        kwargs: dict[str, Any] = {
            "table": env.get("S3DYNAMO_TABLE", ""),
            "bucket": env.get("S3DYNAMO_BUCKET", ""),
            "prefix": env.get("S3DYNAMO_PREFIX", ""),
        }
        if raw := env.get("S3DYNAMO_INLINE_MAX"):
            try:
                kwargs["inline_max"] = int(raw)
            except ValueError:
                raise InvalidConfigError(
                    f"S3DYNAMO_INLINE_MAX must be a number of bytes, got {raw!r}"
                ) from None
        if spec := env.get("S3DYNAMO_KEYS"):
            kwargs["keys"] = Keyring.parse(spec)
        if secret := env.get("S3DYNAMO_SECRET"):
            kwargs["secret"] = secret
        kwargs.update(overrides)
        return cls(**kwargs)

    # ----------------------------------------------------------------- clients

    # Built on first use, not in the constructor: a cold start pays for no client it
    # does not need. Two threads racing here at worst build one spare client.
    @cached_property
    def index(self) -> DynamoIndex:
        return DynamoIndex(self._dynamodb_client or _make_client("dynamodb"), self.table_name)

    @cached_property
    def objects(self) -> S3Objects:
        return S3Objects(self._s3_client or _make_client("s3"), self.bucket_name)

    def _inner_serde(self) -> SerializerProtocol:
        # With EncryptedSerializer the sealer calls its cipher itself, after compressing.
        if isinstance(self.serde, EncryptedSerializer):
            return self.serde.serde
        return self.serde

    def setup(self) -> None:
        """Create the table and bucket if missing (idempotent). For development and
        tests; production infrastructure comes from `terraform/`."""
        self.index.create_if_missing()
        self.objects.create_if_missing(self.objects.client.meta.region_name)

    # -------------------------------------------------------------------- names

    def _key(self, tid: str, leaf: str) -> str:
        return object_key(self.prefix, self.namer.thread(tid), leaf)

    def _thread_prefix(self, thread_name: str) -> str:
        return f"{self.prefix}{thread_name}/"

    # ---------------------------------------------------------------------- put

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: new large values to S3 in one wave, then one PutItem."""
        tid, ns, parent_id = target(config)
        cid = checkpoint_id_of(checkpoint.get("id"))
        values: dict[str, Any] = checkpoint.get("channel_values", {})
        versions = {**checkpoint.get("channel_versions", {}), **new_versions}
        body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        body["parent"] = parent_id
        shaped = get_checkpoint_metadata(config, metadata)
        # Serialize and seal everything before the first request: bad input writes nothing.
        sealed_metadata = self.codec.seal_metadata(tid, ns, cid, shaped)

        carried = self._parent_carry(tid, ns, parent_id, versions, new_versions)
        inline: dict[str, bytes] = {}
        leaves: set[str] = set()
        uploads: builtins.list[tuple[str, bytes]] = []
        carry: _Carry = {}
        budget = ITEM_INLINE_BUDGET
        fresh: builtins.list[tuple[str, str, bytes]] = []
        for channel, raw_version in versions.items():
            version = str(raw_version)
            old = carried.get(channel)
            if channel not in new_versions and old is not None and old[0] == version:
                _, blob, leaf = old
                if blob is not None and self._stale(blob):
                    # Carried forward from before a rotation: seal it under the active key.
                    ident = value_id(tid, ns, channel, version)
                    blob = self.codec.reseal(blob, ident, ident, describe(tid, ns, cid))
                    old = (version, blob, None)
                if blob is not None and len(blob) <= budget:
                    inline[self.namer.channel(tid, ns, channel)] = blob
                    budget -= len(blob)
                    carry[channel] = old
                    continue
                if leaf is not None:
                    leaves.add(leaf)
                    carry[channel] = old
                    continue
            if channel in values:
                sealed = self.codec.seal_value(tid, ns, channel, version, values[channel])
                fresh.append((channel, version, sealed))
        # Smallest first, so the inline budget keeps as many values out of S3 as it can.
        for channel, version, sealed in sorted(fresh, key=lambda f: len(f[2])):
            if len(sealed) <= self.inline_max and len(sealed) <= budget:
                inline[self.namer.channel(tid, ns, channel)] = sealed
                budget -= len(sealed)
                carry[channel] = (version, sealed, None)
            else:
                leaf = self.namer.value(tid, ns, channel, version)
                uploads.append((self._key(tid, leaf), sealed))
                leaves.add(leaf)
                carry[channel] = (version, None, leaf)

        # Sealed with the body, so an inline value or object reference removed from the
        # item is detected instead of silently dropping the channel.
        body["stored"] = sorted(carry)
        sealed_body = self.codec.seal_body(tid, ns, cid, body)
        pk = self.namer.thread(tid)
        ns_name = self.namer.namespace(tid, ns)
        sk = checkpoint_sk(ns_name, cid)
        run_id = shaped.get("run_id")
        record = it.CheckpointRecord(
            pk=pk,
            sk=sk,
            body=sealed_body,
            metadata=sealed_metadata,
            thread_ref=self.codec.seal_ref(pk, sk, tid, ns),
            run_key=self.namer.run(str(run_id)) if run_id else None,
            objects=frozenset(leaves),
            inline=inline,
        )
        if uploads:
            self.objects.put_many(uploads)
        self.index.put(it.checkpoint_item(record))
        self._remember(tid, ns, cid, carry)
        return {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}}

    def _parent_carry(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        versions: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> _Carry:
        """Where the parent keeps the values this checkpoint did not change.

        Usually cached from the `get_tuple` that started the run; otherwise one Query
        reads the parent's item (no S3 request), so unchanged values are referenced,
        never uploaded again."""
        if parent_id is None or all(ch in new_versions for ch in versions):
            return {}
        with self._carry_lock:
            cached = self._carry.get((tid, ns, parent_id))
        if cached is not None:
            return cached
        entry = self._read_checkpoint(tid, ns, parent_id)
        if entry is None:
            return {}
        body = self.codec.open_body(
            tid, ns, parent_id, entry.record.body, describe(tid, ns, parent_id)
        )
        return self.stored_values(tid, ns, entry.record, body)

    def stored_values(
        self, tid: str, ns: str, rec: it.CheckpointRecord, body: dict[str, Any]
    ) -> _Carry:
        """Where each channel's value at this checkpoint is kept: inline in the item, in
        an object, or (channels absent here) nowhere."""
        carry: _Carry = {}
        for channel, raw_version in body.get("channel_versions", {}).items():
            version = str(raw_version)
            leaf = self.namer.value(tid, ns, channel, version)
            blob = rec.inline.get(self.namer.channel(tid, ns, channel))
            if blob is not None:
                carry[channel] = (version, blob, None)
            elif leaf in rec.objects:
                carry[channel] = (version, None, leaf)
        return carry

    def _remember(self, tid: str, ns: str, cid: str, carry: _Carry) -> None:
        with self._carry_lock:
            self._carry[(tid, ns, cid)] = carry
            self._carry.move_to_end((tid, ns, cid))
            while len(self._carry) > CARRY_CACHE_SIZE:
                self._carry.popitem(last=False)

    # --------------------------------------------------------------- put_writes

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes: large ones to S3, then one UpdateItem."""
        tid, ns, cid = target(config)
        if cid is None:
            raise InvalidConfigError(
                "put_writes needs the checkpoint the writes belong to: expected "
                "config['configurable']['checkpoint_id'] (the config put() returned), got none"
            )
        if not isinstance(task_id, str):
            raise TypeError(f"task_id must be a str, got {type(task_id).__name__}")
        if not writes:
            return
        pk = self.namer.thread(tid)
        sk = writes_sk(self.namer.namespace(tid, ns), cid, self.namer.task(tid, ns, cid, task_id))
        record = it.WritesRecord(
            pk=pk,
            sk=sk,
            task_ref=self.codec.seal_ref(pk, sk, task_id, task_path),
        )
        uploads: builtins.list[tuple[str, bytes]] = []
        budget = ITEM_INLINE_BUDGET
        sealed_writes = [
            (idx, self.codec.seal_write(tid, ns, cid, task_id, idx, channel, value))
            for idx, channel, value in (
                (WRITES_IDX_MAP.get(channel, position), channel, value)
                for position, (channel, value) in enumerate(writes)
            )
        ]
        channels = {
            WRITES_IDX_MAP.get(channel, position): channel
            for position, (channel, _) in enumerate(writes)
        }
        regular = {idx: blob for idx, blob in sealed_writes if idx not in _SPECIAL_IDX}
        if len(regular) > MAX_WRITE_ATTRIBUTES:
            leaf = self.namer.write(tid, ns, cid, task_id, len(regular), uuid.uuid4().hex)
            uploads.append((self._key(tid, leaf), it.pack_bundle(regular)))
            record.bundle = leaf
            sealed_writes = [(i, b) for i, b in sealed_writes if i in _SPECIAL_IDX]
        for idx, sealed in sealed_writes:
            if len(sealed) <= self.inline_max and len(sealed) <= budget:
                record.writes[idx] = sealed
                budget -= len(sealed)
            else:
                leaf = self.namer.write(tid, ns, cid, task_id, idx, uuid.uuid4().hex)
                uploads.append((self._key(tid, leaf), sealed))
                record.writes[idx] = it.write_ref(leaf, self.namer.channel(tid, ns, channels[idx]))
        if uploads:
            self.objects.put_many(uploads)
        expression, names, values = it.writes_update(record, _SPECIAL_IDX)
        self.index.update({"pk": {"S": pk}, "sk": {"S": sk}}, expression, names, values)

    # ---------------------------------------------------------------- get_tuple

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch the latest checkpoint of a namespace, or one by `checkpoint_id`:
        one Query, then one parallel wave of S3 GETs."""
        tid, ns, cid = target(config)
        entry = self._read_checkpoint(tid, ns, cid) if cid else self._read_latest(tid, ns)
        if entry is None:
            return None
        decoded: CheckpointTuple = self._decode([entry], remember=True)[0]
        return decoded

    def _read_checkpoint(self, tid: str, ns: str, cid: str) -> _Entry | None:
        pk = self.namer.thread(tid)
        sk = checkpoint_sk(self.namer.namespace(tid, ns), cid)
        found: it.CheckpointRecord | None = None
        writes: builtins.list[it.WritesRecord] = []
        for item in self.index.query_all(pk, prefix=sk):
            # The prefix also matches longer ids that start with this one.
            if it.owner_sk(item["sk"]["S"]) != sk:
                continue
            if it.is_writes_item(item):
                writes.append(it.parse_writes(item))
            else:
                found = it.parse_checkpoint(item)
        return _Entry(tid, ns, found, writes) if found else None

    def _read_latest(self, tid: str, ns: str) -> _Entry | None:
        pk = self.namer.thread(tid)
        prefix = self.namer.namespace(tid, ns) + SEPARATOR
        writes: builtins.list[it.WritesRecord] = []
        start: it.Item | None = None
        limit = LATEST_PAGE
        while True:
            page, start = self.index.query(
                pk, prefix=prefix, descending=True, limit=limit, start_key=start
            )
            for item in page:
                if it.is_writes_item(item):
                    writes.append(it.parse_writes(item))
                    continue
                # Descending order meets a checkpoint's writes just before the checkpoint.
                rec = it.parse_checkpoint(item)
                own = [w for w in writes if w.checkpoint_id == rec.checkpoint_id]
                return _Entry(tid, ns, rec, own)
            if start is None:
                return None
            limit = 100

    # --------------------------------------------------------------------- list

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints newest first.

        With a `checkpoint_ns`, that namespace; without one, every namespace of the
        thread; with `config=None`, every thread (a table scan: an admin operation).
        """
        if limit is not None and limit <= 0:
            return
        before_id = (
            checkpoint_id_of(before["configurable"].get("checkpoint_id"))
            if (before and before.get("configurable", {}).get("checkpoint_id"))
            else None
        )
        entries: Iterable[_Entry]
        if config is None:
            entries = self._scan_entries(before_id)
        else:
            tid, ns, cid = target(config, namespace_optional=True)
            if cid is not None:
                one = self._read_checkpoint(tid, ns or "", cid)
                entries = [one] if one and (before_id is None or cid < before_id) else []
            elif ns is None:
                entries = self._thread_entries(tid, before_id)
            else:
                entries = self._namespace_entries(tid, ns, before_id)
        yield from self._emit(entries, filter, limit)

    def _namespace_entries(self, tid: str, ns: str, before_id: str | None) -> Iterator[_Entry]:
        pk = self.namer.thread(tid)
        ns_name = self.namer.namespace(tid, ns)
        bounds: dict[str, Any] = (
            {"lower": ns_name + SEPARATOR, "upper": checkpoint_sk(ns_name, before_id)}
            if before_id
            else {"prefix": ns_name + SEPARATOR}
        )
        writes: dict[str, builtins.list[it.WritesRecord]] = {}
        for item in self.index.query_all(pk, descending=True, **bounds):
            if it.is_writes_item(item):
                w = it.parse_writes(item)
                writes.setdefault(w.checkpoint_id, []).append(w)
                continue
            rec = it.parse_checkpoint(item)
            if before_id is not None and rec.checkpoint_id >= before_id:
                continue
            yield _Entry(tid, ns, rec, writes.pop(rec.checkpoint_id, []))

    def _thread_entries(self, tid: str, before_id: str | None) -> builtins.list[_Entry]:
        pk = self.namer.thread(tid)
        entries = self._group(self.index.query_all(pk), known_tid=tid)
        return _newest_first(entries, before_id)

    def _scan_entries(self, before_id: str | None) -> builtins.list[_Entry]:
        return _newest_first(self._group(self.index.scan()), before_id)

    def _group(
        self, items: Iterable[it.Item], known_tid: str | None = None
    ) -> builtins.list[_Entry]:
        """Pair checkpoint items with their writes items; learn (thread, ns) from the
        sealed reference each checkpoint item carries."""
        records: dict[tuple[str, str], it.CheckpointRecord] = {}
        writes: dict[tuple[str, str], builtins.list[it.WritesRecord]] = {}
        for item in items:
            if it.is_writes_item(item):
                w = it.parse_writes(item)
                writes.setdefault((w.pk, w.owner_sk), []).append(w)
            else:
                rec = it.parse_checkpoint(item)
                records[(rec.pk, rec.sk)] = rec
        entries = []
        for key, rec in records.items():
            tid, ns = self._open_thread_ref(rec)
            if known_tid is not None and tid != known_tid:
                raise IntegrityError(
                    f"checkpoint {rec.checkpoint_id} in the partition of thread "
                    f"{known_tid!r} claims thread {tid!r}: the item was moved"
                )
            entries.append(_Entry(tid, ns, rec, writes.get(key, [])))
        return entries

    def _open_thread_ref(self, rec: it.CheckpointRecord) -> tuple[str, str]:
        what = f"checkpoint {rec.checkpoint_id} (thread reference)"
        tid, ns = self.codec.open_ref(rec.pk, rec.sk, rec.thread_ref, what)
        if self.namer.thread(tid) != rec.pk or self.namer.namespace(tid, ns) != rec.ns_name:
            raise IntegrityError(
                f"{what}: names thread {tid!r}, whose items this saver would store under "
                "another key: the saver's naming secret differs from the writer's (set the "
                "same secret / S3DYNAMO_SECRET), or the item was moved"
            )
        return tid, ns

    def _emit(
        self, entries: Iterable[_Entry], filter: dict[str, Any] | None, limit: int | None
    ) -> Iterator[CheckpointTuple]:
        """Decode entries page by page: metadata first (filtering costs no S3 request),
        then one S3 wave per page for the survivors' values."""
        remaining = limit
        page: builtins.list[_Entry] = []
        metadata: dict[int, Any] = {}

        def flush() -> Iterator[CheckpointTuple]:
            tuples = self._decode(page, known_metadata=metadata)
            page.clear()
            metadata.clear()
            yield from tuples

        for entry in entries:
            if filter:
                md = self._open_metadata(entry)
                if not all(md.get(k) == v for k, v in filter.items()):
                    continue
                metadata[id(entry.record)] = md
            page.append(entry)
            if remaining is not None:
                remaining -= 1
                if remaining == 0:
                    break
            if len(page) >= LIST_PAGE:
                yield from flush()
        if page:
            yield from flush()

    def _open_metadata(self, entry: _Entry) -> Any:
        cid = entry.record.checkpoint_id
        return self.codec.open_metadata(
            entry.tid, entry.ns, cid, entry.record.metadata, describe(entry.tid, entry.ns, cid)
        )

    # ------------------------------------------------------------------ decoding

    def _decode(
        self,
        entries: Sequence[_Entry],
        *,
        remember: bool = False,
        known_metadata: Mapping[int, Any] | None = None,
    ) -> builtins.list[CheckpointTuple]:
        """Turn index entries into tuples with one parallel S3 wave for all of them."""
        plans = []
        wanted: builtins.list[str] = []
        for entry in entries:
            bundles: builtins.list[tuple[str, str, str]] = []
            tid, ns, rec = entry.tid, entry.ns, entry.record
            what = describe(tid, ns, rec.checkpoint_id)
            body = self.codec.open_body(tid, ns, rec.checkpoint_id, rec.body, what)
            if known_metadata and id(rec) in known_metadata:
                md = known_metadata[id(rec)]
            else:
                md = self._open_metadata(entry)
            locations = self.stored_values(tid, ns, rec, body)
            channel_blobs: dict[str, tuple[str, bytes | str]] = {}
            for channel, (version, blob, leaf) in locations.items():
                if blob is not None:
                    channel_blobs[channel] = (version, blob)
                else:
                    key = self._key(tid, leaf or "")
                    channel_blobs[channel] = (version, key)
                    wanted.append(key)
            writes: builtins.list[tuple[str, str, int, bytes | str]] = []
            for w in entry.writes:
                task_id, task_path = self.codec.open_ref(w.pk, w.sk, w.task_ref, what)
                if w.bundle is not None:
                    key = self._key(tid, w.bundle)
                    wanted.append(key)
                    bundles.append((task_path, task_id, key))
                for idx, stored in w.writes.items():
                    if isinstance(stored, str):
                        stored = self._key(tid, it.split_write_ref(stored)[0])
                        wanted.append(stored)
                    writes.append((task_path, task_id, idx, stored))
            plans.append((entry, body, md, channel_blobs, writes, bundles))
            if remember:
                self._remember(tid, ns, rec.checkpoint_id, locations)

        fetched = self.objects.get_many(wanted) if wanted else {}

        def resolve(stored: bytes | str) -> bytes:
            return fetched[stored] if isinstance(stored, str) else stored

        out = []
        for entry, body, md, channel_blobs, writes, bundles in plans:
            tid, ns, cid = entry.tid, entry.ns, entry.record.checkpoint_id
            what = describe(tid, ns, cid)
            for task_path, task_id, key in bundles:
                try:
                    unpacked = it.unpack_bundle(fetched[key])
                except ValueError as exc:
                    raise IntegrityError(f"{what}: writes bundle {key!r}: {exc}") from exc
                writes += [(task_path, task_id, i, b) for i, b in unpacked.items()]
            channel_values = {
                channel: self.codec.open_value(
                    tid, ns, channel, version, resolve(stored), f"{what}, channel value"
                )
                for channel, (version, stored) in channel_blobs.items()
            }
            pending: builtins.list[PendingWrite] = []
            for _task_path, task_id, idx, stored in sorted(
                writes, key=lambda w: writes_sort_key(w[0], w[1], w[2])
            ):
                channel, value = self.codec.open_write(
                    tid, ns, cid, task_id, idx, resolve(stored), f"{what}, pending write"
                )
                pending.append((task_id, channel, value))
            listed = body.pop("stored", None)
            if listed is not None and (lost := set(listed) - set(channel_blobs)):
                raise IntegrityError(
                    f"{what}: {len(lost)} stored channel value(s) are missing from its index "
                    "item; the item was altered"
                )
            parent = body.pop("parent", None)
            checkpoint: Checkpoint = {**body, "channel_values": channel_values}  # type: ignore[typeddict-item]
            out.append(
                CheckpointTuple(
                    config=make_config(tid, ns, cid),
                    checkpoint=checkpoint,
                    metadata=md,
                    parent_config=make_config(tid, ns, parent) if parent else None,
                    pending_writes=pending,
                )
            )
        return out

    # ------------------------------------------------------------- delete_thread

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and object of a thread (all namespaces).

        Index items go first, so a crash midway leaves objects nothing references, which
        a second call or garbage collection removes."""
        tid = thread_id_of(thread_id)
        pk = self.namer.thread(tid)
        keys = [it.item_key(i) for i in self.index.query_all(pk, keys_only=True)]
        if keys:
            self.index.batch_write(deletes=keys)
        leftover = [o["Key"] for o in self.objects.list_prefix(self._thread_prefix(pk))]
        if leftover:
            self.objects.delete_many(leftover)
        self._forget()

    # ------------------------------------------------------- extended contract

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint (with its writes) created by these runs, in every
        thread and namespace, found through the run index without a scan. Objects they
        alone referenced are left to garbage collection.

        As LangGraph warns, deleting a run whose writes a live thread's DeltaChannel
        still replays loses that history; prune with `keep_latest` is the safe tool."""
        maintenance.delete_for_runs(self, [str(r) for r in run_ids])
        self._forget()

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, write and namespace of a thread to a new thread id.

        Values are re-sealed under the target's identity (a byte copy would not open
        there). Raises `ThreadExistsError` if the target already has checkpoints."""
        maintenance.copy_thread(
            self, thread_id_of(source_thread_id), thread_id_of(target_thread_id)
        )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads. `keep_latest` keeps each namespace's latest checkpoint and
        whatever DeltaChannel reconstruction of it needs (ancestors and their writes back
        to the nearest stored snapshot), so the state reads back the same; `delete`
        removes the threads."""
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(
                f"unknown prune strategy {strategy!r}; expected one of {PRUNE_STRATEGIES}"
            )
        tids = [thread_id_of(t) for t in thread_ids]
        for tid in tids:
            if strategy == "delete":
                self.delete_thread(tid)
            else:
                maintenance.prune_keep_latest(self, tid)
        self._forget()

    def reencrypt(self, thread_ids: Sequence[str] | None = None) -> int:
        """Re-seal every blob of these threads (default: all) not sealed under the
        active key, so an old key can leave the keyring. Returns how many it re-sealed."""
        tids = None if thread_ids is None else [thread_id_of(t) for t in thread_ids]
        count = maintenance.reencrypt(self, tids)
        self._forget()
        return count

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seeds of DeltaChannels along the parent chain, read with one Query
        over the namespace and one S3 wave (see `history.py`)."""
        tid, ns, cid = target(config)
        return history.delta_channel_history(self, tid, ns, cid, list(channels))

    def plan_garbage_collection(
        self, thread_ids: Sequence[str] | None = None, *, grace: timedelta = gc.DEFAULT_GRACE
    ) -> gc.GcPlan:
        """Find objects no index item references, older than `grace` (a dry run).
        Call `.execute()` on the plan to delete them; see `gc.py`."""
        tids = None if thread_ids is None else [thread_id_of(t) for t in thread_ids]
        return gc.plan_gc(self, tids, grace=grace)

    def _stale(self, blob: bytes) -> bool:
        keyring = self.sealer.keyring
        return keyring is not None and self.sealer.key_id_of(blob) != keyring.active

    def _forget(self) -> None:
        with self._carry_lock:
            self._carry.clear()

    # --------------------------------------------------------------------- async

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        iterator = self.list(config, filter=filter, before=before, limit=limit)
        done = object()
        while True:
            item = await asyncio.to_thread(next, iterator, done)
            if item is done:
                return
            yield item  # type: ignore[misc]

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def areencrypt(self, thread_ids: Sequence[str] | None = None) -> int:
        return await asyncio.to_thread(self.reencrypt, thread_ids)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )

    # ------------------------------------------------------------------ versions

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A version unique per write: a zero-padded counter plus a random suffix (the
        format LangGraph's own savers use), so two branches of a fork never share one.
        Accepts the int and str versions other savers wrote."""
        if current is None:
            counter = 0
        elif isinstance(current, (int, float)) and not isinstance(current, bool):
            counter = int(current)
        else:
            counter = int(str(current).split(".")[0])
        return f"{counter + 1:032}.{random.random():016}"


# ----------------------------------------------------------------------- helpers


def _make_client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    # Enough pooled connections for one full parallel wave.
    return boto3.client(service, config=Config(max_pool_connections=32))


def _newest_first(entries: list[_Entry], before_id: str | None) -> list[_Entry]:
    if before_id is not None:
        entries = [e for e in entries if e.record.checkpoint_id < before_id]
    return sorted(entries, key=lambda e: e.record.checkpoint_id, reverse=True)
