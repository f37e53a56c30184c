"""The thread catalog (issue 50): what listing one user's threads costs as a deployment
grows, with S3DynamoSaver's `search_threads`, its `list(None, filter=...)` through the
catalog and without it (the Scan every release before this one sent), and AWS's
DynamoDBSaver.

    .venv/bin/python benchmarks/catalog.py          # writes benchmarks/catalog_results.md
    .venv/bin/python benchmarks/catalog.py --sizes 1000 10000 --dynamodb-sizes 1000

A deployment of N threads has N/10 users of ten threads each. Every thread is one
checkpoint as LangGraph's server writes it: metadata with user_id, assistant_id and
graph_id (and source, step, run_id), and one message of about 400 bytes. The user listed
is one of them; "its ten threads, newest first" is the question.

S3DynamoSaver runs on the in-memory table (`tests/support/sized.py`): requests are
counted by DynamoDB's names, exactly, and read units computed from the items each read
returns, as DynamoDB bills them (a Query or Scan page summed and rounded up to 4 KB, each
item of a BatchGetItem on its own; half for an eventually consistent read). It is sealed
(keys and a naming secret) and declares `catalog_fields="langgraph"`; the Scan rows come
from the same deployment read by a saver whose catalog is left out (one that declares
nothing files and searches under the deployment's fields), as every earlier release.

DynamoDBSaver (langgraph-checkpoint-aws) runs on moto in process. Its `list(None, ...)`
raises ValueError ("Runnable config must contain thread_id"): it keeps no index by
metadata, so the least a product can do to find a user's threads is one Scan of its whole
table (its metadata is serialized inside each item, so no filter expression can pick the
user's). The rows measure that Scan: its pages, and their read units from the items moto
returns, sized as DynamoDB bills them (`aws_mock._value_size`). A Scan's cost is the
table's bytes, so sizes above those run on moto are extrapolated from the largest one
run, in proportion to the threads, and marked so.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent))  # tests.support.sized: reads sized as DynamoDB bills them

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.base.id import uuid6  # noqa: E402
from tests.support.sized import SizedTable  # noqa: E402

from langgraph.checkpoint.s3dynamo import S3DynamoSaver  # noqa: E402
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects  # noqa: E402

PER_USER = 10
LIMIT = 10
MESSAGE = "x" * 400
SIZES = (1_000, 10_000, 100_000)
DYNAMODB_SIZES = (1_000, 10_000)
# The calls measured on S3DynamoSaver, as the report names them.
CALLS = ("search_threads", "list catalog", "list scan")


def checkpoint() -> tuple[dict[str, Any], dict[str, str]]:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"messages": MESSAGE}
    cp["channel_versions"] = {"messages": "00000000000000000000000000000001.0"}
    return cp, dict(cp["channel_versions"])  # type: ignore[arg-type]


def metadata(i: int) -> dict[str, Any]:
    """Thread i's metadata: user-(i // 10)'s, so each user has ten threads in a row."""
    return {
        "user_id": f"user-{i // PER_USER}",
        "assistant_id": "assistant-1",
        "graph_id": "agent",
        "source": "loop",
        "step": 1,
        "run_id": f"run-{i}",
    }


def fill(saver: Any, threads: int, start: int = 0) -> None:
    for i in range(start, threads):
        cp, versions = checkpoint()
        config = {"configurable": {"thread_id": f"thread-{i}", "checkpoint_ns": ""}}
        saver.put(config, cp, metadata(i), versions)


def measure(table: SizedTable, run: Any) -> dict[str, Any]:
    table.calls.clear()
    start = table.snapshot()
    began = time.process_time()
    found = run()
    cpu = (time.process_time() - began) * 1000
    took = table.since(start)
    return {
        "found": found,
        "requests": dict(sorted(table.calls.items())),
        "units": took["units"],
        "cpu_ms": cpu,
    }


def s3dynamo(sizes: list[int]) -> dict[int, dict[str, Any]]:
    """Every size on one growing deployment: threads are added between measurements."""
    out: dict[int, dict[str, Any]] = {}
    table = SizedTable()
    objects = MemoryObjects()
    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    saver = S3DynamoSaver(
        index=table, object_store=objects, keys=keys, secret=secret, catalog_fields="langgraph"
    )
    scan = S3DynamoSaver(index=table, object_store=objects, keys=keys, secret=secret)
    # A saver that declares no field files under the deployment's recorded fields; the
    # Scan every release before the catalog sent is measured with its catalog left out.
    scan.store._catalog.deployment = None
    saver.setup()
    user = {"user_id": "user-0"}  # threads 0 to 9
    written = 0
    for size in sizes:
        fill(saver, size, written)
        written = size
        # The process reads its deployment once, and imports what a listing decodes with.
        saver.search_threads(metadata=user)
        list(saver.list(None, filter=user, limit=1))
        row: dict[str, Any] = {"threads": size}
        row["search_threads"] = measure(
            table, lambda: len(saver.search_threads(metadata=user, limit=LIMIT))
        )
        row["list catalog"] = measure(
            table, lambda: len(list(saver.list(None, filter=user, limit=LIMIT)))
        )
        row["list scan"] = measure(
            table, lambda: len(list(scan.list(None, filter=user, limit=LIMIT)))
        )
        assert all(row[k]["found"] == LIMIT for k in ("search_threads", "list catalog"))
        out[size] = row
        print(f"s3dynamo {size}: {_short(row)}", flush=True)
    return out


def _short(row: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}: {v['requests']} {v['units']:g} RU"
        for k, v in row.items()
        if isinstance(v, dict) and "units" in v
    )


def dynamodb_saver(sizes: list[int]) -> dict[int, dict[str, Any]]:
    """DynamoDBSaver on moto: the Scan that finds a user's threads, at each size."""
    from aws_mock import _value_size, aws_account, new_client
    from langgraph_checkpoint_aws import DynamoDBSaver
    from savers import create_dynamodb_saver_resources

    out: dict[int, dict[str, Any]] = {}
    with aws_account():
        create_dynamodb_saver_resources("lgaws", "lgaws")
        saver = DynamoDBSaver(
            table_name="lgaws", region_name="us-east-1", s3_offload_config={"bucket_name": "lgaws"}
        )
        client = new_client("dynamodb")
        written = 0
        for size in sizes:
            fill(saver, size, written)
            written = size
            try:
                list(saver.list(None, filter={"user_id": "user-0"}, limit=LIMIT))
                refused = None
            except ValueError as exc:
                refused = str(exc)
            pages, units, items = 0, 0.0, 0
            began = time.process_time()
            for page in client.get_paginator("scan").paginate(TableName="lgaws"):
                pages += 1
                size_read = sum(
                    len(name.encode()) + _value_size(value)
                    for item in page["Items"]
                    for name, value in item.items()
                )
                units += max(1, math.ceil(size_read / 4096)) * 0.5
                items += len(page["Items"])
            cpu = (time.process_time() - began) * 1000
            out[size] = {
                "threads": size,
                "list(None) refused": refused,
                "scan": {
                    "requests": {"Scan": pages},
                    "units": units,
                    "items": items,
                    "cpu_ms": cpu,
                },
            }
            print(f"DynamoDBSaver {size}: {pages} Scan pages, {units:g} RU", flush=True)
    return out


