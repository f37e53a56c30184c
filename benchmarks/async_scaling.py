"""Many async runs in one process (issue 31): throughput as concurrent `ainvoke`s grow.

Each cell runs N concurrent conversations (one thread each, `--turns` sequential
`ainvoke`s of a one-node chat graph whose node is async) in a fresh Python process, so
thread pools, memory and clients start clean. AWS is a moto server in a subprocess on
127.0.0.1 (real HTTP, so the clients' connection pools are in play) that sleeps the
modelled latency per request before answering, outside its lock, and counts the
requests in flight at once. PostgreSQL is a throwaway local server; its latency is
slept once per cursor use (a pipelined group counts as one round trip).

The moto server skips one thing DynamoDB does not do: moto's TransactWriteItems
deep-copies every table it touches to roll back a refused condition, a cost that grows
with the table and is paid under the server's one lock. No run here shares a thread, so
no transaction is refused; the cell checks every state read back.

    python benchmarks/async_scaling.py                   # everything (24 min on a busy 2-core box)
    python benchmarks/async_scaling.py --savers s3dynamo --runs 1 32 --latencies 15
    python benchmarks/async_scaling.py --moto-costs      # moto's time per operation
    python benchmarks/async_scaling.py --plot            # redraw the plot from the table

Writes benchmarks/async_scaling.md and the plot async_scaling.png.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REGION = "us-east-1"
SIZES = (1, 8, 32, 128, 512)
LATENCIES_MS = (15, 100)
# A cell expected (from the series' previous row) to take longer than this is not run.
CELL_BUDGET = 60.0


# ------------------------------------------------------------------ the moto server


def serve(port: int) -> None:
    """moto's app behind one lock, with a modelled latency slept before the lock."""
    import copy

    import moto.dynamodb.models as ddb_models
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    real_deepcopy = copy.deepcopy

    class NoTableBackup:
        # Only TransactWriteItems' rollback copy of whole tables is skipped (see above).
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            if isinstance(value, ddb_models.Table):
                return value
            return real_deepcopy(value, memo)

    ddb_models.copy = NoTableBackup  # type: ignore[assignment]

    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    lock, gauge = threading.Lock(), threading.Lock()
    state = {"latency": 0.0, "now": 0, "most": 0, "requests": 0, "busy": 0.0}

    def handle(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_bench/"):
            if path == "/_bench/reset":
                query = dict(p.split("=") for p in environ["QUERY_STRING"].split("&") if p)
                with gauge:
                    state.update(latency=float(query.get("latency", 0)), most=0)
                    state.update(requests=0, busy=0.0)
            with gauge:
                body = json.dumps(state).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        with gauge:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            state["requests"] += 1
        try:
            time.sleep(state["latency"])
            with lock:
                began = time.perf_counter()
                # The body is produced inside the lock too: moto may build it lazily.
                out = list(app(environ, start_response))
                state["busy"] += time.perf_counter() - began
            return out
        finally:
            with gauge:
                state["now"] -= 1

    run_simple("127.0.0.1", port, handle, threaded=True, request_handler=MotoRequestHandler)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/_bench/state", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the moto server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def server_call(url: str, what: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/_bench/{what}", timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


# ----------------------------------------------------------------------- one cell


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _graph(saver: Any) -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    async def respond(state: MessagesState) -> dict[str, Any]:
        # Async, as a node awaiting a model is: LangGraph runs it on the loop.
        last = state["messages"][-1].content
        return {"messages": [AIMessage(f"turn {len(state['messages']) // 2 + 1}: {last}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    return builder.compile(checkpointer=saver)


@contextlib.contextmanager
def _open(cell: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """The saver of a cell, and a function giving (requests in flight at most, requests)."""
    kind, latency = cell["saver"], cell["latency_ms"] / 1000
    url = cell["url"]
    for name in list(os.environ):
        if name.startswith("AWS_"):
            del os.environ[name]
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION=REGION
    )
    name = f"t{os.getpid()}-{time.monotonic_ns()}"
    if kind == "s3dynamo, in-memory ports":
        yield _memory_saver(cell, latency)
        return
    if kind == "s3dynamo":
        saver_class, settings = _s3dynamo_class(cell)
        saver = saver_class(
            table=name,
            bucket=name,
            region=REGION,
            endpoint_url=url,
            keys={"k1": os.urandom(32)},
            secret=os.urandom(32),
            **settings,
        )
        saver.setup()
    else:
        import boto3
        from langgraph_checkpoint_aws import DynamoDBSaver
        from savers import create_dynamodb_saver_resources

        session = boto3.Session(region_name=REGION)

        class AtEndpoint:
            def client(self, service: str) -> Any:
                return session.client(service, endpoint_url=url)

        create_dynamodb_saver_resources(name, name, AtEndpoint())
        saver = DynamoDBSaver(
            table_name=name,
            region_name=REGION,
            endpoint_url=url,
            s3_offload_config={"bucket_name": name, "endpoint_url": url},
        )
    server_call(url, f"reset?latency={latency}")

    def in_flight() -> tuple[int, int, float]:
        state = server_call(url, "state")
        return int(state["most"]), int(state["requests"]), float(state["busy"])

    yield saver, in_flight


def _s3dynamo_class(cell: dict[str, Any]) -> tuple[type[Any], dict[str, Any]]:
    """The saver class and settings for the cell's pool: the saver's own (default
    size, or `pool` workers), or the event loop's default executor."""
    from langgraph.checkpoint.s3dynamo import S3DynamoSaver

    pool = cell.get("pool", "owned")
    if pool == "default":

        class OnDefaultExecutor(S3DynamoSaver):
            # How every async method ran before the saver owned its pool.
            async def _in_worker(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
                return await asyncio.to_thread(fn, *args, **kwargs)

        return OnDefaultExecutor, {}
    return S3DynamoSaver, ({} if pool == "owned" else {"async_workers": int(pool)})


def _memory_saver(cell: dict[str, Any], latency: float) -> tuple[Any, Any]:
    """s3dynamo on its in-memory ports, the latency slept per port call (outside the
    port's lock): the saver and LangGraph without botocore or a server."""
    from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
    from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable

    gauge, lock = {"now": 0, "most": 0, "requests": 0}, threading.Lock()

    class Delayed:
        def __init__(self, port: Any) -> None:
            self._port = port

        def __getattr__(self, attr: str) -> Any:
            found = getattr(self._port, attr)
            if not callable(found):
                return found

            def call(*args: Any, **kwargs: Any) -> Any:
                with lock:
                    gauge["now"] += 1
                    gauge["most"] = max(gauge["most"], gauge["now"])
                    gauge["requests"] += 1
                try:
                    time.sleep(latency)
                    return found(*args, **kwargs)
                finally:
                    with lock:
                        gauge["now"] -= 1

            return call

    saver_class, settings = _s3dynamo_class(cell)
    saver = saver_class(
        **settings,
        index=Delayed(MemoryTable()),
        object_store=Delayed(MemoryObjects()),
        keys={"k1": os.urandom(32)},
        secret=os.urandom(32),
    )
    saver.setup()
    return saver, lambda: (gauge["most"], gauge["requests"], 0.0)


@contextlib.asynccontextmanager
async def _open_postgres(cell: dict[str, Any]) -> AsyncIterator[tuple[Any, Any]]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    gauge = {"now": 0, "most": 0, "requests": 0}

    class RoundTrips(AsyncPostgresSaver):
        @contextlib.asynccontextmanager
        async def _cursor(self, *, pipeline: bool = False) -> Any:
            async with super()._cursor(pipeline=pipeline) as cur:
                gauge["now"] += 1
                gauge["most"] = max(gauge["most"], gauge["now"])
                gauge["requests"] += 1
                try:
                    await asyncio.sleep(latency)
                    yield cur
                finally:
                    gauge["now"] -= 1

    latency = cell["latency_ms"] / 1000
    async with AsyncConnectionPool(
        cell["dsn"],
        min_size=4,
        max_size=32,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    ) as pool:
        saver = RoundTrips(pool)  # type: ignore[arg-type]
        await saver.setup()
        yield saver, lambda: (gauge["most"], gauge["requests"], 0.0)


async def _run_cell(cell: dict[str, Any], saver: Any, in_flight: Any) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    graph = _graph(saver)
    runs, turns = cell["runs"], cell["turns"]
    # Warm up (clients, connections, the deployment check) on a thread of its own.
    await graph.ainvoke({"messages": [HumanMessage("warm")]}, _config("warm-up"))
    rss0 = _rss_kib("VmRSS")
    durations: list[float] = []

    async def converse(run: int) -> None:
        for turn in range(turns):
            began = time.perf_counter()
            await graph.ainvoke({"messages": [HumanMessage(f"r{run} t{turn}")]}, _config(run))
            durations.append(time.perf_counter() - began)

    _, requests0, busy0 = in_flight()
    cpu0, began = time.process_time(), time.perf_counter()
    await asyncio.gather(*(converse(r) for r in range(runs)))
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu0
    peak = _rss_kib("VmHWM")
    most, requests, busy = in_flight()
    # Every state read back whole: nothing lost or mixed up between runs.
    for run in range(runs):
        state = await graph.aget_state(_config(run))
        said = [m.content for m in state.values["messages"] if m.type == "human"]
        if said != [f"r{run} t{t}" for t in range(turns)]:
            raise AssertionError(f"run {run} read back {said}")
    durations.sort()
    return {
        "turns_per_s": runs * turns / wall,
        "p50_ms": 1000 * statistics.median(durations),
        "p99_ms": 1000 * durations[min(len(durations) - 1, int(0.99 * len(durations)))],
        "in_flight": most,
        "requests_per_turn": (requests - requests0) / (runs * turns),
        "cpu_ms_per_turn": 1000 * cpu / (runs * turns),
        "rss_kib_per_run": max(0, peak - rss0) / runs,
        "wall_s": wall,
        "client_cpu_share": cpu / wall,
        "server_busy_share": (busy - busy0) / wall,
        "threads": threading.active_count(),
    }


# Thread ids of this process's cell: PostgreSQL keeps its tables from cell to cell.
CELL = f"{os.getpid()}-{time.time_ns()}"


def _config(run: int | str) -> Any:
    return {"configurable": {"thread_id": f"{CELL}-run-{run}"}}


def run_cell(cell: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))

    async def main() -> dict[str, Any]:
        if cell["saver"] == "AsyncPostgresSaver":
            async with _open_postgres(cell) as (saver, in_flight):
                return await _run_cell(cell, saver, in_flight)
        with _open(cell) as (saver, in_flight):
            return await _run_cell(cell, saver, in_flight)

    return asyncio.run(main())


def moto_costs(threads: int = 300) -> None:
    """What moto spends per DynamoDB operation of s3dynamo's turns as its table grows
    (moto in process, the same table-backup patch as the server)."""
    import copy
    from collections import Counter, defaultdict

    import moto.dynamodb.models as ddb_models
    from moto import mock_aws
    from moto.core.botocore_stubber import BotocoreStubber

    from langgraph.checkpoint.s3dynamo import S3DynamoSaver

    real_deepcopy = copy.deepcopy

    class NoTableBackup:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, ddb_models.Table) else real_deepcopy(value, memo)

    ddb_models.copy = NoTableBackup  # type: ignore[assignment]
    spent: defaultdict[str, float] = defaultdict(float)
    count: Counter[str] = Counter()
    original = BotocoreStubber.process_request

    def timed(stubber: Any, request: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(stubber, request)
        finally:
            target = request.headers.get("X-Amz-Target", b"s3")
            op = (target.decode() if isinstance(target, bytes) else target).split(".")[-1]
            spent[op] += time.perf_counter() - began
            count[op] += 1

    BotocoreStubber.process_request = timed  # type: ignore[method-assign]
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    with mock_aws():
        saver = S3DynamoSaver(table="costs", bucket="costs-bucket", region=REGION, plaintext=True)
        saver.setup()
        graph = _graph(saver)

        async def batch(first: int) -> None:
            from langchain_core.messages import HumanMessage

            for run in range(first, first + threads):
                await graph.ainvoke({"messages": [HumanMessage("hi")]}, _config(run))

        for done in (threads, 2 * threads):
            spent.clear()
            count.clear()
            asyncio.run(batch(done - threads))
            each = ", ".join(f"{op} {1000 * spent[op] / count[op]:.1f} ms" for op in sorted(count))
            print(f"threads {done - threads + 1} to {done}: moto per request: {each}")


# ------------------------------------------------------------------------- driver


def _cell_in_subprocess(cell: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--cell", json.dumps(cell)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _turns(runs: int, latency_ms: int) -> int:
    # Bounded cells: a few hundred turns each, fewer per run at 512.
    if runs == 1:
        return 30 if latency_ms <= 15 else 6
    if runs >= 512:
        return 1
    return max(2, min(12, 256 // runs)) if latency_ms <= 15 else max(2, min(6, 128 // runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", type=int)
    parser.add_argument("--cell")
    parser.add_argument("--moto-costs", action="store_true", help="moto's time per operation")
    parser.add_argument(
        "--savers",
        nargs="*",
        default=["s3dynamo", "DynamoDBSaver", "AsyncPostgresSaver", "s3dynamo, in-memory ports"],
    )
    parser.add_argument("--runs", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--latencies", nargs="*", type=int, default=list(LATENCIES_MS))
    parser.add_argument(
        "--pools",
        nargs="*",
        default=["default", "8", "32", "64", "128"],
        help="pool sizes compared at 32 and 128 runs, 15 ms (in-memory ports)",
    )
    parser.add_argument("--out", default=str(HERE / "async_scaling.md"))
    parser.add_argument("--plot", action="store_true", help="only redraw the plot of --out")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if args.cell:
        print(json.dumps(run_cell(json.loads(args.cell))))
        return
    if args.moto_costs:
        moto_costs()
        return
    if args.plot:
        plot(Path(args.out))
        return

    sys.path.insert(0, str(HERE))
    rows: list[tuple[dict[str, Any], dict[str, Any]]] = []
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(moto_server())
        dsn = None
        if "AsyncPostgresSaver" in args.savers:
            from pg_server import local_postgres

            dsn = stack.enter_context(local_postgres())
        cells: list[dict[str, Any]] = []
        for latency in args.latencies:
            for saver in args.savers:
                if saver == "AsyncPostgresSaver" and dsn is None:
                    continue
                for runs in args.runs:
                    cells.append({"saver": saver, "latency_ms": latency, "runs": runs})
        for saver, pools in (("s3dynamo", ["default"]), ("s3dynamo, in-memory ports", args.pools)):
            for pool in pools if saver in args.savers else ():
                for runs in (32, 128):
                    cells.append({"saver": saver, "latency_ms": 15, "runs": runs, "pool": pool})
        last: dict[str, float] = {}  # turns/s of each series' previous cell
        loads: list[float] = []
        for cell in cells:
            cell.update(url=url, dsn=dsn, turns=_turns(cell["runs"], cell["latency_ms"]))
            series = f"{_label(cell)} {cell['latency_ms']}"
            estimate = cell["runs"] * cell["turns"] / last[series] if series in last else 0
            result: dict[str, Any]
            if estimate > CELL_BUDGET:
                result = {"error": f"not run: about {estimate:.0f} s at the previous row's rate"}
            else:
                loads.append(os.getloadavg()[0])
                result = _cell_in_subprocess(cell)
                last[series] = float(result.get("turns_per_s", 0)) or 1e-3
            rows.append((cell, result))
            print(_line(cell, result), flush=True)
    elapsed = time.perf_counter() - began
    Path(args.out).write_text(_report(rows, elapsed, loads or [0.0], dsn is not None))
    print(f"wrote {args.out} ({elapsed:.0f} s)")
    plot(Path(args.out))


def plot(table: Path) -> None:
    """Turns/s against concurrent runs, one line per saver and latency, from the
    table of `table` (so a plot can be redrawn from a results file); beside it as .png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for line in table.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 5 or not cells[2].isdigit() or "error" in cells[4]:
            continue
        series.setdefault((cells[0], cells[1]), []).append((int(cells[2]), float(cells[4])))
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    names = sorted({saver for saver, _ in series})
    colors = {name: f"C{i}" for i, name in enumerate(names)}
    for ax, latency in zip(axes, ("15 ms", "100 ms"), strict=True):
        for (saver, lat), points in sorted(series.items()):
            if lat == latency and len(points) > 2:
                label = "s3dynamo (moto server)" if saver == "s3dynamo" else saver
                ax.plot(*zip(*points, strict=True), marker="o", label=label, color=colors[saver])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("concurrent runs")
        ax.set_ylabel("turns/s")
        ax.set_title(f"{latency} per request")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(table.with_suffix(".png"), dpi=100)


def _label(cell: dict[str, Any]) -> str:
    pool = cell.get("pool")
    if pool is None:
        return str(cell["saver"])
    return f"{cell['saver']}, {'default executor' if pool == 'default' else pool + ' workers'}"


def _line(cell: dict[str, Any], r: dict[str, Any]) -> str:
    head = f"{_label(cell)} {cell['latency_ms']} ms x{cell['runs']} ({cell['turns']} turns)"
    if "error" in r:
        return f"{head}: error {r['error']}"
    return (
        f"{head}: {r['turns_per_s']:.1f} turns/s, p50 {r['p50_ms']:.0f} ms, "
        f"p99 {r['p99_ms']:.0f} ms, in flight {r['in_flight']}, "
        f"{r['requests_per_turn']:.1f} req/turn, CPU {r['cpu_ms_per_turn']:.1f} ms/turn, "
        f"{r['rss_kib_per_run']:.0f} KiB/run, client CPU {r['client_cpu_share']:.0%}, "
        f"server busy {r['server_busy_share']:.0%}"
    )


def _report(
    rows: list[tuple[dict[str, Any], dict[str, Any]]],
    elapsed: float,
    loads: list[float],
    postgres: bool,
) -> str:
    out = [
        "# Async scaling: many concurrent runs in one process",
        "",
        f"`python benchmarks/async_scaling.py` ({time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores shared with other work, load average {min(loads):.1f} to "
        f"{max(loads):.1f} as cells started, {elapsed:.0f} s). "
        "See the module docstring for the set-up."
        + ("" if postgres else " PostgreSQL could not be started: no AsyncPostgresSaver rows."),
        "",
        "| saver | latency/request | concurrent runs | turns | turns/s | x one run | p50 ms |"
        " p99 ms | max in flight | requests/turn | CPU ms/turn | client CPU | server busy |"
        " server ms/request | RSS KiB/run |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    one: dict[tuple[str, int], float] = {}
    for cell, r in rows:
        if "error" in r:
            out.append(
                f"| {_label(cell)} | {cell['latency_ms']} ms | {cell['runs']} | "
                f"{cell['turns']} | error: {r['error']} ||||||||||"
            )
            continue
        key = (_label(cell), cell["latency_ms"])
        if cell["runs"] == 1:
            one[key] = r["turns_per_s"]
        base = one.get(key) or one.get((cell["saver"], cell["latency_ms"]))
        ratio = f"{r['turns_per_s'] / base:.1f}" if base else "—"
        per_second = r["turns_per_s"] * r["requests_per_turn"]
        busy = r["server_busy_share"]
        server_ms = f"{1000 * busy / per_second:.1f}" if busy and per_second else "—"
        out.append(
            f"| {_label(cell)} | {cell['latency_ms']} ms | {cell['runs']} | {cell['turns']} | "
            f"{r['turns_per_s']:.1f} | {ratio} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} | "
            f"{r['in_flight']} | {r['requests_per_turn']:.1f} | {r['cpu_ms_per_turn']:.1f} | "
            f"{r['client_cpu_share']:.0%} | {r['server_busy_share']:.0%} | {server_ms} | "
            f"{r['rss_kib_per_run']:.0f} |"
        )
    out += [
        "",
        '"x one run" divides by the same saver\'s one-run throughput at that latency (the pool'
        ' rows by the same saver\'s with its own pool). "Max in flight" is the most requests '
        "the server (moto, PostgreSQL round trips, in-memory port calls) had at once. CPU is "
        'the client process\'s, per turn; "client CPU" is its CPU time over wall time (100% = '
        'one core); "server busy" the share of wall time moto spent answering under its one '
        "lock (100% caps the cell), and server ms/request that time over the requests "
        "answered. RSS per run is the process's peak resident memory during the cell less "
        "before it, over the concurrent runs.",
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    main()
