"""The checkpointers `s3dynamo import --from` reads, named the way people name them:

    sqlite:PATH                           LangGraph's SqliteSaver on a database file
    postgres://... or postgresql://...    LangGraph's PostgresSaver on a connection string
    dynamodb:TABLE[?offload_bucket=NAME[&key_prefix=PREFIX]]
                                          AWS's DynamoDBSaver (langgraph-checkpoint-aws),
                                          with its S3 offload bucket if it used one (and
                                          the key prefix of its s3_offload_config)

Each needs its own package; a missing one is named with the pip line that installs it.
A DynamoDBSaver table (and its offload bucket) is read in the region and at the endpoint
this store's own clients use (`--region`, `--endpoint-url` and the variables they stand for).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.s3dynamo import InvalidConfigError
from langgraph.checkpoint.s3dynamo.config.aws_names import region_of

EXPECTED = (
    "expected sqlite:PATH, postgresql://... (or postgres://...), or "
    "dynamodb:TABLE[?offload_bucket=NAME[&key_prefix=PREFIX]]"
)


def _need(package: str, module: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise InvalidConfigError(
            f"reading this source needs {package}; install it with: pip install {package}"
        ) from None


@contextlib.contextmanager
def open_source(
    spec: str, region: str | None = None, endpoint_url: str | None = None
) -> Iterator[BaseCheckpointSaver[Any]]:
    """The checkpointer `spec` names, open for the duration of the block; a DynamoDBSaver's
    clients in `region` and at `endpoint_url` (None: where the AWS SDK's environment says)."""
    scheme, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise InvalidConfigError(f"--from {spec!r}: {EXPECTED}")
    if scheme == "sqlite":
        sqlite = _need("langgraph-checkpoint-sqlite", "langgraph.checkpoint.sqlite")
        if not os.path.exists(rest):
            raise InvalidConfigError(f"--from {spec!r}: no SQLite database at {rest!r}")
        conn = sqlite3.connect(rest, check_same_thread=False)
        try:
            yield sqlite.SqliteSaver(conn)
        finally:
            conn.close()
    elif scheme in ("postgres", "postgresql"):
        with _postgres(spec) as saver:
            yield saver
    elif scheme == "dynamodb":
        with _dynamodb(spec, rest, region, endpoint_url) as saver:
            yield saver
    else:
        raise InvalidConfigError(f"--from {spec!r}: unknown kind of source {scheme!r}; {EXPECTED}")


@contextlib.contextmanager
def _postgres(spec: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """LangGraph's PostgresSaver on the connection string `spec`. A connection that fails
    (no server, a login refused, a string psycopg cannot read) or a database without the
    saver's tables is one line naming the source, its password hidden there and in
    psycopg's words, which may repeat the string."""
    postgres = _need("langgraph-checkpoint-postgres", "langgraph.checkpoint.postgres")
    import psycopg  # what langgraph-checkpoint-postgres connects with

    hidden = _password_hidden(spec)
    with contextlib.ExitStack() as stack:
        try:
            saver = stack.enter_context(postgres.PostgresSaver.from_conn_string(spec))
        except psycopg.Error as exc:
            said = hidden(str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc))
            raise InvalidConfigError(
                f"--from {hidden(spec)!r}: cannot connect to PostgreSQL ({said}); check the "
                "connection string, and that the server runs and accepts this login"
            ) from None
        try:
            yield saver
        except psycopg.errors.UndefinedTable:
            raise InvalidConfigError(
                f"--from {hidden(spec)!r}: the database has no LangGraph checkpoint tables "
                "(PostgresSaver.setup() never ran there); check the database name"
            ) from None


def _password_hidden(spec: str) -> Callable[[str], str]:
    """A function hiding the password of connection string `spec` in a text."""
    try:
        password = urlsplit(spec).password
    except ValueError:  # a string urllib cannot read (psycopg's error may still echo it)
        found = re.match(r"[^:]*://[^:/@]*:([^@]*)@", spec)
        password = found.group(1) if found else None
    return (lambda text: text.replace(password, "***")) if password else (lambda text: text)


@contextlib.contextmanager
def _dynamodb(
    spec: str, rest: str, region: str | None, endpoint_url: str | None
) -> Iterator[BaseCheckpointSaver[Any]]:
    """AWS's DynamoDBSaver on the table and offload bucket `rest` names. Where it fails
    for want of the table, the bucket, or the bucket's name, its error becomes the one
    line that names what is missing and the fix (`_missing`); any other passes on."""
    aws = _need("langgraph-checkpoint-aws", "langgraph_checkpoint_aws")
    table, _, query = rest.partition("?")
    options = {k: v[-1] for k, v in parse_qs(query).items()}
    unknown = sorted(set(options) - {"offload_bucket", "key_prefix"})
    if unknown or not table or ("key_prefix" in options and "offload_bucket" not in options):
        raise InvalidConfigError(f"--from {spec!r}: {EXPECTED}")
    offload = (
        {
            "bucket_name": options["offload_bucket"],
            "endpoint_url": endpoint_url,
            "key_prefix": options.get("key_prefix"),
        }
        if "offload_bucket" in options
        else None
    )
    saver = aws.DynamoDBSaver(
        table_name=table,
        region_name=region_of(region or None),
        endpoint_url=endpoint_url,
        s3_offload_config=offload,
    )
    # The saver logs each error it raises; unconfigured, logging would print those lines
    # beside the command's one (logging's last resort): silent, as this package's logs are.
    quiet, log = logging.NullHandler(), logging.getLogger("langgraph_checkpoint_aws")
    log.addHandler(quiet)
    try:
        yield saver
    except Exception as exc:
        missing = _missing(exc, spec, saver)
        if missing is None:
            raise
        raise InvalidConfigError(missing) from exc
    finally:
        log.removeHandler(quiet)


def _missing(exc: Exception, spec: str, saver: Any) -> str | None:
    """What a DynamoDBSaver error says is missing of `spec`, with the fix; None for any
    other error. botocore's errors are told by their code (the command line imports no
    botocore), DynamoDBSaver's want of a bucket by its message."""
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    table = saver.table_name
    if code == "ResourceNotFoundException":
        return (
            f"--from {spec!r}: no DynamoDB table {table!r} {_located(saver.client)}; check "
            "the name, or --region and --endpoint-url (AWS_REGION, S3DYNAMO_ENDPOINT_URL), "
            "which the source is read with as this store is"
        )
    if code == "NoSuchBucket":
        bucket = saver.storage.s3_bucket
        return (
            f"--from {spec!r}: no S3 bucket {bucket!r} {_located(saver.storage.s3_client)}; "
            "set ?offload_bucket= to the bucket the DynamoDBSaver offloaded to (the "
            "bucket_name of its s3_offload_config)"
        )
    if isinstance(exc, ValueError) and "S3 is not configured" in str(exc):
        return (
            f"--from {spec!r}: table {table!r} holds checkpoints the DynamoDBSaver "
            "offloaded to S3, and no bucket is named to read them from: add "
            f"?offload_bucket=BUCKET, the bucket_name of its s3_offload_config "
            f"('dynamodb:{table}?offload_bucket=BUCKET')"
        )
    return None


def _located(client: Any) -> str:
    meta = getattr(client, "meta", None)
    region = getattr(meta, "region_name", None) or "?"
    return f"(region {region}, endpoint {getattr(meta, 'endpoint_url', None) or '?'})"
