"""Writing results.md (tables) and results.png (bar charts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metrics import Row


@dataclass
class Report:
    command: str
    machine: list[str]
    rows: list[Row]
    cold_start: dict[str, dict[str, float]]
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
        "`wall + latency` is measured with those latencies slept per request. CPU excludes",
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
    out += ["", "## AWS requests per op, by operation", ""]
    out += _table(
        ["workload", "saver", "requests per op"],
        [[row.workload, row.saver, row.request_mix()] for row in report.rows if row.is_aws],
    )
    if report.cold_start:
        out += ["", "## Cold start (median of fresh interpreters, ms)", ""]
        out += _table(
            [
                "saver",
                "saver: import + construct + get_tuple",
                "boto3 import",
                "moto import + setup (not counted)",
                "moto answering (subtracted)",
                "whole child process",
            ],
            [
                [
                    name,
                    _num(t["saver"]),
                    _num(t["boto3"]),
                    _num(t["moto"]),
                    _num(t["moto_answer"]),
                    _num(t["process"]),
                ]
                for name, t in report.cold_start.items()
            ],
        )
    for title, items in (("Checks", report.checks), ("Notes", report.notes)):
        if items:
            out += ["", f"## {title}", "", *[f"- {item}" for item in items]]
    return "\n".join(out) + "\n"


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


def _cold_start_bars(ax: Any, cold: dict[str, dict[str, float]], colors: dict) -> None:
    names = list(cold)
    ax.bar(names, [cold[n]["saver"] for n in names], color=[colors.get(n) for n in names])
    ax.set_title("Cold start ms (import + construct + first get_tuple, median)")
    ax.grid(axis="y", alpha=0.3)
