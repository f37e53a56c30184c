"""What retention costs: a sweep over W1-sized conversations, measured on moto.

    python benchmarks/retention.py --threads 4 --turns 40

Writes `--threads` sealed conversations of the W1 chat (`--turns` invokes each, the
same graph and message sizes as `run.py`'s W1), then runs `expire_idle_threads` with the
saver's clock 45 days on and a 30-day TTL, so every thread is idle. It counts every
request of the sweep and bills it the way `billing.py` does (write units per item by the
larger of its sizes before and after, read units per 4 KB evaluated). A Scan is billed
like a Query: by every item it reads (whole items, whatever the projection), 4 KB per
read unit, halved for an eventually consistent read, rounded up per page.

It prints, per thread: stored bytes and items, requests by operation, write and read
units; and, scaled to a million threads: the cost of removing them and the cost of the
Scan a sweep makes over a table holding them (the first sweep, and `--full`). Then the
same conversations in a second table, swept from the idle index as a daily schedule runs
it (`indexed_sweep`): what a sweep that removes nothing sends, and what each removed
thread adds.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from aws_mock import REGION, RequestMeter, aws_account, new_client, stored_bytes
from billing import DYNAMODB_RRU, request_dollars
from workloads import ChatState, _chat_graph, _config, _user_turn

from langgraph.checkpoint.s3dynamo import S3DynamoSaver

DAY = 86_400
SCAN_PAGE = 1 << 20  # DynamoDB returns at most 1 MB of items per Scan page
# Lambda, x86_64, us-east-1, read 2026-11-30: $ per GB-second.
LAMBDA_GB_SECOND = 0.0000166667


def scan_units(ddb_bytes: int) -> float:
    """Read units of a full eventually consistent Scan over this many item bytes."""
    pages = max(1, math.ceil(ddb_bytes / SCAN_PAGE))
    per_page = math.ceil(min(ddb_bytes, SCAN_PAGE) / 4096)
    return pages * per_page / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    with aws_account():
        ddb, s3 = new_client("dynamodb"), new_client("s3")
        saver = S3DynamoSaver(
            table="retention",
            bucket="retention",
            dynamodb_client=ddb,
            s3_client=s3,
            keys={"k1": os.urandom(32)},
            secret=os.urandom(32),
        )
        saver.setup()
        graph = _chat_graph(ChatState, saver)
        for t in range(args.threads):
            config = _config(f"chat-{t}")
            for turn in range(1, args.turns + 1):
                _user_turn(graph, config, turn)()
        stored = stored_bytes("retention", "retention")

        meter = RequestMeter()
        for client in (ddb, s3):
            meter.instrument(client)
        later = time.time() + 45 * DAY
        saver.store.clock = lambda: later
        # The Scan's requests and units apart from the removals': moto is not segmented, so
        # the meter bills each of the 16 segments as a read of the whole table; the Scan
        # is billed below by `scan_units`, once.
        plan = saver.ops.plan_expiry("30d", full=True)
        planned, _ = meter.snapshot()
        planned_units, _ = meter.billing.snapshot()
        plan.execute()
        assert len(plan.removed) == args.threads, plan
        counts, latency = meter.snapshot()
        counts -= planned
        units, _ = meter.billing.snapshot()
        units -= planned_units

        # Fresh clients: the meter above stays hooked on the first pair.
        indexed = indexed_sweep(args.threads, args.turns, new_client("dynamodb"), new_client("s3"))

    n = args.threads
    scan_rru = scan_units(stored.ddb_bytes)
    removal_counts = Counter({k: v for k, v in counts.items() if k != "dynamodb.Scan"})
    # (The plan's requests, the Scan's 16 and the cursor's read, are not in `counts`.)
    removal = request_dollars(removal_counts, Counter(wru=units["wru"], rru=units["rru"])) / n
    per_thread_bytes = stored.ddb_bytes / n
    million_scan_rru = scan_units(int(per_thread_bytes * 1e6))
    # The sweep's own time, as modelled per request (DynamoDB 6 ms, S3 20 to 30 ms),
    # threads removed PARALLEL_THREADS at a time, on a 512 MB function.
    from langgraph.checkpoint.s3dynamo.ops.retention import PARALLEL_THREADS

    seconds_per_thread = latency / n / PARALLEL_THREADS
    lambda_per_million = 1e6 * seconds_per_thread * 0.5 * LAMBDA_GB_SECOND

    print(f"region {REGION}; {n} W1 conversations of {args.turns} invokes, sealed")
    print(
        f"per thread: {per_thread_bytes:,.0f} DynamoDB bytes in {stored.ddb_items / n:,.1f} "
        f"items, {stored.s3_bytes / n:,.0f} S3 bytes"
    )
    print(
        "requests per removed thread: "
        + ", ".join(f"{k} {v / n:g}" for k, v in sorted(removal_counts.items()))
    )
    print(f"write units per thread {units['wru'] / n:g}, read units {units['rru'] / n:g}")
    print(f"Scan of these {n} threads: {scan_rru:g} read units (whole items, eventual)")
    print(f"modelled request time per thread {latency / n:.2f} s (serial)")
    print()
    print("per million threads:")
    print(f"  removing them: ${removal * 1e6:,.2f} in requests")
    print(
        f"  one sweep's Scan over a table holding them: ${million_scan_rru * DYNAMODB_RRU:,.2f} "
        f"({million_scan_rru:,.0f} read units)"
    )
    print(
        f"  Lambda time to remove them: {1e6 * seconds_per_thread / 3600:,.1f} hours at "
        f"{PARALLEL_THREADS} threads at once, ${lambda_per_million:,.2f} at 512 MB"
    )
    print()
    print("\n".join(indexed))


def indexed_sweep(threads: int, turns: int, ddb: Any, s3: Any) -> list[str]:
    """The sweep planned from the idle index (`ops/sweep.py`), as a daily schedule runs
    it: a first sweep (the Scan, none idle) sets the cursor the day before the threads
    went idle; a sweep a day later removes them; one more a day on finds nothing. Returns
    the lines to print: that last sweep is what a sweep costs whatever the table holds,
    and the difference per removed thread what each expiry adds."""
    saver = S3DynamoSaver(
        table="retention-indexed",
        bucket="retention-indexed",
        dynamodb_client=ddb,
        s3_client=s3,
        keys={"k1": os.urandom(32)},
        secret=os.urandom(32),
    )
    saver.setup()
    graph = _chat_graph(ChatState, saver)
    for t in range(threads):
        config = _config(f"chat-{t}")
        for turn in range(1, turns + 1):
            _user_turn(graph, config, turn)()
    start = time.time()
    meter = RequestMeter()
    for client in (ddb, s3):
        meter.instrument(client)
    sweeps = []
    for days in (29.5, 30.5, 31.5):
        moment = start + days * DAY
        saver.store.clock = lambda moment=moment: moment
        counts0, latency0 = meter.snapshot()
        units0, _ = meter.billing.snapshot()
        plan = saver.ops.expire_idle_threads("30d")
        counts, latency = meter.snapshot()
        units, _ = meter.billing.snapshot()
        sweeps.append((plan, counts - counts0, units - units0, latency - latency0))
    (_, _, _, _), (removing, counts, units, latency), (empty, idle_counts, idle_units, _) = sweeps
    assert len(removing.removed) == threads and not empty.removed, (removing, empty)
    per = Counter({k: (counts[k] - idle_counts.get(k, 0)) / threads for k in counts})
    return [
        "indexed sweep (the idle index after the cursor; a daily schedule):",
        "  a sweep that removes nothing: "
        + ", ".join(f"{k} {v:g}" for k, v in sorted(idle_counts.items()))
        + f"; write units {idle_units['wru']:g}, read units {idle_units['rru']:g}",
        "  requests per removed thread: "
        + ", ".join(f"{k} {v:g}" for k, v in sorted(per.items()) if v),
        f"  write units per removed thread {(units['wru'] - idle_units['wru']) / threads:g}, "
        f"read units {(units['rru'] - idle_units['rru']) / threads:g}",
        f"  modelled request time per removed thread {latency / threads:.2f} s (serial)",
    ]


if __name__ == "__main__":
    main()
