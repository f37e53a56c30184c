"""The erasure benchmark (`benchmarks/erasure.py`, whose figures erasure_results.md
reports) at small sizes: what erasing or exporting a data subject sends grows with the
subject, not with the deployment. Each subject's requests, kind by kind, and their read
and write units are the same in a deployment of 50 threads and in one of 200; a put's
too, subjects on and off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "erasure.py"
SHAPES = ("1:1", "10:3")


def total(m: dict[str, Any]) -> int:
    return sum(n for part in m["requests"].values() for n in part.values())


def test_an_erasure_costs_what_the_subject_has_whatever_the_deployments_size(
    tmp_path: Path,
) -> None:
    out = tmp_path / "figures.json"
    cmd = [sys.executable, str(SCRIPT), "--sizes", "50", "200", "--subjects", *SHAPES]
    cmd += ["--out", str(tmp_path / "results.md"), "--json", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)
    small, large = (json.loads(out.read_text())[size] for size in ("50", "200"))
    for shape in SHAPES:
        for call in ("erase", "export"):
            here, there = small["subjects"][shape][call], large["subjects"][shape][call]
            for measured in ("requests", "rru", "wru"):
                assert here[measured] == there[measured], (shape, call, measured)
    # It grows with the subject: more threads and items, more requests.
    assert total(large["subjects"]["10:3"]["erase"]) > total(large["subjects"]["1:1"]["erase"])
    for process in ("on", "off"):
        for case, measured in large[process].items():
            assert measured["requests"] == small[process][case]["requests"], (process, case)
    warm = "put, a new thread (warm)"
    assert large["on"][warm]["requests"] == large["off"][warm]["requests"]
    assert "erase_subject" in (tmp_path / "results.md").read_text()
