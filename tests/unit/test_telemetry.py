"""Operations you can see, on the in-memory ports and through the AWS adapters (the tests
marked aws: the requests the clients sent, a throttle): a span per saver, Store and
maintenance operation, nested under the caller's span (LangGraph's run) also from the
async workers, with the requests, bytes, cache hits and waves the ports saw; the same
figures as metrics, each request counted once; `collect()` and its CloudWatch record;
and without a configured provider, OpenTelemetry never imported."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import InvalidConfigError, telemetry
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.savers import Clients, MemorySaver, RequestCounter, make_saver, memory_saver
from tests.support.scenarios import chat_graph
from tests.support.telemetry import Otel, ancestors, otel_sdk

ROOT = Path(__file__).resolve().parents[2]
BIG = "x" * 20_000  # an object with inline_max=0; compresses to a few hundred bytes


@pytest.fixture
def otel() -> Iterator[Otel]:
    with otel_sdk() as found:
        yield found


def _checkpoint(value: str) -> dict[str, object]:
    cp = empty_checkpoint()
    cp["channel_values"] = {"a": value}
    cp["channel_versions"] = {"a": "1"}
    return dict(cp)


CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _calls(saver: MemorySaver) -> int:
    return sum(saver.index.calls.values()) + sum(saver.objects.calls.values())


def test_a_put_is_a_span_with_its_requests_bytes_and_wave(otel: Otel) -> None:
    saver = memory_saver(inline_max=0)
    saver.put(CONFIG, _checkpoint(BIG), {}, {"a": "1"})  # type: ignore[arg-type]
    attrs = otel.span("s3dynamo.put").attributes or {}
    assert attrs["s3dynamo.requests.memory-objects.put"] == 1
    assert attrs["s3dynamo.requests.memory-index.TransactWriteItems"] == 1
    # The upload intent written before the object (docs/RELIABILITY.md).
    assert attrs["s3dynamo.requests.memory-index.PutItem"] == 1
    assert attrs["s3dynamo.requests"] == 3
    assert attrs["s3dynamo.waves"] == 1
    # The value, body and metadata were serialized, compressed and sealed: a repeated
    # character shrinks far below what it was.
    assert attrs["s3dynamo.bytes.written.logical"] > 20_000
    assert 0 < attrs["s3dynamo.bytes.written.stored"] < 2_000
    assert attrs["s3dynamo.bytes.read.stored"] == 0
    assert otel.total("s3dynamo.requests", {"s3dynamo.operation": "put"}) == 3
    assert otel.total("s3dynamo.bytes.written", {"s3dynamo.bytes.kind": "logical"}) > 20_000
    assert otel.total("s3dynamo.operation.duration", {"s3dynamo.operation": "put"}) == 1


def test_a_get_tuple_counts_its_query_and_what_the_cache_saved(otel: Otel) -> None:
    keys = {"keys": {"k1": os.urandom(32)}, "secret": os.urandom(16), "inline_max": 0}
    writer = memory_saver(**keys)
    writer.put(CONFIG, _checkpoint(BIG), {}, {"a": "1"})  # type: ignore[arg-type]
    otel.clear()
    assert writer.get_tuple(CONFIG) is not None  # type: ignore[arg-type]
    warm = otel.span("s3dynamo.get_tuple").attributes or {}
    assert warm["s3dynamo.requests"] == 1
    assert warm["s3dynamo.requests.memory-index.Query"] == 1
    assert warm["s3dynamo.cache.hits"] == 1  # the object this process wrote: no GET
    otel.clear()

    # Another process (a saver of its own, same storage): the object is fetched.
    reader = memory_saver(writer.index, writer.objects, **keys)
    otel.clear()
    found = reader.get_tuple(CONFIG)  # type: ignore[arg-type]
    assert found is not None and found.checkpoint["channel_values"]["a"] == BIG
    cold = otel.span("s3dynamo.get_tuple").attributes or {}
    assert cold["s3dynamo.requests.memory-objects.get"] == 1
    assert cold["s3dynamo.cache.hits"] == 0
    assert cold["s3dynamo.bytes.read.logical"] > 20_000 > cold["s3dynamo.bytes.read.stored"] > 0


def test_a_graph_run_nests_every_storage_span_under_the_callers_span(otel: Otel) -> None:
    saver = memory_saver()
    graph = chat_graph(saver)
    otel.clear()
    counted = otel.total("s3dynamo.requests")  # setup's
    with otel.tracer.start_as_current_span("agent run"):
        graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "g"}})
    spans = otel.spans()
    run = otel.span("agent run")
    ours = [s for s in spans if s.name.startswith("s3dynamo.")]
    assert {"s3dynamo.get_tuple", "s3dynamo.put", "s3dynamo.put_writes"} <= {s.name for s in ours}
    for span in ours:
        assert span.context.trace_id == run.context.trace_id
        assert ancestors(span, spans)[-1] == "agent run", span.name
    # Each request once in the metrics, however the spans nest.
    assert otel.total("s3dynamo.requests") - counted == _calls(saver)


def test_async_runs_keep_the_callers_span_across_the_worker_threads(otel: Otel) -> None:
    saver = memory_saver()
    graph = chat_graph(saver)
    otel.clear()
    counted = otel.total("s3dynamo.requests")  # setup's

    async def turn(tid: str) -> None:
        with otel.tracer.start_as_current_span(f"run {tid}"):
            await graph.ainvoke(
                {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": tid}}
            )

    async def main() -> None:
        await asyncio.gather(*(turn(f"a{i}") for i in range(4)))

    asyncio.run(main())
    spans = otel.spans()
    for i in range(4):
        run = otel.span(f"run a{i}")
        mine = [s for s in spans if s.context.trace_id == run.context.trace_id]
        names = {s.name for s in mine}
        assert {"s3dynamo.get_tuple", "s3dynamo.put"} <= names, names
        for span in mine:
            if span is not run:
                assert ancestors(span, spans)[-1] == f"run a{i}"
    assert otel.total("s3dynamo.requests") - counted == _calls(saver)


def test_a_store_operation_is_a_span_with_its_requests(otel: Otel) -> None:
    saver = memory_saver()
    store = S3DynamoStore.from_saver(saver)
    store.put(("users", "u1"), "prefs", {"theme": "dark"})
    put = otel.span("s3dynamo.store.batch").attributes or {}
    assert put["s3dynamo.bytes.written.logical"] > 0
    otel.clear()
    before = _calls(saver)
    item = store.get(("users", "u1"), "prefs")
    assert item is not None and item.value == {"theme": "dark"}
    attrs = otel.span("s3dynamo.store.batch").attributes or {}
    assert attrs["s3dynamo.requests"] == _calls(saver) - before >= 1
    assert attrs["s3dynamo.bytes.read.logical"] > 0
    assert otel.total("s3dynamo.requests", {"s3dynamo.operation": "store.batch"}) == (
        put["s3dynamo.requests"] + attrs["s3dynamo.requests"]
    )


def test_a_maintenance_operation_is_a_span_over_its_steps(otel: Otel) -> None:
    saver = memory_saver()
    graph = chat_graph(saver)
    for i in range(3):
        config = {"configurable": {"thread_id": "p"}, "metadata": {"run_id": f"run-{i}"}}
        graph.invoke({"messages": [HumanMessage(f"m{i}")]}, config)
    otel.clear()
    before = _calls(saver)
    saver.prune(["p"])
    attrs = otel.span("s3dynamo.prune").attributes or {}
    assert attrs["s3dynamo.requests"] == _calls(saver) - before > 0
    assert attrs["s3dynamo.requests.memory-index.BatchWriteItem"] >= 1  # records deleted

    otel.clear()
    saver.ops.plan_garbage_collection(["p"]).execute()
    names = {s.name for s in otel.spans()}
    assert {"s3dynamo.ops.plan_garbage_collection", "s3dynamo.ops.gc.execute"} <= names
    listed = {"s3dynamo.operation": "ops.plan_garbage_collection", "rpc.method": "list"}
    assert otel.total("s3dynamo.requests", listed) >= 1  # the thread's objects

    # An operation made of others: theirs are its children, and their requests its own.
    otel.clear()
    before = _calls(saver)
    saver.delete_for_runs(["run-2"])
    spans = otel.spans()
    outer = otel.span("s3dynamo.delete_for_runs")
    inner = [s for s in spans if s is not outer]
    assert {s.name for s in inner} == {
        "s3dynamo.ops.plan_delete_runs",
        "s3dynamo.ops.delete_runs.execute",
    }
    assert all(ancestors(s, spans) == ["s3dynamo.delete_for_runs"] for s in inner)
    assert (outer.attributes or {})["s3dynamo.requests"] == _calls(saver) - before > 0


def test_a_thread_lock_shows_its_acquire_and_release_under_the_callers_span(
    otel: Otel,
) -> None:
    saver = memory_saver()
    otel.clear()
    with (
        otel.tracer.start_as_current_span("agent run"),
        saver.ops.thread_lock("t", heartbeat=False),
    ):
        saver.put(CONFIG, _checkpoint("v"), {}, {"a": "1"})  # type: ignore[arg-type]
    spans = otel.spans()
    names = [s.name for s in spans if s.name != "agent run"]
    assert names == [
        "s3dynamo.thread_lock.acquire",
        "s3dynamo.put",
        "s3dynamo.thread_lock.release",
    ]
    assert all(ancestors(s, spans) == ["agent run"] for s in spans if s.name in names)
    acquire = otel.span("s3dynamo.thread_lock.acquire").attributes or {}
    assert acquire["s3dynamo.requests"] == 1  # one conditional UpdateItem

    async def run() -> None:
        async with saver.ops.athread_lock("t", heartbeat=False):
            pass

    otel.clear()
    asyncio.run(run())
    assert [s.name for s in otel.spans()] == [
        "s3dynamo.thread_lock.acquire",
        "s3dynamo.thread_lock.release",
    ]


def test_a_failed_operation_is_a_span_with_its_error(otel: Otel) -> None:
    saver = memory_saver()
    with pytest.raises(InvalidConfigError):
        saver.put_writes(CONFIG, [("a", 1)], "task")  # type: ignore[arg-type]
    span = otel.span("s3dynamo.put_writes")
    assert span.status.status_code.name == "ERROR"
    assert (span.attributes or {})["error.type"] == "InvalidConfigError"
    assert otel.total("s3dynamo.operation.duration", {"error.type": "InvalidConfigError"}) == 1


def test_collect_gives_an_invocations_figures_as_one_cloudwatch_record() -> None:
    saver = memory_saver()
    graph = chat_graph(saver)
    with telemetry.collect() as figures:
        graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "c"}})
    assert sum(figures.requests.values()) == _calls(saver)
    record = json.loads(
        json.dumps(figures.emf(namespace="shop", dimensions={"service": "agent"}, timestamp_ms=7))
    )
    directive = record["_aws"]["CloudWatchMetrics"][0]
    assert record["_aws"]["Timestamp"] == 7
    assert directive["Namespace"] == "shop" and directive["Dimensions"] == [["service"]]
    assert record["service"] == "agent"
    for metric in directive["Metrics"]:  # every metric named has its value at the top
        assert isinstance(record[metric["Name"]], int)
        assert metric["Unit"] in ("Count", "Bytes")
    assert record["Requests"] == _calls(saver)
    assert record["BytesWrittenStored"] > 0 and record["BytesWrittenLogical"] > 0
    assert sum(record["S3DynamoRequests"].values()) == _calls(saver)


def test_without_a_provider_nothing_is_recorded_and_collect_still_counts() -> None:
    saver = memory_saver(inline_max=0)
    with telemetry.collect() as figures:
        saver.put(CONFIG, _checkpoint(BIG), {}, {"a": "1"})  # type: ignore[arg-type]
    assert figures.to_dict()["requests"] == {
        "memory-index.PutItem": 1,
        "memory-index.TransactWriteItems": 1,
        "memory-objects.put": 1,
    }
    assert figures.counts["waves"] == 1


# What a handler does, with every request and byte counted by collect(); then whether
# anything imported OpenTelemetry.
CHILD = textwrap.dedent(
    """
    import sys
    {block}
    from langchain_core.messages import HumanMessage
    from langgraph.graph import StateGraph

    # What LangChain and LangGraph import of it themselves (LangSmith may, when installed).
    before = {{m for m in sys.modules if m.startswith("opentelemetry")}}
    from langgraph.checkpoint.s3dynamo import telemetry
    from tests.support.savers import memory_saver
    from tests.support.scenarios import chat_graph

    graph = chat_graph(memory_saver())
    config = {{"configurable": {{"thread_id": "t"}}}}
    with telemetry.collect() as figures:
        graph.invoke({{"messages": [HumanMessage("hi")]}}, config)
        graph.invoke({{"messages": [HumanMessage("again")]}}, config)
    assert sum(figures.requests.values()) > 0
    assert telemetry._otel() is None  # noqa: SLF001 - no provider: nothing to record
    print(sorted({{m for m in sys.modules if m.startswith("opentelemetry")}} - before))
    """
)
BLOCK = textwrap.dedent(
    """
    import importlib.abc

    class NoOtel(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "opentelemetry":
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoOtel())
    """
)


@pytest.mark.parametrize("installed", [False, True], ids=["otel absent", "otel installed"])
def test_the_package_never_imports_opentelemetry_unless_the_application_did(
    installed: bool,
) -> None:
    code = CHILD.format(block="" if installed else BLOCK)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OTEL_PYTHON_TRACER_PROVIDER", None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_global_provider_the_application_sets_is_used() -> None:
    """The usual set-up: the SDK's provider made global, no call to `configure`; spans
    and metrics appear, and before the provider was set nothing was recorded."""
    code = textwrap.dedent(
        """
        from langchain_core.messages import HumanMessage
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from tests.support.savers import memory_saver
        from tests.support.scenarios import chat_graph

        graph = chat_graph(memory_saver())
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [HumanMessage("unseen")]}, config)  # proxy provider
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        graph.invoke({"messages": [HumanMessage("seen")]}, config)
        names = sorted({s.name for s in exporter.get_finished_spans()})
        data = reader.get_metrics_data()
        metric_names = sorted(
            {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
        )
        puts = [s for s in exporter.get_finished_spans() if s.name == "s3dynamo.put"]
        print(names, metric_names, len(puts))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    assert "'s3dynamo.get_tuple'" in line and "'s3dynamo.put'" in line
    assert "'s3dynamo.requests'" in line and "'s3dynamo.operation.duration'" in line
    # One turn seen: its three puts (docs/ARCHITECTURE.md, request budgets), not the first's.
    assert line.endswith(" 3")


# Through the AWS adapters (moto, and the integration tiers' servers): the spans' and
# metrics' requests are the ones the clients sent, and a throttle shows as one.


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


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
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
