"""The GitHub Actions workflows a fork runs: CI runs `.ci/run` on the Pythons the wheel is
tested on; a tag builds with `make dist` and publishes by trusted publishing, with no
stored secret; a weekly job runs LangGraph's suites on the latest releases, unpinned; and
`make lint-workflows` (part of `make lint`) passes them all and refuses a workflow that
breaks its rules."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.pythons import MINORS

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True.
    loaded["on"] = loaded.pop(True)
    return loaded


def runs(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_ci_runs_ci_run_on_every_tested_python() -> None:
    ci = load("ci.yml")
    assert set(ci["on"]) == {"push", "pull_request", "workflow_dispatch"}
    assert ci["permissions"] == {"contents": "read"}
    (job,) = ci["jobs"].values()
    assert runs(job)[-1] == "bash .ci/run"
    assert job["timeout-minutes"] <= 90
    setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert sorted(setup["with"]["python-version"].split()) == [f"3.{m}" for m in MINORS]


def test_a_tag_builds_with_make_dist_and_publishes_by_trusted_publishing() -> None:
    text = (WORKFLOWS / "release.yml").read_text()
    release = load("release.yml")
    assert release["on"] == {"push": {"tags": ["v*"]}}
    assert release["permissions"] == {}
    build, publish = release["jobs"]["build"], release["jobs"]["publish"]
    assert "make dist PYTHON=python" in runs(build)
    assert build["permissions"] == {"contents": "read"}
    # Only the publishing job may ask for an OIDC token, and only in the pypi environment.
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"contents": "read", "id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert any("twine upload" in r for r in runs(publish))
    assert "secrets." not in text and "TWINE_PASSWORD" not in text


def test_a_weekly_job_runs_langgraphs_suites_on_the_latest_releases() -> None:
    latest = load("latest.yml")
    assert set(latest["on"]) == {"schedule", "workflow_dispatch"}
    ((_, _, day, month, weekday),) = [s["cron"].split() for s in latest["on"]["schedule"]]
    assert (day, month, weekday) == ("*", "*", "1")  # once a week, on Mondays
    assert latest["permissions"] == {"contents": "read"}
    (job,) = latest["jobs"].values()
    assert runs(job) == ["make LATEST=1 test-upstream"]
    # The interpreter CI's tiers run on (its last Python, `python3`): only releases differ.
    ci_setup, setup = (
        next(s for s in j["steps"] if s.get("uses", "").startswith("actions/setup-python"))
        for j in (*load("ci.yml")["jobs"].values(), job)
    )
    assert setup["with"]["python-version"] == ci_setup["with"]["python-version"].split()[-1]


def test_latest_installs_without_the_pins_what_ci_installs_with_them() -> None:
    """`make -n -B` prints every environment `test-upstream` makes (its sub-make's too):
    with LATEST=1, no constraints file, every dependency upgraded, LangGraph's suite's
    pins dropped."""

    def installs(*args: str) -> list[str]:
        shown = subprocess.run(
            ["make", "-n", "-B", "-C", str(ROOT), *args, "test-upstream"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        lines = shown.replace("\\\n", "").splitlines()
        return [
            line
            for line in lines
            if line.startswith("sed ") or ("pip install" in line and "--upgrade pip" not in line)
        ]

    pinned, latest = installs(), installs("LATEST=1")
    # .venv (twice: the sub-make's -B), .venv-server, .venv-langgraph (its requirements, then pip).
    assert len(pinned) == len(latest) == 5
    for line in pinned:
        assert "-c tests/constraints.txt" in line or line.startswith("sed -E ''"), line
        assert "--upgrade" not in line and "/dev/null" not in line, line
    for line in latest:
        if line.startswith("sed"):
            assert line.startswith("sed -E 's/==[^[:space:];]+//' scripts/langgraph_suite/"), line
        else:
            assert "-c /dev/null --upgrade --upgrade-strategy eager" in line, line


def test_make_lint_workflows_passes_ours_and_refuses_an_unpinned_action(tmp_path: Path) -> None:
    def lint(folder: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "-s", "-C", str(ROOT), "lint-workflows", f"WORKFLOWS={folder}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    ours = lint(WORKFLOWS)
    assert ours.returncode == 0, ours.stdout + ours.stderr

    bad = tmp_path / "workflows"
    shutil.copytree(WORKFLOWS, bad)
    ci = (bad / "ci.yml").read_text()
    pinned = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1"
    assert pinned in ci
    (bad / "ci.yml").write_text(ci.replace(pinned, "actions/checkout@v7"))
    refused = lint(bad)
    assert refused.returncode != 0
    assert "unpinned-uses" in refused.stdout and "ci.yml" in refused.stdout, refused.stdout
