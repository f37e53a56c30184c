"""Shared fixtures: a saver on moto in process, and an exact AWS request counter."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from langgraph.checkpoint.s3dynamo import S3DynamoSaver

REGION = "us-east-1"


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Never reach a real account; LANGGRAPH_AES_KEY would turn encryption on silently.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


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
def clients(aws: None) -> tuple[Any, Any]:
    return boto3.client("dynamodb", region_name=REGION), boto3.client("s3", region_name=REGION)


@pytest.fixture
def counter(clients: tuple[Any, Any]) -> RequestCounter:
    c = RequestCounter()
    for client in clients:
        c.hook(client)
    return c


def make_saver(clients: tuple[Any, Any], **kwargs: Any) -> S3DynamoSaver:
    ddb, s3 = clients
    kwargs.setdefault("table", "checkpoints")
    kwargs.setdefault("bucket", "checkpoints-bucket")
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


os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
