"""Scale model: the monthly bill and the retention sweep at 10^4, 10^6 and 10^8 threads.

    python benchmarks/scale_model.py                 # from the recorded measurements
    python benchmarks/scale_model.py --measure       # re-run the sweep measurement first

Nothing here is estimated by hand. Per-thread figures come from two measurements on
moto, billed by `billing.py` at the list prices it states:

- `results.md` (a `make bench` run): W1's write and read units and requests per invoke,
  for s3dynamo sealed (`s3dynamo+enc`) and DynamoDBSaver, and what a W1 conversation
  leaves stored (DynamoDBSaver's item bytes as the table prints them, 3 figures).
- `scale_model/retention_run.txt`, the output of `benchmarks/retention.py --threads 4
  --turns 40`: a sealed W1 conversation's stored bytes, what removing it costs, and the
  read units of a Scan over a table of such conversations (`retention.scan_units`).

The workload mix (stated in the output): the table holds N W1 conversations; each month
a share of them has been idle past the TTL and is removed, and as many new ones are
written (40 invokes each), so N stays the same; the sweep runs `--sweeps` times a month.
"Before" finds idle threads with one Scan of the whole table per sweep (`expire --full`,
and the first sweep); "after" Queries the idle index after its cursor (`ops/sweep.py`),
measured by the same retention run as a daily schedule runs it (`redesigned_sweep`).
DynamoDBSaver is run with `ttl_seconds`: DynamoDB's TTL deletes its items for free, so it
has no sweep.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from billing import DYNAMODB_RRU, DYNAMODB_WRU, request_dollars, storage_dollars  # noqa: E402

RETENTION_RUN = HERE / "scale_model" / "retention_run.txt"
RETENTION_COMMAND = ["benchmarks/retention.py", "--threads", "4", "--turns", "40"]
THREADS = (10**4, 10**6, 10**8)
W1_INVOKES = 40  # workloads.Scale.chat_turns: one W1 conversation
S3_OPS = {"PutObject", "GetObject", "HeadObject", "ListObjectsV2", "DeleteObjects", "CopyObject"}
# Lambda, x86_64, us-east-1, read 2026-11-30 (as retention.py): $ per GB-second, 512 MB.
LAMBDA_GB_SECOND = 0.0000166667
SWEEP_MEMORY_GB = 0.5


@dataclass(frozen=True)
class Saver:
    """What one W1 conversation costs one saver, from the measurements."""

    name: str
    dollars_per_conversation: float  # its 40 invokes' requests and units
    storage_per_month: float  # what it leaves stored, for a month
    ddb_bytes: float  # item bytes a Scan would read


@dataclass(frozen=True)
class Indexed:
    """The sweep from the idle index, from the retention run."""

    per_sweep: float  # a sweep that removes nothing: the cursor and the index Queries
    per_thread: float  # what each removed thread adds, requests and units
    lambda_dollars: float


# The idle index, by AWS's rule for global secondary index writes ("Using Global
# Secondary Indexes in DynamoDB", provisioned throughput considerations): an item that gains the
# index key is one index write, a key that changes two, an item deleted one, a write
# that leaves the key as it was none. A W1 conversation (40 invokes on one day) costs:
# 1 (its head created) + 2 (the tombstone moves it to the removal's day) + 1 (the
# tombstone deleted a TTL later) = 4 write units, each entry being under 1 KB; every
# further day a thread is written on adds 2.
INDEX_WRITES_PER_CONVERSATION = 4
# One entry: pk (22-character name and "!") + sk ("head#" and a 12-character namespace
# hash) + ik (`20261201#07`) + the three attribute names, plus DynamoDB's 100 bytes of
# item overhead (added by `storage_dollars`).
INDEX_ENTRY_BYTES = 23 + 17 + 11 + 6


@dataclass(frozen=True)
class Removal:
    """s3dynamo's sweep, per thread, from the retention run."""

    dollars: float  # requests and units to remove one idle thread
    lambda_dollars: float  # the sweep function's time for it
    ddb_bytes: float
    ddb_items: float
    s3_bytes: float


