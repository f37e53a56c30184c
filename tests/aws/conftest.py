"""The AWS tier: the DynamoDB and S3 adapters on moto in process (or, in the
integration tiers, moto server and dynalite + SeaweedFS on 127.0.0.1), with an exact
counter of the requests they send."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto
from tests.support.savers import BACKEND, Clients, RequestCounter, make_saver


@pytest.fixture
def aws() -> Iterator[None]:
    if BACKEND == "moto":
        from moto import mock_aws  # imported here, so the unit tier never loads moto

        serialize_moto()
        with mock_aws():
            yield
    else:
        yield


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


@pytest.fixture
def saver(clients: tuple[Any, Any], counter: RequestCounter) -> S3DynamoSaver:
    s = make_saver(clients)
    s.setup()
    counter.reset()
    return s
