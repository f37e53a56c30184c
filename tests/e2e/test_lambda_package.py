"""The Lambda zip as it ships: `make lambda-package`, then its handler against moto server.

The zip is built (into a temporary build directory), unzipped into a read-only copy and
run by Python 3.12, the Lambda runtime's version, isolated (`-I -S -B`: no site-packages,
no PYTHONPATH, no bytecode writes) with only the unzipped files and, after them, boto3 and
botocore standing in for the runtime's copy on its path. A conversation runs on it
(a refund waits for approval, is approved, the history read, the thread deleted): its
first two invocations each in a fresh interpreter (new containers, cold), the rest in one
interpreter that stays (a warm container); the checkpoints are read back with the keys. Every
child watches the import system and reports any module of the zip compiled from source.
The listing check (all an arm64 zip gets on an x86_64 machine) is tested on a small zip.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.testing import moto_server

ROOT = Path(__file__).resolve().parents[2]
# What the Lambda Python runtime provides beside the code (copied from this environment).
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")
REGION = "us-east-1"


def runtime_python() -> str | None:
    """A Python 3.12, found as scripts/lambda_package.sh finds it."""
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [
        os.environ.get("CHECK_PYTHON"),
        shutil.which("python3.12"),
        *sorted(glob.glob(f"{pyenv}/versions/3.12*/bin/python3.12")),
    ]
    for candidate in filter(None, candidates):
        done = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.stdout.strip() == "True":
            return candidate
    return None


PYTHON312 = runtime_python()
pytestmark = pytest.mark.skipif(
    PYTHON312 is None,
    reason="no Python 3.12 (the Lambda runtime's version, which compiles the zip's "
    "bytecode): install one (pyenv install 3.12) or set CHECK_PYTHON",
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def deployment(server: str) -> tuple[dict[str, str], S3DynamoSaver]:
    """The function's environment as the Terraform example sets it (table, bucket, prefix,
    a KMS key on moto server), pointed at moto server; and a saver of the test's own on the
    same deployment, which created it with setup()."""
    suffix = uuid.uuid4().hex[:12]
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    kms = session.client("kms", endpoint_url=server)
    key = kms.create_key(Description=f"sealing {suffix}")["KeyMetadata"]["Arn"]
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": server,
        "S3DYNAMO_TABLE": f"agent-{suffix}",
        "S3DYNAMO_BUCKET": f"agent-{suffix}",
        "S3DYNAMO_PREFIX": "checkpoints/",
        "S3DYNAMO_KMS_KEY_ID": key,
    }
    saver = S3DynamoSaver(
        table=env["S3DYNAMO_TABLE"],
        bucket=env["S3DYNAMO_BUCKET"],
        prefix=env["S3DYNAMO_PREFIX"],
        kms_key_id=key,
        dynamodb_client=session.client("dynamodb", endpoint_url=server),
        s3_client=session.client("s3", endpoint_url=server),
        kms_client=kms,
    )
    saver.setup()
    return env, saver


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """`make lambda-package` into a temporary build directory, of the package versions the
    README's figures were measured with (PyPI moves on): (the zip, what it printed)."""
    build = tmp_path_factory.mktemp("build")
    pins = build / "constraints.txt"
    pins.write_text(_figures_module().constraints("x86_64"))
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "lambda-package", f"PYTHON={sys.executable}"],
        env={**os.environ, "BUILD_DIR": str(build), "LAMBDA_CONSTRAINTS": str(pins)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    yield build / "lambda_agent.zip", output


@pytest.fixture(scope="module")
def task(built: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The zip unzipped, read-only, as in /var/task."""
    task = tmp_path_factory.mktemp("var") / "task"
    with zipfile.ZipFile(built[0]) as zf:
        zf.extractall(task)
    modes = [(p, p.stat().st_mode) for p in [task, *task.rglob("*")]]
    for path, mode in modes:
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    yield task
    for path, mode in modes:
        path.chmod(mode)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """boto3 and what it needs, copied from this environment and compiled by Python 3.12,
    as the runtime's own copy is; nothing else."""
    runtime = tmp_path_factory.mktemp("runtime")
    for name in RUNTIME_PROVIDED:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, f"{name} is not installed"
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            shutil.copytree(
                origin.parent, runtime / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy(origin, runtime / origin.name)
    assert PYTHON312 is not None
    subprocess.run(
        [PYTHON312, "-I", "-m", "compileall", "-q", "-j", "0", str(runtime)],
        capture_output=True,
        check=True,
    )
    return runtime


# The runtime's side: the task, then the runtime's boto3, on the path; the import system
# watched; `app` imported (the init phase); then one event per line of stdin, one reply
# per line of stdout; at the end, what the process compiled from the zip's sources.
CHILD = """
import json, os, sys, time
import importlib._bootstrap_external as external
task, runtime = sys.argv[1], sys.argv[2]
sys.path[:0] = [task, runtime]
from_source = []
to_code = external.SourceLoader.source_to_code
def source_to_code(self, data, path, **kwargs):
    from_source.append(path)
    return to_code(self, data, path, **kwargs)
external.SourceLoader.source_to_code = source_to_code
started = time.perf_counter()
import app
init = time.perf_counter() - started
graph = app.get_graph()
for line in sys.stdin:
    reply = app.handler(json.loads(line), None)
    assert app.get_graph() is graph
    print(json.dumps({"reply": reply}), flush=True)
pyc = [m for m in list(sys.modules.values())
       if (getattr(m, "__cached__", None) or "").startswith(task)]
print(json.dumps({
    "app": app.__file__, "init_s": init, "modules_from_bytecode": len(pyc),
    "compiled": [p for p in from_source if p.startswith(task)],
}))
"""


class Container:
    """One interpreter of the runtime, serving invocations until closed."""

    def __init__(self, task: Path, runtime: Path, env: dict[str, str]) -> None:
        assert PYTHON312 is not None
        self.process = subprocess.Popen(
            [PYTHON312, "-I", "-S", "-B", "-c", CHILD, str(task), str(runtime)],
            env={**env, "PATH": os.environ.get("PATH", "")},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.invocations = 0

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(event) + "\n")
        self.process.stdin.flush()
        # The handler's metrics line (embedded metric format) comes first, then the reply.
        line = self.process.stdout.readline()
        while line and "_aws" in json.loads(line):
            line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=10)
            assert self.process.stderr is not None
            raise AssertionError(self.process.stderr.read()[-3000:])
        self.invocations += 1
        reply: dict[str, Any] = json.loads(line)["reply"]
        return reply

    def kill(self) -> None:
        """Stop it if a check failed before close(), so no process outlives the test."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()

    def close(self) -> dict[str, Any]:
        out, err = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, err[-3000:]
        summary: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return summary


def _figures_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "lambda_figures", ROOT / "scripts" / "lambda_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readmes_table_of_the_zips_is_the_one_written_from_their_figures() -> None:
    written, rendered = _figures_module().recorded_table()
    assert written == rendered, "edited by hand? write it again: make lambda-figures"


def test_the_build_measures_what_the_readme_says(built: tuple[Path, str]) -> None:
    """Built from the Python and package versions the README names, the build gives its
    figures byte for byte, this package's own files aside (they change with its code)."""
    zip_path, output = built
    figures = zip_path.with_suffix(".figures.json")
    assert f"figures: {figures}" in output, output
    measured = json.loads(figures.read_text())
    assert measured["zipped"] == zip_path.stat().st_size
    with zipfile.ZipFile(zip_path) as zf:
        assert measured["files"] == len(zf.namelist())
    problems = _figures_module().differences(measured)
    assert problems == [], "the script no longer measures what it wrote: " + "; ".join(problems)


def test_make_lambda_package_builds_and_checks_the_zip(built: tuple[Path, str]) -> None:
    zip_path, output = built
    # What it prints: both checks, what the zip holds, its sizes with and without bytecode.
    assert "listing check passed" in output and "all ELF for x86_64" in output, output
    assert re.search(r"import check passed: \d+ modules from the zip", output), output
    assert "the import compiled none from source" in output, output
    assert "what it holds" in output and "cryptography" in output, output
    sizes = re.search(r"^zipped:\s+(\d+) bytes .*; without bytecode (\d+)", output, re.M)
    assert sizes, output
    zipped, without = int(sizes.group(1)), int(sizes.group(2))
    assert zipped == zip_path.stat().st_size
    assert without < zipped < 50_000_000, "over Lambda's 50 MB limit for a zip upload"
    with zipfile.ZipFile(zip_path) as zf:
        names = set(zf.namelist())
    sources = {n for n in names if n.endswith(".py")}
    assert "app.py" in sources and "langgraph/checkpoint/s3dynamo/saver.py" in sources
    assert "__pycache__/app.cpython-312.pyc" in names
    assert not {n for n in names if n.split("/")[0] in RUNTIME_PROVIDED}, "boto3 is packaged"
    assert all(n.endswith(".cpython-312.pyc") for n in names if n.endswith(".pyc"))
    assert len([n for n in names if n.endswith(".pyc")]) == len(sources)


def test_the_zips_handler_cold_then_warm(
    task: Path, runtime: Path, deployment: tuple[dict[str, str], S3DynamoSaver]
) -> None:
    env, saver = deployment
    tid = f"customer-{uuid.uuid4().hex[:8]}"
    summaries: list[dict[str, Any]] = []

    def cold(event: dict[str, Any]) -> dict[str, Any]:
        container = Container(task, runtime, env)
        try:
            reply = container.invoke(event)
            summaries.append(container.close())
        except BaseException:
            container.kill()
            raise
        return reply

    # Two new containers, one event each.
    reply = cold({"action": "start", "thread_id": tid, "message": "hello"})
    assert reply["ok"] and reply["status"] == "done" and "(turn 1)" in reply["reply"], reply
    reply = cold({"action": "send", "thread_id": tid, "message": "please refund A-1001"})
    assert reply["status"] == "waiting_for_approval", reply
    assert reply["reply"] == "Refund 49.00 for order A-1001 (blue kettle)?", reply

    # Then one container that stays.
    warm = Container(task, runtime, env)
    try:
        reply = warm.invoke({"action": "resume", "thread_id": tid, "approved": True, "by": "maria"})
        assert reply["reply"] == "The refund of 49.00 for order A-1001 was approved by maria."
        reply = warm.invoke({"action": "send", "thread_id": tid, "message": "refund A-1002 too"})
        assert reply["reply"] == "Order A-1002 is already refunded.", reply
        history = warm.invoke({"action": "history", "thread_id": tid, "limit": 100})["checkpoints"]
        # human, AI; human, tool call, tool result; approval; human, tool call, tool result, AI
        assert history[0]["messages"] == 10 and history[0]["next"] == [], history[0]
        assert [c["interrupts"][0]["order_id"] for c in history if c["interrupts"]] == ["A-1001"]

        # What the handler stored, read back with the keys: the same checkpoints, the refund.
        config: Any = {"configurable": {"thread_id": tid}}
        stored = [t.config["configurable"]["checkpoint_id"] for t in saver.list(config)]
        assert stored == [c["checkpoint_id"] for c in history]
        latest = saver.get_tuple(config)
        assert latest is not None
        assert latest.checkpoint["channel_values"]["refunds"] == [
            {"order_id": "A-1001", "amount": 49.0, "approved": True, "by": "maria"}
        ]
        deleted = warm.invoke({"action": "delete", "thread_id": tid})
        assert deleted == {"ok": True, "thread_id": tid, "deleted": True}
        assert saver.get_tuple(config) is None
        assert warm.invocations == 4  # resume, send, history, delete
        summaries.append(warm.close())
    except BaseException:
        warm.kill()
        raise

    for summary in summaries:
        assert summary["app"] == str(task / "app.py"), summary
        assert summary["compiled"] == [], "the runtime compiled sources of the zip"
        assert summary["modules_from_bytecode"] > 500, summary


def listing_check(zip_path: Path, arch: str) -> subprocess.CompletedProcess[str]:
    assert PYTHON312 is not None
    script = ROOT / "scripts" / "lambda_check.py"
    return subprocess.run(
        [PYTHON312, "-I", str(script), "listing", str(zip_path), arch],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_listing_check_refuses_another_architecture_and_stale_bytecode(
    tmp_path: Path,
) -> None:
    # What an arm64 zip gets on an x86_64 machine, on a zip made here: one module and one
    # extension module whose ELF header says aarch64 (e_machine 183).
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "mod.py").write_text("ANSWER = 42\n")
    assert PYTHON312 is not None
    subprocess.run(
        [
            PYTHON312,
            "-I",
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode=unchecked-hash",
            str(stage),
        ],
        check=True,
    )
    elf = b"\x7fELF" + bytes(14) + (183).to_bytes(2, "little") + bytes(44)
    (stage / "_ext.cpython-312-aarch64-linux-gnu.so").write_bytes(elf)

    def zipped(name: str, **replace: str) -> Path:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as zf:
            for file in sorted(stage.rglob("*")):
                if file.is_file():
                    arcname = file.relative_to(stage).as_posix()
                    zf.writestr(arcname, replace.get(arcname, "").encode() or file.read_bytes())
        return path

    good = zipped("good.zip")
    done = listing_check(good, "arm64")
    assert done.returncode == 0, done.stderr
    assert "1 extension modules, all ELF for arm64; 1 .py files" in done.stdout

    done = listing_check(good, "x86_64")
    assert done.returncode != 0
    assert "_ext.cpython-312-aarch64-linux-gnu.so is not an ELF object for x86_64" in done.stderr
    assert "e_machine 183" in done.stderr

    stale = zipped("stale.zip", **{"mod.py": "ANSWER = 43\n"})
    done = listing_check(stale, "arm64")
    assert done.returncode != 0
    assert "mod.cpython-312.pyc was compiled from another version of mod.py" in done.stderr
