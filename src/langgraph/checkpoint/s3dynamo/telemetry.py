"""What the storage work costs: OpenTelemetry spans and metrics, and per-call figures.

One place counts: the `Figures` of the innermost operation running in this context. The
AWS clients' event hooks (`backends/aws_clients.py`) and the in-memory twins note each
request, retry and throttle; the sealer notes bytes, stored and logical (`blobs/sealing.py`);
the object reads their cache hits (`blobs/objects.py`), `waves.py` each wave and
`backoff.py` the library's own retries. The operations are the saver's, the Store's,
the node cache's and the maintenance methods, each wrapped once by `instrument` in the
module that defines it; an operation run inside another adds its figures to the outer
one when it ends, so metrics count each request once. The async methods run in a copy
of the caller's context (`executor.py`), so their spans have the caller's span
(LangGraph's run, say) as parent; a wave's workers are handed the caller's figures.

OpenTelemetry (the `otel` extra: the API only) is imported by this package only once the
application has imported it and set a tracer or meter provider (or passed providers to
`configure`); until then an operation costs a context-variable read and two dictionary
lookups, plus asking OpenTelemetry for its providers where something imported it.
`collect()` gathers the figures of everything run in its block (one Lambda invocation,
say) for `Figures.emf`, CloudWatch's embedded metric format. Names and attributes:
docs/OPERATIONS.md, "Seeing what it does".
"""

from __future__ import annotations

import contextvars
import functools
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from inspect import isgeneratorfunction
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
B = TypeVar("B")
T = TypeVar("T")
R = TypeVar("R")

PREFIX = "s3dynamo."
# Everything counted besides requests, as span attribute and metric names (PREFIX added).
COUNTS = (
    "bytes.read.stored",
    "bytes.read.logical",
    "bytes.written.stored",
    "bytes.written.logical",
    "cache.hits",
    "waves",
    "retries",
    "throttles",
)
# The same figures in CloudWatch, with their units (`Figures.emf`).
EMF_NAMES = {
    "bytes.read.stored": ("BytesReadStored", "Bytes"),
    "bytes.read.logical": ("BytesReadLogical", "Bytes"),
    "bytes.written.stored": ("BytesWrittenStored", "Bytes"),
    "bytes.written.logical": ("BytesWrittenLogical", "Bytes"),
    "cache.hits": ("CacheHits", "Count"),
    "waves": ("Waves", "Count"),
    "retries": ("Retries", "Count"),
    "throttles": ("Throttles", "Count"),
}
EMF_SERVICES = {"dynamodb": "DynamoDB", "s3": "S3", "kms": "KMS"}


