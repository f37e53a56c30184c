"""`s3dynamo import --from ...` as a user moving to this saver runs it: from a SQLite
file, from PostgreSQL (a local server on 127.0.0.1, started and stopped here) and from
AWS's DynamoDBSaver table, into a store on moto in process (and one on moto server, for
`--endpoint-url`). The plan, the copy, a repeat that has nothing to do, a thread that
exists here with another history (exit 1), and the errors for a source that cannot be
read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint

from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto
from tests.support.cli import command_env, environment, one_line_error, run
from tests.support.graphs import converse, delta_graph
from tests.support.imports import dynamodb_saver, same_order, tuples
from tests.support.postgres import find_bin_dir, local_postgres
from tests.support.scenarios import SCENARIOS, Runner

pytest_plugins = ["langgraph.checkpoint.s3dynamo.testing"]

THREADS = ["memory", "interrupt", "subgraph"]


def populate(source: BaseCheckpointSaver[Any]) -> None:
    for name in THREADS:
        SCENARIOS[name](source, Runner("sync"), name)
    converse(delta_graph(source, 4), "delta", 5)


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    from moto import mock_aws

    serialize_moto()
    with mock_aws():
        yield


@pytest.fixture
def sandbox(moto: None) -> Sandbox:
    sandbox = Sandbox()
    sandbox.setup()  # the deployed table and bucket, empty
    return sandbox


def imported_equal(sandbox: Sandbox, source: BaseCheckpointSaver[Any]) -> None:
    with environment(command_env(sandbox.environment())):
        saver = sandbox.saver()
        for tid in [*THREADS, "delta"]:
            assert tuples(saver, tid) == tuples(source, tid), tid


def test_from_sqlite_plan_copy_repeat_and_conflict(sandbox: Sandbox, tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    source = SqliteSaver(conn)
    populate(source)
    env = sandbox.environment()
    spec = f"sqlite:{path}"

    plan = run(env, "import", "--from", spec, "--json")
    assert plan.code == 0, plan.err
    body = plan.json()
    assert body["executed"] is False
    assert sorted(t["thread_id"] for t in body["plan"]["threads"]) == sorted([*THREADS, "delta"])
    shown = run(env, "import", "--from", spec)
    assert "4 threads in" in shown.out and "run again with --yes" in shown.out

    done = run(env, "import", "--from", spec, "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json()["result"]["threads_copied"] == 4
    imported_equal(sandbox, source)

    again = run(env, "import", "--from", spec, "--yes")
    assert again.code == 0 and "nothing to do" in again.out

    # A thread of the same id that has a history of its own here: left alone, exit 1.
    with environment(command_env(env)):
        saver = sandbox.saver()
        converse(delta_graph(saver, 4), "mine", 1)
    converse(delta_graph(source, 4), "mine", 2)
    clash = run(env, "import", "--from", spec, "mine", "--yes")
    assert clash.code == 1
    assert "left alone: thread 'mine'" in clash.out
    assert (
        "an import never overwrites: to import the source's history in its place, delete the "
        "thread here first (`s3dynamo delete`, delete_thread), then import again"
    ) in " ".join(clash.out.split())
    conn.close()


def test_from_dynamodb_saver_table_with_offload_bucket(sandbox: Sandbox) -> None:
    from langgraph_checkpoint_aws import DynamoDBSaver

    from tests.support.savers import Clients

    clients = Clients((sandbox.dynamodb, sandbox.s3))
    source: DynamoDBSaver = dynamodb_saver(clients)
    populate(source)
    spec = f"dynamodb:{source.table_name}?offload_bucket={source.storage.s3_bucket}"
    env = {**sandbox.environment(), "AWS_REGION": sandbox.dynamodb.meta.region_name}
    done = run(env, "import", "--from", spec, "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json()["result"]["threads_copied"] == 4
    with environment(command_env(env)):
        saver = sandbox.saver()
        for tid in [*THREADS, "delta"]:
            assert same_order(saver, tid) == same_order(source, tid), tid


def test_from_dynamodb_saver_whose_offloads_have_a_key_prefix(sandbox: Sandbox) -> None:
    """Its s3_offload_config's key_prefix is `&key_prefix=`; without it, DynamoDBSaver
    gives none of an offloaded thread's checkpoints, said as such, nothing written."""
    from tests.support.savers import Clients

    source = dynamodb_saver(Clients((sandbox.dynamodb, sandbox.s3)), key_prefix="my-app/lg")
    offloaded(source, "big")
    spec = f"dynamodb:{source.table_name}?offload_bucket={source.storage.s3_bucket}"
    env = {**sandbox.environment(), "AWS_REGION": sandbox.dynamodb.meta.region_name}
    blind = run(env, "import", "--from", spec, "--yes")
    assert blind.code == 2
    assert one_line_error(blind).startswith(
        "s3dynamo: the source lists thread(s) ['big'] and gives no checkpoint of them: it "
        "cannot read what they hold (a DynamoDBSaver's checkpoints offloaded to S3 need its "
        "bucket and key prefix: dynamodb:TABLE?offload_bucket=NAME&key_prefix=PREFIX)"
    )
    with environment(command_env(env)):
        assert list(sandbox.saver().list(None)) == []
    done = run(env, "import", "--from", spec + "&key_prefix=my-app/lg", "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json()["result"]["threads_copied"] == 1
    with environment(command_env(env)):
        assert same_order(sandbox.saver(), "big") == same_order(source, "big")


def offloaded(source: Any, tid: str) -> None:
    """A checkpoint too large for a DynamoDB item: DynamoDBSaver puts it in its offload
    bucket (over 350 KB)."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"doc": "x" * 400_000}
    checkpoint["channel_versions"] = {"doc": 1}
    config = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
    source.put(config, checkpoint, {"step": 1, "source": "input"}, {"doc": 1})


def test_from_dynamodb_saver_at_the_endpoint_given(s3dynamo_server_sandbox: Sandbox) -> None:
    """`--endpoint-url` (or S3DYNAMO_ENDPOINT_URL), with no AWS_ENDPOINT_URL* set, is where
    the source's table and offload bucket are read too, not AWS's own endpoints."""
    from tests.support.savers import Clients

    sandbox = s3dynamo_server_sandbox
    sandbox.setup()
    url = sandbox.endpoint_url
    assert url
    source = dynamodb_saver(Clients((sandbox.dynamodb, sandbox.s3)))  # on the server
    offloaded(source, "given")
    offloaded(source, "from-env")
    spec = f"dynamodb:{source.table_name}?offload_bucket={source.storage.s3_bucket}"
    env: dict[str, str | None] = {
        **sandbox.environment(),
        "AWS_ENDPOINT_URL": None,
        "AWS_ENDPOINT_URL_DYNAMODB": None,
        "AWS_ENDPOINT_URL_S3": None,
        # A request meant for AWS's own endpoints fails here at once, never leaves.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    given = run(env, "--endpoint-url", url, "import", "--from", spec, "given", "--yes", "--json")
    assert given.code == 0, given.err
    assert given.json()["result"]["checkpoints_copied"] == 1
    from_env = {**env, "S3DYNAMO_ENDPOINT_URL": url}
    done = run(from_env, "import", "--from", spec, "from-env", "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json()["result"]["checkpoints_copied"] == 1
    saver = sandbox.saver()
    for tid in ("given", "from-env"):
        assert same_order(saver, tid) == same_order(source, tid), tid


@pytest.mark.skipif(find_bin_dir() is None, reason="PostgreSQL is not installed (initdb)")
def test_a_postgres_database_without_checkpoints_is_named(sandbox: Sandbox) -> None:
    with local_postgres() as dsn:
        r = run(sandbox.environment(), "import", "--from", dsn, "--yes")
    assert r.code == 2
    assert one_line_error(r).endswith(
        "the database has no LangGraph checkpoint tables (PostgresSaver.setup() never ran "
        "there); check the database name"
    )


@pytest.mark.skipif(find_bin_dir() is None, reason="PostgreSQL is not installed (initdb)")
def test_from_postgres(sandbox: Sandbox) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    with local_postgres() as dsn:
        assert dsn
        with PostgresSaver.from_conn_string(dsn) as source:
            source.setup()
            populate(source)
            done = run(sandbox.environment(), "import", "--from", dsn, "--yes", "--json")
            assert done.code == 0, done.err
            assert done.json()["result"]["threads_copied"] == 4
            imported_equal(sandbox, source)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        (
            "",
            "holds checkpoints the DynamoDBSaver offloaded to S3, and no bucket is named to "
            "read them from: add ?offload_bucket=BUCKET",
        ),
        ("?offload_bucket=no-such-bucket", "no S3 bucket 'no-such-bucket' (region us-east-1"),
    ],
)
def test_a_dynamodb_saver_offload_bucket_missing_or_not_named_is_one_line(
    sandbox: Sandbox, query: str, says: str
) -> None:
    from tests.support.savers import Clients

    source = dynamodb_saver(Clients((sandbox.dynamodb, sandbox.s3)))
    offloaded(source, "big")
    spec = f"dynamodb:{source.table_name}{query}"
    for args in (["--yes"], ["big", "--json"]):
        r = run(sandbox.environment(), "import", "--from", spec, *args)
        assert r.code == 2, r.err
        line = one_line_error(r)  # nothing the DynamoDBSaver logged beside it
        assert line.startswith(f"s3dynamo: --from {spec!r}: ") and says in line, line
    with environment(command_env(sandbox.environment())):
        assert list(sandbox.saver().list(None)) == []  # nothing written


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("sqlite:/no/such/file.sqlite", "no SQLite database at"),
        ("mysql://localhost/db", "unknown kind of source 'mysql'"),
        (
            "nonsense",
            "expected sqlite:PATH, postgresql://... (or postgres://...), or dynamodb:TABLE",
        ),
        ("dynamodb:t?bucket=b", "expected sqlite:PATH"),
        ("dynamodb:t?key_prefix=p", "dynamodb:TABLE[?offload_bucket=NAME[&key_prefix=PREFIX]]"),
        (
            "dynamodb:no-such-table",
            "no DynamoDB table 'no-such-table' (region us-east-1, endpoint "
            "https://dynamodb.us-east-1.amazonaws.com); check the name, or --region and "
            "--endpoint-url",
        ),
        (
            "postgresql://me:sekret@127.0.0.1:1/db",
            "--from 'postgresql://me:***@127.0.0.1:1/db': cannot connect to PostgreSQL "
            '(connection failed: connection to server at "127.0.0.1", port 1 failed',
        ),
        (
            "postgres://me:sekret@[::1/db",
            "--from 'postgres://me:***@[::1/db': cannot connect to PostgreSQL",
        ),
    ],
)
def test_a_source_that_cannot_be_read_is_named(sandbox: Sandbox, spec: str, says: str) -> None:
    r = run(sandbox.environment(), "import", "--from", spec, "--yes")
    assert r.code == 2
    assert says in one_line_error(r)
    assert "sekret" not in r.err + r.out
    with environment(command_env(sandbox.environment())):
        assert list(sandbox.saver().list(None)) == []  # nothing written
