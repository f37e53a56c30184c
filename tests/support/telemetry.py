"""OpenTelemetry's SDK with in-memory exporters, handed to the saver's telemetry
(`telemetry.configure`), and readers of what they received."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from langgraph.checkpoint.s3dynamo import telemetry


class Otel:
    """A tracer provider and a meter provider that keep what they get in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer("tests")

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = self.exporter.get_finished_spans()
        return [s for s in found if name is None or s.name == name]

    def span(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, f"expected one {name} span, got {[s.name for s in self.spans()]}"
        return found[0]

    def clear(self) -> None:
        self.exporter.clear()
        self.reader.get_metrics_data()  # cumulative: later reads still hold these

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """(attributes, value) of every data point of `metric` (sums, or histogram counts)."""
        data = self.reader.get_metrics_data()
        out = []
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        for p in m.data.data_points:
                            value = getattr(p, "value", None)
                            out.append((dict(p.attributes), p.count if value is None else value))
        return out

    def total(self, metric: str, attributes: dict[str, str] | None = None) -> int:
        """The sum over the data points whose attributes include `attributes`."""
        wanted = (attributes or {}).items()
        return sum(v for a, v in self.points(metric) if all(a.get(k) == w for k, w in wanted))


@contextmanager
def otel_sdk() -> Iterator[Otel]:
    otel = Otel()
    telemetry.configure(tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    try:
        yield otel
    finally:
        telemetry.configure()
        otel.tracer_provider.shutdown()
        otel.meter_provider.shutdown()


def ancestors(span: ReadableSpan, spans: list[ReadableSpan]) -> list[str]:
    """Names of `span`'s parents, nearest first, among `spans`."""
    by_id = {s.context.span_id: s for s in spans}
    names = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        found = by_id[parent.span_id]
        names.append(found.name)
        parent = found.parent
    return names
