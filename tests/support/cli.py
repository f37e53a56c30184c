"""The `s3dynamo` command run in process through its own entry point (`cli.app.run`), as
a user gets it: exit code and output, in an environment of the test's choosing and a
fresh botocore session per command, as a new process has."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.s3dynamo.backends import aws_clients
from langgraph.checkpoint.s3dynamo.cli import app


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def command_env(env: Mapping[str, str | None]) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    full.update({k: v for k, v in env.items() if v is not None})
    full.update({"COLUMNS": "80", "NO_COLOR": "1"})
    return full


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run(env: Mapping[str, str | None], *args: str) -> Result:
    """The command with these arguments in this environment, in process: what it prints
    and the code it exits with."""
    out, err = io.StringIO(), io.StringIO()
    # A fresh botocore session per command, as a new process has.
    aws_clients._session = None
    with (
        environment(command_env(env)),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            app.run(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
    return Result(code, out.getvalue(), err.getvalue())


def run_all(*calls: tuple[Mapping[str, str | None], tuple[str, ...]]) -> list[Result]:
    return [run(env, *args) for env, args in calls]


def one_line_error(r: Result) -> str:
    assert "Traceback" not in r.err, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("s3dynamo: "), r.err
    return lines[0]