def report(ours: dict[int, dict[str, Any]], theirs: dict[int, dict[str, Any]], argv: str) -> str:
    lines = [
        "# The thread catalog: listing one user's threads as a deployment grows",
        "",
        f"From `.venv/bin/python benchmarks/catalog.py{argv}` ({time.strftime('%Y-%m-%d')}; "
        f"the module docstring says what runs where). One user's {PER_USER} threads, listed "
        f"newest first (`limit={LIMIT}`), in deployments of {min(ours):,} to {max(ours):,} "
        f"threads ({PER_USER} a user). Requests and read units are exact for S3DynamoSaver "
        "(in-memory table, billed as DynamoDB bills); DynamoDBSaver's Scan is measured on "
        "moto where marked, extrapolated in proportion to the threads elsewhere.",
        "",
        "| threads | S3DynamoSaver `search_threads` | `list(None, filter)`, catalog | "
        "`list(None, filter)`, Scan (no declared field) | DynamoDBSaver: a Scan of its table |",
        "|---|---|---|---|---|",
    ]
    largest = max(theirs) if theirs else None
    for size, row in sorted(ours.items()):
        cells = [f"{size:,}"]
        for name in CALLS:
            m = row[name]
            reqs = ", ".join(f"{n} {op}" for op, n in m["requests"].items())
            cells.append(f"{reqs}; **{m['units']:,g} RU**")
        if size in theirs:
            scan = theirs[size]["scan"]
            cells.append(f"{scan['requests']['Scan']:,} Scan; **{scan['units']:,g} RU** (moto)")
        elif largest is not None:
            scan = theirs[largest]["scan"]
            factor = size / largest
            pages = math.ceil(scan["requests"]["Scan"] * factor)
            cells.append(
                f"about {pages:,} Scan; about **{scan['units'] * factor:,.0f} RU** "
                f"(extrapolated from {largest:,})"
            )
        else:
            cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "RU: read request units, as DynamoDB bills them; on demand, $0.125 per million "
        "(us-east-1). The search reads the user's entries (one strongly consistent Query), "
        "their threads' heads (one BatchGetItem, half a unit each) and the latest "
        "checkpoint of each thread it returns (one strongly consistent Query each); "
        "`list(None, filter)` through the catalog reads every checkpoint of the user's "
        "threads (one Query each) and the same entries; the Scan reads the whole table.",
    ]
    smallest, biggest = min(ours), max(ours)
    if biggest > smallest:
        few, many = (ours[s]["search_threads"]["units"] for s in (smallest, biggest))
        lines += [
            "",
            f"From {smallest:,} threads to {biggest:,}, `search_threads` returning {LIMIT} threads "
            f"read {few:,g} and {many:,g} read units: {many / few:.2f} times as much (the "
            "issue asks at most 1.5).",
        ]
    refused = next((r["list(None) refused"] for r in theirs.values()), None)
    if refused:
        lines += [
            "",
            f"DynamoDBSaver's `list(None, filter={{...}})` raises ValueError: {refused!r}.",
        ]
    lines += [
        "",
        "CPU of one call in this process (a shared 2-core machine: indicative only). The "
        "Scan's is mostly the in-memory table's own: it sorts the whole table again for "
        "every page, which DynamoDB does not.",
        "",
        "| threads | " + " | ".join(CALLS) + " |",
        "|---|" + "---|" * len(CALLS),
    ]
    for size, row in sorted(ours.items()):
        cpu = " | ".join(f"{row[k]['cpu_ms']:,.1f} ms" for k in CALLS)
        lines.append(f"| {size:,} | {cpu} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--dynamodb-sizes", type=int, nargs="*", default=list(DYNAMODB_SIZES))
    parser.add_argument("--out", type=Path, default=HERE / "catalog_results.md")
    args = parser.parse_args()
    ours = s3dynamo(sorted(args.sizes))
    theirs = dynamodb_saver(sorted(args.dynamodb_sizes)) if args.dynamodb_sizes else {}
    argv = "".join(f" {a}" for a in sys.argv[1:])
    args.out.write_text(report(ours, theirs, argv))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
