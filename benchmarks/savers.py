"""The checkpoint savers under comparison, each opened on fresh, empty storage.

Every entry of `SAVERS` is a `SaverSpec`; adding a saver means adding one entry.
`open(env)` is a context manager yielding an `OpenSaver`: the saver, the boto3 clients
to instrument (AWS savers only) and a way to size what it stored.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aws_mock import AwsStore, aws_account, new_client

_names = itertools.count(1)


@dataclass
class BenchEnv:
    """What the savers share for one benchmark process."""

    workdir: Path
    postgres_dsn: str | None


@dataclass
class OpenSaver:
    saver: Any
    stored_bytes: Callable[[], Any]  # bytes, or aws_mock.Stored for AWS savers
    aws_clients: list[Any] = field(default_factory=list)


@dataclass
class SaverSpec:
    name: str
    open: Callable[[BenchEnv], AbstractContextManager[OpenSaver]]
    is_aws: bool
    # Module to import in the cold-start subprocess (AWS savers only).
    cold_start: str | None = None
    # Why this saver can't run here, or None if it can.
    unavailable: Callable[[BenchEnv], str | None] = lambda env: None


# --- s3dynamo (this project) -------------------------------------------------------


def _s3dynamo_missing(env: BenchEnv) -> str | None:
    try:
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver  # noqa: F401
    except ImportError as error:
        return f"langgraph.checkpoint.s3dynamo not importable ({error})"
    return None


def _s3dynamo(
    encrypted: bool, **settings: Any
) -> Callable[[BenchEnv], AbstractContextManager[OpenSaver]]:
    @contextmanager
    def open_saver(env: BenchEnv) -> Iterator[OpenSaver]:
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        with aws_account():
            n = next(_names)
            store = AwsStore(table=f"s3dynamo-{n}", bucket=f"s3dynamo-{n}")
            ddb, s3 = new_client("dynamodb"), new_client("s3")
            secrets = {"keys": {"k1": os.urandom(32)}, "secret": os.urandom(32)}
            saver = S3DynamoSaver(
                table=store.table,
                bucket=store.bucket,
                dynamodb_client=ddb,
                s3_client=s3,
                # Unencrypted is an explicit choice the saver requires (plaintext=True).
                **(secrets if encrypted else {"plaintext": True}),
                **settings,
            )
            saver.setup()
            yield OpenSaver(saver, store.stored_bytes, [ddb, s3])

    return open_saver


# --- langgraph-checkpoint-aws DynamoDBSaver ----------------------------------------


@contextmanager
def _open_dynamodb_saver(env: BenchEnv) -> Iterator[OpenSaver]:
    from langgraph_checkpoint_aws import DynamoDBSaver

    with aws_account():
        n = next(_names)
        store = AwsStore(table=f"lgaws-{n}", bucket=f"lgaws-{n}")
        create_dynamodb_saver_resources(store.table, store.bucket)
        # S3 offload takes items over 350 KB out of DynamoDB (whose limit is 400 KB).
        saver = DynamoDBSaver(
            table_name=store.table,
            region_name="us-east-1",
            s3_offload_config={"bucket_name": store.bucket},
        )
        clients = [saver.client, saver.storage.s3_client]
        yield OpenSaver(saver, store.stored_bytes, clients)


def create_dynamodb_saver_resources(table: str, bucket: str, session: Any = None) -> None:
    """The table layout DynamoDBSaver expects (its README / CloudFormation sample)."""
    ddb = session.client("dynamodb") if session else new_client("dynamodb")
    ddb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
    )
    ddb.get_waiter("table_exists").wait(TableName=table)
    (session.client("s3") if session else new_client("s3")).create_bucket(Bucket=bucket)


# --- LangGraph's own savers ---------------------------------------------------------


@contextmanager
def _open_memory(env: BenchEnv) -> Iterator[OpenSaver]:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    yield OpenSaver(saver, lambda: _bytes_held(saver.storage, saver.writes, saver.blobs))


def _bytes_held(*containers: Any) -> int:
    """Serialized bytes InMemorySaver holds (it keeps each value as serde bytes)."""
    total = 0
    stack = list(containers)
    while stack:
        item = stack.pop()
        if isinstance(item, (bytes, bytearray)):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
    return total


@contextmanager
def _open_sqlite(env: BenchEnv) -> Iterator[OpenSaver]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(tempfile.mkdtemp(dir=env.workdir)) / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)

    def file_bytes() -> int:
        # The saver runs in WAL mode: fold the log into the main file before sizing it.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(p.stat().st_size for p in path.parent.iterdir())

    try:
        yield OpenSaver(SqliteSaver(conn), file_bytes)
    finally:
        conn.close()


@contextmanager
def _open_postgres(env: BenchEnv) -> Iterator[OpenSaver]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    assert env.postgres_dsn
    database = f"bench_{next(_names)}"
    with psycopg.connect(env.postgres_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
        try:
            dsn = env.postgres_dsn.rsplit("/", 1)[0] + f"/{database}"
            with PostgresSaver.from_conn_string(dsn) as saver:
                saver.setup()
                yield OpenSaver(saver, lambda: _postgres_bytes(saver))
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {database}")


def _postgres_bytes(saver: Any) -> int:
    # Tables with their indexes and TOAST: what the checkpoints occupy on disk.
    row = saver.conn.execute(
        "SELECT sum(pg_total_relation_size(c.oid)) AS size FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'checkpoint%'"
    ).fetchone()
    return int(row["size"])


SAVERS: list[SaverSpec] = [
    SaverSpec(
        "s3dynamo",
        _s3dynamo(encrypted=False),
        is_aws=True,
        cold_start="s3dynamo",
        unavailable=_s3dynamo_missing,
    ),
    SaverSpec(
        "s3dynamo+enc",
        _s3dynamo(encrypted=True),
        is_aws=True,
        unavailable=_s3dynamo_missing,
    ),
    SaverSpec("DynamoDBSaver", _open_dynamodb_saver, is_aws=True, cold_start="dynamodb"),
    SaverSpec("InMemorySaver", _open_memory, is_aws=False),
    SaverSpec("SqliteSaver", _open_sqlite, is_aws=False),
    SaverSpec(
        "PostgresSaver",
        _open_postgres,
        is_aws=False,
        unavailable=lambda env: None if env.postgres_dsn else "no PostgreSQL server",
    ),
]


# Not run by default: `--savers` picks them to choose defaults (`inline_max`, the zstd
# level, `delta_max`) from measurements, and to show what concurrent-run detection costs
# (`detect=off`: plain PutItem instead of a transaction with the namespace's head). All
# encrypted, as production would run.
SETTINGS_SWEEP: list[SaverSpec] = [
    SaverSpec(
        f"s3dynamo {name}={label}",
        _s3dynamo(encrypted=True, **{setting: value}),
        is_aws=True,
        unavailable=_s3dynamo_missing,
    )
    for name, setting, choices in (
        (
            "inline",
            "inline_max",
            (("0", 0), ("1K", 1024), ("4K", 4096), ("8K", 8192), ("16K", 16384), ("64K", 65536)),
        ),
        ("zstd", "compression_level", (("1", 1), ("3", 3), ("6", 6), ("9", 9))),
        (
            "delta",
            "delta_max",
            (("2K", 2048), ("3K", 3072), ("4K", 4096), ("6K", 6144), ("8K", 8192)),
        ),
        ("detect", "detect_concurrent_runs", (("off", False),)),
    )
    for label, value in choices
]
