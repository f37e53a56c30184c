"""The package as a user installs it before it is on PyPI: `make dist` builds the wheel,
pip installs it with the `cli` extra into a fresh virtual environment (dependencies from
the package index pip is configured with, as every virtual environment of the Makefile
gets them), and that environment, outside this source tree, imports the saver, runs the
`s3dynamo` console script, and puts and reads back a checkpoint on the in-memory ports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run by the installed interpreter, from a directory outside the source tree: a sealed
# saver on the in-memory ports, one small value (kept inside the item) and 64 KB of
# random hex (an object), put and read back.
PUT_GET = """
import json, os, sys
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects

objects = MemoryObjects()
saver = S3DynamoSaver(index=MemoryIndex(), object_store=objects,
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
import langgraph.checkpoint.s3dynamo as package
print(json.dumps({
    "module": package.__file__,
    "id": back.checkpoint["id"] == saved["configurable"]["checkpoint_id"],
    "greeting": values["greeting"],
    "notes": values["notes"] == notes and len(notes),
    "objects": len(objects.blobs),
    "sealed": not any(notes[:32].encode() in body for body, _ in objects.blobs.values()),
}))
"""


def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload, no-any-return]


def test_make_dist_builds_a_wheel_that_installs_and_runs_in_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = run(["make", "-C", str(ROOT), "dist", f"DIST={dist}", f"PYTHON={sys.executable}"])
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list(dist.glob("langgraph_checkpoint_s3dynamo-*-py3-none-any.whl"))
    assert len(wheels) == 1, list(dist.iterdir())
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "langgraph/checkpoint/s3dynamo/py.typed" in names
    assert not any(n.startswith(("tests/", "benchmarks/", "scripts/")) for n in names)

    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    py, script = venv / "bin" / "python", venv / "bin" / "s3dynamo"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    installed = run(
        [str(py), "-m", "pip", "install", "--quiet", f"{wheels[0]}[cli]"], env=env, cwd=tmp_path
    )
    assert installed.returncode == 0, installed.stderr[-3000:]

    helped = run([str(script), "--help"], env=env, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for command in ("threads", "history", "show", "doctor", "demo"):
        assert command in helped.stdout

    put_get = run([str(py), "-c", PUT_GET], env=env, cwd=tmp_path)
    assert put_get.returncode == 0, put_get.stderr[-3000:]
    got = json.loads(put_get.stdout)
    # The installed copy, not this source tree.
    assert Path(got["module"]).is_relative_to(venv), got["module"]
    assert got["id"] is True and got["greeting"] == "hello" and got["notes"] == 65536
    # The 64 KB value went to the object store, sealed.
    assert got["objects"] == 1 and got["sealed"] is True