class Figures:
    """Requests by (service, operation) and the `COUNTS` of one operation or one
    `collect()` block; added to from every thread working for it."""

    def __init__(self, parent: Figures | None = None, *, collector: bool = False) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.counts: dict[str, int] = dict.fromkeys(COUNTS, 0)
        self.parent = parent
        self.collector = collector
        self._lock = threading.Lock()

    def request(self, service: str, operation: str) -> None:
        with self._lock:
            self.requests[(service, operation)] += 1

    def add(self, name: str, n: int) -> None:
        with self._lock:
            self.counts[name] += n

    def merge(self, other: Figures) -> None:
        with self._lock:
            self.requests.update(other.requests)
            for name, n in other.counts.items():
                self.counts[name] += n

    def by_service(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for (service, _), n in self.requests.items():
            out[service] += n
        return dict(out)

    def to_dict(self) -> dict[str, Any]:
        """`{"requests": {"dynamodb.Query": 1, ...}, "bytes.read.stored": ..., ...}`"""
        requests = {f"{s}.{o}": n for (s, o), n in sorted(self.requests.items())}
        return {"requests": requests, **self.counts}

    def attributes(self) -> dict[str, int]:
        """The span attributes: totals, requests by service and operation, `COUNTS`."""
        out = {PREFIX + "requests": sum(self.requests.values())}
        out.update({f"{PREFIX}requests.{s}.{o}": n for (s, o), n in self.requests.items()})
        out.update({PREFIX + name: n for name, n in self.counts.items()})
        return out

    def emf(
        self,
        *,
        namespace: str = "s3dynamo",
        dimensions: Mapping[str, str] | None = None,
        timestamp_ms: int | None = None,
    ) -> dict[str, Any]:
        """These figures as one CloudWatch embedded-metric-format record (print it as a
        JSON line from a Lambda function): requests per service (`DynamoDBRequests`,
        `S3Requests`, `KMSRequests`) and in all, and the `COUNTS`, under `namespace` and
        the `dimensions` given (Powertools' usual one is `service`). Requests by
        operation go along as the property `S3DynamoRequests`, searchable in Logs
        Insights without being metrics."""
        values: dict[str, tuple[int, str]] = {"Requests": (sum(self.requests.values()), "Count")}
        # The three services always (0 when unused), so every line has the same metrics.
        services = {**dict.fromkeys(EMF_SERVICES, 0), **self.by_service()}
        for service, n in services.items():
            values[f"{EMF_SERVICES.get(service, service)}Requests"] = (n, "Count")
        for name, (metric, unit) in EMF_NAMES.items():
            values[metric] = (self.counts[name], unit)
        dims = dict(dimensions or {})
        directive = {
            "Namespace": namespace,
            "Dimensions": [sorted(dims)],
            "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in values.items()],
        }
        stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        return {
            "_aws": {"Timestamp": stamp, "CloudWatchMetrics": [directive]},
            **dims,
            **{name: n for name, (n, _) in values.items()},
            "S3DynamoRequests": self.to_dict()["requests"],
        }


_current: contextvars.ContextVar[Figures | None] = contextvars.ContextVar(
    "s3dynamo_figures", default=None
)


# ------------------------------------------------------------------ what is counted


def active() -> bool:
    """True when something in this context is counting (a hook may skip its work)."""
    return _current.get() is not None


def request(service: str, operation: str) -> None:
    """One request sent (retries aside), e.g. ("dynamodb", "Query")."""
    figures = _current.get()
    if figures is not None:
        figures.request(service, operation)


def add(name: str, n: int = 1) -> None:
    """`n` more of one of `COUNTS`."""
    figures = _current.get()
    if figures is not None and n:
        figures.add(name, n)


def sealed(logical: int, blob: B) -> B:
    """A blob sealed for writing from `logical` bytes; returns it."""
    figures = _current.get()
    if figures is not None:
        figures.add("bytes.written.logical", logical)
        figures.add("bytes.written.stored", len(blob))  # type: ignore[arg-type]
    return blob


def opened(stored: int, logical: int) -> None:
    """A stored blob of `stored` bytes opened into `logical` bytes."""
    figures = _current.get()
    if figures is not None:
        figures.add("bytes.read.stored", stored)
        figures.add("bytes.read.logical", logical)


def carried(fn: Callable[[T], R]) -> Callable[[T], R]:
    """`fn`, counting into this context's figures in whatever thread runs it (a wave's
    worker, which does not run in a copy of the caller's context)."""
    figures = _current.get()
    if figures is None:
        return fn

    def run(arg: T) -> R:
        token = _current.set(figures)
        try:
            return fn(arg)
        finally:
            _current.reset(token)

    return run


@contextmanager
def collect() -> Iterator[Figures]:
    """The figures of everything run in the block, in this context and in the workers it
    hands work to (per Lambda invocation: see examples/lambda_agent/app.py)."""
    parent = _current.get()
    figures = Figures(parent, collector=True)
    token = _current.set(figures)
    try:
        yield figures
    finally:
        _current.reset(token)
        if parent is not None:
            parent.merge(figures)


# ------------------------------------------------------------------ OpenTelemetry

_explicit: dict[str, Any] = {}
_DISABLED = {
    "ProxyTracerProvider",
    "NoOpTracerProvider",
    "_ProxyMeterProvider",
    "NoOpMeterProvider",
}


def configure(*, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Use these providers instead of OpenTelemetry's global ones (None: the global
    one again)."""
    _explicit.clear()
    if tracer_provider is not None:
        _explicit["tracer"] = tracer_provider
    if meter_provider is not None:
        _explicit["meter"] = meter_provider


class _Otel:
    """The tracer and instruments of one pair of providers."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        from opentelemetry import trace

        self.providers = (tracer_provider, meter_provider)
        self.trace = trace
        self.tracer = None
        if tracer_provider is not None:
            self.tracer = tracer_provider.get_tracer("langgraph-checkpoint-s3dynamo")
        self.instruments: dict[str, Any] = {}
        if meter_provider is not None:
            meter = meter_provider.get_meter("langgraph-checkpoint-s3dynamo")
            made = self.instruments
            made["requests"] = meter.create_counter(PREFIX + "requests", unit="{request}")
            for name in ("bytes.read", "bytes.written"):
                made[name] = meter.create_counter(PREFIX + name, unit="By")
            for name in ("cache.hits", "waves", "retries", "throttles"):
                made[name] = meter.create_counter(PREFIX + name)
            made["duration"] = meter.create_histogram(PREFIX + "operation.duration", unit="s")

    def record(self, name: str, figures: Figures, seconds: float, error: str | None) -> None:
        made = self.instruments
        if not made:
            return
        op = {PREFIX + "operation": name}
        for (service, method), n in figures.requests.items():
            made["requests"].add(n, {**op, "rpc.service": service, "rpc.method": method})
        for name_, n in figures.counts.items():
            if not n:
                continue
            if name_.startswith("bytes."):
                direction, kind = name_.rsplit(".", 1)
                made[direction].add(n, {**op, PREFIX + "bytes.kind": kind})
            else:
                made[name_].add(n, op)
        made["duration"].record(seconds, {**op, "error.type": error} if error else op)


_otel_cache: list[_Otel] = []


def _provider(kind: str) -> Any:
    found = _explicit.get(kind)
    if found is None:
        api = sys.modules.get(
            "opentelemetry.trace" if kind == "tracer" else "opentelemetry.metrics"
        )
        if api is None:
            return None
        found = api.get_tracer_provider() if kind == "tracer" else api.get_meter_provider()
    return None if type(found).__name__ in _DISABLED else found


def _otel() -> _Otel | None:
    """The providers in use, or None while the application has configured none."""
    if (
        not _explicit
        and "opentelemetry.trace" not in sys.modules
        and "opentelemetry.metrics" not in sys.modules
    ):
        return None
    providers = (_provider("tracer"), _provider("meter"))
    if providers == (None, None):
        return None
    if _otel_cache and _otel_cache[0].providers == providers:
        return _otel_cache[0]
    made = _Otel(*providers)
    _otel_cache[:] = [made]
    return made


# ------------------------------------------------------------------ operations


class _Run:
    """One operation: its figures, its span, its clock."""

    def __init__(self, name: str, parent: Figures | None, otel: _Otel | None) -> None:
        self.name = name
        self.figures = Figures(parent)
        self.otel = otel
        self.span = None
        if otel is not None and otel.tracer is not None:
            self.span = otel.tracer.start_span(PREFIX + name)  # parent: the current span
        self.started = time.perf_counter()

    @contextmanager
    def current(self) -> Iterator[None]:
        token = _current.set(self.figures)
        try:
            if self.span is None or self.otel is None:
                yield
            else:
                with self.otel.trace.use_span(
                    self.span, record_exception=False, set_status_on_exception=False
                ):
                    yield
        finally:
            _current.reset(token)

    def finish(self, error: BaseException | None) -> None:
        figures, parent = self.figures, self.figures.parent
        if parent is not None:
            parent.merge(figures)
        kind = type(error).__qualname__ if error is not None else None
        if self.span is not None and self.otel is not None:
            self.span.set_attributes(figures.attributes())
            if error is not None:
                self.span.record_exception(error)
                self.span.set_status(self.otel.trace.Status(self.otel.trace.StatusCode.ERROR))
                self.span.set_attribute("error.type", kind or "")
            self.span.end()
        if self.otel is not None and (parent is None or parent.collector):
            self.otel.record(self.name, figures, time.perf_counter() - self.started, kind)


def operation(name: str) -> Callable[[F], F]:
    """Count `fn`'s work as the operation `name` (span `s3dynamo.<name>`); a generator
    function is one operation from its first item to its end or close."""

    def wrap(fn: F) -> F:
        if isgeneratorfunction(fn):
            return _generator(name, fn)  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            parent = _current.get()
            otel = _otel()
            if parent is None and otel is None:
                return fn(*args, **kwargs)
            op = _Run(name, parent, otel)
            error: BaseException | None = None
            try:
                with op.current():
                    return fn(*args, **kwargs)
            except BaseException as exc:
                error = exc
                raise
            finally:
                op.finish(error)

        return run  # type: ignore[return-value]

    return wrap


def _generator(
    name: str, fn: Callable[..., Generator[Any, None, None]]
) -> Callable[..., Iterator[Any]]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Iterator[Any]:
        parent = _current.get()
        otel = _otel()
        if parent is None and otel is None:
            yield from fn(*args, **kwargs)
            return
        op = _Run(name, parent, otel)
        inner = fn(*args, **kwargs)
        error: BaseException | None = None
        try:
            while True:
                # Current only while it works: between items the caller's context is its own.
                with op.current():
                    try:
                        item = next(inner)
                    except StopIteration:
                        return
                yield item
        except GeneratorExit:
            inner.close()
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            op.finish(error)

    return run


def instrument(cls: type, names: Mapping[str, str]) -> None:
    """Wrap each method of `cls` named in `names` as the operation its value names."""
    for method, name in names.items():
        setattr(cls, method, operation(name)(getattr(cls, method)))
