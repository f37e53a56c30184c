"""The composition root: from `Settings` and whatever the caller injects (clients, ports,
a key service, the serializer), the parts of a saver: sealer, namer, codec, the
deployment check, the KMS keyring and the thread store. Nothing here sends a request:
clients and ports are built on first use (a turn that never touches S3 never builds an
S3 client).

Clients the saver builds come from one botocore session per process
(`backends/aws_clients.py`), in the region `Settings.region` names, else `AWS_REGION`
(what Lambda and most tools set), else `AWS_DEFAULT_REGION`, each checked by name
(`aws_names.region_of`), else what botocore finds itself (the profile); at
`Settings.endpoint_url` for S3 and DynamoDB when set.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, BlobPolicy, LazyPorts
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import Apply
from langgraph.checkpoint.s3dynamo.config import arguments
from langgraph.checkpoint.s3dynamo.config.aws_names import bucket_problem, region_of, table_problem
from langgraph.checkpoint.s3dynamo.config.settings import Settings
from langgraph.checkpoint.s3dynamo.deployment import Configured, Control, Deployment
from langgraph.checkpoint.s3dynamo.errors import ArgumentTypeError, InvalidConfigError
from langgraph.checkpoint.s3dynamo.format.layout import STORE_SPACE, deployment_pk
from langgraph.checkpoint.s3dynamo.keys.codec import Codec
from langgraph.checkpoint.s3dynamo.keys.keyring import KeySource
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.ports import KeyService, ObjectStore
from langgraph.checkpoint.s3dynamo.store import StorePolicy, ThreadStore
from langgraph.checkpoint.s3dynamo.table import Table, Write, Written
from langgraph.checkpoint.s3dynamo.waves import WAVE_WORKERS

if TYPE_CHECKING:  # each loads when used: a saver whose first request needs none of them
    from langgraph.checkpoint.s3dynamo.keys.kms_keyring import KmsKeyring  # keys from KMS
    from langgraph.checkpoint.s3dynamo.keys.subjects import Subjects  # subjects declared
    from langgraph.checkpoint.s3dynamo.memory.core import Indexes, Space  # Store, cache

log = logging.getLogger(__name__)


@dataclass
class Injected:
    """What a caller may pass instead of letting the saver build it, each checked to be
    what it stands for before anything is built (`arguments.py`)."""

    dynamodb_client: Any = None
    s3_client: Any = None
    kms_client: Any = None
    index: Table | None = None
    object_store: ObjectStore | None = None
    key_service: KeyService | None = None
    key_index: Table | None = None

    def __post_init__(self) -> None:
        for service in ("dynamodb", "s3", "kms"):
            checked_client(f"{service}_client", getattr(self, f"{service}_client"), service)
        for name, (methods, what) in PORTS.items():
            if getattr(self, name) is not None:
                arguments.having(name, getattr(self, name), methods, what=what)


# What an injected port must have, and what the error names it.
PORTS = {
    "index": (
        ("query", "write", "transact", "batch"),
        "a table port (ports.Table), such as backends.memory_table.MemoryTable()",
    ),
    "key_index": (
        ("query", "write", "transact", "batch"),
        "a table port (ports.Table) for data subjects' keys, such as MemoryTable()",
    ),
    "object_store": (
        ("put_new", "get", "list", "delete"),
        "an object store port (ports.ObjectStore), such as backends.memory.MemoryObjects()",
    ),
    "key_service": (
        ("generate_data_key", "decrypt"),
        "a key service (ports.KeyService), such as backends.kms.KmsKeys",
    ),
}


def checked_client(name: str, value: object, service: str) -> Any:
    """A boto3 or botocore client of `service` (or None: the saver builds one)."""
    if value is None:
        return None
    model = getattr(getattr(value, "meta", None), "service_model", None)
    got = getattr(model, "service_name", None)
    if got != service:
        what = f"a {got} client" if isinstance(got, str) else arguments.came(value)
        raise ArgumentTypeError(
            f"{name} must be a boto3 or botocore {service} client, such as "
            f"boto3.client({service!r}), got {what}"
        )
    return value


def checked_serde(serde: Any) -> SerializerProtocol | None:
    """The saver's `serde`: a LangGraph serializer, or None for LangGraph's default."""
    if serde is None:
        return None
    return arguments.having(  # type: ignore[no-any-return]
        "serde",
        serde,
        ("dumps_typed", "loads_typed"),
        what="a LangGraph serializer (SerializerProtocol), such as JsonPlusSerializer()",
    )


class Clients:
    """The AWS clients of one saver, injected or built on first use, and the table's
    adapter, built once over its client: the one lazy construction of the index (the
    store's ports and the deployment check are handed this method, not a client)."""

    def __init__(self, settings: Settings, injected: Injected) -> None:
        self.settings = settings
        self.dynamodb: Any = injected.dynamodb_client
        self.s3: Any = injected.s3_client
        self.kms: Any = injected.kms_client
        self.table: Table | None = None
        self.key_table: Table | None = None
        # Whether the table, the bucket and the key table are the saver's own, named by
        # its settings.
        self.named = (injected.index is None, injected.object_store is None)
        self.own_key_table = settings.subjects and injected.key_index is None

    def refuse_names(self) -> None:
        """Before `setup()` sends anything: a table or bucket of the saver's own whose
        name DynamoDB or S3 would refuse to create (`aws_names`) is an error naming it and
        the rules, so that neither is created."""
        table, bucket = self.named
        problems = [
            f"{problem}; fix {variable}"
            for problem, variable in (
                (table and table_problem(self.settings.table), "S3DYNAMO_TABLE (table=)"),
                (bucket and bucket_problem(self.settings.bucket), "S3DYNAMO_BUCKET (bucket=)"),
                (
                    self.own_key_table and table_problem(self.settings.key_table_name),
                    "S3DYNAMO_KEY_TABLE (key_table=)",
                ),
            )
            if problem
        ]
        if problems:
            raise InvalidConfigError(
                f"setup() refused: {'; and '.join(problems)}. Nothing was sent or created"
            )

    def region(self) -> str | None:
        return region_of(self.settings.region)

    def build(self, service: str) -> Any:
        from langgraph.checkpoint.s3dynamo.backends import aws_clients

        return aws_clients.client(
            service,
            region=self.region(),
            endpoint_url=self.settings.endpoint_url if service != "kms" else None,
            max_attempts=self.settings.max_attempts,
            # A connection for every thread that may send at once: the async workers'
            # own requests and the shared wave pool's (executor.py, waves.py).
            max_pool_connections=self.settings.async_workers + WAVE_WORKERS,
        )

    def dynamodb_table(self) -> Table:
        if self.table is None:
            from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable

            if self.dynamodb is None:
                self.dynamodb = self.build("dynamodb")
            self.table = DynamoTable(self.dynamodb, self.settings.table)
        return self.table

    def dynamodb_key_table(self) -> Table:
        """The key table's adapter (`subjects.py`), on the same client as the data's."""
        if self.key_table is None:
            from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable

            if self.dynamodb is None:
                self.dynamodb = self.build("dynamodb")
            self.key_table = DynamoTable(self.dynamodb, self.settings.key_table_name)
        return self.key_table

    def s3_objects(self) -> ObjectStore:
        from langgraph.checkpoint.s3dynamo.backends.s3 import S3Objects

        if self.s3 is None:
            self.s3 = self.build("s3")
        return S3Objects(self.s3, self.settings.bucket)

    def kms_service(self) -> KeyService:
        from langgraph.checkpoint.s3dynamo.backends.kms import KmsKeys

        if self.kms is None:
            self.kms = self.build("kms")
        return KmsKeys(self.kms, self.settings.kms_key_id or "")


class Components(NamedTuple):
    settings: Settings
    clients: Clients
    source: KeySource
    sealer: Sealer
    namer: Namer
    codec: Codec
    control: Control
    kms: KmsKeyring | None
    deployment: Deployment
    store: ThreadStore
    # The blob engine the thread store is built on, shared by the Store and the node
    # cache (`memory.core.Space`).
    engine: BlobEngine
    # The deployment's data subjects, built on first use (at once where declared).
    made_subjects: Callable[[], Subjects]

    @property
    def subjects(self) -> Subjects:
        return self.made_subjects()

    def serde(self) -> SerializerProtocol:
        """The serializer values go through now, the Store's and the cache's too
        (`Codec.serde`: the saver's, checked against the cipher it was built with)."""
        return self.codec.serde()


def build(
    settings: Settings,
    injected: Injected,
    *,
    serde: Callable[[], SerializerProtocol],
    serde_cipher: Any = None,
) -> Components:
    """The parts of a saver. `serde` gives the serializer in use, asked on every call (the
    saver's own `serde`, so assigning another one is honoured); `serde_cipher` is the
    cipher of LangGraph's `EncryptedSerializer`, which the sealer calls after compressing."""
    settings.require_storage(
        index=injected.index is not None, objects=injected.object_store is not None
    )
    source = settings.key_source(
        serializer_cipher=serde_cipher is not None, key_service=injected.key_service is not None
    )
    clients = Clients(settings, injected)
    ports = _ports(injected, clients)

    def apply(write: Write) -> Written:
        # The deployment's records are written through the engine, made below; the
        # constructor sends no request, so none is written before it exists.
        written: Written = engine.do(Apply(write))
        return written

    def control(pk: str) -> Control:
        return Control(lambda: ports.table, apply, pk)

    own = control(deployment_pk(settings.prefix))
    kms, sealer, namer = _keys(
        settings,
        source,
        (own, injected, clients),
        serde_cipher,
        lambda kid, what: subjects().key_bytes(kid, what),
    )
    codec = Codec(sealer, serde)
    deployment = _deployment(settings, source, injected, (own, namer, sealer), control, ports)
    # One blob engine per saver: its thread store, Store and node cache seal, place,
    # upload, cache and journal through it.
    engine = BlobEngine(
        ports=ports,
        sealer=sealer,
        prefix=settings.prefix,
        policy=BlobPolicy(settings.inline_max, settings.object_cache_bytes),
    )
    made: list[Subjects] = []

    def subjects() -> Subjects:
        if not made:
            made.append(_subjects(settings, source, injected, clients, engine, namer))
        return made[0]

    declared = subjects() if settings.subjects else None  # a wrong declaration is refused now
    store = _thread_store(settings, engine, codec, declared, (deployment, own, namer))
    keys = (source, sealer, namer, codec, own, kms)
    return Components(settings, clients, *keys, deployment, store, engine, subjects)


def _ports(injected: Injected, clients: Clients) -> LazyPorts:
    """The table and the object store: the ones injected, else the AWS adapters, built
    on first use."""
    table, objects = injected.index, injected.object_store
    return LazyPorts(
        table=(lambda: table) if table is not None else clients.dynamodb_table,
        objects=(lambda: objects) if objects else clients.s3_objects,
    )


def _deployment(
    settings: Settings,
    source: KeySource,
    injected: Injected,
    keys: tuple[Control, Namer, Sealer],
    control: Callable[[str], Control],
    ports: LazyPorts,
) -> Deployment:
    """The deployment check over its record in the deployment's partition `own` (and,
    under a prefix, the root deployment's, by `control`), with what the settings
    configure and the bucket as messages name it."""
    own, namer, sealer = keys
    objects = injected.object_store
    # An injected store's own name (`S3Objects`, `MemoryObjects(name=...)`), if any.
    bucket = settings.bucket if objects is None else str(getattr(objects, "name", "") or "")
    return Deployment(
        own,
        namer,
        sealer,
        Configured(
            source=source.describe(),
            where=_where(settings),
            bucket=bucket,
            catalog=settings.catalog_fields,
        ),
        root=control(deployment_pk("")) if settings.prefix else None,
        objects=lambda: ports.objects,
    )


def _keys(
    settings: Settings,
    source: KeySource,
    where: tuple[Control, Injected, Clients],
    serde_cipher: Any,
    subject_keys: Callable[[str, str], bytes],
) -> tuple[KmsKeyring | None, Sealer, Namer]:
    """The deployment's keys: KMS's keyring (kept in the deployment's partition `own`)
    or the keys given, the sealer over them (a subject's keys by `subject_keys`), and
    the namer over the naming secret."""
    own, injected, clients = where
    kms = None
    if source.kind == "kms":
        from langgraph.checkpoint.s3dynamo.keys.kms_keyring import KmsKeyring, kms_context

        service = injected.key_service
        kms = KmsKeyring(
            own,
            (lambda: service) if service is not None else clients.kms_service,
            kms_context(settings.table or "index", settings.prefix),
        )
    sealer = Sealer(
        keyring=kms.keyring if kms else source.keyring,
        serde_cipher=serde_cipher,
        compression_level=settings.compression_level,
        allow_plaintext_read=settings.allow_plaintext_read,
        subject_keys=subject_keys,
        holding=kms.holding if kms else None,
    )
    return kms, sealer, Namer(kms.secret if kms else source.secret, settings.prefix)


def _thread_store(
    settings: Settings,
    engine: BlobEngine,
    codec: Codec,
    subjects: Subjects | None,
    checked: tuple[Deployment, Control, Namer],
) -> ThreadStore:
    """The thread store on the engine, gated by the deployment's storage format, its
    catalog's completeness recorded beside the deployment record (a deployment created
    with the fields declared, and no data, has every thread filed from its first)."""
    deployment, own, namer = checked
    store = ThreadStore(
        engine=engine,
        namer=namer,
        codec=codec,
        policy=StorePolicy(
            delta_max=settings.delta_max,
            detect_concurrent_runs=settings.detect_concurrent_runs,
            catalog_fields=settings.catalog_fields,
        ),
        subjects=subjects,
    )
    store.gate_formats(deployment.require_format)
    store.attach(own, deployment)
    deployment.created = store.catalog_created
    return store


def _subjects(
    settings: Settings,
    source: KeySource,
    injected: Injected,
    clients: Clients,
    engine: BlobEngine,
    namer: Namer,
) -> Subjects:
    """The deployment's data subjects (`subjects.py`): their keys live in the key table,
    whose engine is built here (its port on first use), sealed under the keyring."""
    from langgraph.checkpoint.s3dynamo.keys.subjects import Subjects

    keys = None
    if settings.subjects:
        if source.kind not in ("keys", "kms", "langgraph_aes_key"):
            raise InvalidConfigError(
                "data subjects (subject_field, subject_label) need the deployment's own "
                f"keys, which wrap each subject's key; the key source is {source.describe()}: "
                "set S3DYNAMO_KEYS with S3DYNAMO_SECRET, S3DYNAMO_KMS_KEY_ID, or LANGGRAPH_AES_KEY"
            )
        if not settings.key_table_name and injected.key_index is None:
            raise InvalidConfigError(
                "data subjects need a key table: set S3DYNAMO_KEY_TABLE (key_table=), or "
                "pass key_index= with an injected index"
            )
        if injected.key_index is None and settings.key_table_name == settings.table:
            raise InvalidConfigError(
                f"the key table is the data table ({settings.table!r}): subjects' keys need "
                "a table of their own, so that a backup of the data table brings back no key "
                "an erasure destroyed; set S3DYNAMO_KEY_TABLE (key_table=) to another table, "
                f"or unset it for {settings.table + '-keys'!r}. Nothing was sent"
            )
        key_index = injected.key_index
        keys = BlobEngine(
            ports=LazyPorts(
                table=(lambda: key_index) if key_index is not None else clients.dynamodb_key_table,
                objects=_no_objects,
            ),
            sealer=engine.sealer,
            prefix=settings.prefix,
            policy=BlobPolicy(0, 0),
        )
    return Subjects(
        field=settings.subject_field,
        label=settings.subject_label,
        namer=namer,
        keyring=lambda: engine.sealer.keyring,
        data=engine,
        keys=keys,
    )


def _no_objects() -> ObjectStore:
    raise InvalidConfigError("the key table holds items only: nothing of it is an object")


def memory_space(parts: Components, space: str, indexes: Indexes | None = None) -> Space:
    """A memory space (the Store's items, the node cache's entries) on a saver's table,
    bucket, keys, naming secret and prefix: on its blob engine; `indexes`: what its
    searches go through (the Store's)."""
    from langgraph.checkpoint.s3dynamo.memory.core import Space

    subjects = parts.subjects if space == STORE_SPACE else None
    return Space(space, engine=parts.engine, namer=parts.namer, indexes=indexes, subjects=subjects)


def with_serde(parts: Components, serde: Callable[[], SerializerProtocol]) -> Components:
    """The parts of a saver's copy that serializes with its own `serde` (`with_allowlist`
    makes one per compiled graph): a codec asking it, and the thread store's parts that
    hold the codec. Settings, clients, ports, keys, the deployment check and every cache
    stay the original's; nothing is built that sends a request."""
    codec = Codec(parts.sealer, serde)
    return parts._replace(codec=codec, store=parts.store.with_codec(codec))


# Random numbers that must differ between processes: drawn from the OS each time, so no
# state is shared by clones restored from one SnapStart snapshot (channel versions).
UNIQUE = random.SystemRandom()
_after_restore: list[bool] = []


def prime(parts: Components) -> None:
    """Build every port and client the first request may need, sending no request
    (`S3DynamoSaver.prime`), and, once per process, register SnapStart's after-restore
    hook where the runtime has it. In an on-demand Lambda's init, which the first
    request waits for, S3's client is left to the first object read or written: most
    first requests keep their values in the table, and S3's is the costliest client to
    build (its service model; `benchmarks/cold_start.py --package`). Under SnapStart or
    provisioned concurrency, and outside Lambda, init is off the request's path: all is
    built.

    What must not be shared by clones restored from one snapshot: envelope nonces, write
    leaves and lease owners are drawn from `os.urandom` when used, and channel versions
    from `UNIQUE`; Python's `random`, which LangGraph's checkpoint ids and botocore's
    retry jitter draw from, is reseeded after each restore. No connection is opened and
    nothing is read before the first request. Credentials are the SDK's: botocore
    resolves them when it builds a client and refreshes expiring ones itself."""
    on_demand = os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "on-demand"
    parts.store.prime(objects=not on_demand)
    if parts.kms is not None:
        parts.kms.prime()
    if not _after_restore:
        try:
            from snapshot_restore_py import (  # type: ignore[import-not-found]
                register_after_restore,  # in AWS Lambda's managed Python runtimes
            )
        except ImportError:
            _after_restore.append(False)
        else:
            register_after_restore(random.seed)  # no argument: a seed from the OS
            _after_restore.append(True)


def _where(settings: Settings) -> str:
    """The deployment, as messages name it."""
    where = f"table {settings.table!r}" if settings.table else "the index"
    return f"{where}, prefix {settings.prefix!r}" if settings.prefix else where


def set_up(parts: Components) -> None:
    """`setup()`: the table, then the bucket, once their names and the bucket's region
    are checked, then the deployment record. A table made for a bucket that was already
    there is most often a mistyped table name, which would start an empty conversation
    beside the deployment's: said as a warning, naming both."""
    parts.clients.refuse_names()  # before any request
    parts.deployment.refuse_elsewhere()
    table_made, bucket_made = parts.store.create_if_missing()
    parts.subjects.create_if_missing()
    if table_made and not bucket_made:
        log.warning(
            "setup() created %s for %s, which was already there: if that is not the "
            "deployment's table name (a typo in S3DYNAMO_TABLE, table=?), this is a second, "
            "empty deployment and its threads start from nothing; fix the name and delete "
            "the new table",
            parts.store.index_resource(),
            parts.deployment.objects_resource(),
        )
    parts.deployment.verify(write=True)
    # The fields the catalog files threads by, recorded for every process to file under.
    parts.deployment.record_catalog(parts.settings.catalog_fields)
