"""The README as its reader meets it: short enough to read (at most 250 lines), every
relative link leads to a file, and the quickstart, copied out as it stands (the
environment block, chat.py, and the two runs), works against moto server on 127.0.0.1:
the second process continues the first one's conversation."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    (env_lang, env_block), (py_lang, chat), (run_lang, runs) = blocks(section("Quickstart"))
    assert (env_lang, py_lang, run_lang) == ("bash", "python", "bash")
    (tmp_path / "chat.py").write_text(chat)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    # `python` is this interpreter, as in the reader's activated environment.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    with moto_server() as url:
        env.update(
            AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing"
        )
        done = subprocess.run(
            ["bash", "-euc", env_block + runs],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "so far you said: ['hello']",
        "so far you said: ['hello', 'remember me?']",
    ], done.stdout
