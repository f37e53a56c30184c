"""Shared fixtures: a saver on moto in process, and an exact AWS request counter."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto

REGION = "us-east-1"


# Which implementation of S3 and DynamoDB the suite runs against:
#   moto         moto in process (default, offline)
#   moto-server  moto over HTTP        (scripts/services.sh up; source .services/env-moto-server.sh)
#   real         dynalite + SeaweedFS  (scripts/services.sh up; source .services/env-real.sh)
BACKEND = os.environ.get("S3DYNAMO_TEST_BACKEND", "moto")
if BACKEND not in ("moto", "moto-server", "real"):
    raise pytest.UsageError(f"S3DYNAMO_TEST_BACKEND={BACKEND!r}: expected moto|moto-server|real")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`@pytest.mark.unsupported_on("real", reason=...)` skips a test on that backend only."""
    for item in items:
        for mark in item.iter_markers("unsupported_on"):
            if BACKEND in mark.args:
                item.add_marker(pytest.mark.skip(reason=f"{BACKEND}: {mark.kwargs['reason']}"))


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # LANGGRAPH_AES_KEY would turn encryption on silently.
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    if BACKEND == "moto":
        # Never reach a real account: in process, no endpoint is configured at all.
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
        for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
            monkeypatch.delenv(var, raising=False)
    else:
        for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
            url = os.environ.get(var, "")
            if not url.startswith(("http://127.0.0.1", "http://localhost")):
                raise pytest.UsageError(
                    f"backend {BACKEND!r} needs {var} on 127.0.0.1, got {url!r}: run "
                    f"scripts/services.sh up and source .services/env-{BACKEND}.sh"
                )


@pytest.fixture
def aws() -> Iterator[None]:
    if BACKEND == "moto":
        from moto import mock_aws  # imported here, so the unit tier never loads moto

        serialize_moto()
        with mock_aws():
            yield
    else:
        yield


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


@pytest.fixture
def clients(aws: None) -> Clients:
    # The same kit users test their agents with: a table and bucket unique to the test.
    if BACKEND == "moto":
        sandbox = Sandbox()
    else:
        sandbox = Sandbox(
            dynamodb_endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"],
            s3_endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"],
        )
    pair = Clients((sandbox.dynamodb, sandbox.s3))
    pair.table, pair.bucket = sandbox.table, sandbox.bucket
    return pair


@pytest.fixture
def counter(clients: tuple[Any, Any]) -> RequestCounter:
    c = RequestCounter()
    for client in clients:
        c.hook(client)
    return c


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


@pytest.fixture
def saver(clients: tuple[Any, Any], counter: RequestCounter) -> S3DynamoSaver:
    s = make_saver(clients)
    s.setup()
    counter.reset()
    return s


def thread_config(thread_id: str | None = None, **extra: Any) -> dict[str, Any]:
    tid = str(uuid.uuid4()) if thread_id is None else thread_id
    return {"configurable": {"thread_id": tid, **extra}}
