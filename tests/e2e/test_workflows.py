"""The GitHub Actions workflows a fork runs: CI runs `.ci/run` on the Pythons the wheel is
tested on; a tag builds with `make dist` and publishes by trusted publishing, with no
stored secret; and `make lint-workflows` (part of `make lint`) passes both and refuses a
workflow that breaks its rules."""

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
