"""The README as its reader meets it: short enough to read (at most 250 lines), every
relative link leads to a file, and the quickstart, copied out as it stands (the
environment kept in a file, chat.py, `s3dynamo doctor`, the runs, and a second shell),
works against moto server on 127.0.0.1: the second process, and a second shell with the
kept keys, continue the first one's conversation; new keys are refused by name."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langgraph.checkpoint.s3dynamo.testing import moto_server

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", text, re.DOTALL)


def test_the_readme_is_at_most_250_lines_and_its_links_lead_somewhere() -> None:
    assert len(README.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target


def test_what_the_readme_and_the_server_example_write_in_the_clone_is_ignored_by_git() -> None:
    """The files the README's commands write (the Quickstart's keys and secret, the
    demo's log and moto.env), the server example's `.env` (the name `langgraph.json`
    gives) and `langgraph dev`'s `.langgraph_api/` (run inputs in clear) are git-ignored,
    so `git add .` in the clone never commits them; `.env.example` stays tracked."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git clone")
    written = {
        name
        for lang, block in blocks(section("Try it without AWS") + section("Quickstart"))
        if lang == "bash"
        for name in re.findall(r"(?<![0-9&])>\s*([A-Za-z][\w.-]*)", block)
    }
    assert written == {"demo.log", "moto.env", "s3dynamo.env"}, written
    server = Path("examples/langgraph_server")
    env_file = json.loads((ROOT / server / "langgraph.json").read_text())["env"]
    paths = [
        *sorted(written),
        str(server / env_file),
        str(server / ".langgraph_api/.langgraph_ops.pckl"),
    ]

    def ignored(path: str) -> bool:
        check = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", path], timeout=30)
        assert check.returncode in (0, 1), check
        return check.returncode == 0

    assert [p for p in paths if not ignored(p)] == []
    assert not ignored(str(server / ".env.example"))


@pytest.mark.parametrize(
    ("target", "said"),
    [("demo", "what the demo needs"), ("test", "the package with its test tools")],
)
def test_make_demo_and_make_test_say_what_they_install_before_pip_runs_quietly(
    tmp_path: Path, target: str, said: str
) -> None:
    """pip runs --quiet for its half minute or more: a line first says what comes and
    about how long it takes (`make -n`: what make would run, in a fresh VENV)."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    venv = tmp_path / "venv"
    planned = subprocess.run(
        ["make", "-n", "--no-print-directory", target, f"VENV={venv}"], cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    lines = planned.stdout.splitlines()
    assert lines[0].startswith(f'echo "Installing {said} into {venv}: ')
    assert "minute the first time" in lines[0]
    # The environment made, a stamp of the other flavour dropped (`make LATEST=1`), then pip.
    assert "venv" in lines[1]
    assert any("pip install --quiet" in line for line in lines[2:4]), lines[:4]


def test_the_quickstart_runs_as_written_and_a_second_shell_with_the_kept_keys_reads_back(
    tmp_path: Path,
) -> None:
    (env_lang, env_block), (py_lang, chat), (run_lang, runs), (again_lang, again) = blocks(
        section("Quickstart")
    )
    assert (env_lang, py_lang, run_lang, again_lang) == ("bash", "python", "bash", "bash")
    (tmp_path / "chat.py").write_text(chat)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    # `python` and `s3dynamo` are this environment's, as in the reader's activated one.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"

    def shell(script: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euc", script], cwd=cwd, env=env, capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip

    with moto_server() as url:
        env.update(
            AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing"
        )
        # The first shell: the settings kept in a file, `s3dynamo doctor` before the first
        # run (the table is not there yet: it says so and how to make it), then the runs.
        first = shell(env_block + 's3dynamo doctor || echo "doctor exit $?"\n' + runs)
        kept = (tmp_path / "s3dynamo.env").read_text()
        # A second shell: sources the kept file and continues the thread.
        second = shell(again)
        # Running the first block again keeps the file (and its keys) as they were.
        rerun = shell(env_block)
        # A shell that made new keys instead (another directory, no file yet) is refused.
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "chat.py").write_text(chat)
        fresh = shell(env_block + 'python chat.py "who am I?"\n', cwd=elsewhere)

    assert first.returncode == 0, first.stderr[-3000:]
    lines = first.stdout.splitlines()
    assert lines[:2] == ["1 problem", "doctor exit 1"], first.stdout
    assert "does not exist" in first.stderr and "setup()" in first.stderr, first.stderr
    assert lines[2:4] == [
        "so far you said: ['hello']",
        "so far you said: ['hello', 'remember me?']",
    ], first.stdout
    assert "keys: match the deployment" in first.stdout and lines[-1] == "ok", first.stdout

    assert (tmp_path / "s3dynamo.env").stat().st_mode & 0o077 == 0
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.splitlines() == [
        "so far you said: ['hello', 'remember me?', 'still there?']"
    ], second.stdout
    assert rerun.returncode != 0 and "s3dynamo.env" in rerun.stderr, rerun.stderr
    assert (tmp_path / "s3dynamo.env").read_text() == kept
    assert fresh.returncode != 0 and "DeploymentMismatchError" in fresh.stderr, fresh.stderr[-3000:]


def test_without_aws_the_demo_keeps_a_server_in_the_background_for_the_quickstart(
    tmp_path: Path,
) -> None:
    """ "Try it without AWS" as written, in a folder whose `.venv` is the one `make demo`
    made: the demo runs in the background and leaves its moto server up, the shell reads
    the line that reaches it, and the Quickstart runs there; a new shell that activates
    `.venv` and sources both files continues the thread; `kill $demo_pid` stops the
    server."""
    ((try_lang, try_block),) = blocks(section("Try it without AWS"))
    (_, env_block), (_, chat), (_, runs), (_, again) = blocks(section("Quickstart"))
    assert try_lang == "bash"
    (tmp_path / "chat.py").write_text(chat)
    (tmp_path / ".venv").symlink_to(sys.prefix)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    env.pop("VIRTUAL_ENV", None)
    env["COLUMNS"] = "200"

    def shell(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euc", script], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip

    first = second = None
    try:
        first = shell(try_block + env_block + runs + "echo $demo_pid > demo.pid\n")
        new_shell = "source .venv/bin/activate\nsource moto.env\n"
        second = shell(new_shell + again)
    finally:
        pid_file = tmp_path / "demo.pid"
        if pid_file.exists():
            # What `kill $demo_pid` does in the reader's shell.
            stopped = shell(f"kill {pid_file.read_text().strip()}")
            assert stopped.returncode == 0, stopped.stderr
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
    lines = first.stdout.splitlines()
    assert "so far you said: ['hello', 'remember me?']" in lines, first.stdout
    assert lines[-1] == "ok", first.stdout
    assert second is not None and second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.splitlines() == [
        "so far you said: ['hello', 'remember me?', 'still there?']"
    ], second.stdout

    port = int(
        re.findall(
            r"AWS_ENDPOINT_URL_S3=http://127.0.0.1:(\d+)", (tmp_path / "moto.env").read_text()
        )[0]
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and moto_answers(port):
        time.sleep(0.2)
    assert not moto_answers(port), "the demo's moto server still runs after kill $demo_pid"


def moto_answers(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
