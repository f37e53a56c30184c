"""Writing results.md (tables) and results.png (bar charts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cold_start
from cold_start import FLOOR
from metrics import Row


@dataclass
class Report:
    command: str
    machine: list[str]
    rows: list[Row]
    cold_start: dict[str, Any]  # cold_start.measure(), or {} when not run
    notes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)


def _num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _bytes(value: int | None) -> str:
    if value is None:
        return "—"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value} B"


def _cells(row: Row) -> list[str]:
    # ≥: the phase stopped early (time budget); ≈: computed, not measured (see notes).
    low = "≥" if row.partial else ""
    approx = "≈" if row.latency_estimated and not row.partial else ""

    def figure(value: float | None, mark: str = low) -> str:
        return "—" if value is None else mark + _num(value)

    return [
        row.workload,
        row.saver,
        figure(row.requests_per_op),
        figure(row.serial_latency_ms),
        _bytes(row.stored_bytes),
        figure(row.wall_ms),
        figure(row.wall_latency_ms, low + approx),
        figure(row.cpu_ms),
        figure(row.moto_ms),
    ]


def _table(header: Sequence[str], lines: list[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cells) + " |" for cells in lines]
    return out


def markdown(report: Report) -> str:
    out = [
        "# Checkpoint saver benchmarks",
        "",
        "Produced by:",
        "",
        f"    {report.command}",
        "",
        *[f"- {fact}" for fact in report.machine],
        "",
        "Per-op figures are per invoke for the chat, document and fan-out workloads and per",
        "read for W5/W6. AWS savers run against in-process moto; `serial latency` is the sum",
        "of modelled request latencies (DynamoDB 6 ms, S3 PUT 30 ms, other S3 20 ms) and",
        "`wall + latency` is measured with those latencies slept per request, less the time",
        "moto took to answer (AWS's own time is inside the modelled latency). CPU excludes",
        "moto's own CPU; `moto` is the wall time moto spent answering, included in `wall`.",
        "See README.md for the method.",
        "",
    ]
    out += _table(
        [
            "workload",
            "saver",
            "requests/op",
            "serial latency ms/op",
            "stored",
            "wall ms/op",
            "wall + latency ms/op",
            "CPU ms/op",
            "moto ms/op",
        ],
        [_cells(row) for row in report.rows],
    )
    out += _cost_section(report.rows)
    out += ["", "## AWS requests per op, by operation", ""]
    out += _table(
        ["workload", "saver", "requests per op"],
        [[row.workload, row.saver, row.request_mix()] for row in report.rows if row.is_aws],
    )
    out += _cold_start_section(report.cold_start)
    for title, items in (("Checks", report.checks), ("Notes", report.notes)):
        if items:
            out += ["", f"## {title}", "", *[f"- {item}" for item in items]]
    return "\n".join(out) + "\n"


CONVERSATIONS_PER_MONTH = 10_000


def _cold_start_section(cold: dict[str, Any]) -> list[str]:
    if not cold:
        return []
    medians = cold["medians"]
    base = medians["InMemorySaver"]["saver_part"]
    floor_part = medians[FLOOR]["saver_part"] if FLOOR in medians else None
    out = [
        "",
        f"## Lambda cold path (median of {cold['runs']} fresh interpreters, ms)",
        "",
        "A fresh `python` imports LangGraph and the saver (which imports what it needs of",
        "the AWS SDK), compiles a two-node `add_messages` graph with the saver and invokes",
        "it once on a new thread; AWS savers talk to moto server over HTTP on 127.0.0.1",
        "(see cold_start.py). `botocore floor` is the InMemorySaver handler that also, right",
        "after LangGraph's import, imports `botocore.session` and builds one DynamoDB client",
        "(no request): the least a saver on botocore pays; its `saver import` holds both.",
        "All kinds run round robin. `saver part` is all after LangGraph's import; `over",
        "InMemorySaver` is the difference of the `saver part` medians, which keeps the",
        "noise of LangGraph's large import (paid alike by all) out of it; `beyond floor`",
        "is the saver's `saver part` median minus the floor child's. `SDK import` is",
        "wall time importing boto3/botocore modules, wherever it happens (DynamoDBSaver:",
        "its import, boto3; s3dynamo: its first request, botocore alone);",
        "`clients` is wall time in botocore's client creation (DynamoDBSaver: its",
        "constructor; s3dynamo: the first request, only the clients it uses); `requests`",
        "is wall time in API calls, summed over threads (moto server's answers included).",
        "These three are parts of the columns before them, not additions.",
        "",
    ]
    lines = []
    for saver, m in medians.items():
        clients = ", ".join(
            f"{key.split()[1]} {_num(value)}"
            for key, value in m.items()
            if key.startswith("client ")
        )
        lines.append(
            [
                saver,
                _num(m["total"]),
                _num(m["interpreter"]),
                _num(m["langgraph_import"]),
                _num(m["saver_import"]),
                _num(m["build"]),
                _num(m["first_request"]),
                _num(m["sdk_import"]) if "sdk_import" in m else "—",
                clients or "—",
                f"{_num(m['requests'])} ({m['request_count']:.0f})",
                _num(m["saver_part"]),
                "—" if saver == "InMemorySaver" else f"+{m['saver_part'] - base:,.0f}",
                "—"
                if floor_part is None or saver in ("InMemorySaver", FLOOR)
                else f"{m['saver_part'] - floor_part:+,.0f}",
            ]
        )
    out += _table(
        [
            "handler",
            "total",
            "interpreter",
            "LangGraph import",
            "saver import",
            "build",
            "first request",
            "SDK import",
            "clients",
            "requests (count)",
            "saver part",
            "over InMemorySaver",
            "beyond floor",
        ],
        lines,
    )
    if "s3dynamo" in medians and "DynamoDBSaver" in medians:
        ours = medians["s3dynamo"]["saver_part"] - base
        theirs = medians["DynamoDBSaver"]["saver_part"] - base
        out += [
            "",
            f"s3dynamo adds {ours:.0f} ms, DynamoDBSaver {theirs:.0f} ms: "
            f"{ours / theirs:.2f} of it (the target is on the part beyond botocore's floor).",
        ]
    floor_text = cold_start.floor_lines(cold)  # the lines run.py prints, as bullets
    if floor_text:
        out += ["", *[f"- {line}" for line in floor_text]]
    names = list(cold["imports"])
    modules = list(dict.fromkeys(m for found in cold["imports"].values() for m in found))
    out += [
        "",
        "Cumulative import time (ms) of selected modules, one `python -X importtime` run",
        "each (importtime itself slows imports; a module is counted where first imported):",
        "",
    ]
    out += _table(
        ["module", *names],
        [[m, *[_num(cold["imports"][n].get(m)) for n in names]] for m in modules],
    )
    return out


def _dollars(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:,.2f}" if value >= 1 else f"${value:.3g}"


def _cost_section(rows: list[Row]) -> list[str]:
    """Dollars at on-demand list prices (billing.py), and a monthly bill for W1."""
    out = [
        "",
        "## AWS cost at on-demand list prices (us-east-1)",
        "",
        "Request units are computed per request from the item sizes moto stored and read",
        "(see billing.py and README.md for the prices and their source). `$ / 1,000 ops`",
        "is requests plus DynamoDB read and write units per 1,000 invokes (per 1,000 reads",
        "for W5/W6). `storage $/month` keeps what the phase left stored (DynamoDB items",
        "with 100 B overhead each, plus S3 objects) for one month. Local savers: n/a.",
        "",
    ]
    lines = []
    for row in rows:
        stored = row.stored
        low = "≥" if row.partial and row.is_aws else ""  # stopped early: lower bounds
        lines.append(
            [
                row.workload,
                row.saver,
                low + _num(row.units_per_op("wru")),
                low + _num(row.units_per_op("rru")),
                low + _dollars(row.dollars_per_1000_ops),
                f"{stored.ddb_items} / {_bytes(stored.ddb_bytes)} / {_bytes(stored.s3_bytes)}"
                if stored
                else "—",
                _dollars(row.storage_dollars_per_month) if row.stored_bytes else "—",
            ]
        )
    out += _table(
        [
            "workload",
            "saver",
            "WRU/op",
            "RRU/op",
            "$ / 1,000 ops",
            "DynamoDB items / item bytes / S3 bytes",
            "storage $/month",
        ],
        lines,
    )
    w1 = [r for r in rows if r.workload == "W1 chat" and r.stored is not None]
    if w1:
        turns = w1[0].plain.ops
        out += [
            "",
            f"### Monthly bill: W1 at {CONVERSATIONS_PER_MONTH:,} conversations a month",
            "",
            f"Each conversation is one W1 run of {turns} invokes, its state kept for a month.",
            "",
        ]
        bills = {}
        lines = []
        for row in w1:
            requests = CONVERSATIONS_PER_MONTH * turns * row.dollars_per_1000_ops / 1000
            storage = CONVERSATIONS_PER_MONTH * row.storage_dollars_per_month
            bills[row.saver] = requests + storage
            lines.append(
                [row.saver, _dollars(requests), _dollars(storage), _dollars(requests + storage)]
            )
        out += _table(["saver", "requests", "storage", "month"], lines)
        if "DynamoDBSaver" in bills:
            out += [""] + [
                f"- {saver}: {bill / bills['DynamoDBSaver']:.2f} of DynamoDBSaver's monthly bill"
                for saver, bill in bills.items()
                if saver != "DynamoDBSaver"
            ]
    return out


def chart(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    savers = list(dict.fromkeys(row.saver for row in report.rows))
    colors = dict(zip(savers, plt.get_cmap("tab10").colors, strict=False))
    fig, axes = plt.subplots(3, 2, figsize=(16, 15))
    panels: list[tuple[str, Callable[[Row], float | None], bool]] = [
        ("AWS requests per op", lambda r: r.requests_per_op, False),
        ("Bytes stored", lambda r: r.stored_bytes, True),
        ("Wall ms per op (no added latency; AWS includes moto)", lambda r: r.wall_ms, False),
        ("Wall ms per op with latency model (AWS savers)", lambda r: r.wall_latency_ms, False),
        ("CPU ms per op (excluding moto)", lambda r: r.cpu_ms, False),
    ]
    for ax, (title, value, writes_only) in zip(axes.flat, panels, strict=False):
        rows = [r for r in report.rows if not writes_only or r.stored_bytes is not None]
        _grouped_bars(ax, rows, savers, colors, value)
        ax.set_title(title)
    _cold_start_bars(axes.flat[5], report.cold_start, colors)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[s]) for s in savers]
    fig.legend(handles, savers, loc="upper center", ncol=len(savers), fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _grouped_bars(
    ax: Any, rows: list[Row], savers: list[str], colors: dict[str, Any], value: Callable
) -> None:
    workloads = list(dict.fromkeys(r.workload for r in rows))
    values = {(r.workload, r.saver): value(r) for r in rows if value(r)}
    present = [s for s in savers if any(saver == s for _, saver in values)]
    width = 0.8 / max(len(present), 1)
    for i, saver in enumerate(present):
        points = [(x, values[(w, saver)]) for x, w in enumerate(workloads) if (w, saver) in values]
        xs, ys = zip(*points, strict=True)
        ax.bar([x - 0.4 + (i + 0.5) * width for x in xs], ys, width, color=colors[saver])
    ax.set_yscale("log")
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads, rotation=30, ha="right", fontsize=9)
    ax.grid(axis="y", which="both", alpha=0.3)


def _cold_start_bars(ax: Any, cold: dict[str, Any], colors: dict) -> None:
    if not cold:
        ax.set_visible(False)
        return
    medians = cold["medians"]
    names = list(medians)
    bottom = [0.0] * len(names)
    for part in ("interpreter", "imports", "build", "first_request"):
        heights = [medians[n][part] for n in names]
        ax.bar(names, heights, bottom=bottom, label=part.replace("_", " "))
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.legend(fontsize=9)
    ax.set_title("Lambda cold path ms, fresh interpreter to first reply (median)")
    ax.grid(axis="y", alpha=0.3)
