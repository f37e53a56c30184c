"""The AWS tier: the DynamoDB and S3 adapters on moto in process (or, in the
integration tiers, moto server and dynalite + SeaweedFS on 127.0.0.1), with an exact
counter of the requests they send (`aws`, `clients` and `counter` are in
`tests/conftest.py`, shared with the `aws` half of `backend` tests)."""

from __future__ import annotations

from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.savers import RequestCounter, make_saver


@pytest.fixture
def saver(clients: tuple[Any, Any], counter: RequestCounter) -> S3DynamoSaver:
    s = make_saver(clients)
    s.setup()
    counter.reset()
    return s