def _cells(markdown: str, table_header: str, workload: str, saver: str) -> list[str]:
    """The cells of the row `| workload | saver | ...` in the table under this header."""
    start = markdown.index(table_header)
    for line in markdown[start:].splitlines()[1:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] == workload and cells[1] == saver:
            return cells
    raise LookupError(f"no row {workload!r} / {saver!r} under {table_header!r} in results.md")


def _size(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}[unit]


def w1_saver(markdown: str, saver: str, name: str, removal: Removal | None) -> Saver:
    cost = _cells(markdown, "| workload | saver | WRU/op |", "W1 chat", saver)
    wru, rru = float(cost[2]), float(cost[3])
    ops = _cells(markdown, "| workload | saver | requests per op |", "W1 chat", saver)[2]
    counts: Counter[str] = Counter()
    for part in ops.split(","):
        op, n = part.split()
        counts[("s3." if op in S3_OPS else "dynamodb.") + op] += float(n)  # type: ignore[assignment]
    per_invoke = request_dollars(counts, Counter(wru=wru, rru=rru))  # type: ignore[arg-type]
    if removal is not None:  # the retention run's exact bytes for the same conversation
        items, ddb, s3 = removal.ddb_items, removal.ddb_bytes, removal.s3_bytes
    else:
        items_s, ddb_s, s3_s = (p.strip() for p in cost[5].split("/"))
        items, ddb, s3 = float(items_s), _size(ddb_s), _size(s3_s)
    return Saver(name, per_invoke * W1_INVOKES, storage_dollars(int(ddb), int(items), int(s3)), ddb)


def read_indexed(text: str) -> Indexed:
    part = text[text.index("indexed sweep") :]

    def find(pattern: str) -> str:
        m = re.search(pattern, part)
        if m is None:
            raise LookupError(f"{pattern!r} not in {RETENTION_RUN}; re-run with --measure")
        return m.group(1)

    def counts_of(listing: str) -> Counter[str]:
        counts: Counter[str] = Counter()
        for item in listing.split(", "):
            op, n = item.split()
            counts[op] += float(n)  # type: ignore[assignment]
        return counts

    empty = counts_of(find(r"removes nothing: ([^;]*);"))
    empty_units = Counter(
        wru=float(find(r"removes nothing: .*; write units (\S+),")),
        rru=float(find(r"removes nothing: .*read units (\S+)\n")),
    )
    per = counts_of(find(r"requests per removed thread: (.*)"))
    units = Counter(
        wru=float(find(r"write units per removed thread (\S+),")),
        rru=float(find(r"write units per removed thread .*read units (\S+)\n")),
    )
    seconds = float(find(r"modelled request time per removed thread (\S+) s"))
    from langgraph.checkpoint.s3dynamo.ops.retention import PARALLEL_THREADS

    return Indexed(
        per_sweep=request_dollars(empty, empty_units),  # type: ignore[arg-type]
        per_thread=request_dollars(per, units)  # type: ignore[arg-type]
        + INDEX_WRITES_PER_CONVERSATION * DYNAMODB_WRU,
        lambda_dollars=seconds / PARALLEL_THREADS * SWEEP_MEMORY_GB * LAMBDA_GB_SECOND,
    )


