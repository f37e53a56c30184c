"""What numpy buys a search by query, and what it costs a Lambda: the store's ranking of
one namespace's vector segment (scoring every row, then the best 10) with numpy and
without, at 1,000 / 10,000 / 100,000 rows, and numpy's import time, each in a fresh
Python process; optionally in the Lambda zip's files, as its runtime runs them.

    .venv-bench/bin/python benchmarks/vector_scoring.py      # this Python, src/
    make lambda-package EXTRAS=vectors                       # then, as Lambda runs it:
    .venv-bench/bin/python benchmarks/vector_scoring.py --python python3.12 \\
        --path build/lambda_agent_vectors                    # -I -S -B, the zip's files

Writes benchmarks/vector_scoring.md (or --out). The segment is one `memory/vectors.py`
pack of random 256-dimension int8 rows, opened once (as a warm process keeps it); each
figure is the median of `--runs` searches after one that is not counted (numpy's first
search also expands the int8 rows to float32, below `EXPANDED_MAX`). Wall time on this
machine: a Lambda below 1,769 MB of memory has a fraction of a core and takes longer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = str(HERE.parent / "src")

# Runs in the measured Python: numpy's import, then the ranking with and without it.
PROBE = r"""
import json, random, statistics, sys, time
started = time.perf_counter()
import numpy
imported = time.perf_counter() - started
from langgraph.checkpoint.s3dynamo.memory import vectors as v
n, dims, runs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(n)
rows = [
    v.Row(f"k{i:020d}", "v1", i, "text", v.encode([rng.gauss(0, 1) for _ in range(dims)]))
    for i in range(n)
]
query = v.unit([rng.gauss(0, 1) for _ in range(dims)])
out = {"numpy_import_ms": imported * 1000, "numpy": numpy.__version__}
for name, scorer in (("numpy", numpy), ("python", None)):
    v._NUMPY[:] = [scorer]
    segment = v.Pack(v.pack(rows), "segment")
    def search():
        scores = segment.scores(query)
        best = v.best_first(scores)
        return [next(best) for _ in range(10)]
    t = time.perf_counter(); first = search(); took = time.perf_counter() - t
    out[name + "_first_ms"] = took * 1000
    times = []
    for _ in range(runs):
        t = time.perf_counter(); assert search() == first; times.append(time.perf_counter() - t)
    out[name + "_ms"] = statistics.median(times) * 1000
print(json.dumps(out))
"""


def measure(python: str, paths: list[str], n: int, dims: int, runs: int) -> dict[str, float]:
    # With the zip's files: as the Lambda runtime runs them (isolated, no site, no
    # bytecode written); else this checkout's src/ in that Python's own environment.
    flags = ["-I", "-S", "-B"] if paths != [SRC] else []
    setup = f"import sys; sys.path[:0] = {paths!r}\n"
    done = subprocess.run(
        [python, *flags, "-c", setup + PROBE, str(n), str(dims), str(runs)],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ.get("PATH", "")},
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def runtime_boto3() -> str:
    """boto3 as the Lambda runtime provides it: a directory of its own, beside the zip's
    files (the zip leaves it out)."""
    target = tempfile.mkdtemp()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--target", target,
         "--python-version", "3.12", "--only-binary=:all:", "boto3"],
        check=True,
    )  # fmt: skip
    return target


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--path", help="the unzipped Lambda zip (build/lambda_agent_vectors)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000, 100_000])
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", default=str(HERE / "vector_scoring.md"))
    args = parser.parse_args()
    paths = [str(Path(args.path).resolve()), runtime_boto3()] if args.path else [SRC]
    version = subprocess.run(
        [args.python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    results = {n: measure(args.python, paths, n, args.dims, args.runs) for n in args.sizes}
    first = next(iter(results.values()))
    where = f"the Lambda zip's files in `{args.path}`, `-I -S -B`" if args.path else "src/"
    command = " ".join(
        ["`.venv-bench/bin/python benchmarks/vector_scoring.py"]
        + (["--python", Path(args.python).name] if args.python != sys.executable else [])
        + (["--path", args.path] if args.path else [])
    )
    lines = [
        "# Ranking a namespace's vectors, with numpy and without",
        "",
        f"Produced by {command}` (Python {version}, numpy {first['numpy']}, {where}; "
        f"{platform.machine()}, {os.cpu_count()} cores; medians of {args.runs} searches; "
        f"{args.dims} dimensions). One search: every row scored, the best 10 picked.",
        "",
        "| rows | numpy: ms per search | numpy: first search, ms | pure Python: ms per search |",
        "|---|---|---|---|",
    ]
    for n, r in results.items():
        lines.append(
            f"| {n:,} | {r['numpy_ms']:.1f} | {r['numpy_first_ms']:.1f} | {r['python_ms']:.1f} |"
        )
    imports = sorted(r["numpy_import_ms"] for r in results.values())
    lines += [
        "",
        f"numpy's import: {imports[len(imports) // 2]:.0f} ms (median of {len(imports)} fresh "
        "processes), paid by a process's first search by query, not by its init: the store "
        "imports numpy only when it first ranks.",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
