"""What every command shares: the click group, the store options and --json (accepted
before the command and after it), opening a saver from them, and output helpers."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.measure import Measurement
from rich.pretty import Pretty
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from langgraph.checkpoint.s3dynamo import InvalidConfigError, S3DynamoSaver, Settings

F = TypeVar("F", bound=Callable[..., Any])

OK, PROBLEMS, USAGE = 0, 1, 2
ALL_NAMESPACES = "*"
SHORT_ID = 12
STORE_SETTINGS = ("table", "bucket", "prefix", "region", "endpoint_url")
JSON = "as_json"
JSON_HELP = "print JSON (shapes: docs/CLI.md); before or after the command"


class _Output(Console):
    """stdout. Outside a terminal (a pipe, a file) no line of text is wrapped, no table
    folds a cell and no value's line breaks (`whole`), so an id, a page token or a value
    stays whole on its line, for a pasted command or a grep; in a terminal, lines wrap
    at its width."""

    def on_broken_pipe(self) -> None:
        # rich would exit with 1; a reader that stopped reading (`| head`) is no error:
        # the entry point ends the command quietly with 0 (`app.run`).
        raise BrokenPipeError

    def print(self, *objects: Any, **options: Any) -> None:
        if "soft_wrap" not in options and all(isinstance(o, str) for o in objects):
            options["soft_wrap"] = not self.is_terminal
        super().print(*objects, **options)

    def whole(self, shown: Table | Pretty, **options: Any) -> None:
        """A table or a value: in a terminal at its width, elsewhere as wide as its widest
        row or line."""
        if self.is_terminal:
            self.print(shown, **options)
            return
        widest = Measurement.get(self, self.options.update_width(1 << 16), shown).maximum
        wide = _Output(file=self.file, width=max(self.width, widest), highlight=False)
        wide.print(shown, **options)


out = _Output(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


def store_options(fn: F) -> F:
    """--table, --bucket, --prefix, --region and --endpoint-url: on the group (before
    the command) and on every command (after it), the later one winning; unset, the
    saver's environment (S3DYNAMO_TABLE, ..., AWS_REGION) decides."""
    options = [
        click.option("--table", help="DynamoDB table [S3DYNAMO_TABLE]"),
        click.option("--bucket", help="S3 bucket [S3DYNAMO_BUCKET]"),
        click.option(
            "--prefix",
            help="the deployment's prefix on a shared table and bucket [S3DYNAMO_PREFIX]",
        ),
        click.option(
            "--region", help="AWS region [S3DYNAMO_REGION, AWS_REGION, AWS_DEFAULT_REGION]"
        ),
        click.option(
            "--endpoint-url",
            help="endpoint of an S3- and DynamoDB-compatible server [S3DYNAMO_ENDPOINT_URL]",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def json_option(fn: F) -> F:
    """--json on a command; given on the group (`s3dynamo --json threads`), it holds for
    the command too."""

    @functools.wraps(fn)
    def command(*args: Any, as_json: bool, **kwargs: Any) -> Any:
        given = (click.get_current_context().find_root().obj or {}).get(JSON)
        return fn(*args, as_json=as_json or bool(given), **kwargs)

    return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(command)  # type: ignore[return-value]


def yes_option(fn: F) -> F:
    return click.option("--yes", is_flag=True, help="carry out the plan (default: show it)")(fn)


def scope_option(fn: F) -> F:
    return click.option(
        "--scope",
        metavar="PREFIX",
        help="the prefix a table-wide sweep acts on: the saver's own (--prefix); without "
        "one, on a table that holds tenants, say '' to mean the unprefixed threads",
    )(fn)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="langgraph-checkpoint-s3dynamo", prog_name="s3dynamo")
@click.option("--json", JSON, is_flag=True, help=JSON_HELP)
@store_options
@click.pass_context
def cli(ctx: click.Context, /, **settings: Any) -> None:
    """Inspect and maintain an s3dynamo checkpoint store (a DynamoDB table and an S3
    bucket). Settings come from the environment the saver reads (S3DYNAMO_TABLE,
    S3DYNAMO_BUCKET, S3DYNAMO_PREFIX, S3DYNAMO_KEYS, S3DYNAMO_SECRET, S3DYNAMO_KMS_KEY_ID,
    LANGGRAPH_AES_KEY, AWS_REGION, ...) or from the options, before or after the
    command. Commands that change the store show their plan and change nothing without
    --yes. --json, before or after the command, prints JSON instead.

    Exit codes: 0 fine, 1 problems found, 2 usage or configuration.
    """
    ctx.obj = {k: v for k, v in settings.items() if v}


def open_saver(**settings: Any) -> S3DynamoSaver:
    """A saver from the same environment as `S3DynamoSaver.from_env()`, the options
    (group ones, then the command's) overriding it."""
    ctx = click.get_current_context()
    chosen = {**(ctx.find_root().obj or {}), **{k: v for k, v in settings.items() if v}}
    given = Settings.from_env(
        **{k: v for k, v in chosen.items() if k in (*STORE_SETTINGS, "allow_plaintext_read")}
    )
    if not given.table or not given.bucket:
        raise InvalidConfigError(
            f"no table or bucket given (table={given.table!r}, bucket={given.bucket!r}): "
            "pass --table and --bucket, or set S3DYNAMO_TABLE and S3DYNAMO_BUCKET (and "
            "S3DYNAMO_KEYS, S3DYNAMO_SECRET as the writers do)"
        )
    return S3DynamoSaver(settings=given)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=repr) + "\n")


class _Count(ProgressColumn):
    """How far: `done/total`, or `done` alone while the total is not known yet (nothing
    for work that counts nothing)."""

    def render(self, task: Task) -> Text:
        done = int(task.completed)
        if task.total is not None:
            return Text(f"{done}/{int(task.total)}")
        return Text(str(done) if done else "")


@contextmanager
def progress(label: str) -> Iterator[Callable[[int, int | None], None]]:
    """A progress bar on stderr while threads are worked through (`tick(done, total)`,
    total None while unknown); nothing when stderr is not a terminal, and gone when the
    work ends."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        _Count(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    task = bar.add_task(label, total=None)

    def tick(done: int, total: int | None) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield tick


def short(checkpoint_id: str | None) -> str:
    return checkpoint_id[-SHORT_ID:] if checkpoint_id else "-"
