"""The package as a user installs it: `make dist` builds the source distribution and the
wheel, `twine check --strict` passes both, and the wheel (its licence inside, `py.typed` in
each package, no cap on Python) installs with the `cli` extra into a fresh virtual
environment of every Python from 3.10 to 3.13 found here (dependencies from the package
index pip is configured with, as every virtual environment of the Makefile gets them).
Each environment, outside this source tree, imports the saver, runs the `s3dynamo` console
script, and puts and reads back a checkpoint on the in-memory ports; then, with what
`make demo` adds (the Makefile's demo stamp: LangGraph, pytest, moto for S3 and DynamoDB,
Flask), runs `s3dynamo demo` to its end. A Python that is not installed is skipped, naming
where it was looked for."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.support.pythons import MINORS, interpreter

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("langgraph/checkpoint/s3dynamo", "langgraph/store/s3dynamo", "langgraph/cache/s3dynamo")

# Run by the installed interpreter, from a directory outside the source tree: a sealed
# saver on the in-memory ports, one small value (kept inside the item) and 64 KB of
# random hex (an object), put and read back; and the installed licence and py.typed files.
PUT_GET = """
import json, os, sys
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable

objects = MemoryObjects()
saver = S3DynamoSaver(index=MemoryTable(), object_store=objects,
                      keys={"k1": os.urandom(32)}, secret=os.urandom(32))
