"""`S3DynamoSaver`: the LangGraph-facing facade.

It validates what LangGraph hands it (`config.py`), builds the sealer, namer and
thread store from settings, and delegates: storage to `thread_store.py`, history to
`history.py`, garbage collection to `gc.py`, whole-thread operations to
`maintenance.py`. See `docs/ARCHITECTURE.md` for the layers.

Sync and async share one core. The async methods run the sync code in a worker thread
(`asyncio.to_thread`): the work is blocking botocore I/O either way, and one code path
means one set of request budgets and one set of bugs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

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

from langgraph.checkpoint.s3dynamo import gc, lease, runs

# `maintenance` and `history` are imported where they are used: a Lambda cold start's
# first request needs neither (history only for graphs with DeltaChannels).
from langgraph.checkpoint.s3dynamo.codec import Codec
from langgraph.checkpoint.s3dynamo.config import (
    checkpoint_id_of,
    resolve_key_source,
    target,
    thread_id_of,
)
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError, S3DynamoError
from langgraph.checkpoint.s3dynamo.keys import (
    NO_KEY_HINT,
    Control,
    Deployment,
    KmsKeyring,
    kms_context,
)
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.object_cache import DEFAULT_CACHE_BYTES, ObjectCache
from langgraph.checkpoint.s3dynamo.placement import DEFAULT_DELTA_MAX, DEFAULT_INLINE_MAX
from langgraph.checkpoint.s3dynamo.ports import Index, KeyService, ObjectStore
from langgraph.checkpoint.s3dynamo.retention import ExpiryPlan, parse_ttl, plan_expiry
from langgraph.checkpoint.s3dynamo.sealing import Keyring, Sealer
from langgraph.checkpoint.s3dynamo.thread_store import Entry, Skipped, ThreadStore, warn_skipped
from langgraph.checkpoint.s3dynamo.waves import WAVE_WORKERS

PRUNE_STRATEGIES = ("keep_latest", "delete")
# botocore's retry budget per request (first try included), in its "standard" mode
# (`backends/aws_clients.py`): backoff with jitter on throttling and transient errors.
DEFAULT_MAX_ATTEMPTS = 5
# Connections per client: as many as the workers of the shared wave pool (waves.py).
MAX_POOL_CONNECTIONS = WAVE_WORKERS
# Maintenance is logged at INFO with threads named by their keyed hash (as stored), never
# by id: a thread id is often a user id, and logs leave the sealed store.
log = logging.getLogger(__name__)
TRUE_WORDS = ("1", "true", "yes", "on")


class ReencryptResult(int):
    """How many blobs `reencrypt` re-sealed (the int itself), and the threads it skipped
    because they do not open with this saver's keys (`skipped`)."""

    skipped: list[Skipped]

    def __new__(cls, resealed: int, skipped: Sequence[Skipped] = ()) -> ReencryptResult:
        out = super().__new__(cls, resealed)
        out.skipped = list(skipped)
        return out


