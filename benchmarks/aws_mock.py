"""In-process AWS (moto) plus the instruments around it.

- `RequestMeter` counts every API call a client makes (botocore `before-call`) and,
  when asked, sleeps the modelled network latency inside that hook, in the calling
  thread, so that concurrent requests overlap as they would against real AWS.
- `MOTO` accounts for the CPU and wall time moto itself spends answering, so that
  the figures reported for a saver are about the saver, not about the fake server.
- `stored_bytes` sizes a table and a bucket the way AWS bills them.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from billing import BillingMeter, decode_binary

REGION = "us-east-1"

# Modelled one-request latency in seconds (same-region Lambda to DynamoDB / S3).
DYNAMODB_LATENCY = 0.006
S3_PUT_LATENCY = 0.030
S3_OTHER_LATENCY = 0.020


def use_fake_credentials() -> None:
    """Never let a benchmark pick up a real AWS identity or endpoint."""
    for name in list(os.environ):
        if name.startswith("AWS_") and name not in ("AWS_DEFAULT_REGION",):
            del os.environ[name]
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_SESSION_TOKEN="testing",
        AWS_DEFAULT_REGION=REGION,
    )


def modelled_latency(service: str, http_method: str) -> float:
    if service == "s3":
        return S3_PUT_LATENCY if http_method == "PUT" else S3_OTHER_LATENCY
    return DYNAMODB_LATENCY


class MotoAccounting:
    """CPU and wall seconds spent inside moto's request dispatch, summed over threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.cpu = 0.0
        self.wall = 0.0
        self._installed = False

    def install(self) -> None:
        # moto answers every mocked call from BotocoreStubber.process_request, in the
        # thread that made the call, so thread CPU time around it is exactly its share.
        if self._installed:
            return
        from moto.core.botocore_stubber import BotocoreStubber

        original = BotocoreStubber.process_request

        def timed(stubber: Any, request: Any) -> Any:
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            try:
                response = original(stubber, request)
            finally:
                cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
                with self._lock:
                    self.cpu += cpu
                    self.wall += wall
            if response is None:
                # moto passed on it, so botocore would send it to the real network.
                raise RuntimeError(f"benchmark request not answered by moto: {request.url}")
            return response

        BotocoreStubber.process_request = timed  # type: ignore[method-assign]
        self._installed = True

    def snapshot(self) -> tuple[float, float]:
        with self._lock:
            return self.cpu, self.wall


MOTO = MotoAccounting()


class RequestMeter:
    """Counts API calls by `service.Operation` and models their latency."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.serial_latency = 0.0
        self.sleep = False
        self.billing = BillingMeter()

    def instrument(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._before_call)
        client.meta.events.register("before-send", _refuse_unmocked)
        self.billing.instrument(client)

    def _before_call(self, model: Any, **_: Any) -> None:
        service = model.service_model.endpoint_prefix
        latency = modelled_latency(service, model.http.get("method", ""))
        with self._lock:
            self.counts[f"{service}.{model.name}"] += 1
            self.serial_latency += latency
        if self.sleep:
            time.sleep(latency)

    def snapshot(self) -> tuple[Counter[str], float]:
        with self._lock:
            return Counter(self.counts), self.serial_latency


def _refuse_unmocked(request: Any, **_: Any) -> None:
    # Without an active mock botocore would send this to the real network.
    from moto.core.models import botocore_stubber

    if not botocore_stubber.enabled:
        raise RuntimeError(f"benchmark request outside the moto mock: {request.url}")


@contextmanager
def aws_account() -> Iterator[None]:
    """A fresh, empty in-process AWS account; everything in it is dropped on exit."""
    from moto import mock_aws

    from langgraph.checkpoint.s3dynamo.testing import serialize_moto

    # moto's TransactWriteItems is not safe against a parallel request (see
    # serialize_moto); the modelled latency is slept before moto, outside its lock.
    serialize_moto()
    MOTO.install()
    with mock_aws():
        yield


def new_client(service: str) -> Any:
    import boto3

    return boto3.client(service, region_name=REGION)


@dataclass
class Stored:
    """What one AWS saver keeps: DynamoDB item bytes and count, S3 object bytes."""

    ddb_bytes: int = 0
    ddb_items: int = 0
    s3_bytes: int = 0

    @property
    def total(self) -> int:
        return self.ddb_bytes + self.s3_bytes


def stored_bytes(table: str, bucket: str | None) -> Stored:
    """Billed size of every item in `table` plus every object in `bucket`."""
    # Fresh clients, not the instrumented ones: sizing must not count as saver traffic.
    stored = Stored()
    pages = new_client("dynamodb").get_paginator("scan").paginate(TableName=table)
    for page in pages:
        stored.ddb_bytes += sum(dynamodb_item_size(item) for item in page["Items"])
        stored.ddb_items += len(page["Items"])
    if bucket:
        pages = new_client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket)
        for page in pages:
            stored.s3_bytes += sum(obj["Size"] for obj in page.get("Contents", []))
    return stored


def dynamodb_item_size(item: dict[str, Any]) -> int:
    """Item size as DynamoDB bills it: attribute names plus typed values."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "B":
        return len(decode_binary(data))
    if kind == "N":
        return _number_size(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in data)
    if kind == "BS":
        return sum(len(decode_binary(b)) for b in data)
    if kind == "NS":
        return sum(_number_size(n) for n in data)
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in data)
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in data.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


def _number_size(text: str) -> int:
    # About one byte per two significant digits, plus one.
    digits = Decimal(text).normalize().as_tuple().digits
    return (len(digits) + 1) // 2 + 1


@dataclass
class AwsStore:
    """Names of the table and bucket one saver instance writes to."""

    table: str
    bucket: str | None

    def stored_bytes(self) -> Stored:
        return stored_bytes(self.table, self.bucket)
