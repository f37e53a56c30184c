"""Benchmark LangGraph checkpoint savers side by side on identical LangGraph workloads.

    python benchmarks/run.py            # full run, writes benchmarks/results.{md,png}
    python benchmarks/run.py --quick    # smoke run, about a minute

Each saver runs each workload on fresh, empty storage. AWS savers run every workload
twice: once plain (request counts, CPU, bytes stored, wall) and once with the latency
model slept per request (wall only).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import signal
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

# Keep everything local: no tracing uploads, no real AWS identity.
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

import cold_start
from aws_mock import RequestMeter, Stored, use_fake_credentials
from metrics import Row, measure
from pg_server import local_postgres
from report import Report, chart, markdown
from savers import SAVERS, SETTINGS_SWEEP, BenchEnv, SaverSpec, _s3dynamo_missing
from workloads import DURABILITY_SCENARIOS, SCENARIOS, Scale, Scenario

HERE = Path(__file__).resolve().parent
PACKAGES = [
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-s3dynamo",
    "langgraph-checkpoint-aws",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "moto",
    "boto3",
]


# A read phase whose modelled latency adds up to more than this is not re-run with the
# latency slept: reads are sequential, so plain wall - moto + serial latency is its value.
LATENCY_RERUN_CAP_S = 20.0


def run_scenario(
    spec: SaverSpec,
    scenario: Scenario,
    env: BenchEnv,
    scale: Scale,
    sleep: bool,
    skip: frozenset[str] = frozenset(),
) -> tuple[dict[str, Row], str]:
    """Run one scenario on one fresh saver; return its measured rows and state digest."""
    meter = RequestMeter()
    meter.sleep = sleep
    rows: dict[str, Row] = {}
    with spec.open(env) as opened:
        for client in opened.aws_clients:
            meter.instrument(client)
        phases, digest = scenario.build(opened.saver, scale)
        for phase in phases:
            if phase.label in skip:
                continue
            if not phase.measured:
                for op in phase.ops:
                    op()
                continue
            result = measure(phase, meter)
            row = Row(spec.name, phase.label, phase.kind, result, spec.is_aws)
            row.partial = phase.partial
            if phase.kind == "invoke" and not sleep:
                stored = opened.stored_bytes()
                if isinstance(stored, Stored):
                    row.stored, stored = stored, stored.total
                row.stored_bytes = stored
            rows[phase.label] = row
        return rows, digest()


def warm_up(spec: SaverSpec, scenarios: list[Scenario], env: BenchEnv) -> None:
    """Each scenario once at a tiny scale, unmeasured: the first use of a code path in
    moto, LangGraph or the saver pays one-off imports and caches, which would otherwise
    land on whichever saver runs first."""
    tiny = Scale(chat_turns=2, counter_bumps=1, fanout_rounds=1, read_repeats=1, history_repeats=1)
    for scenario in scenarios:
        run_scenario(spec, scenario, env, tiny, sleep=False)
        if spec.is_aws:
            run_scenario(spec, scenario, env, tiny, sleep=True)


def run_saver(
    spec: SaverSpec, scenarios: list[Scenario], env: BenchEnv, scale: Scale
) -> tuple[list[Row], dict[str, str], list[str]]:
    rows: list[Row] = []
    digests: dict[str, str] = {}
    problems: list[str] = []
    for scenario in scenarios:
        started = time.perf_counter()
        plain, digests[scenario.name] = run_scenario(spec, scenario, env, scale, sleep=False)
        if spec.is_aws:
            too_slow = frozenset(
                label
                for label, row in plain.items()
                if row.partial
                or (row.kind == "read" and row.plain.serial_latency > LATENCY_RERUN_CAP_S)
            )
            slept, _ = run_scenario(spec, scenario, env, scale, sleep=True, skip=too_slow)
            for label, row in plain.items():
                if label in too_slow:
                    row.latency_estimated = True
                    continue
                row.with_latency = slept[label].plain
                if row.plain.requests != row.with_latency.requests:
                    problems.append(
                        f"{spec.name} {label}: request counts differ between "
                        "the plain and the latency run"
                    )
        rows += plain.values()
        print(f"  {scenario.name}: {time.perf_counter() - started:.1f}s", flush=True)
    return rows, digests, problems


def machine_facts(total_seconds: float) -> list[str]:
    cpu = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor() or "unknown",
        )
        if Path("/proc/cpuinfo").exists()
        else platform.processor()
    )
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    return [
        f"nproc: {os.cpu_count()}, CPU: {cpu}",
        f"Python {platform.python_version()} on {platform.platform()}",
        "packages: " + ", ".join(versions),
        f"total run time: {total_seconds:.0f} s",
        # The machine may be shared: wall times stretch with the load.
        "load average at the end (1, 5, 15 min): " + ", ".join(f"{x:.1f}" for x in os.getloadavg()),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--savers", nargs="*", help="only these savers (names as in the table)")
    parser.add_argument(
        "--workloads",
        nargs="*",
        help="only these scenarios, e.g. W1 W3; 'W1 sync', 'W1 async' and 'W1 exit' (W1's "
        "chat with that durability) run only when named",
    )
    parser.add_argument("--out", type=Path, default=HERE, help="directory for results.*")
    parser.add_argument(
        "--history-curve",
        nargs="*",
        type=int,
        metavar="TURNS",
        help="only W5/W6 full history after W1/W2 of these lengths (default 10 40 160); "
        "writes history_curve.md",
    )
    args = parser.parse_args()
    if args.history_curve is not None:
        history_curve(args)
        return

    started = time.perf_counter()
    # On `kill`, unwind normally so the PostgreSQL server and temp files are cleaned up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    use_fake_credentials()
    scale = (
        Scale(chat_turns=6, counter_bumps=4, fanout_rounds=2, read_repeats=2, history_repeats=1)
        if args.quick
        else Scale()
    )
    # The beyond-floor ratio moves by 0.3 between single rounds: many rounds, one median.
    cold_runs = 2 if args.quick else 15
    specs = [
        s for s in SAVERS + SETTINGS_SWEEP if s.name in (args.savers or [x.name for x in SAVERS])
    ]
    scenarios = [
        s
        for s in SCENARIOS + DURABILITY_SCENARIOS
        if s.name in (args.workloads or [x.name for x in SCENARIOS])
    ]
    # A run of the durability variants alone compares writes; the cold path is not theirs.
    durability_only = bool(scenarios) and all(s in DURABILITY_SCENARIOS for s in scenarios)

    rows: list[Row] = []
    notes: list[str] = []
    checks: list[str] = []
    digests: dict[str, dict[str, str]] = {}
    cold: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir, local_postgres() as dsn:
        env = BenchEnv(Path(workdir), dsn)
        for spec in specs:
            reason = spec.unavailable(env)
            if reason:
                print(f"skipping {spec.name}: {reason}", flush=True)
                notes.append(f"{spec.name} skipped: {reason}")
                continue
            print(f"{spec.name}", flush=True)
            if not args.quick:  # a smoke run needs no steady-state figures
                warm_up(spec, scenarios, env)
            saver_rows, digests[spec.name], problems = run_saver(spec, scenarios, env, scale)
            rows += saver_rows
            checks += problems
    if (
        any(spec.cold_start for spec in specs)
        and not _s3dynamo_missing(env)
        and not durability_only
    ):
        print("cold start (moto server on 127.0.0.1)", flush=True)
        cold = cold_start.measure(cold_runs)
        print("  " + "\n  ".join(cold_start.summary(cold)), flush=True)

    aws_rows = [r for r in rows if r.with_latency]
    if aws_rows and not any("request counts differ" in c for c in checks):
        checks.append(f"plain and latency runs made identical requests ({len(aws_rows)} rows)")
    checks += _compare_digests(digests, scenarios)
    notes += _row_notes(rows)
    order = {label: i for i, label in enumerate(dict.fromkeys(r.workload for r in rows))}
    rows.sort(key=lambda r: order[r.workload])  # stable: savers stay in list order
    command = "python benchmarks/run.py " + shlex.join(sys.argv[1:])
    report = Report(
        command.strip(), machine_facts(time.perf_counter() - started), rows, cold, notes, checks
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(markdown(report))
    chart(report, args.out / "results.png")
    print(
        f"wrote {args.out / 'results.md'} and results.png in {time.perf_counter() - started:.0f} s"
    )


# Savers and chat lengths the curve leaves out, and why.
CURVE_SKIP = {
    ("DynamoDBSaver", "W2", 160): "not run: DynamoDBSaver's W2 writes slow down with the "
    "thread's length (0.94 s per invoke at 40 turns in results.md), too long for this run",
}
CURVE_SAVERS = ["s3dynamo", "DynamoDBSaver", "PostgresSaver"]


def history_curve(args: argparse.Namespace) -> None:
    """W5/W6 (full get_state_history) after W1/W2 chats of several lengths."""
    started = time.perf_counter()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    use_fake_credentials()
    turns_list = args.history_curve or [10, 40, 160]
    specs = [s for s in SAVERS if s.name in (args.savers or CURVE_SAVERS)]
    scenarios = [s for s in SCENARIOS if s.name in ("W1", "W2")]
    lines: list[list[str]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir, local_postgres() as dsn:
        env = BenchEnv(Path(workdir), dsn)
        for spec in specs:
            reason = spec.unavailable(env)
            if reason:
                notes.append(f"{spec.name} skipped: {reason}")
                continue
            warm_up(spec, scenarios, env)
            # DynamoDBSaver's quadratic W6 is time-boxed as in the main run; the others
            # get long enough to finish.
            budget = Scale().history_budget_s if spec.name == "DynamoDBSaver" else 300.0
            for turns in turns_list:
                for scenario in scenarios:
                    skip = CURVE_SKIP.get((spec.name, scenario.name, turns))
                    label = ("W5" if scenario.name == "W1" else "W6") + " history"
                    if skip:
                        lines.append([str(turns), label, spec.name, skip, "", "", "", ""])
                        continue
                    scale = Scale(
                        chat_turns=turns,
                        read_repeats=1,
                        history_repeats=1,
                        history_budget_s=budget,
                    )
                    reads = frozenset(f"{label[:2]} get_state {w}" for w in ("latest", "old"))
                    rows, _ = run_scenario(spec, scenario, env, scale, sleep=False, skip=reads)
                    lines.append(_curve_line(turns, rows[label]))
                    if rows[label].partial:
                        notes.append(f"{spec.name} {label} at {turns} turns: {rows[label].partial}")
                    print(f"{spec.name} {label} {turns} turns: {lines[-1][4]} ms", flush=True)
    command = "python benchmarks/run.py " + shlex.join(sys.argv[1:])
    out = [
        "# Full history read as the thread grows",
        "",
        "Produced by:",
        "",
        f"    {command.strip()}",
        "",
        *[f"- {fact}" for fact in machine_facts(time.perf_counter() - started)],
        "",
        "One `get_state_history` over the whole thread after a W1 chat (W5) or a W2",
        "DeltaChannel chat (W6) of the given number of turns, moto in process. `latency",
        "model ms` is wall - moto + the modelled latency of every request (DynamoDB 6 ms,",
        "S3 GET 20 ms): the reads are sequential, so nothing overlaps. `≥`: stopped at the",
        "time box, lower bounds.",
        "",
    ]
    out += _curve_table(lines)
    if notes:
        out += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "history_curve.md").write_text("\n".join(out) + "\n")
    print(f"wrote {args.out / 'history_curve.md'} in {time.perf_counter() - started:.0f} s")


def _curve_line(turns: int, row: Row) -> list[str]:
    low = "≥" if row.partial else ""
    plain = row.plain
    requests = sum(plain.requests.values())
    modelled = plain.wall - plain.moto_wall + plain.serial_latency
    return [
        str(turns),
        row.workload,
        row.saver,
        f"{low}{requests:,}" if row.is_aws else "—",
        f"{low}{1000 * modelled:,.0f}",
        f"{low}{1000 * plain.wall:,.0f}",
        f"{low}{1000 * plain.moto_wall:,.0f}" if row.is_aws else "—",
        f"{low}{1000 * plain.cpu:,.0f}",
    ]


def _curve_table(lines: list[list[str]]) -> list[str]:
    header = [
        "turns",
        "read",
        "saver",
        "AWS requests",
        "latency model ms",
        "wall ms",
        "moto ms",
        "CPU ms",
    ]
    lines = sorted(lines, key=lambda line: (line[1], line[2], int(line[0])))
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(line) + " |" for line in lines]


def _row_notes(rows: list[Row]) -> list[str]:
    notes = []
    for row in rows:
        unbilled = [name for name in row.plain.units if name.startswith("unbilled")]
        if unbilled:
            notes.append(f"{row.saver} {row.workload}: no request units computed for {unbilled}")
        if row.partial:
            notes.append(
                f"{row.saver} {row.workload}: {row.partial}; its figures are lower "
                "bounds (≥), and `wall + latency` is computed as below."
            )
        elif row.latency_estimated:
            notes.append(
                f"{row.saver} {row.workload}: `wall + latency` computed as plain "
                "wall - moto + serial latency (sequential reads; over "
                f"{LATENCY_RERUN_CAP_S:.0f} s of latency to re-run)."
            )
    return notes


def _compare_digests(digests: dict[str, dict[str, str]], scenarios: list[Scenario]) -> list[str]:
    """Every saver must have given the graph the same final state."""
    lines = []
    for scenario in scenarios:
        seen = {saver: d[scenario.name] for saver, d in digests.items() if scenario.name in d}
        if len(set(seen.values())) <= 1:
            lines.append(f"{scenario.name}: final state identical across {len(seen)} savers")
        else:
            detail = ", ".join(f"{s} {d}" for s, d in seen.items())
            lines.append(f"{scenario.name}: FINAL STATE DIFFERS between savers ({detail})")
    return lines


if __name__ == "__main__":
    main()
