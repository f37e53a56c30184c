"""Savers and request counters the tiers share: an `S3DynamoSaver` on in-memory ports
(`memory_saver`), one on the test's AWS clients (`make_saver`), and an exact counter of
the AWS requests a client sends."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from typing import Any

from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from tests.support.memory_index import MemoryIndex

REGION = "us-east-1"

# Which implementation of S3 and DynamoDB the AWS tier runs against:
#   moto         moto in process (default, offline)
#   moto-server  moto over HTTP        (scripts/services.sh up; source .services/env-moto-server.sh)
#   real         dynalite + SeaweedFS  (scripts/services.sh up; source .services/env-real.sh)
BACKEND = os.environ.get("S3DYNAMO_TEST_BACKEND", "moto")


class Clients(tuple):  # type: ignore[type-arg]
    """(dynamodb, s3) clients, plus table and bucket names unique to the test, so tests
    sharing one server never see each other's data."""

    table: str
    bucket: str


# The request that commits a checkpoint: a transaction with the namespace's head, or a
# plain PutItem where the backend has no transactions (dynalite).
PUT_REQUEST = "dynamodb.PutItem" if BACKEND == "real" else "dynamodb.TransactWriteItems"


class RequestCounter:
    """Counts every AWS request the clients send, by service and operation."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def hook(self, client: Any) -> None:
        service = client.meta.service_model.service_name

        def count(model: Any, **_: Any) -> None:
            self.calls[f"{service}.{model.name}"] += 1

        client.meta.events.register("before-call.*.*", count)

    def reset(self) -> None:
        self.calls.clear()

    def total(self, service: str | None = None) -> int:
        return sum(n for k, n in self.calls.items() if service is None or k.startswith(service))

    def __getitem__(self, key: str) -> int:
        return self.calls[key]


KEY_SOURCES = ("keys", "kms_key_id", "key_service", "plaintext")


def make_saver(clients: tuple[Any, Any], **kwargs: Any) -> S3DynamoSaver:
    """A saver on the test's clients; without a key source it stores plaintext, chosen
    explicitly (`plaintext=True`), as the saver requires."""
    ddb, s3 = clients
    if (
        not any(k in kwargs for k in KEY_SOURCES)
        and not isinstance(kwargs.get("serde"), EncryptedSerializer)
        and not os.environ.get("LANGGRAPH_AES_KEY")
    ):
        kwargs["plaintext"] = True
    # dynalite has no TransactWriteItems: the tier runs with detection off, and the
    # concurrency tests are marked unsupported there.
    kwargs.setdefault("detect_concurrent_runs", BACKEND != "real")
    kwargs.setdefault("table", getattr(clients, "table", "checkpoints"))
    kwargs.setdefault("bucket", getattr(clients, "bucket", "checkpoints-bucket"))
    return S3DynamoSaver(dynamodb_client=ddb, s3_client=s3, **kwargs)


def delta_values(saver: S3DynamoSaver, tid: str) -> list[Any]:
    """The values of a thread's checkpoints stored as deltas (sealed blobs with a base)."""
    store = saver.store
    blobs = store.sealed(None, store.entries(tid)).blobs
    return [s for s in blobs if s.kind == "value" and s.base is not None]


def thread_config(thread_id: str | None = None, **extra: Any) -> dict[str, Any]:
    tid = str(uuid.uuid4()) if thread_id is None else thread_id
    return {"configurable": {"thread_id": tid, **extra}}


class MemorySaver(S3DynamoSaver):
    """An `S3DynamoSaver` whose index and object store live in memory, sealed."""

    index: MemoryIndex
    objects: MemoryObjects


def memory_saver(
    index: MemoryIndex | None = None, objects: MemoryObjects | None = None, **kwargs: object
) -> MemorySaver:
    """A sealed saver on in-memory ports (pass another saver's ports to share a store)."""
    index, objects = index or MemoryIndex(), objects or MemoryObjects()
    kwargs.setdefault("keys", {"k1": os.urandom(32)})
    kwargs.setdefault("secret", os.urandom(16))  # a deployment of its own
    saver = MemorySaver(index=index, object_store=objects, **kwargs)  # type: ignore[arg-type]
    saver.index, saver.objects = index, objects
    # As setup() would: the deployment record is read (or written) now, so the request
    # budgets below count only what an operation itself sends.
    saver.setup()
    index.calls.clear()
    objects.calls.clear()
    return saver