def read_removal(text: str) -> Removal:
    def find(pattern: str, number: bool = True) -> str:
        m = re.search(pattern, text)
        if m is None:
            raise LookupError(f"{pattern!r} not in {RETENTION_RUN}; re-run with --measure")
        return m.group(1).replace(",", "") if number else m.group(1)

    counts: Counter[str] = Counter()
    for part in find(r"requests per removed thread: (.*)", number=False).split(", "):
        op, n = part.split()
        counts[op] += float(n)  # type: ignore[assignment]
    units = Counter(wru=float(find(r"write units per thread (\S+),")), rru=0.0)
    units["rru"] = float(find(r"read units (\S+)\n"))  # type: ignore[assignment]
    seconds = float(find(r"modelled request time per thread (\S+) s"))
    parallel = float(find(r"at (\d+) threads at once"))
    return Removal(
        dollars=request_dollars(counts, units),  # type: ignore[arg-type]
        lambda_dollars=seconds / parallel * SWEEP_MEMORY_GB * LAMBDA_GB_SECOND,
        ddb_bytes=float(find(r"per thread: ([\d,]+) DynamoDB bytes")),
        ddb_items=float(find(r"DynamoDB bytes in ([\d.,]+) items")),
        s3_bytes=float(find(r"items, ([\d,]+) S3 bytes")),
    )


def scan_dollars(ddb_bytes: float) -> float:
    """One eventually consistent Scan of a table holding this many item bytes."""
    from retention import scan_units

    return scan_units(int(ddb_bytes)) * DYNAMODB_RRU


def redesigned_sweep(indexed: Indexed, threads: int, expired: float, sweeps: int) -> float:
    """Monthly dollars of the sweep from the idle index: its per-sweep Queries, what each
    expired thread adds (with its index writes), and the index's storage."""
    storage = storage_dollars(INDEX_ENTRY_BYTES * threads, threads, 0)
    return (
        sweeps * indexed.per_sweep
        + expired * (indexed.per_thread + indexed.lambda_dollars)
        + storage
    )


@dataclass(frozen=True)
class Row:
    saver: str
    threads: int
    expired: float
    writes: float
    storage: float
    scan: float
    removal: float
    redesigned: float | None

    @property
    def sweep(self) -> float:
        return self.scan + self.removal

    @property
    def month(self) -> float:
        return self.writes + self.storage + self.sweep


def model(
    s3d: Saver, ddb: Saver, removal: Removal, indexed: Indexed, share: float, sweeps: int
) -> list[Row]:
    rows = []
    for n in THREADS:
        expired = n * share
        rows.append(
            Row(
                "s3dynamo today (Scan per sweep)",
                n,
                expired,
                expired * s3d.dollars_per_conversation,
                n * s3d.storage_per_month,
                sweeps * scan_dollars(n * s3d.ddb_bytes),
                expired * (removal.dollars + removal.lambda_dollars),
                redesigned_sweep(indexed, n, expired, sweeps),
            )
        )
        # DynamoDB TTL deletes cost nothing and there is no sweep to run.
        rows.append(
            Row(
                "DynamoDBSaver, DynamoDB TTL",
                n,
                expired,
                expired * ddb.dollars_per_conversation,
                n * ddb.storage_per_month,
                0.0,
                0.0,
                None,
            )
        )
    return rows


def money(x: float) -> str:
    return f"${x:,.2f}" if x >= 1 or x == 0 else f"${x:.3g}"


SHARES = (0.001, 0.01, 0.1, 1.0)


def per_expired(s3d: Saver, removal: Removal, share: float, sweeps: int) -> float:
    """s3dynamo's sweep dollars per expired thread when `share` of the table expires a
    month: the Scans are paid per thread stored, so they are divided among fewer."""
    n = THREADS[1]
    return (sweeps * scan_dollars(n * s3d.ddb_bytes)) / (n * share) + (
        removal.dollars + removal.lambda_dollars
    )


def per_expired_after(indexed: Indexed, threads: int, share: float, sweeps: int) -> float:
    """The indexed sweep's dollars per expired thread (its index storage included)."""
    return redesigned_sweep(indexed, threads, threads * share, sweeps) / (threads * share)


