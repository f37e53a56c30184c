"""The cold-path benchmark (`benchmarks/cold_start.py`, whose figures the README and
benchmarks/README.md report) in one round: every child kind runs in a fresh interpreter
against moto server, and the figures the README quotes come out of it: the requests each
saver sent, by name, its CPU, and the floor, wall and modelled, beyond which each saver
is compared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cold_start.py"


def test_one_round_gives_the_figures_the_readme_quotes() -> None:
    pytest.importorskip("langgraph_checkpoint_aws", reason="DynamoDBSaver is compared")
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout[done.stdout.index("\n{") :])
    sent = result["requests_sent"]
    # A new thread: its read (with the deployment record's, in the same wave), then the
    # input checkpoint, each task's writes and each step's checkpoint.
    assert sent["s3dynamo"][:2] == ["dynamodb.Query", "dynamodb.Query"]
    assert len(sent["s3dynamo"]) == result["medians"]["s3dynamo"]["request_count"]
    assert len(sent["s3dynamo"]) < len(sent["DynamoDBSaver"])
    assert sent["InMemorySaver"] == [] and sent["botocore floor"] == []
    floor = result["floor"]
    for saver in ("s3dynamo", "DynamoDBSaver"):
        assert isinstance(floor["modelled"][saver], float)  # CPU beyond, and 10 ms a request
        assert result["medians"][saver]["saver_cpu"] > 0
    assert floor["modelled_ratio"] is not None and floor["ratio_of_medians"] is not None
    assert "beyond the floor, modelled" in done.stdout
