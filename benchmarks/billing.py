"""What a workload would cost on AWS at on-demand list prices (us-east-1).

Units are computed per request, the way DynamoDB and S3 bill them:

- DynamoDB writes (PutItem, UpdateItem, DeleteItem, each item of a BatchWriteItem):
  1 write request unit per started 1 KB of the larger of the item before and after.
- DynamoDB reads (GetItem, Query): 1 read request unit per started 4 KB of the items
  read (a Query adds up every item it evaluated before any filter or projection, then
  rounds once), halved for eventually consistent reads.
- S3: PUT, COPY, POST and LIST requests at one price, GET and HEAD at another, DELETE free.
- Storage: DynamoDB item bytes plus 100 bytes per item, S3 object bytes, per GB-month.

Item sizes come from moto's own table (in process): before a write, after it, and for a
read the full items it evaluated, which is what DynamoDB bills even when the request
asked for a projection or a filter.
"""

from __future__ import annotations

import base64
import inspect
import json
import math
import threading
import time
from collections import Counter
from typing import Any

# On-demand list prices, us-east-1, read 2026-11-30 (sources in benchmarks/README.md).
DYNAMODB_WRU = 0.625 / 1e6  # $ per write request unit
DYNAMODB_RRU = 0.125 / 1e6  # $ per read request unit
DYNAMODB_GB_MONTH = 0.25  # $ per GB-month, Standard table class
DYNAMODB_ITEM_OVERHEAD = 100  # bytes billed per item on top of its data
S3_GB_MONTH = 0.023  # $ per GB-month, S3 Standard, first 50 TB
S3_PUT_CLASS = 0.005 / 1000  # $ per PUT, COPY, POST or LIST request
S3_GET_CLASS = 0.0004 / 1000  # $ per GET, HEAD and other request
S3_FREE = {"DeleteObject", "DeleteObjects"}
S3_PUT_OPS = {"PutObject", "CopyObject", "ListObjectsV2", "ListObjects", "ListObjectVersions"}
GB = 2**30  # AWS bills storage in binary gigabytes

_read_bytes = threading.local()  # full bytes moto evaluated for the current read


def request_dollars(counts: Counter[str], units: Counter[str]) -> float:
    """Dollars for these requests: DynamoDB units plus S3 per-request prices."""
    dollars = units["wru"] * DYNAMODB_WRU + units["rru"] * DYNAMODB_RRU
    for name, n in counts.items():
        service, op = name.split(".", 1)
        if service == "s3" and op not in S3_FREE:
            dollars += n * (S3_PUT_CLASS if op in S3_PUT_OPS else S3_GET_CLASS)
    return dollars


def storage_dollars(ddb_bytes: int, ddb_items: int, s3_bytes: int) -> float:
    """Dollars per month to keep this much data."""
    ddb = (ddb_bytes + DYNAMODB_ITEM_OVERHEAD * ddb_items) / GB * DYNAMODB_GB_MONTH
    return ddb + s3_bytes / GB * S3_GB_MONTH