saver.setup()
checkpoint = empty_checkpoint()
notes = os.urandom(32768).hex()  # 64 KB that zstd cannot shrink below inline_max
checkpoint["channel_values"] = {"greeting": "hello", "notes": notes}
checkpoint["channel_versions"] = {"greeting": 1, "notes": 1}
config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
saved = saver.put(config, checkpoint, {"step": 0, "source": "input"}, {"greeting": 1, "notes": 1})
back = saver.get_tuple({"configurable": {"thread_id": "t1"}})
values = back.checkpoint["channel_values"]
import importlib.metadata, importlib.util, pathlib
import langgraph.checkpoint.s3dynamo as package
files = importlib.metadata.files("langgraph-checkpoint-s3dynamo")
licence = next(f for f in files if f.name == "LICENSE" and "licenses" in f.parts)
typed = [
    (pathlib.Path(importlib.util.find_spec(name).origin).parent / "py.typed").is_file()
    for name in ("langgraph.checkpoint.s3dynamo", "langgraph.store.s3dynamo",
                 "langgraph.cache.s3dynamo")
]
print(json.dumps({
    "python": list(sys.version_info[:2]),
    "module": package.__file__,
    "licence": licence.read_text(),
    "typed": typed,
    "id": back.checkpoint["id"] == saved["configurable"]["checkpoint_id"],
    "greeting": values["greeting"],
    "notes": values["notes"] == notes and len(notes),
    "objects": len(objects.blobs),
    "sealed": not any(notes[:32].encode() in body for body, _ in objects.blobs.values()),
}))
"""


def demo_requirements() -> list[str]:
    """What the Makefile's demo stamp installs beside the package's `cli` extra."""
    recipe = (ROOT / "Makefile").read_text().split("$(DEMO_STAMP): pyproject.toml", 1)[1]
    command = recipe.split("-e '.[cli]'", 1)[1].split("\n\ttouch", 1)[0]
    return shlex.split(command.replace("\\\n", " "))


def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload, no-any-return]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """`make dist` into a directory of its own: the wheel, the sdist, and what make printed."""
    out = tmp_path_factory.mktemp("dist")
    built = run(["make", "-C", str(ROOT), "dist", f"DIST={out}", f"PYTHON={sys.executable}"])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheels = list(out.glob("langgraph_checkpoint_s3dynamo-*-py3-none-any.whl"))
    sdists = list(out.glob("langgraph_checkpoint_s3dynamo-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return wheels[0], sdists[0], built.stdout


def test_make_dist_builds_an_sdist_and_a_wheel_that_twine_check_passes(
    dist: tuple[Path, Path, str],
) -> None:
    wheel, sdist, printed = dist
    # twine's verdicts, without the colours and line breaks it adds for a narrow terminal.
    verdicts = re.sub(r"\x1b\[[0-9;]*m|\s", "", printed)
    for built in (wheel, sdist):
        assert f"Checking{built}:PASSED" in verdicts, printed
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License")

    names = zipfile.ZipFile(wheel).namelist()
    for package in PACKAGES:
        assert f"{package}/py.typed" in names
    assert not any(n.startswith(("tests/", "benchmarks/", "scripts/")) for n in names)
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert zipfile.ZipFile(wheel).read(f"{info}/licenses/LICENSE").decode() == licence
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode().split("\n\n")[0]
    fields = [line.split(": ", 1) for line in metadata.splitlines() if ": " in line]
    # No upper bound: pip never refuses a newer Python.
    assert ["Requires-Python", ">=3.10"] in fields
    assert ["License-Expression", "MIT"] in fields
    tested = [v for k, v in fields if k == "Classifier" and v.count(".") == 1 and "::" in v]
    assert [v.rsplit(" ", 1)[1] for v in tested] == [f"3.{m}" for m in MINORS]

    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        member = archive.extractfile(f"{top}/LICENSE")
        assert member is not None and member.read().decode() == licence


@pytest.mark.parametrize("minor", MINORS, ids=[f"py3.{m}" for m in MINORS])
def test_the_wheel_installs_and_runs_in_a_fresh_venv(
    dist: tuple[Path, Path, str], minor: int, tmp_path: Path
) -> None:
    python = interpreter(minor)
    if python is None:
        pytest.skip(
            f"Python 3.{minor} is not installed here (looked for python3.{minor} on PATH "
            f"and under pyenv's versions/3.{minor}.*)"
        )
    wheel = dist[0]
    venv = tmp_path / "venv"
    assert run([python, "-m", "venv", str(venv)]).returncode == 0
    py, script = venv / "bin" / "python", venv / "bin" / "s3dynamo"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # pyenv's shims pick an interpreter by this; the venv's own python must not be swapped.
    env.pop("PYENV_VERSION", None)
    installed = run(
        [str(py), "-m", "pip", "install", "--quiet", f"{wheel}[cli]"], env=env, cwd=tmp_path
    )
    assert installed.returncode == 0, installed.stderr[-3000:]

    helped = run([str(script), "--help"], env=env, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for command in ("threads", "history", "show", "doctor", "demo"):
        assert command in helped.stdout

    put_get = run([str(py), "-c", PUT_GET], env=env, cwd=tmp_path)
    assert put_get.returncode == 0, put_get.stderr[-3000:]
    got = json.loads(put_get.stdout)
    assert got["python"] == [3, minor]
    # The installed copy, not this source tree, with its licence and type markers.
    assert Path(got["module"]).is_relative_to(venv), got["module"]
    assert got["licence"].startswith("MIT License")
    assert got["typed"] == [True, True, True]
    assert got["id"] is True and got["greeting"] == "hello" and got["notes"] == 65536
    # The 64 KB value went to the object store, sealed.
    assert got["objects"] == 1 and got["sealed"] is True

    # The demo, as `make demo` installs it: its three turns across two processes, the
    # interrupt resumed with ainvoke (a sync node's interrupt() before Python 3.11 too),
    # nothing readable at rest, and the command line on what it stored.
    extra = demo_requirements()
    assert "langgraph>=1.2" in extra and "flask" in extra, extra
    added = run([str(py), "-m", "pip", "install", "--quiet", *extra], env=env, cwd=tmp_path)
    assert added.returncode == 0, added.stderr[-3000:]
    demo = run([str(script), "demo"], env=env, cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    for line in (
        "  paused: Approve a refund for this customer?",
        "  waiting at: approve",
        "  agent: A supervisor approved your refund.",
        "  'blue kettle' found in 0 of",
        "$ s3dynamo verify",
    ):
        assert line in demo.stdout, demo.stdout[-3000:]
    last = demo.stdout.rstrip().splitlines()[-3:]
    assert last[0] == "ok" and last[2].startswith("The moto server stops with the demo."), last
