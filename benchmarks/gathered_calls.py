"""N Store calls gathered at once (issue 42): does the time per call stay flat as N grows?

Each cell is one N in a fresh Python process: an `S3DynamoStore` on an `S3DynamoSaver`
sealed with keys (as benchmarks/store.py builds it), 4 namespaces of 5 items written,
then rounds of calls, each round started with one `asyncio.gather`:

- search: N `asearch` by filter, round robin over the 4 namespaces of 5 items (each must
  find its one item). A search reads its whole namespace, so these stay the same size
  whatever N: what grows is the load, not the data;
- put: N `aput` of distinct keys, round robin over 4 other namespaces;
- get: N `aget` of those keys (each must come back);
- search after puts: `SEARCHES_AFTER` searches as in the first round, now that the
  table also holds the N items put. The number of calls is fixed: what changes with N
  is the table only.

On two kinds of ports: moto in process (`aws_mock.aws_account`: botocore, moto's
DynamoDB and S3, one request at a time), and the in-memory ports
(`backends/memory.py` `MemoryTable`, `MemoryObjects`), with neither botocore nor moto, to
tell moto's share from the store's. Per round: wall seconds, ms per call, the process's
CPU ms per call, moto's CPU ms per call (`aws_mock.MOTO`, 0 on the in-memory ports), and
the seconds spent in CPython's cyclic garbage collector (`gc.callbacks`). On the
in-memory ports also what a call waiting for a worker holds: the objects the collector
tracks, per call, while `WAITING` gathered `aput`s wait for workers held busy.

`--pool unbounded` hands every call to the worker pool as soon as it is made, as
`executor.run` did before issue 42, so the two compare in one run on the same machine
(repeats go round every size and pool).

    .venv/bin/python benchmarks/gathered_calls.py                  # writes gathered_calls.md
    .venv/bin/python benchmarks/gathered_calls.py --ports memory --sizes 1000 6000
    .venv/bin/python benchmarks/gathered_calls.py --pool bounded unbounded --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

SIZES = (1000, 3000, 6000)
NAMESPACES = [("users", f"u{j}", "memories") for j in range(4)]
SEARCHED = [("users", f"s{j}", "notes") for j in range(4)]
SEARCHED_ITEMS = 5
SEARCHES_AFTER = 100
WAITING = 2000
ROUNDS = ("search", "put", "get", "search after puts")


def value(i: int) -> dict[str, Any]:
    return {"text": f"memory {i}: " + "the user mentioned tea and Oslo " * 6, "n": i}


class GcClock:
    """Seconds CPython's cyclic garbage collector ran, summed over collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0
        gc.callbacks.append(self._tick)

    def _tick(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began


def _unbounded() -> None:
    """`executor.run` as it was before issue 42: every call handed to the pool at once."""
    import contextvars
    import functools

    from langgraph.checkpoint.s3dynamo import executor

    async def run(size: int, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await loop.run_in_executor(executor.pool(size), call)

    executor.run = run  # type: ignore[assignment]


def _store(ports: str) -> Any:
    from langgraph.checkpoint.s3dynamo import S3DynamoSaver
    from langgraph.store.s3dynamo import S3DynamoStore

    sealing: dict[str, Any] = {"keys": {"k1": os.urandom(32)}, "secret": os.urandom(32)}
    if ports == "memory":
        from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
        from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable

        saver = S3DynamoSaver(index=MemoryTable(), object_store=MemoryObjects(), **sealing)
    else:
        from aws_mock import new_client

        saver = S3DynamoSaver(
            dynamodb_client=new_client("dynamodb"),
            s3_client=new_client("s3"),
            table="memory",
            bucket="memory",
            **sealing,
        )
    store = S3DynamoStore.from_saver(saver)
    store.setup()
    return store


async def _rounds(store: Any, n: int) -> dict[str, dict[str, float]]:
    from aws_mock import MOTO
    from langgraph.store.base import PutOp

    for ns in SEARCHED:
        await store.abatch([PutOp(ns, f"s{i}", value(i)) for i in range(SEARCHED_ITEMS)])
    gc_clock = GcClock()
    out: dict[str, dict[str, float]] = {}
    for name in ROUNDS:
        count = SEARCHES_AFTER if name == "search after puts" else n
        if name == "put":
            calls = [store.aput(NAMESPACES[i % 4], f"m{i}", value(i)) for i in range(n)]
        elif name == "get":
            calls = [store.aget(NAMESPACES[i % 4], f"m{i}") for i in range(n)]
        else:
            calls = [
                store.asearch(SEARCHED[i % 4], filter={"n": i % SEARCHED_ITEMS}, limit=2)
                for i in range(count)
            ]
        gc0, (moto0, _) = gc_clock.seconds, MOTO.snapshot()
        cpu0, began = time.process_time(), time.perf_counter()
        results = await asyncio.gather(*calls)
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu0
        moto_cpu = MOTO.snapshot()[0] - moto0
        if name == "get" and any(r is None or r.value["n"] != i for i, r in enumerate(results)):
            raise AssertionError("a get did not read back its item")
        if name.startswith("search") and any(
            [x.value["n"] for x in r] != [i % SEARCHED_ITEMS] for i, r in enumerate(results)
        ):
            raise AssertionError("a search did not find its one item")
        out[name] = {
            "seconds": wall,
            "calls": count,
            "ms_per_call": 1000 * wall / count,
            "cpu_ms_per_call": 1000 * cpu / count,
            "moto_cpu_ms_per_call": 1000 * moto_cpu / count,
            "gc_seconds": gc_clock.seconds - gc0,
        }
        # Freed here, not inside the next round's timing.
        del results, calls
    return out


async def _objects_per_waiting_call(store: Any, n: int) -> float:
    """Objects the garbage collector tracks per call, `n` gathered `aput`s waiting while
    every worker is held (each put waits for `hold` before it writes)."""
    hold = threading.Event()
    put_many = store.space.put_many

    def held(*args: Any) -> Any:
        hold.wait(60)
        return put_many(*args)

    store.space.put_many = held
    gc.collect()
    before = len(gc.get_objects())
    gathered = asyncio.gather(*(store.aput(NAMESPACES[i % 4], f"w{i}", value(i)) for i in range(n)))
    await asyncio.sleep(0.5)
    gc.collect()
    during = len(gc.get_objects())
    hold.set()
    await gathered
    return (during - before) / n


def run_cell(cell: dict[str, Any]) -> Any:
    from aws_mock import aws_account, use_fake_credentials

    use_fake_credentials()
    if cell["pool"] == "unbounded":
        _unbounded()
    if cell.get("objects"):
        return asyncio.run(_objects_per_waiting_call(_store("memory"), cell["n"]))
    if cell["ports"] == "memory":
        return asyncio.run(_rounds(_store("memory"), cell["n"]))
    with aws_account():
        return asyncio.run(_rounds(_store("moto"), cell["n"]))


def _in_subprocess(cell: dict[str, Any]) -> Any:
    out = subprocess.run(
        [sys.executable, __file__, "--cell", json.dumps(cell)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0:
        raise RuntimeError(f"cell {cell} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _moto_version() -> str:
    import moto

    return str(moto.__version__)


def _load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--ports", nargs="*", default=["memory", "moto"])
    parser.add_argument("--pool", nargs="*", default=["bounded"], help="bounded, unbounded")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each in-memory cell, medians reported (a moto cell runs once)",
    )
    parser.add_argument("--out", default=str(HERE / "gathered_calls.md"))
    args = parser.parse_args()
    if args.cell:
        print(json.dumps(run_cell(json.loads(args.cell))))
        return
    command = "python benchmarks/gathered_calls.py " + " ".join(sys.argv[1:])
    began, loads = time.perf_counter(), [_load()]
    rows = []
    for ports in args.ports:
        runs: dict[tuple[int, str], list[dict[str, dict[str, float]]]] = {
            (n, pool): [] for n in args.sizes for pool in args.pool
        }
        # Repeats go round every size and pool, so that all see the machine's load alike.
        for _ in range(args.repeat if ports == "memory" else 1):
            for n in args.sizes:
                for pool in args.pool:
                    cell = {"ports": ports, "n": n, "pool": pool}
                    runs[(n, pool)].append(_in_subprocess(cell))
                    loads.append(_load())
        for n in args.sizes:
            for pool in args.pool:
                result = {
                    name: {
                        k: statistics.median(run[name][k] for run in runs[(n, pool)])
                        for k in runs[(n, pool)][0][name]
                    }
                    for name in ROUNDS
                }
                for name in ROUNDS:
                    r = result[name]
                    rows.append(
                        f"| {ports} | {pool} | {n:,} | {name} | {r['calls']:,.0f} | "
                        f"{r['seconds']:.2f} | "
                        f"{r['ms_per_call']:.3f} | {r['cpu_ms_per_call']:.3f} | "
                        f"{r['moto_cpu_ms_per_call']:.3f} | {r['gc_seconds']:.2f} |"
                    )
                    print(rows[-1], flush=True)
                flat = ROUNDS[:3]  # the rounds of N calls
                total = statistics.median(
                    sum(run[name]["seconds"] for name in flat) for run in runs[(n, pool)]
                )
                rows.append(
                    f"| {ports} | {pool} | {n:,} | {', '.join(flat)} | {3 * n:,} | "
                    f"{total:.2f} | {1000 * total / (3 * n):.3f} | | | |"
                )
    held = []
    for pool in args.pool if "memory" in args.ports else ():
        each = _in_subprocess({"ports": "memory", "n": WAITING, "pool": pool, "objects": True})
        held.append(f"| {pool} | {each:.1f} |")
        print(held[-1], flush=True)
    lines = [
        "# N Store calls gathered at once",
        "",
        f"`{command.strip()}` ({date.today().isoformat()}, {os.cpu_count()} cores shared "
        f"with other work, 1-minute load average {min(loads):.1f} to {max(loads):.1f} as cells "
        f"started and ended, {time.perf_counter() - began:.0f} s). See the module docstring "
        f"for the set-up. In-memory rows: medians of {args.repeat} runs; moto rows: one run.",
        "",
        "| ports | pool | N | round | calls | seconds | ms/call | CPU ms/call "
        "| moto CPU ms/call | GC seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f'"search after puts" is the same {SEARCHES_AFTER} searches at every N, on a table '
        "that also holds the N items put. moto's `Table.query` (moto "
        f"{_moto_version()}, `moto/dynamodb/models/table.py`) lists and sorts every item of "
        "the table for each Query, so moto's CPU per search grows with the table; DynamoDB "
        "reads the Query's partition only.",
    ]
    if held:
        lines += [
            "",
            f"Objects the garbage collector tracks per call while {WAITING:,} gathered `aput`s "
            "wait for workers held busy (in-memory ports):",
            "",
            "| pool | objects per waiting call |",
            "|---|---|",
            *held,
        ]
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