@dataclass
class CheckReport:
    """What `S3DynamoSaver.check` verified: one line per part, and the problems found."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        return "\n".join([*self.lines, *(f"PROBLEM: {p}" for p in self.problems)])


class CheckFailedError(S3DynamoError):
    """`S3DynamoSaver.check` found problems; `report` holds every line."""

    def __init__(self, report: CheckReport) -> None:
        super().__init__("saver check failed:\n" + str(report))
        self.report = report


class S3DynamoSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpointer keeping channel values in S3 and an index in DynamoDB.

    Every stored value is compressed with zstd and, when keys are configured, sealed
    with AES-256-GCM bound to its identity. Names in S3 and DynamoDB are keyed hashes.

    Args:
        table: DynamoDB table name (see `schema.py` and `terraform/`).
        bucket: S3 bucket name.
        prefix: Key prefix for every object in the bucket.
        dynamodb_client: A boto3 (or botocore) DynamoDB client; if omitted, built with
            botocore on first use from the environment (region, credentials and
            `AWS_ENDPOINT_URL_DYNAMODB` as the SDK reads them). The clients savers build
            share one botocore session per process.
        s3_client: A boto3 (or botocore) S3 client; built likewise (`AWS_ENDPOINT_URL_S3`).
        inline_max: Largest sealed value kept inside the DynamoDB item; 0 puts every
            value in S3.
        delta_max: Largest delta (a changed value compressed against the channel's last
            full version) kept inside the item before a new full version is written to
            S3. Lower costs fewer DynamoDB write units, higher fewer S3 PUTs (less
            latency); see the README's "Choosing `delta_max`".
        keys: Sealing keys by id (32 bytes each), or a `Keyring`. Enables encryption.
        active_key: Id of the key that seals new blobs (default: the first of `keys`).
        secret: Secret the naming key is derived from. Required with `keys`; never rotate it.
        kms_key_id: An AWS KMS key (id, ARN, alias name or alias ARN). Enables encryption
            with data keys and a naming secret generated by KMS and kept wrapped in the
            table (see `keys.py`); no key material to configure.
        kms_client: A boto3 (or botocore) KMS client; built likewise if omitted.
        key_service: Another implementation of the key service port instead of KMS (for
            example `backends.memory.MemoryKms` in unit tests).
        plaintext: Store checkpoints without encryption. Without a key source (`keys`,
            `kms_key_id`, `LANGGRAPH_AES_KEY`, an `EncryptedSerializer`) the saver refuses
            to start unless this is True.
        compression_level: zstd level.
        allow_plaintext_read: Read unsealed blobs although encryption is on (migrations).
        serde: Serializer. `EncryptedSerializer` works; compression then happens inside
            its encryption.
        index: Another implementation of the index port instead of DynamoDB (for example
            `backends.memory.MemoryIndex` in unit tests); `table` is then not needed.
        object_store: Another implementation of the object store port instead of S3;
            `bucket` is then not needed.
        object_cache_bytes: Objects this process wrote or read lately are kept up to this
            many bytes, so a warm process does not GET them again (see
            `object_cache.py`); 0 turns the cache off.
        max_attempts: Attempts per AWS request (first try included) for the clients the
            saver builds, with botocore's `standard` retry mode. Clients you pass keep
            their own settings.
        detect_concurrent_runs: Hold each put of a run that loaded the latest checkpoint to
            the namespace's head (one TransactWriteItems per put; see below). False writes
            each checkpoint with a plain PutItem, for DynamoDB-compatible stores without
            transactions, at the price of silent forks when two runs share a thread.

    Concurrent runs on one thread: a run that continues the latest checkpoint and finds,
    when it writes, that another run committed to the thread since, fails with
    `ConcurrentUpdateError` (nothing written; retry the run). Forks (`update_state` on an
    old checkpoint, replay from a `checkpoint_id`, `__copy__`) and a single writer are
    never refused (`runs.py`). To serialize runs
    instead, hold `thread_lock(thread_id)` around each. See docs/RELIABILITY.md.

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
        table: str = "",
        bucket: str = "",
        prefix: str = "",
        dynamodb_client: Any = None,
        s3_client: Any = None,
        inline_max: int = DEFAULT_INLINE_MAX,
        delta_max: int = DEFAULT_DELTA_MAX,
        keys: Mapping[str, bytes] | Keyring | None = None,
        active_key: str | None = None,
        secret: bytes | str | None = None,
        compression_level: int = 3,
        allow_plaintext_read: bool = False,
        serde: SerializerProtocol | None = None,
        index: Index | None = None,
        object_store: ObjectStore | None = None,
        object_cache_bytes: int = DEFAULT_CACHE_BYTES,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        detect_concurrent_runs: bool = True,
        kms_key_id: str | None = None,
        kms_client: Any = None,
        key_service: KeyService | None = None,
        plaintext: bool = False,
        retention: str | float | timedelta | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if (not table and index is None) or (not bucket and object_store is None):
            raise InvalidConfigError(
                f"table and bucket are required, got table={table!r} bucket={bucket!r}; "
                "set S3DYNAMO_TABLE and S3DYNAMO_BUCKET or pass them"
            )
        if inline_max < 0:
            raise InvalidConfigError(f"inline_max must be >= 0 bytes, got {inline_max}")
        if delta_max < 0:
            raise InvalidConfigError(
                f"delta_max must be >= 0 bytes (0 stores no deltas), got {delta_max}"
            )
        if max_attempts < 1:
            raise InvalidConfigError(f"max_attempts must be >= 1, got {max_attempts}")
        self.max_attempts = max_attempts
        # Idle time after which `expire_idle_threads()` removes a thread; None: never.
        self.retention = None if retention is None else parse_ttl(retention)
        self.table_name = table
        self.bucket_name = bucket
        self.prefix = prefix
        self.inline_max = inline_max
        self.delta_max = delta_max
        self.dynamodb_client = dynamodb_client
        self.s3_client = s3_client
        self.kms_client = kms_client
        self.kms_key_id = kms_key_id or None
        cipher = self.serde.cipher if isinstance(self.serde, EncryptedSerializer) else None
        kms = self.kms_key_id is not None or key_service is not None
        if kms and (keys is not None or secret):
            raise InvalidConfigError(
                "kms_key_id and keys/secret were both given: with KMS the data keys and the "
                "naming secret come from the keyring KMS wraps in the table; pass one or the other"
            )
        keyring, naming_secret, source = (
            (None, None, "") if kms else resolve_key_source(keys, active_key, secret)
        )
        if plaintext and (keyring is not None or kms or cipher is not None):
            raise InvalidConfigError(
                f"plaintext=True (S3DYNAMO_PLAINTEXT) but a key source is configured "
                f"({source or 'KMS' if kms else source or 'EncryptedSerializer'}): drop one"
            )
        if not plaintext and keyring is None and not kms and cipher is None:
            raise InvalidConfigError(f"no sealing key is configured; {NO_KEY_HINT}")
        self.plaintext = plaintext
        self.control = Control(lambda: self.store.index)
        self.kms: KmsKeyring | None = None
        if kms:
            self.kms = KmsKeyring(
                self.control,
                (lambda: key_service) if key_service is not None else self._kms_service,
                kms_context(table or "index"),
            )
            source = f"KMS key {self.kms_key_id or 'of the key service'}"
        self.sealer = Sealer(
            keyring=self.kms.keyring if self.kms else keyring,
            serde_cipher=cipher,
            compression_level=compression_level,
            allow_plaintext_read=allow_plaintext_read,
        )
        self.namer = Namer(self.kms.secret if self.kms else naming_secret)
        self.deployment = Deployment(
            self.control,
            self.namer,
            self.sealer,
            source=source,
            where=f"table {table!r}" if table else "the index",
        )
        # Threads the last table-wide `list(None)` skipped (they do not open with these keys).
        self.last_skipped: list[Skipped] = []
        self.store = ThreadStore(
            index=(lambda: index) if index is not None else self._dynamodb_index,
            objects=(lambda: object_store) if object_store is not None else self._s3_objects,
            namer=self.namer,
            codec=Codec(self.sealer, self._inner_serde),
            sealer=self.sealer,
            prefix=prefix,
            inline_max=inline_max,
            delta_max=delta_max,
            cache=ObjectCache(object_cache_bytes),
            detect_concurrent_runs=detect_concurrent_runs,
        )

    @classmethod
    def from_env(cls, **overrides: Any) -> S3DynamoSaver:
        """Build a saver from the environment.

        Reads `S3DYNAMO_TABLE`, `S3DYNAMO_BUCKET`, optional `S3DYNAMO_PREFIX`,
        `S3DYNAMO_INLINE_MAX`, `S3DYNAMO_DELTA_MAX`, `S3DYNAMO_OBJECT_CACHE_BYTES`,
        `S3DYNAMO_MAX_ATTEMPTS`, and one key source: `S3DYNAMO_KMS_KEY_ID` (a KMS key
        id, ARN or alias), or `S3DYNAMO_KEYS` (`id:base64key,...`, first is active) with
        `S3DYNAMO_SECRET`, or `LANGGRAPH_AES_KEY`; or `S3DYNAMO_PLAINTEXT=1` to store
        without encryption. `S3DYNAMO_RETENTION` (`30d`, `12h`, or a number of days)
        sets `retention`. Region, credentials and endpoints are left to the AWS SDK's own
        variables (`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3`,
        `AWS_ENDPOINT_URL_DYNAMODB`, ...). Keyword arguments override what the
        environment says.
        """
        env = os.environ
        kwargs: dict[str, Any] = {
            "table": env.get("S3DYNAMO_TABLE", ""),
            "bucket": env.get("S3DYNAMO_BUCKET", ""),
            "prefix": env.get("S3DYNAMO_PREFIX", ""),
        }
        for name, setting in (
            ("S3DYNAMO_INLINE_MAX", "inline_max"),
            ("S3DYNAMO_DELTA_MAX", "delta_max"),
            ("S3DYNAMO_OBJECT_CACHE_BYTES", "object_cache_bytes"),
        ):
            if raw := env.get(name):
                try:
                    kwargs[setting] = int(raw)
                except ValueError:
                    raise InvalidConfigError(
                        f"{name} must be a number of bytes, got {raw!r}"
                    ) from None
        if raw := env.get("S3DYNAMO_DETECT_CONCURRENT_RUNS"):
            if raw.lower() not in ("0", "1", "true", "false"):
                raise InvalidConfigError(
                    f"S3DYNAMO_DETECT_CONCURRENT_RUNS must be 1 or 0, got {raw!r}"
                )
            kwargs["detect_concurrent_runs"] = raw.lower() in ("1", "true")
        if raw := env.get("S3DYNAMO_MAX_ATTEMPTS"):
            try:
                kwargs["max_attempts"] = int(raw)
            except ValueError:
                raise InvalidConfigError(
                    f"S3DYNAMO_MAX_ATTEMPTS must be a whole number of attempts, got {raw!r}"
                ) from None
        if spec := env.get("S3DYNAMO_KEYS"):
            kwargs["keys"] = Keyring.parse(spec)
        if secret := env.get("S3DYNAMO_SECRET"):
            kwargs["secret"] = secret
        if kms_key_id := env.get("S3DYNAMO_KMS_KEY_ID"):
            kwargs["kms_key_id"] = kms_key_id
        if raw := env.get("S3DYNAMO_PLAINTEXT"):
            kwargs["plaintext"] = raw.strip().lower() in TRUE_WORDS
        if raw := env.get("S3DYNAMO_RETENTION"):
            kwargs["retention"] = raw
        kwargs.update(overrides)
        return cls(**kwargs)

    # Built on first use, not in the constructor: a cold start pays for no client it
    # does not need (small-state turns never touch S3).
    def _dynamodb_index(self) -> Index:
        from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoIndex

        client = self.dynamodb_client or self._make_client("dynamodb")
        return DynamoIndex(client, self.table_name)

    def _s3_objects(self) -> ObjectStore:
        from langgraph.checkpoint.s3dynamo.backends.s3 import S3Objects

        return S3Objects(self.s3_client or self._make_client("s3"), self.bucket_name)

    def _kms_service(self) -> KeyService:
        from langgraph.checkpoint.s3dynamo.backends.kms import KmsKeys

        if self.kms_client is None:
            self.kms_client = self._make_client("kms")
        return KmsKeys(self.kms_client, self.kms_key_id or "")

    def _make_client(self, service: str) -> Any:
        """A botocore client from the process's one session (`backends/aws_clients.py`)."""
        from langgraph.checkpoint.s3dynamo.backends import aws_clients

        return aws_clients.client(
            service, max_attempts=self.max_attempts, max_pool_connections=MAX_POOL_CONNECTIONS
        )

    def _inner_serde(self) -> SerializerProtocol:
        # With EncryptedSerializer the sealer calls its cipher itself, after compressing.
        if isinstance(self.serde, EncryptedSerializer):
            return self.serde.serde
        return self.serde

    def setup(self) -> None:
        """Create the table and bucket if missing (idempotent), then the KMS keyring (with
        `kms_key_id`) and the deployment record. For development and tests; production
        infrastructure comes from `terraform/`."""
        self.store.index.create_if_missing()
        self.store.objects.create_if_missing()
        self.deployment.verify(write=True)

    def check(self, *, raise_on_problem: bool = True) -> CheckReport:
        """Verify table, bucket, keys and permissions up front, with a few cheap requests:
        one Query on the control partition (the table exists in this region and may be
        read; it also reads the deployment record and the KMS keyring), one listing of at
        most one key under the prefix (the bucket exists and may be listed), one KMS
        Decrypt with `kms_key_id` (the key unwraps this deployment's keyring). Nothing is
        written. Returns the report, or raises `CheckFailedError` holding it."""
        report = CheckReport()
        parts = (
            ("table", self._check_table),
            ("bucket", self._check_bucket),
            ("keys", self._check_keys),
        )
        for name, part in parts:
            try:
                report.lines.append(f"{name}: {part()}")
            except S3DynamoError as exc:
                report.problems.append(f"{name}: {exc}")
                if name == "table":
                    break  # keys live in the table
        if self.kms is not None:
            report.requests = {f"kms.{k}": n for k, n in self.kms.requests.items()}
        if report.problems and raise_on_problem:
            raise CheckFailedError(report)
        return report

    def _check_table(self) -> str:
        self.control.refresh()
        return f"{getattr(self.store.index, 'resource', 'index')} answers"

    def _check_bucket(self) -> str:
        self.store.objects.probe(self.prefix)
        return f"{getattr(self.store.objects, 'resource', 'object store')} answers"

    def _check_keys(self) -> str:
        if self.kms is not None and not self.kms.exists():
            return (
                "no KMS keyring in the table yet: setup() or rotate_key() creates it "
                "(kms:GenerateDataKey, the maintenance policy)"
            )
        mine = self.deployment.mine()  # unwraps the KMS keyring (one Decrypt)
        theirs = self.deployment.recorded()
        if theirs is None:
            return "no deployment record yet (the first write creates it); this saver: " + (
                mine.describe()
            )
        problems = self.deployment.differences(theirs, mine)
        if problems:
            raise InvalidConfigError("; ".join(problems) + f" (deployment: {theirs.describe()})")
        return f"match the deployment: {mine.describe()}"

    def rotate_key(self) -> str:
        """Add a new data key from KMS and make it active (with `kms_key_id`); returns its
        id. Then `reencrypt()` moves old blobs to it. With no keyring in the table yet, it
        creates one (the first data key and the naming secret) instead. Needs
        kms:GenerateDataKey (the maintenance policy). With `keys`, rotation is a
        configuration change instead: put the new key first in S3DYNAMO_KEYS (see
        docs/SECURITY.md)."""
        if self.kms is None:
            raise InvalidConfigError(
                "rotate_key() rotates KMS data keys; this saver has none. With keys=... / "
                "S3DYNAMO_KEYS, put the new key first, keep the old one, run reencrypt(), "
                "then drop the old key"
            )
        if not self.kms.exists():
            self.deployment.verify(write=True)  # creates the keyring, records it
            return self.kms.keyring().active
        self.deployment.verify(write=False)
        key_id = self.kms.rotate()
        self.deployment.verify(write=True)
        log.info("rotate_key: new active key %s", key_id)
        return key_id

    def _verify_deployment(self, *, write: bool) -> None:
        """Before an operation sees an empty thread or starts a new one: the keys must be
        the deployment's (`keys.Deployment`); free once verified in this process."""
        self.deployment.verify(write=write)

    # ------------------------------------------------------------ the contract

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: new large values to S3 in one wave, then one PutItem."""
        tid, ns, parent_id = target(config)
        checkpoint_id_of(checkpoint.get("id"))
        shaped = get_checkpoint_metadata(config, metadata)
        if parent_id is None:
            self._verify_deployment(write=True)
        cid = self.store.commit_checkpoint(tid, ns, parent_id, checkpoint, shaped, new_versions)
        return {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}}

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
        if writes:
            self.store.commit_writes(tid, ns, cid, task_id, task_path, writes)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch the latest checkpoint of a namespace, or one by `checkpoint_id`:
        one Query, then one parallel wave of S3 GETs."""
        tid, ns, cid = target(config)
        found = self._read_tuple(tid, ns, cid)
        self._loaded(tid, ns, cid, found)
        return found

    def _read_tuple(self, tid: str, ns: str, cid: str | None) -> CheckpointTuple | None:
        entry = self.store.read_checkpoint(tid, ns, cid) if cid else self.store.read_latest(tid, ns)
        if entry is None:
            self._verify_deployment(write=False)
            return None
        return next(self.store.decode([entry], remember=True))

    def _loaded(self, tid: str, ns: str, cid: str | None, found: CheckpointTuple | None) -> None:
        """Tell concurrent-run detection what this run continues (`runs.py`): the latest
        it got, or nothing when it asked for a checkpoint by id. Runs in the caller's
        context (the async twins call it there, not in their worker thread)."""
        if cid:
            self.store.loaded(tid, ns, None)
        else:
            self.store.loaded(tid, ns, found.checkpoint["id"] if found else runs.EMPTY)

    def _listed(self, config: RunnableConfig | None) -> None:
        """A listing loads by position: what it shows is not continued as the latest
        (how a replaying parent loads its subgraphs' earlier state)."""
        if config is None:
            return
        tid, ns, _ = target(config, namespace_optional=True)
        if ns is None:
            self.store.loaded_thread(tid)
        else:
            self.store.loaded(tid, ns, None)

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
        self._listed(config)
        if limit is not None and limit <= 0:
            return
        before_id = (
            checkpoint_id_of(before["configurable"].get("checkpoint_id"))
            if (before and before.get("configurable", {}).get("checkpoint_id"))
            else None
        )
        entries: Iterable[Entry]
        if config is None:
            skipped: list[Skipped] = []
            entries = self.store.all_entries(before_id, skipped=skipped)
            self.last_skipped = skipped
            warn_skipped("list(None)", skipped)
        else:
            tid, ns, cid = target(config, namespace_optional=True)
            if cid is not None:
                one = self.store.read_checkpoint(tid, ns or "", cid)
                entries = [one] if one and (before_id is None or cid < before_id) else []
            elif ns is None:
                entries = self.store.thread_entries(tid, before_id)
            else:
                entries = self.store.namespace_entries(tid, ns, before_id)
        found = False
        for item in self.store.tuples(entries, filter, limit):
            found = True
            yield item
        if not found and config is not None and not filter and before_id is None:
            self._verify_deployment(write=False)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and object of a thread (all namespaces).

        Index items go first, so a crash midway leaves objects nothing references, which
        a second call or garbage collection removes."""
        tid = thread_id_of(thread_id)
        log.info("delete_thread %s", self.namer.thread(tid))
        self.store.delete_thread(tid)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint (with its writes) created by these runs, in every
        thread and namespace, found through the run index without a scan. Objects they
        alone referenced are left to garbage collection.

        As LangGraph warns, deleting a run whose writes a live thread's DeltaChannel
        still replays loses that history; prune with `keep_latest` is the safe tool."""
        log.info("delete_for_runs: %d runs", len(run_ids))
        from langgraph.checkpoint.s3dynamo import maintenance

        maintenance.delete_for_runs(self.store, [str(r) for r in run_ids])
        self.store.forget()

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, write and namespace of a thread to a new thread id.

        Values are re-sealed under the target's identity (a byte copy would not open
        there). Raises `ThreadExistsError` if the target already has checkpoints."""
        src, dst = thread_id_of(source_thread_id), thread_id_of(target_thread_id)
        log.info("copy_thread %s -> %s", self.namer.thread(src), self.namer.thread(dst))
        from langgraph.checkpoint.s3dynamo import maintenance

        maintenance.copy_thread(self.store, src, dst)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads. `keep_latest` keeps each namespace's latest checkpoint and
        whatever DeltaChannel reconstruction of it needs (ancestors and their writes back
        to the nearest stored snapshot), so the state reads back the same; `delete`
        removes the threads."""
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(
                f"unknown prune strategy {strategy!r}; expected one of {PRUNE_STRATEGIES}"
            )
        for tid in [thread_id_of(t) for t in thread_ids]:
            log.info("prune %s (%s)", self.namer.thread(tid), strategy)
            if strategy == "delete":
                self.store.delete_thread(tid)
            else:
                from langgraph.checkpoint.s3dynamo import maintenance

                maintenance.prune_keep_latest(self.store, tid)
        self.store.forget()

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seeds of DeltaChannels along the parent chain, read with one Query
        over the namespace and one S3 wave (see `history.py`)."""
        tid, ns, cid = target(config)
        from langgraph.checkpoint.s3dynamo import history

        return history.delta_channel_history(self.store, tid, ns, cid, list(channels))

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

    # ------------------------------------------------------- beyond the contract

    def reencrypt(self, thread_ids: Sequence[str] | None = None) -> ReencryptResult:
        """Re-seal every blob of these threads (default: all) not sealed under the
        active key, so an old key can leave the keyring. Returns how many it re-sealed
        (an int), with `.skipped`: over the whole table, threads that do not open with
        these keys are skipped, each logged as a warning, and listed there."""
        tids = None if thread_ids is None else [thread_id_of(t) for t in thread_ids]
        log.info("reencrypt: %s threads", "all" if tids is None else len(tids))
        self.deployment.verify(write=True)  # records a newly active key
        from langgraph.checkpoint.s3dynamo import maintenance

        count, skipped = maintenance.reencrypt(self.store, tids)
        log.info("reencrypt: %d blobs re-sealed, %d threads skipped", count, len(skipped))
        self.store.forget()
        return ReencryptResult(count, skipped)

    def plan_garbage_collection(
        self, thread_ids: Sequence[str] | None = None, *, grace: timedelta = gc.DEFAULT_GRACE
    ) -> gc.GcPlan:
        """Find objects no index item references, older than `grace` (a dry run).
        Call `.execute()` on the plan to delete them; see `gc.py`."""
        tids = None if thread_ids is None else [thread_id_of(t) for t in thread_ids]
        plan = gc.plan_gc(self.store, tids, grace=grace)
        log.info("garbage collection plan: %d objects, %d bytes", plan.objects, plan.bytes)
        return plan

    def expire_idle_threads(
        self,
        older_than: str | float | timedelta | None = None,
        *,
        dry_run: bool = False,
        deadline: float | None = None,
    ) -> ExpiryPlan:
        """Remove, whole, every thread idle for longer than `older_than` (default: the
        `retention` setting, `S3DYNAMO_RETENTION`): its records and objects, whichever
        version wrote them; finish removals an earlier call left midway. A thread written
        within that time keeps every checkpoint. With `dry_run=True` nothing changes and
        the plan says what would go (`.idle`, `.leftovers`, `.records`); otherwise it
        also says what went (`.removed`, `.records_deleted`, `.objects_deleted`) and
        what was left (`.busy`, `.revived`, `.unfinished`). With `deadline`, a
        `time.monotonic()` value, nothing starts after it, and a Scan of the table not
        finished by then decides nothing (`.scanned_all` is False). See `retention.py`."""
        ttl = parse_ttl(older_than) if older_than is not None else self.retention
        if ttl is None:
            raise InvalidConfigError(
                "expire_idle_threads() needs a time to live and none is set; pass "
                "older_than (such as '30d') or set retention / S3DYNAMO_RETENTION"
            )
        plan = plan_expiry(self.store, ttl, deadline=deadline)
        if not dry_run:
            plan.execute(deadline=deadline)
            self.store.forget()
        return plan

    def thread_lock(
        self, thread_id: str, *, ttl: float = lease.DEFAULT_TTL, wait: float | None = None
    ) -> AbstractContextManager[lease.ThreadLease]:
        """Hold the thread's lease for the block, so runs on it go one at a time.

        ```python
        with saver.thread_lock(thread_id, ttl=120):
            graph.invoke(inputs, {"configurable": {"thread_id": thread_id}})
        ```

        One conditional UpdateItem takes it; another holder waits up to `wait` seconds
        (default: `ttl`, long enough for a crashed holder's lease to lapse), then
        `LeaseTimeoutError`; `wait=0` fails fast. The lease lapses `ttl` seconds after it
        was taken (`renew()` on the yielded lease extends it). Writes made in the block
        carry its fencing token: if it lapsed and another holder took it, they are refused
        with `LeaseLostError`. Details in `lease.py`."""
        tid = thread_id_of(thread_id)
        return lease.thread_lock(self.store, tid, ttl, ttl if wait is None else wait)

    def athread_lock(
        self, thread_id: str, *, ttl: float = lease.DEFAULT_TTL, wait: float | None = None
    ) -> AbstractAsyncContextManager[lease.ThreadLease]:
        """`thread_lock` for `async with`; waiting does not block the event loop."""
        tid = thread_id_of(thread_id)
        return lease.athread_lock(self.store, tid, ttl, ttl if wait is None else wait)

    # --------------------------------------------------------------------- async

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        tid, ns, cid = target(config)
        found = await asyncio.to_thread(self._read_tuple, tid, ns, cid)
        self._loaded(tid, ns, cid, found)
        return found

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        self._listed(config)
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

    async def areencrypt(self, thread_ids: Sequence[str] | None = None) -> ReencryptResult:
        return await asyncio.to_thread(self.reencrypt, thread_ids)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )
