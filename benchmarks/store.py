"""Long-term memory: a Store workload on S3DynamoStore, AWS's DynamoDBStore
(langgraph-checkpoint-aws) and LangGraph's InMemoryStore, in one run on moto in process:
AWS requests, DynamoDB read/write units, bytes stored, modelled latency and AWS cost per
operation; then what a semantic search over one large namespace costs S3DynamoStore.

    .venv/bin/python benchmarks/store.py --large 10000    # writes benchmarks/store_results.md

The workload (one user's memories): `put` of N items of about 300 bytes in
("users", "u1", "memories") and 5 other namespaces; `get` of each; `search` by filter in
the user's namespace; `search` by query (fake 256-dim embeddings: only the stores that
embed locally); `list_namespaces`; `get` with the TTL refreshed (TTLConfig default 60
minutes, refresh_on_read; seconds after the puts, so S3DynamoStore, which skips a
refresh that would move an expiry by under 1% of its TTL, writes nothing there; then
again with S3DynamoStore's clock two minutes on, when every refresh is due). Costs:
benchmarks/billing.py (on-demand us-east-1 list prices, units per request as AWS bills
them); latency: aws_mock.py's model (6 ms per DynamoDB request, 20/30 ms per S3
GET/PUT), summed over every request as if none ran in parallel (an upper bound).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from aws_mock import RequestMeter, aws_account, new_client, stored_bytes, use_fake_credentials  # noqa: E402
from billing import request_dollars, storage_dollars  # noqa: E402

DIMS = 256
ITEMS = 50
# Refreshes two minutes later (S3DynamoStore's clock moved on), when each is due:
# S3DynamoStore skips one that would move an expiry by under 1% of its TTL.
DUE = "get + TTL refresh, due"
# Why a row of DynamoDBStore is not in the table.
UNMEASURED = {
    "search (query)": "its vector search is DynamoDB's SearchVectors, which moto does not serve",
    DUE: "every refresh writes: as the row above",
}
NS = ("users", "u1", "memories")
OTHER = [("users", f"u{i}", "memories") for i in range(2, 7)]


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic fake embedding: hashed words into DIMS buckets, normalised."""
    out = []
    for text in texts:
        vec = [0.0] * DIMS
        for word in text.lower().split():
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        out.append([x / norm for x in vec])
    return out


def value(i: int) -> dict[str, Any]:
    topics = ["tea", "coffee", "Oslo", "hiking", "python", "jazz", "cats", "trains"]
    return {
        "text": f"memory {i}: the user mentioned {topics[i % 8]} and {topics[(i * 3) % 8]} "
        + "with some more context about the conversation " * 4,
        "kind": "fact" if i % 3 else "preference",
        "n": i,
    }


class AwsTime:
    """Seconds spent inside requests (botocore and moto in process), summed over calls:
    the rest of an operation's wall time is the store's own work."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = threading.local()

    def instrument(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._before)
        client.meta.events.register("after-call.*.*", self._after)

    def _before(self, **_: Any) -> None:
        self._started.at = time.perf_counter()

    def _after(self, **_: Any) -> None:
        self.seconds += time.perf_counter() - self._started.at


def s3dynamo(
    meter: RequestMeter, index: bool, aws_time: AwsTime | None = None
) -> tuple[Any, str, str]:
    from langgraph.checkpoint.s3dynamo import S3DynamoSaver
    from langgraph.store.s3dynamo import S3DynamoStore

    ddb, s3 = new_client("dynamodb"), new_client("s3")
    for client in (ddb, s3):
        meter.instrument(client)
        if aws_time is not None:
            aws_time.instrument(client)
    saver = S3DynamoSaver(
        dynamodb_client=ddb,
        s3_client=s3,
        table="memory",
        bucket="memory",
        keys=f"k1:{base64.b64encode(os.urandom(32)).decode()}",
        secret=os.urandom(32),
    )
    cfg = {"dims": DIMS, "embed": embed, "fields": ["text"]} if index else None
    store = S3DynamoStore.from_saver(
        saver, index=cfg, ttl={"default_ttl": 60, "refresh_on_read": True}
    )  # type: ignore[arg-type]
    store.setup()
    return store, "memory", "memory"


def dynamodb_store(meter: RequestMeter, index: bool) -> tuple[Any, str, None]:
    from langgraph_checkpoint_aws import DynamoDBStore

    store = DynamoDBStore(
        table_name="aws-memory",
        region_name="us-east-1",
        ttl={"default_ttl": 60, "refresh_on_read": True},
    )
    meter.instrument(store.client)
    store.setup()
    return store, "aws-memory", None


def in_memory(meter: RequestMeter, index: bool) -> tuple[Any, None, None]:
    from langgraph.store.memory import InMemoryStore

    cfg = {"dims": DIMS, "embed": embed, "fields": ["text"]} if index else None
    return InMemoryStore(index=cfg), None, None  # type: ignore[arg-type]


STORES: dict[str, Callable[[RequestMeter, bool], tuple[Any, str | None, str | None]]] = {
    "S3DynamoStore (sealed)": s3dynamo,
    "DynamoDBStore": dynamodb_store,
    "InMemoryStore": in_memory,
}


def phase(meter: RequestMeter, ops: int, fn: Callable[[], Any]) -> dict[str, float]:
    counts0, latency0 = meter.snapshot()
    units0, _ = meter.billing.snapshot()
    started = time.perf_counter()
    fn()
    wall = time.perf_counter() - started
    counts1, latency1 = meter.snapshot()
    units1, _ = meter.billing.snapshot()
    counts, units = counts1 - counts0, units1 - units0
    return {
        "requests": sum(counts.values()) / ops,
        "units": (units["wru"] + units["rru"]) / ops,
        "latency_ms": (latency1 - latency0) * 1000 / ops,
        "cost_per_million": request_dollars(counts, units) / ops * 1e6,
        "wall_ms": wall * 1000 / ops,
    }


def workload(name: str) -> dict[str, Any]:
    meter = RequestMeter()
    with aws_account():
        store, table, bucket = STORES[name](meter, name != "DynamoDBStore")
        rows: dict[str, Any] = {}
        keys = [f"m{i}" for i in range(ITEMS)]

        def put() -> None:
            for i, key in enumerate(keys):
                store.put(NS, key, value(i))
            for ns in OTHER:
                store.put(ns, "m0", value(0))

        rows["put"] = phase(meter, ITEMS + len(OTHER), put)
        rows["get"] = phase(
            meter, ITEMS, lambda: [store.get(NS, k, refresh_ttl=False) for k in keys]
        )
        rows["search (filter)"] = phase(
            meter,
            10,
            lambda: [
                store.search(NS, filter={"kind": "preference"}, limit=10, refresh_ttl=False)
                for _ in range(10)
            ],
        )
        if name != "DynamoDBStore":
            rows["search (query)"] = phase(
                meter,
                10,
                lambda: [
                    store.search(NS, query="tea in Oslo", limit=5, refresh_ttl=False)
                    for _ in range(10)
                ],
            )
        rows["list_namespaces"] = phase(
            meter, 10, lambda: [store.list_namespaces() for _ in range(10)]
        )
        rows["get + TTL refresh"] = phase(meter, ITEMS, lambda: [store.get(NS, k) for k in keys])
        if name != "DynamoDBStore":
            if hasattr(store, "space"):
                store.space.clock = lambda: time.time() + 120
            rows[DUE] = phase(meter, ITEMS, lambda: [store.get(NS, k) for k in keys])
        stored = stored_bytes(table, bucket) if table else None
    return {
        "rows": rows,
        "stored": None
        if stored is None
        else {
            "bytes": stored.total,
            "items": stored.ddb_items,
            "dollars_month": storage_dollars(stored.ddb_bytes, stored.ddb_items, stored.s3_bytes),
        },
    }


def large_namespace(count: int) -> dict[str, float]:
    """S3DynamoStore: `count` items in one namespace, then one search by query and one
    by filter; requests, read units and wall time of each."""
    meter, aws_time = RequestMeter(), AwsTime()
    with aws_account():
        store, _, _ = s3dynamo(meter, True, aws_time)
        from langgraph.store.base import PutOp

        started = time.perf_counter()
        for start in range(0, count, 100):
            store.batch(
                [PutOp(NS, f"m{i}", value(i)) for i in range(start, min(count, start + 100))]
            )
        put_s = time.perf_counter() - started
        in_aws = aws_time.seconds
        query = phase(
            meter, 1, lambda: store.search(NS, query="tea in Oslo", limit=10, refresh_ttl=False)
        )
        query_aws_ms, in_aws = (aws_time.seconds - in_aws) * 1000, aws_time.seconds
        filt = phase(meter, 1, lambda: store.search(NS, filter={"n": 7}, refresh_ttl=False))
        filter_aws_ms = (aws_time.seconds - in_aws) * 1000
        stored = stored_bytes("memory", "memory")
    return {
        "items": count,
        "put_seconds": put_s,
        "query_requests": query["requests"],
        "query_read_units": query["units"],
        "query_wall_ms": query["wall_ms"],
        "query_latency_ms": query["latency_ms"],
        "query_own_ms": query["wall_ms"] - query_aws_ms,
        "query_cost_per_million": query["cost_per_million"],
        "filter_requests": filt["requests"],
        "filter_read_units": filt["units"],
        "filter_wall_ms": filt["wall_ms"],
        "filter_own_ms": filt["wall_ms"] - filter_aws_ms,
        "stored_bytes": stored.total,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--out", default=str(HERE / "store_results.md"))
    args = parser.parse_args()
    use_fake_credentials()
    results = {name: workload(name) for name in STORES}
    lines = [
        "# Long-term memory: S3DynamoStore, DynamoDBStore, InMemoryStore",
        "",
        f"Produced by `.venv/bin/python benchmarks/store.py --large {args.large}`",
        "(moto in process; see its docstring for the workload and the cost model).",
        "Per operation: AWS requests,",
        "DynamoDB request units, modelled serial latency, request cost per million operations.",
        "",
        "| operation | store | requests | units | latency model ms | $ per million |",
        "|---|---|---|---|---|---|",
    ]
    for op in results["S3DynamoStore (sealed)"]["rows"]:
        for name, result in results.items():
            row = result["rows"].get(op)
            if row is None:
                lines.append(f"| {op} | {name} | not measured: {UNMEASURED[op]} | | | |")
                continue
            lines.append(
                f"| {op} | {name} | {row['requests']:.2f} | {row['units']:.2f} | "
                f"{row['latency_ms']:.1f} | {row['cost_per_million']:.2f} |"
            )
    lines += ["", "| store | bytes stored | items | storage $ per month |", "|---|---|---|---|"]
    for name, result in results.items():
        s = result["stored"]
        if s:
            lines.append(f"| {name} | {s['bytes']} | {s['items']} | {s['dollars_month']:.8f} |")
        else:
            lines.append(f"| {name} | in process | | |")
    large = large_namespace(args.large)
    lines += [
        "",
        f"## One namespace of {large['items']} items (S3DynamoStore, semantic search client-side)",
        "",
        f"- put: {large['put_seconds']:.1f} s wall for all items (batches of 100, moto in process)",
        f"- search(query=..., limit=10): {large['query_requests']:.0f} requests, "
        f"{large['query_read_units']:.0f} read units, {large['query_wall_ms']:.0f} ms wall on "
        f"moto, of which {large['query_own_ms']:.0f} ms the store's own work (opening, "
        f"ranking; the rest is moto answering), latency model "
        f"{large['query_latency_ms']:.0f} ms of requests, "
        f"${large['query_cost_per_million']:.2f} per million searches",
        f"- search(filter=...): {large['filter_requests']:.0f} requests, "
        f"{large['filter_read_units']:.0f} read units, {large['filter_wall_ms']:.0f} ms wall, "
        f"of which {large['filter_own_ms']:.0f} ms the store's own work",
        f"- stored: {large['stored_bytes']} bytes",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