def report(
    rows: list[Row],
    s3d: Saver,
    ddb: Saver,
    removal: Removal,
    indexed: Indexed,
    args: argparse.Namespace,
) -> str:
    out = [
        "# Scale model: monthly bill and retention sweep",
        "",
        "Produced by:",
        "",
        "    python benchmarks/scale_model.py"
        + (f" --idle-share {args.idle_share}" if args.idle_share != 0.1 else "")
        + (f" --sweeps {args.sweeps}" if args.sweeps != 30 else ""),
        "",
        "from `benchmarks/results.md` (W1 per invoke) and",
        "`benchmarks/scale_model/retention_run.txt`",
        f"(`python {' '.join(RETENTION_COMMAND)}`), billed at the on-demand us-east-1 list prices",
        "in `billing.py`. Workload mix: the table holds N W1 conversations (40 invokes each);",
        f"each month {args.idle_share:.0%} of them are idle past the TTL and removed, and as many",
        f"new ones are written; the sweep runs {args.sweeps} times a month.",
        "",
        "Per W1 conversation, measured:",
        "",
        "| saver | requests of its 40 invokes | storage per month | DynamoDB item bytes |",
        "|---|---|---|---|",
        f"| s3dynamo sealed | {money(s3d.dollars_per_conversation)} "
        f"| {money(s3d.storage_per_month)} | {s3d.ddb_bytes:,.0f} |",
        f"| DynamoDBSaver | {money(ddb.dollars_per_conversation)} "
        f"| {money(ddb.storage_per_month)} | {ddb.ddb_bytes:,.0f} |",
        "",
        f"Removing one idle s3dynamo conversation: {money(removal.dollars)} in requests and",
        f"units, {money(removal.lambda_dollars)} of the sweep function's time (512 MB, modelled",
        "latencies).",
        "",
        "| threads | saver | expired / month | writes | storage | sweep: Scans | sweep: removals "
        "| sweep / month | sweep per expired thread | indexed sweep / month "
        "| indexed sweep per expired thread | month |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        redesigned = "—" if r.redesigned is None else money(r.redesigned)
        after = "—" if r.redesigned is None else money(r.redesigned / r.expired)
        out.append(
            f"| {r.threads:,} | {r.saver} | {r.expired:,.0f} | {money(r.writes)} | "
            f"{money(r.storage)} | {money(r.scan)} | {money(r.removal)} | {money(r.sweep)} | "
            f"{money(r.sweep / r.expired)} | {redesigned} | {after} | {money(r.month)} |"
        )
    out += [
        "",
        "The Scan sweep's cost per expired thread depends on the share that expires, not on",
        "N (both the Scans and the expiries grow with N); the indexed sweep's is nearly the",
        "same at any share (its per-sweep Queries are spread over the expired threads). At",
        f"{args.sweeps} sweeps a month, a table of {THREADS[1]:,} threads:",
        "",
        "| share of the table expiring a month | before: Scan per sweep, $ per expired thread "
        "| after: idle index | DynamoDBSaver with TTL |",
        "|---|---|---|---|",
    ]
    for share in SHARES:
        out.append(
            f"| {share:.1%} | {money(per_expired(s3d, removal, share, args.sweeps))} "
            f"| {money(per_expired_after(indexed, THREADS[1], share, args.sweeps))} | $0 |"
        )
    out += [
        "",
        f"The indexed sweep: {money(indexed.per_sweep)} per sweep that removes nothing (the",
        "cursor and 32 shards' Queries for the days since the last sweep), then",
        f"{money(indexed.per_thread)} per expired thread in requests and units (its",
        f"{INDEX_WRITES_PER_CONVERSATION} index write units included: rule above "
        "`INDEX_WRITES_PER_CONVERSATION`)",
        f"and {money(indexed.lambda_dollars)} of the sweep function's time; the index's storage",
        f"({INDEX_ENTRY_BYTES} bytes and 100 of overhead per thread) is in its monthly column.",
    ]
    out += [
        "",
        "Not in the figures: DynamoDBSaver's `ttl` attribute on each item (the benchmark built",
        "it without `ttl_seconds`, so its item bytes lack it); the sweep function's time",
        "spent on the Scan itself (only removal time is modelled); S3 lifecycle rules, which",
        "W1 does not need for DynamoDBSaver (it wrote no S3 object); for both s3dynamo",
        "sweeps, the later removal of each expired thread's tombstone once older than the TTL",
        "(the retention run does not reach it); for the indexed sweep, threads written on",
        "more than one day (2 index write units for each further day).",
    ]
    return "\n".join(out) + "\n"


def plot(
    rows: list[Row], s3d: Saver, removal: Removal, indexed: Indexed, sweeps: int, path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    mine = [r for r in rows if r.saver.startswith("s3dynamo")]
    theirs = [r for r in rows if r.saver.startswith("DynamoDBSaver")]
    xs = [r.threads for r in mine]
    left.plot(xs, [r.month for r in mine], "o-", label=f"{mine[0].saver}: month")
    left.plot(xs, [r.sweep for r in mine], "o:", label=f"{mine[0].saver}: its sweep")
    left.plot(
        xs, [r.redesigned or 0.0 for r in mine], "^:", label="s3dynamo, idle index: its sweep"
    )
    left.plot(xs, [r.month for r in theirs], "s--", label=f"{theirs[0].saver}: month")
    left.set(
        xscale="log",
        yscale="log",
        xlabel="threads in the table",
        ylabel="$ per month",
        title=f"Monthly bill ({mine[0].expired / xs[0]:.0%} expire a month)",
    )
    shares = [s / 1000 for s in range(1, 1001)]
    right.plot(
        shares,
        [per_expired(s3d, removal, s, sweeps) for s in shares],
        "-",
        label="s3dynamo before (Scan per sweep)",
    )
    right.plot(
        shares,
        [per_expired_after(indexed, THREADS[1], s, sweeps) for s in shares],
        "--",
        label="s3dynamo after (idle index)",
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="share of the table expiring a month",
        ylabel="$ per expired thread",
        title=f"Sweep cost per expired thread ({sweeps} sweeps a month, 10^6 threads)",
    )
    right.text(
        0.45,
        0.85,
        "DynamoDBSaver with TTL: $0 (TTL deletes are free)",
        transform=right.transAxes,
        fontsize=8,
        color="grey",
    )
    for ax in (left, right):
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="lower left" if ax is right else "upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--idle-share",
        type=float,
        default=0.1,
        help="share of the table's threads expiring each month (default 0.1)",
    )
    parser.add_argument("--sweeps", type=int, default=30, help="sweeps a month (default 30)")
    parser.add_argument(
        "--measure",
        action="store_true",
        help=f"run `{' '.join(RETENTION_COMMAND)}` first (a minute or two)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "scale_model")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.measure:
        done = subprocess.run(
            [sys.executable, *RETENTION_COMMAND],
            check=True,
            capture_output=True,
            text=True,
            cwd=HERE.parent,
        )
        RETENTION_RUN.write_text(f"$ python {' '.join(RETENTION_COMMAND)}\n{done.stdout}")
    removal = read_removal(RETENTION_RUN.read_text())
    indexed = read_indexed(RETENTION_RUN.read_text())
    markdown = (HERE / "results.md").read_text()
    s3d = w1_saver(markdown, "s3dynamo+enc", "s3dynamo sealed", removal)
    ddb = w1_saver(markdown, "DynamoDBSaver", "DynamoDBSaver", None)
    rows = model(s3d, ddb, removal, indexed, args.idle_share, args.sweeps)
    (args.out / "results.md").write_text(report(rows, s3d, ddb, removal, indexed, args))
    plot(rows, s3d, removal, indexed, args.sweeps, args.out / "scale_model.png")
    print((args.out / "results.md").read_text())


if __name__ == "__main__":
    main()
