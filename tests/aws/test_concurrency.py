"""Two runs on one thread at once, through DynamoDB and S3 on moto: the checks of
`tests/unit/test_concurrency.py`, and the commit and lease conditions of the DynamoDB
adapter against the in-memory twin's (`tests/support/port_conditions.py`)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import ItemTooLargeError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoIndex
from tests.support import concurrent_runs as runs
from tests.support.port_conditions import check_commit_conditions, check_lease_conditions
from tests.support.savers import RequestCounter, make_saver
from tests.support.scenarios import chat_graph

# Heads and leases commit with TransactWriteItems, which dynalite does not implement.
pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")

TURNS = 5


def _pair(clients: tuple[Any, Any]) -> tuple[S3DynamoSaver, S3DynamoSaver]:
    first = make_saver(clients)
    first.setup()
    return first, make_saver(clients)


def test_dynamodb_commit_conditions_match_the_twin(clients: Any) -> None:
    _pair(clients)
    check_commit_conditions(DynamoIndex(clients[0], clients.table))


def test_dynamodb_lease_conditions_match_the_twin(clients: Any) -> None:
    _pair(clients)
    check_lease_conditions(DynamoIndex(clients[0], clients.table))


def test_a_stale_run_is_refused_with_a_clear_error(clients: tuple[Any, Any]) -> None:
    message = runs.stale_run_is_refused(_pair(clients))
    assert "another run committed to this thread" in message


def test_two_writers_retrying_lose_no_message(clients: tuple[Any, Any]) -> None:
    pair = _pair(clients)
    runs.two_writers(pair, TURNS, "detect")
    runs.check_every_message_once(pair[1], TURNS)


def test_two_writers_under_the_lease_never_conflict(clients: tuple[Any, Any]) -> None:
    pair = _pair(clients)
    assert runs.two_writers(pair, TURNS, "lock") == 0
    runs.check_every_message_once(pair[1], TURNS)


def test_a_holder_whose_lease_was_taken_over_is_fenced(clients: tuple[Any, Any]) -> None:
    runs.fenced_holder_is_refused(_pair(clients))


def test_a_second_holder_fails_fast_or_times_out(clients: tuple[Any, Any]) -> None:
    runs.lock_fails_fast_or_times_out(_pair(clients))


def test_a_put_under_the_lease_is_still_one_request(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    saver = _pair(clients)[0]
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("hi", id="h0")]}, config)
    counter.reset()
    with saver.ops.thread_lock("t"):
        graph.invoke({"messages": [HumanMessage("again", id="h1")]}, config)
    # Acquire and release are one UpdateItem each; every write carries the fence in its
    # own request (a TransactWriteItems).
    assert counter.calls == {
        "dynamodb.Query": 1,
        "dynamodb.UpdateItem": 2,
        "dynamodb.TransactWriteItems": 5,
    }


def test_large_metadata_is_refused_before_any_request(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    saver = _pair(clients)[0]
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    from langgraph.checkpoint.base import empty_checkpoint

    counter.reset()
    with pytest.raises(ItemTooLargeError, match="'blob'"):
        saver.put(config, empty_checkpoint(), {"blob": os.urandom(500_000).hex()}, {})
    assert counter.total() == 0


def test_clients_retry_in_standard_mode_with_the_stated_budget(monkeypatch: Any) -> None:
    monkeypatch.setenv("S3DYNAMO_TABLE", "t")
    monkeypatch.setenv("S3DYNAMO_BUCKET", "b")
    monkeypatch.setenv("S3DYNAMO_MAX_ATTEMPTS", "7")
    monkeypatch.setenv("S3DYNAMO_PLAINTEXT", "1")
    saver = S3DynamoSaver.from_env()
    for port in (saver.store.records, saver.store.objects.port):
        retries = port.client.meta.config.retries  # type: ignore[attr-defined]
        assert retries == {"mode": "standard", "total_max_attempts": 7}
    assert S3DynamoSaver(table="t", bucket="b", plaintext=True).settings.max_attempts == 5
