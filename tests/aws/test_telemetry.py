"""Operations you can see, through the AWS adapters: the spans' and metrics' requests by
service and operation are the ones the clients sent (counted apart by the tier's own
counter), and a throttled request shows as a retry and a throttle."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.savers import Clients, RequestCounter, make_saver
from tests.support.scenarios import chat_graph
from tests.support.telemetry import Otel, ancestors, otel_sdk


@pytest.fixture
def otel() -> Iterator[Otel]:
    with otel_sdk() as found:
        yield found


def _requests(attributes: Any) -> dict[str, int]:
    """`service.Operation` -> count, from a span's attributes."""
    head = "s3dynamo.requests."
    return {k[len(head) :]: v for k, v in dict(attributes).items() if k.startswith(head)}


def test_a_graph_runs_spans_name_every_request_the_clients_sent(
    clients: Clients, counter: RequestCounter, otel: Otel
) -> None:
    saver = make_saver(clients, inline_max=0)  # every value an object: S3 requests too
    saver.setup()
    graph = chat_graph(saver)
    counter.reset()
    otel.clear()
    with otel.tracer.start_as_current_span("agent run"):
        graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t"}})
    spans = otel.spans()
    top = [s for s in spans if ancestors(s, spans) == ["agent run"]]
    seen: dict[str, int] = {}
    for span in top:
        for name, n in _requests(span.attributes).items():
            seen[name] = seen.get(name, 0) + n
    assert seen == dict(counter.calls)
    assert seen["s3.PutObject"] >= 1 and seen["dynamodb.Query"] == 1
    for name, n in counter.calls.items():
        service, method = name.split(".")
        wanted = {"rpc.service": service, "rpc.method": method}
        earlier = otel.total("s3dynamo.requests", {**wanted, "s3dynamo.operation": "setup"})
        assert otel.total("s3dynamo.requests", wanted) - earlier == n, name


def test_a_store_put_is_one_transaction_in_its_span(
    clients: Clients, counter: RequestCounter, otel: Otel
) -> None:
    saver = make_saver(clients)
    saver.setup()
    store = S3DynamoStore.from_saver(saver)
    counter.reset()
    otel.clear()
    store.put(("users", "u1"), "prefs", {"theme": "dark"})
    span = otel.span("s3dynamo.store.batch")
    assert _requests(span.attributes) == dict(counter.calls)
    assert counter["dynamodb.TransactWriteItems"] == 1


class _Body:
    """What botocore reads a response's body from."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def throttle_first(client: Any, operation: str, times: int) -> None:
    """DynamoDB answers the first `times` `operation` requests with ThrottlingException,
    before moto sees them."""
    left = [times]

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        if left[0] == 0:
            return None
        left[0] -= 1
        body = {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException"}
        headers = {"x-amzn-RequestId": "throttled", "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, 400, headers, _Body(json.dumps(body).encode()))

    client.meta.events.register_first(f"before-send.dynamodb.{operation}", answer)


def test_a_throttled_request_shows_as_a_retry_and_a_throttle(
    clients: Clients, counter: RequestCounter, otel: Otel
) -> None:
    saver = make_saver(clients)
    saver.setup()
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("hi")]}, config)
    throttle_first(clients[0], "Query", 1)
    otel.clear()
    with telemetry.collect() as figures:
        found = saver.get_tuple(config)  # type: ignore[arg-type]
    assert found is not None  # botocore retried it: the read succeeded
    attrs = otel.span("s3dynamo.get_tuple").attributes or {}
    assert _requests(attrs) == {"dynamodb.Query": 1}  # one request, two attempts
    assert attrs["s3dynamo.retries"] == 1 and attrs["s3dynamo.throttles"] == 1
    assert otel.total("s3dynamo.throttles", {"s3dynamo.operation": "get_tuple"}) == 1
    assert otel.total("s3dynamo.retries", {"s3dynamo.operation": "get_tuple"}) == 1
    record = figures.emf(dimensions={"service": "t"})
    assert (record["Throttles"], record["Retries"], record["DynamoDBRequests"]) == (1, 1, 1)