def install_moto_read_sizes() -> None:
    """Record the full size of what moto's tables read, before filter and projection."""
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_bench_billing", False):
        return
    query, get_item = Table.query, Table.get_item

    signature = inspect.signature(query)

    def full_query(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = signature.bind(self, *args, **kwargs)
        projection = call.arguments.get("projection_expressions")
        condition = call.arguments.get("filter_expression")
        call.arguments["projection_expressions"] = None
        call.arguments["filter_expression"] = None
        items, scanned, last_key = query(*call.args, **call.kwargs)
        _read_bytes.value = getattr(_read_bytes, "value", 0) + sum(map(item_size, items))
        # The same two steps moto's Table.query ends with.
        if condition is not None:
            items = [item for item in items if condition.expr(item)]
        if projection:
            items = [item.project(projection) for item in items]
        return items, scanned, last_key

    def full_get_item(self: Any, hash_key: Any, range_key: Any = None, projection: Any = None):
        item = get_item(self, hash_key, range_key)
        if item is not None:
            _read_bytes.value = getattr(_read_bytes, "value", 0) + item_size(item)
            if projection:
                item = item.project(projection)
        return item

    full_query._bench_billing = True  # type: ignore[attr-defined]
    Table.query = full_query  # type: ignore[method-assign]
    Table.get_item = full_get_item  # type: ignore[method-assign]


def item_size(item: Any) -> int:
    """Billed size of a moto Item, read straight from its attributes (no copy)."""
    return sum(len(name.encode()) + _moto_value_size(v) for name, v in item.attrs.items())


def _moto_value_size(value: Any) -> int:
    from aws_mock import _value_size

    if isinstance(value, dict):  # a wire dict ({"S": ...}), as some members are kept
        return _value_size(value)
    kind, data = value.type, value.value
    if kind == "L":
        return 3 + sum(_moto_value_size(v) + 1 for v in data)
    if kind == "M":
        return 3 + sum(len(k.encode()) + _moto_value_size(v) + 1 for k, v in data.items())
    return _value_size({kind: data})


class BillingMeter:
    """Read and write request units of one client's DynamoDB calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.units: Counter[str] = Counter()
        self.overhead = 0.0  # seconds the hooks themselves took, taken out of wall time

    def instrument(self, client: Any) -> None:
        if client.meta.service_model.endpoint_prefix != "dynamodb":
            return
        install_moto_read_sizes()
        client.meta.events.register("before-call.dynamodb.*", self._before)
        client.meta.events.register("after-call.dynamodb.*", self._after)

    def snapshot(self) -> tuple[Counter[str], float]:
        with self._lock:
            return Counter(self.units), self.overhead

    def _before(self, model: Any, params: Any, context: dict[str, Any], **_: Any) -> None:
        started = time.perf_counter()
        body = json.loads(params["body"] or b"{}")
        context["bench_body"] = body
        writes = _written_keys(model.name, body)
        context["bench_writes"] = [(t, k, _stored_size(t, k)) for t, k in writes]
        _read_bytes.value = 0
        self._add(Counter(), time.perf_counter() - started)

    def _after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        started = time.perf_counter()
        units: Counter[str] = Counter()
        # A transaction bills each of its writes twice (DynamoDB pricing).
        factor = 2 if model.name == "TransactWriteItems" else 1
        for table, key, before in context.pop("bench_writes", []):
            largest = max(before, _stored_size(table, key))
            units["wru"] += factor * max(1, math.ceil(largest / 1024))
        if model.name in ("GetItem", "Query"):
            body = context.pop("bench_body", {})
            rru = max(1, math.ceil(getattr(_read_bytes, "value", 0) / 4096))
            units["rru"] += rru if body.get("ConsistentRead") else rru / 2
        elif model.name == "BatchGetItem":
            # Each key is read as a GetItem would be: 4 KB units of the item, at least one.
            body = context.pop("bench_body", {})
            for table, request in body["RequestItems"].items():
                for key in request["Keys"]:
                    rru = max(1, math.ceil(_stored_size(table, key) / 4096))
                    units["rru"] += rru if request.get("ConsistentRead") else rru / 2
        elif model.name == "Scan":
            # A Scan reads (and bills) every item of the table, whatever it returns: the
            # whole table here, as a scan of one page (what the benchmarks send) does.
            body = context.pop("bench_body", {})
            total = sum(item_size(i) for i in _table(body["TableName"]).all_items())
            rru = max(1, math.ceil(total / 4096))
            units["rru"] += rru if body.get("ConsistentRead") else rru / 2
        elif model.name not in (
            "PutItem",
            "UpdateItem",
            "DeleteItem",
            "BatchWriteItem",
            "TransactWriteItems",
        ):
            units[f"unbilled {model.name}"] += 1  # listed in the notes if it ever happens
        self._add(units, time.perf_counter() - started)

    def _add(self, units: Counter[str], seconds: float) -> None:
        with self._lock:
            self.units.update(units)
            self.overhead += seconds


def _written_keys(operation: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if operation in ("UpdateItem", "DeleteItem"):
        return [(body["TableName"], body["Key"])]
    if operation == "PutItem":
        return [(body["TableName"], _key_of(body["TableName"], body["Item"]))]
    if operation == "TransactWriteItems":
        keys = []
        for entry in body["TransactItems"]:
            if "Put" in entry:
                put = entry["Put"]
                keys.append((put["TableName"], _key_of(put["TableName"], put["Item"])))
            elif "Update" in entry or "Delete" in entry:
                write = entry.get("Update") or entry["Delete"]
                keys.append((write["TableName"], write["Key"]))
        return keys
    if operation == "BatchWriteItem":
        keys = []
        for table, requests in body["RequestItems"].items():
            for request in requests:
                if "PutRequest" in request:
                    keys.append((table, _key_of(table, request["PutRequest"]["Item"])))
                else:
                    keys.append((table, request["DeleteRequest"]["Key"]))
        return keys
    return []


def _table(name: str) -> Any:
    from aws_mock import REGION
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].get_table(name)


def _key_of(table: str, item: dict[str, Any]) -> dict[str, Any]:
    t = _table(table)
    names = [t.hash_key_attr] + ([t.range_key_attr] if t.range_key_attr else [])
    return {name: item[name] for name in names}


def _stored_size(table: str, key: dict[str, Any]) -> int:
    from moto.dynamodb.models.dynamo_type import DynamoType

    t = _table(table)
    hash_key = DynamoType(key[t.hash_key_attr])
    range_key = DynamoType(key[t.range_key_attr]) if t.range_key_attr else None
    # .get, not [...]: moto's item store is a defaultdict, and a lookup must not add to it.
    item = t.items.get(hash_key, {}).get(range_key) if range_key else t.items.get(hash_key)
    return item_size(item) if item is not None else 0


def decode_binary(data: str | bytes) -> bytes:
    """B values come as bytes from botocore and as base64 text from moto's JSON."""
    return data if isinstance(data, bytes) else base64.b64decode(data)
