"""What the saver's telemetry costs a call, on the in-memory ports (no I/O to hide it).

    python benchmarks/telemetry_overhead.py

Times `put` plus `get_tuple` of a small checkpoint, CPU time per pair, median of 15
rounds of 2,000 pairs, in four ways, interleaved: the methods unwrapped (as before
`telemetry.py`), wrapped with no OpenTelemetry provider (the default), wrapped inside
`telemetry.collect()` (what the Lambda example does), and wrapped with the OpenTelemetry
SDK's providers set (in-memory span exporter and metric reader; the cost of recording,
not of exporting). Needs opentelemetry-sdk for the last row.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver, telemetry
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable

ROUNDS, PAIRS = 15, 2_000


def _saver() -> S3DynamoSaver:
    saver = S3DynamoSaver(
        index=MemoryTable(),
        object_store=MemoryObjects(),
        keys={"k1": os.urandom(32)},
        secret=os.urandom(16),
    )
    saver.setup()
    return saver


def _pairs(saver: S3DynamoSaver, put: Callable[..., Any], read: Callable[..., Any]) -> float:
    cp: Any = empty_checkpoint()
    cp["channel_values"] = {"messages": ["hello"] * 20}
    cp["channel_versions"] = {"messages": "1"}
    # A thread per pair: the in-memory index reads a namespace in time linear in its size.
    configs = [{"configurable": {"thread_id": f"t{i}", "checkpoint_ns": ""}} for i in range(PAIRS)]
    start = time.process_time()
    for config in configs:
        put(saver, config, cp, {}, {"messages": "1"})
        read(saver, config["configurable"]["thread_id"], "", None)
    return (time.process_time() - start) / PAIRS * 1e6


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextlib.contextmanager
def _sdk() -> Iterator[None]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry.configure(tracer_provider=tracer, meter_provider=meter)
    try:
        yield
    finally:
        telemetry.configure()
        exporter.clear()


def main() -> None:
    wrapped = (S3DynamoSaver.put, S3DynamoSaver._read_tuple)
    plain = tuple(f.__wrapped__ for f in wrapped)
    ways: dict[str, tuple[tuple[Callable[..., Any], Callable[..., Any]], Any]] = {
        "unwrapped": (plain, _nothing),
        "wrapped, no provider": (wrapped, _nothing),
        "wrapped, in collect()": (wrapped, telemetry.collect),
        "wrapped, SDK providers": (wrapped, _sdk),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(ROUNDS):
        for name, ((put, read), around) in ways.items():
            saver = _saver()
            with around():
                times[name].append(_pairs(saver, put, read))
    base = statistics.median(times["unwrapped"])
    print(f"CPU per put + get_tuple, median of {ROUNDS} rounds of {PAIRS}:")
    for name, found in times.items():
        median = statistics.median(found)
        print(f"  {name:24} {median:8.1f} us  ({median - base:+.1f} us)")


if __name__ == "__main__":
    main()
