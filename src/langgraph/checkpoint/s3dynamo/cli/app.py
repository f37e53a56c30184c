"""The `s3dynamo` command: click for parsing, rich for tables and progress bars.

Exit codes: 0 fine, 1 problems found (or an operation failed), 2 usage or
configuration (bad flags, missing settings, table or bucket, credentials, keys, unknown
thread). Errors a person can act on are one line on stderr with the fix, mapped here by
their type (`errors.py`); set S3DYNAMO_DEBUG=1 (a yes/no setting) for the traceback. A
reader that closes the pipe early (`s3dynamo show ... | head`) ends the command quietly
with 0.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence

import click
from rich.markup import escape

# The commands register themselves on the group when imported.
import langgraph.checkpoint.s3dynamo.cli.maintenance
import langgraph.checkpoint.s3dynamo.cli.memory
import langgraph.checkpoint.s3dynamo.cli.reading
import langgraph.checkpoint.s3dynamo.cli.subjects  # noqa: F401
from langgraph.checkpoint.s3dynamo import (
    CatalogNotBuiltError,
    CredentialsNotFoundError,
    DeploymentMismatchError,
    EndpointUnreachableError,
    IntegrityError,
    InvalidConfigError,
    KeyNotFoundError,
    ObjectNotFoundError,
    PlaintextRefusedError,
    S3DynamoError,
    StoreMissingError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.cli.common import OK, PROBLEMS, USAGE, cli, err
from langgraph.checkpoint.s3dynamo.config.arguments import yes_no

__all__ = ["cli", "explain", "main", "run"]


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def explain(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, one line with the fix) for errors a person can act on."""
    message = _one_line(exc)
    actionable = (CatalogNotBuiltError, CredentialsNotFoundError, EndpointUnreachableError)
    if isinstance(exc, (*actionable, ThreadNotFoundError)):
        return USAGE, message
    if isinstance(exc, DeploymentMismatchError):
        return USAGE, message
    if isinstance(exc, StoreMissingError):
        return USAGE, (
            f"{message}; or check --table/--bucket (S3DYNAMO_TABLE, S3DYNAMO_BUCKET; the "
            "subjects' key table: S3DYNAMO_KEY_TABLE), --region and --endpoint-url"
        )
    if isinstance(exc, KeyNotFoundError):
        return USAGE, f"{message} (S3DYNAMO_KEYS, id:base64,..., as the writers have it)"
    if isinstance(exc, PlaintextRefusedError):
        return USAGE, message
    if isinstance(exc, ObjectNotFoundError):
        return PROBLEMS, f"{message}; `s3dynamo verify` lists every problem"
    if isinstance(exc, IntegrityError):
        return PROBLEMS, (
            f"stored data did not open and the keys match the deployment: it was altered "
            f"({message}); `s3dynamo verify` tells which"
        )
    if isinstance(exc, (InvalidConfigError, ThreadExistsError)):
        return USAGE, message
    if isinstance(exc, S3DynamoError):
        return PROBLEMS, message
    return None


def _quiet_stdout() -> None:
    """After a closed pipe: send what is left of stdout nowhere, so that flushing it at
    exit raises nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _debug() -> bool:
    """S3DYNAMO_DEBUG, a yes/no setting: show the traceback of every error."""
    raw = os.environ.get("S3DYNAMO_DEBUG", "")
    return bool(raw.strip()) and yes_no("S3DYNAMO_DEBUG", raw)


def run(argv: Sequence[str] | None = None) -> None:
    """Run the command line and exit with its code."""
    try:
        debug = _debug()
    except InvalidConfigError as exc:
        err.print(f"s3dynamo: {escape(_one_line(exc))}", soft_wrap=True)
        sys.exit(USAGE)
    try:
        code = cli.main(args=argv, prog_name="s3dynamo", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except click.exceptions.Abort:
        err.print("aborted")
        code = PROBLEMS
    except KeyboardInterrupt:
        err.print("interrupted")
        code = 130
    except BrokenPipeError:
        _quiet_stdout()
        code = OK
    except Exception as exc:
        explained = explain(exc)
        if debug or (explained is None and not isinstance(exc, (ValueError, TypeError, OSError))):
            raise
        code, message = explained or (PROBLEMS, f"{type(exc).__name__}: {_one_line(exc)}")
        err.print(f"s3dynamo: {escape(message)}", soft_wrap=True)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    sys.exit(code if isinstance(code, int) else OK)


main = functools.partial(run, None)
