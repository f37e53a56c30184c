"""`S3DynamoSaver`: the LangGraph-facing facade.

It validates what LangGraph hands it (`runnable_config.py`) and delegates: settings are
`settings.py`, the parts are built by `compose.py`, storage is the thread store
(`store/`), and everything beyond LangGraph's methods is
`saver.ops` (`ops/`). See `docs/ARCHITECTURE.md` for the layers.

Sync and async share one core. The async methods run the sync code in a worker thread
of the process's async pool (`executor.py`, not the loop's default executor): the work
is blocking botocore I/O either way, and one code path means one set of request budgets
and one set of bugs. What a run continues (`runs.py`) is recorded in the caller's
context, not in the worker's copy of it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.s3dynamo import compose, executor, runs, telemetry
from langgraph.checkpoint.s3dynamo.blobs.placement import DEFAULT_DELTA_MAX, DEFAULT_INLINE_MAX
from langgraph.checkpoint.s3dynamo.boundary import public, twin
from langgraph.checkpoint.s3dynamo.config import arguments
from langgraph.checkpoint.s3dynamo.config.arguments import (
    AsRead,
    Channels,
    Config,
    Count,
    MaybeConfig,
    MaybeDict,
    MaybeN,
    MaybeWhole,
    Position,
    RunIds,
    Subject,
    Text,
    ThreadId,
    ThreadIds,
    Whole,
    Writes,
)
from langgraph.checkpoint.s3dynamo.config.keywords import alone, checked_keywords
from langgraph.checkpoint.s3dynamo.config.runnable_config import (
    before_id_of,
    checkpoint_id_of,
    refuse_copied_metadata,
    target,
    thread_id_of,
)
from langgraph.checkpoint.s3dynamo.config.settings import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_MAX_ATTEMPTS,
    FROM_ENV_ARGUMENTS,
    PARTS,
    SETTING_ARGUMENTS,
    Settings,
)
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.ports import KeyService, ObjectStore
from langgraph.checkpoint.s3dynamo.store import Entry, Skipped, warn_skipped
from langgraph.checkpoint.s3dynamo.table import Table
from langgraph.checkpoint.s3dynamo.waves import parallel

if TYPE_CHECKING:  # imported when first used: a handler's requests never need it
    from langgraph.checkpoint.s3dynamo.ops import Operations
    from langgraph.checkpoint.s3dynamo.store import ThreadSummaries

# Maintenance is logged at INFO with threads named by their keyed hash (as stored), never
# by id: a thread id is often a user id, and logs leave the sealed store.
log = logging.getLogger(__name__)

_R = TypeVar("_R")


def _sealed_size(saver: S3DynamoSaver, at: CheckpointAt) -> Callable[[Mapping[str, Any]], int]:
    """How large a checkpoint's metadata is sealed, for `refuse_copied_metadata`: `put`
    and `put_writes` refuse the same config the same way."""
    return lambda metadata: saver.store.metadata_size(at, metadata)


def _loaded(
    saver: S3DynamoSaver, tid: str, ns: str, cid: str | None, found: CheckpointTuple | None
) -> None:
    """Tell run detection what this run continues: the latest it got, or nothing."""
    latest = None if cid else (found.checkpoint["id"] if found else runs.EMPTY)
    saver.store.loaded(tid, ns, latest, found.checkpoint["id"] if found else None)


def _listed(saver: S3DynamoSaver, config: RunnableConfig | None) -> None:
    """A listing loads by position: what it shows is not continued as the latest (how a
    replaying parent loads its subgraphs' earlier state)."""
    tid, ns, _ = target(config, namespace_optional=True) if config is not None else ("", "", 0)
    if ns is None:
        saver.store.loaded_thread(tid)
    elif config is not None:
        saver.store.loaded(tid, ns, None)


class S3DynamoSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpointer keeping channel values in S3 and an index in DynamoDB.

    Every stored value is compressed with zstd and, when keys are configured, sealed
    with AES-256-GCM bound to its identity. Names in S3 and DynamoDB are keyed hashes.

    Args:
        table: DynamoDB table name (see `schema.py` and `terraform/`).
        bucket: S3 bucket name.
        prefix: The deployment's prefix (such as "tenant-42/"): it starts every object
            key and every partition key, so deployments with their own keys (tenants)
            share one table and bucket, each reading and maintaining only its own
            threads (see docs/SECURITY.md, "Tenants").
        region: AWS region (default: `AWS_REGION`, else `AWS_DEFAULT_REGION`, the profile).
        endpoint_url: An S3- and DynamoDB-compatible endpoint (a local server).
        inline_max: Largest sealed value kept inside the DynamoDB item (0: all in S3).
        delta_max: Largest delta (a changed value compressed against the channel's last
            full version) kept inside the item before a new full version goes to S3.
        keys: Sealing keys by id (32 bytes each), a `Keyring`, or S3DYNAMO_KEYS' text
            (`"k1:<base64>,k0:<base64>"`). Enables encryption.
        active_key: Id of the key that seals new blobs (default: the first of `keys`).
        secret: Secret the naming key is derived from, at least 16 bytes. Required with
            `keys`; never rotate it.
        kms_key_id: An AWS KMS key (id, ARN, alias name or alias ARN). Enables encryption
            with data keys and a naming secret generated by KMS and kept wrapped in the
            table (see `deployment.py`); no key material to configure.
        plaintext: Store checkpoints without encryption; without it and a key source
            (`keys`, `kms_key_id`, `LANGGRAPH_AES_KEY`, an `EncryptedSerializer`) the saver
            refuses to start.
        allow_plaintext_read: Read unsealed blobs although encryption is on (migrations).
        compression_level: zstd level.
        object_cache_bytes: Bytes of objects lately written or read kept in memory (0: off).
        max_attempts: Attempts per AWS request (first try included) for the clients the
            saver builds, with botocore's `standard` retry mode.
        detect_concurrent_runs: Hold each put of a run that continues the latest checkpoint
            to the namespace's head (one TransactWriteItems per put; see `runs.py`). False
            writes a plain PutItem, for DynamoDB-compatible stores without transactions.
        catalog_fields: Metadata fields that find threads without a Scan (`search_threads`):
            a list or "user_id,graph_id"; "langgraph" is user_id, assistant_id and graph_id.
        subject_field: The metadata field naming whose data a thread is (a data subject,
            such as "user_id"): its data is sealed under a key of the subject's own,
            which `erase_subject` destroys (`subjects.py`). A catalog field too.
        subject_label: The position in a Store namespace naming its data subject (1 in
            `("users", uid, "memories")`).
        key_table: The table subjects' keys live in (default: `<table>-keys`).
        async_workers: Threads of the process's pool for async methods (default 64 or
            `S3DYNAMO_ASYNC_WORKERS`; `executor.py`, docs/OPERATIONS.md).
        retention: Idle time after which `ops.expire_idle_threads()` removes a thread
            (a timedelta, days, or text: "30d", "12h", "90m", "3600s").
        retention_strategy: "delete" (a whole idle thread) or "keep_latest" (all but the
            `retention_keep_last` newest checkpoints of each namespace).
        sweep_interval: How often the sweep should run, kept in `settings` for whatever
            schedules it (LangGraph Platform's `sweep_interval_minutes`); the saver runs
            no sweep of its own.
        ttl: LangGraph Platform's `checkpointer.ttl` of langgraph.json, in its names and
            units; it sets `retention`, `retention_strategy` and `sweep_interval`.
        serde: Serializer. `EncryptedSerializer` works; compression then happens inside
            its encryption. A copy made by `with_allowlist` uses its own (`__copy__`).
        dynamodb_client, s3_client, kms_client: boto3 or botocore clients to use instead
            of the ones the saver builds on first use (one botocore session per process).
        index, object_store, key_service, key_index: Other implementations of the ports
            (`ports.py`): a table (e.g. `backends.memory_table.MemoryTable()`), a bucket, a
            key service, a table for subjects' keys, instead of `table`/`bucket`.
        settings: A `Settings` instead of the keyword settings above.

    Concurrent runs: one that continues the latest checkpoint after another committed
    raises `ConcurrentUpdateError` (nothing written; retry it); forks and a single writer
    never do. `saver.ops.thread_lock(thread_id)` serializes runs (docs/RELIABILITY.md).

    Example:
        ```python
        saver = S3DynamoSaver(table="checkpoints", bucket="checkpoints-b", kms_key_id="alias/a")
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "user-42"}})
        ```
    """

    def __init__(
        self,
        *,
        table: str = "",
        bucket: str = "",
        prefix: str = "",
        region: str | None = None,
        endpoint_url: str | None = None,
        inline_max: int = DEFAULT_INLINE_MAX,
        delta_max: int = DEFAULT_DELTA_MAX,
        keys: Keyring | Mapping[str, bytes] | str | None = None,
        active_key: str | None = None,
        secret: str | bytes | None = None,
        kms_key_id: str | None = None,
        plaintext: bool = False,
        allow_plaintext_read: bool = False,
        compression_level: int = 3,
        object_cache_bytes: int = DEFAULT_CACHE_BYTES,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        detect_concurrent_runs: bool = True,
        catalog_fields: str | Sequence[str] = (),
        subject_field: str | None = None,
        subject_label: int | None = None,
        key_table: str = "",
        async_workers: int | None = None,
        retention: str | float | timedelta | None = None,
        retention_strategy: str = "delete",
        retention_keep_last: int = 1,
        sweep_interval: str | float | timedelta | None = None,
        ttl: Mapping[str, Any] | None = None,
        serde: SerializerProtocol | None = None,
        dynamodb_client: Any = None,
        s3_client: Any = None,
        kms_client: Any = None,
        index: Table | None = None,
        object_store: ObjectStore | None = None,
        key_service: KeyService | None = None,
        key_index: Table | None = None,
        settings: Settings | None = None,
    ) -> None:
        # The keyword settings as given, checked by `Settings` (`settings.py`).
        given = {name: value for name, value in locals().items() if name in SETTING_ARGUMENTS}
        super().__init__(serde=compose.checked_serde(serde))
        if settings is not None:
            alone(given, inspect.unwrap(S3DynamoSaver.__init__).__kwdefaults__ or {})
        self.settings = Settings.of(**given) if settings is None else Settings.check(settings)
        injected = compose.Injected(
            dynamodb_client, s3_client, kms_client, index, object_store, key_service, key_index
        )
        cipher = self.serde.cipher if isinstance(self.serde, EncryptedSerializer) else None
        self.parts = compose.build(
            self.settings,
            injected,
            serde=lambda: compose.inner_serde(self.serde, self.parts.sealer),
            serde_cipher=cipher,
        )
        self.store = self.parts.store
        self._origin: S3DynamoSaver | None = None  # the saver a copy was made from

    def __copy__(self) -> S3DynamoSaver:
        """A copy (`with_allowlist` makes one when a graph compiles under
        `LANGGRAPH_STRICT_MSGPACK`) serializes with its own `serde` and shares the rest:
        clients, caches, keys, the deployment check, run detection, leases and `ops`."""
        clone = type(self).__new__(type(self))
        vars(clone).update(vars(self), _origin=self._origin or self)
        clone.parts = compose.with_serde(
            self.parts, lambda: compose.inner_serde(clone.serde, clone.parts.sealer)
        )
        clone.store = clone.parts.store
        return clone

    @classmethod
    def from_env(cls, **overrides: Any) -> S3DynamoSaver:
        """Build a saver from the environment (`settings.py` lists the variables);
        keyword arguments override it, the parts you may inject included."""
        parts = {k: overrides.pop(k) for k in PARTS if k in overrides}
        return cls(settings=Settings.from_env(**overrides), **parts)

    @cached_property
    def ops(self) -> Operations:
        """Everything beyond LangGraph's methods: checks, maintenance plans, the thread
        lease, inspection (see `ops/`). A copy's are its origin's: a lease taken through
        either fences the writes of both."""
        if self._origin is not None:
            return self._origin.ops
        from langgraph.checkpoint.s3dynamo.ops import Operations

        return Operations(self.parts)

    def prime(self) -> None:
        """Get ready for the first request without sending one: build the clients it
        needs (DynamoDB's, S3's but in an on-demand Lambda's init, KMS's with a KMS key)
        and their adapters. Call it in an init phase: a Lambda handler's module scope,
        or before a SnapStart snapshot. Where SnapStart's runtime hooks exist, it
        registers what must differ between clones restored from one snapshot."""
        compose.prime(self.parts)

    @public("setup")
    def setup(self) -> None:
        """Create the table and bucket if missing (idempotent; never under a name AWS would
        refuse, nor where the bucket does not live), then the KMS keyring (with `kms_key_id`)
        and the deployment record. For development and tests; production uses `terraform/`."""
        compose.set_up(self.parts)

    # ------------------------------------------------------------ the contract

    @public("put")
    def put(
        self,
        config: Config,
        checkpoint: Annotated[Checkpoint, arguments.mapping],
        metadata: Annotated[CheckpointMetadata, arguments.mapping],
        new_versions: Annotated[ChannelVersions, arguments.mapping],
    ) -> RunnableConfig:
        """Store a checkpoint: new large values to S3 in one wave, then one request."""
        tid, ns, parent_id = target(config)
        at = CheckpointAt(tid, ns, checkpoint_id_of(checkpoint.get("id"), "checkpoint['id']"))
        if at.checkpoint_id == parent_id:  # every walk up a thread's history must end
            raise InvalidConfigError(
                f"{at.what}: the config names this checkpoint as its own parent; put a new "
                "checkpoint (a new id) with the config of the one it follows, as put() returned it"
            )
        refuse_copied_metadata(config, at.what, _sealed_size(self, at))
        shaped = get_checkpoint_metadata(config, metadata)
        # A new thread checks (or records) the deployment first, once its values are
        # serialized: a value that cannot be stored writes nothing, not even the record.
        first = (lambda: self.parts.deployment.verify(write=True)) if parent_id is None else None
        with guarded(self.parts.deployment):  # a missing table: in another region?
            cid = self.store.commit(at, parent_id, checkpoint, shaped, new_versions, first)
        return {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}}

    @public("put_writes")
    def put_writes(
        self, config: Config, writes: Writes, task_id: Text, task_path: Text = ""
    ) -> None:
        """Store a task's pending writes: large ones to S3, then one UpdateItem."""
        tid, ns, cid = target(config)
        if cid is None:
            raise InvalidConfigError(
                "put_writes needs the checkpoint the writes belong to: expected "
                "config['configurable']['checkpoint_id'] (the config put() returned), got none"
            )
        if writes:
            at = CheckpointAt(tid, ns, cid)  # refused as its checkpoint's put would be
            what = f"{at.what}: the writes of task {task_id!r}"
            refuse_copied_metadata(config, what, _sealed_size(self, at))
            self.store.commit_writes(at, task_id, task_path, writes, config.get("configurable"))

    @public()
    def get_tuple(self, config: Config) -> CheckpointTuple | None:
        """Fetch the latest checkpoint of a namespace, or one by `checkpoint_id`:
        one Query, then one parallel wave of S3 GETs."""
        tid, ns, cid = target(config)
        found = self._read_tuple(tid, ns, cid)
        _loaded(self, tid, ns, cid, found)
        return found

    @telemetry.operation("get_tuple")
    def _read_tuple(self, tid: str, ns: str, cid: str | None) -> CheckpointTuple | None:
        def read() -> Entry | None:
            return self.store.read(tid, ns, cid)

        with guarded(self.parts.deployment):
            if self.parts.control.loaded:
                entry = read()
            else:
                # A process's first read: the deployment record in the same wave, so a
                # new thread, which must be checked against it, costs no second round trip.
                steps: list[Callable[[], Any]] = [read, self.parts.control.records]
                entry = parallel(lambda step: step(), steps)[0]
            # The record is in hand (read in that wave, or before): another bucket is
            # named before any object read, at no request. Keys are checked when a blob
            # does not open (`guarded`), so the error names the blob too.
            self.parts.deployment.check_bucket()
            if entry is None:
                self.parts.deployment.verify(write=False)
                return None
            return self.store.decode(entry)

    @public("list")
    def list(
        self,
        config: MaybeConfig,
        *,
        filter: MaybeDict = None,
        before: MaybeConfig = None,
        limit: MaybeWhole = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints newest first. With a `checkpoint_ns`, that namespace; without
        one, every namespace of the thread; with `config=None`, every thread (a table
        scan: an admin operation; threads that do not open with these keys are skipped
        and listed in `saver.ops.last_skipped`)."""
        _listed(self, config)
        if limit is not None and limit <= 0:
            return
        before_id = before_id_of(before)
        with guarded(self.parts.deployment):
            entries: Iterable[Entry]
            if config is None:
                skipped: list[Skipped] = []  # the thread catalog's, else a Scan
                entries = self.store.listing(filter, before_id, skipped)
                self.ops.last_skipped = skipped
                warn_skipped("list(None)", skipped)
            else:
                tid, ns, cid = target(config, namespace_optional=True)
                if cid is not None:
                    one = self.store.read(tid, ns or "", cid)
                    entries = [one] if one and (before_id is None or cid < before_id) else []
                elif ns is None:
                    entries = self.store.entries(tid, before_id)
                else:
                    entries = self.store.namespace_entries(tid, ns, before_id)
            found = False
            for item in self.store.tuples(entries, filter, limit):
                found = True
                yield item
        if not found and not filter and before_id is None:
            # Nothing at all: other keys or another naming secret find nothing, and say so.
            self.parts.deployment.verify(write=False)

    @public("search_threads")
    def search_threads(
        self, *, metadata: MaybeDict = None, limit: Count = 10, before: Position = None
    ) -> ThreadSummaries:
        """Threads whose latest checkpoint has each pair of `metadata`, newest activity first
        (by their latest checkpoint, authenticated), after `before`: a result or its
        opaque `cursor` (anything else is `InvalidCursorError`). Pages are keyset over a
        moving order: a thread written between two pages moves to the top and is on
        neither. A declared field costs its threads only (`store/search.py`)."""
        with guarded(self.parts.deployment):
            self.parts.deployment.verify(write=False)  # another secret finds nothing
            return self.store.search(metadata, limit, before)

    @public("delete_thread")
    def delete_thread(self, thread_id: ThreadId) -> None:
        """Delete every checkpoint, write, object and catalog entry of a thread (every
        namespace), behind marks: interrupted, it reads deleted; a repeat finishes it."""
        tid = thread_id_of(thread_id)
        log.info("delete_thread %s", self.store.name_of(tid))
        removed = self.store.delete_thread(tid)
        if not removed.found and not removed.objects:
            self.parts.deployment.verify(write=False)  # another secret finds nothing

    @public("delete_for_runs")
    def delete_for_runs(self, run_ids: RunIds) -> None:
        """Delete every checkpoint (with its writes) created by these runs, in every
        thread and namespace, found through the run index without a scan. Objects they
        alone referenced are left to garbage collection. As LangGraph warns, deleting a
        run whose writes a live thread's DeltaChannel still replays loses that history;
        prune with `keep_latest` is the safe tool."""
        plan = self.ops.plan_delete_runs(run_ids)
        log.info("delete_for_runs: %d runs", len(plan.run_ids))
        plan.execute()

    @public("copy_thread")
    def copy_thread(
        self, source_thread_id: ThreadId, target_thread_id: ThreadId, *, keep_last: MaybeN = None
    ) -> None:
        """Copy a thread (every namespace; with `keep_last`, each namespace's newest
        checkpoints and what they need) to a new thread id, sharing its objects: only
        index items are written (docs/RELIABILITY.md, "Copies share objects"). Raises
        `ThreadExistsError` if the target has checkpoints, `ConcurrentUpdateError`
        (nothing copied) if the source is deleted or pruned meanwhile."""
        from langgraph.checkpoint.s3dynamo.ops import threads

        threads.copy_one(
            self.store, self.parts.deployment, source_thread_id, target_thread_id, keep_last
        )

    @public("prune")
    def prune(
        self, thread_ids: ThreadIds, *, strategy: Text = "keep_latest", keep_last: Whole = 1
    ) -> None:
        """Prune threads. `keep_latest` keeps each namespace's `keep_last` newest
        checkpoints (1: its latest) with their pending writes and whatever DeltaChannel
        reconstruction of them needs (ancestors and their writes back to the nearest
        stored snapshot), so each reads back the same; `delete` removes the threads."""
        from langgraph.checkpoint.s3dynamo.ops import threads

        threads.prune_some(self.store, self.parts.deployment, thread_ids, strategy, keep_last)

    @public("get_delta_channel_history")
    def get_delta_channel_history(
        self, *, config: Config, channels: Channels
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seeds of DeltaChannels along the parent chain, read with one Query
        over the namespace and one S3 wave (see `store/history.py`)."""
        tid, ns, cid = target(config)
        with guarded(self.parts.deployment):
            found = self.store.delta_history(tid, ns, cid, list(channels))
        if not any(h.get("writes") or "seed" in h for h in found.values()):
            self.parts.deployment.verify(write=False)  # nothing: keys checked first
        return found

    @public()
    def get_next_version(self, current: AsRead, channel: AsRead) -> str:
        """A version unique per write, so two branches of a fork never share one: a
        counter plus a random suffix, as LangGraph's savers do (their int/str accepted)."""
        counter = arguments.version_counter(current)
        return f"{counter + 1:032}.{compose.UNIQUE.random():016}"

    # --------------------------------------------------------------------- async

    def async_workers(self) -> int:
        """Threads of the process's pool the async methods run in (`executor.py`)."""
        return self.settings.async_workers

    async def _in_worker(self, fn: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
        """The sync core in the process's async pool (`executor.py`), in this context."""
        return await executor.run(self.settings.async_workers, fn, *args, **kwargs)

    @public()
    async def aget_tuple(self, config: Config) -> CheckpointTuple | None:
        tid, ns, cid = target(config)
        found = await self._in_worker(self._read_tuple, tid, ns, cid)
        _loaded(self, tid, ns, cid, found)
        return found

    @public()
    async def alist(
        self,
        config: MaybeConfig,
        *,
        filter: MaybeDict = None,
        before: MaybeConfig = None,
        limit: MaybeWhole = None,
    ) -> AsyncIterator[CheckpointTuple]:
        _listed(self, config)
        async for item in self._pulled(
            self.list(config, filter=filter, before=before, limit=limit)
        ):
            yield item

    async def _pulled(self, iterator: Iterator[_R]) -> AsyncIterator[_R]:
        """An iterator's items, each taken in the process's async pool."""
        done: Any = object()
        while (item := await self._in_worker(next, iterator, done)) is not done:
            yield item

    # --------------------------------------------------------------- data subjects

    @public("erase_subject")
    def erase_subject(self, subject: Subject) -> dict[str, Any]:
        """Erase a data subject for good, backups included (`ops/subjects.py`); what went.
        Repeat it to finish one that was interrupted."""
        return self.ops.subjects.erase(subject)

    @public("export_subject")
    def export_subject(self, subject: Subject) -> Iterator[dict[str, Any]]:
        """A data subject's checkpoints and Store items, a record at a time."""
        return self.ops.subjects.export(subject)

    aput = twin(put)
    aput_writes = twin(put_writes)
    asearch_threads = twin(search_threads)
    adelete_thread = twin(delete_thread)
    adelete_for_runs = twin(delete_for_runs)
    acopy_thread = twin(copy_thread)
    aprune = twin(prune)
    aget_delta_channel_history = twin(get_delta_channel_history)
    aerase_subject = twin(erase_subject)


# A keyword the constructor or `from_env` does not take names the one meant.
checked_keywords(S3DynamoSaver, FROM_ENV_ARGUMENTS)
