"""A saver configured for another region than its deployment's (issue 39, part 2): S3
bucket names are global and S3 says where a bucket lives, so `setup()`, the first request
and `s3dynamo doctor` name the region to set instead of starting a second, empty
deployment. On moto, which keeps tables and buckets per region; the normal path sends
no request more (tests/aws/test_budgets.py)."""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import S3DynamoSaver, StorageConfigError, StoreMissingError
from tests.support.savers import RequestCounter, thread_config
from tests.support.scenarios import chat_graph

pytestmark = pytest.mark.unsupported_on("real", reason="SeaweedFS and dynalite have no regions")

HOME, AWAY = "us-east-2", "eu-west-1"


@pytest.fixture
def deployment(aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A deployment in HOME, one conversation in it, as the Quickstart leaves it; the
    environment of a shell that then has AWS_REGION set to another region."""
    name = f"agent-checkpoints-{uuid.uuid4().hex[:10]}"
    env = {
        "S3DYNAMO_TABLE": name,
        "S3DYNAMO_BUCKET": name,
        "S3DYNAMO_KEYS": "k1:" + base64.b64encode(os.urandom(32)).decode(),
        "S3DYNAMO_SECRET": base64.b64encode(os.urandom(32)).decode(),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", HOME)
    home = S3DynamoSaver.from_env()
    home.setup()
    chat_graph(home).invoke(
        {"messages": [HumanMessage("hello", id="h0")]}, {"configurable": {"thread_id": "user-42"}}
    )
    monkeypatch.setenv("AWS_REGION", AWAY)
    yield env


def tables(region: str) -> list[str]:
    return list(boto3.client("dynamodb", region_name=region).list_tables()["TableNames"])


def counted(saver: S3DynamoSaver) -> RequestCounter:
    saver.prime()  # builds the clients, sends nothing
    counter = RequestCounter()
    counter.hook(saver.parts.clients.dynamodb)
    counter.hook(saver.parts.clients.s3)
    return counter


def expected(env: dict[str, str]) -> str:
    return (
        f"bucket {env['S3DYNAMO_BUCKET']!r} lives in region {HOME}, this saver is configured "
        f"for {AWAY}; set AWS_REGION={HOME}"
    )


def test_setup_in_another_region_names_the_region_and_creates_nothing(
    deployment: dict[str, str],
) -> None:
    saver = S3DynamoSaver.from_env()
    counter = counted(saver)
    with pytest.raises(StorageConfigError) as raised:
        saver.setup()
    message = str(raised.value)
    assert message.startswith(f"setup() refused: {expected(deployment)}")
    assert "a second, empty deployment" in message and "nothing was created" in message
    assert counter.calls == {"s3.HeadBucket": 1}  # the check, and nothing more
    assert tables(AWAY) == []


def test_the_first_request_in_another_region_names_the_region_not_a_missing_table(
    deployment: dict[str, str],
) -> None:
    saver = S3DynamoSaver.from_env()
    counter = counted(saver)
    graph = chat_graph(saver)
    with pytest.raises(StorageConfigError) as raised:
        graph.invoke(
            {"messages": [HumanMessage("still there?", id="h1")]},
            {"configurable": {"thread_id": "user-42"}},
        )
    message = str(raised.value)
    assert message.startswith(
        f"DynamoDB table {deployment['S3DYNAMO_TABLE']!r} (region {AWAY}, endpoint "
    )
    assert f"does not exist, and {expected(deployment)}" in message
    assert "Do not run setup() in this region" in message
    assert not isinstance(raised.value, StoreMissingError)  # whose fix is setup()
    # The cold read (the thread's Query and the deployment record's, in one wave: the
    # second is not sent when the first fails before it starts), then, on this path
    # only, the one HeadBucket.
    assert counter.calls["s3.HeadBucket"] == 1 and counter.calls["dynamodb.Query"] in (1, 2)
    assert counter.total("dynamodb") + counter.total("s3") == counter.calls["dynamodb.Query"] + 1
    # A put as the first request (a new thread) is told the same.
    with pytest.raises(StorageConfigError, match=f"lives in region {HOME}"):
        saver.put(*_first_put())
    assert tables(AWAY) == []

    # In the deployment's region, the conversation is there.
    home = S3DynamoSaver.from_env(region=HOME)
    state = chat_graph(home).get_state({"configurable": {"thread_id": "user-42"}}).values
    assert state["messages"][0].content == "hello"


def _first_put() -> tuple[Any, ...]:
    from langgraph.checkpoint.base import empty_checkpoint

    config = thread_config("new-thread", checkpoint_ns="")
    return config, empty_checkpoint(), {"source": "input", "step": -1}, {}


def test_doctor_in_another_region_names_the_region(deployment: dict[str, str]) -> None:
    saver = S3DynamoSaver.from_env()
    counter = counted(saver)
    report = saver.ops.check(raise_on_problem=False)
    assert len(report.problems) == 1
    problem = report.problems[0]
    assert problem.startswith("table: DynamoDB table ")
    assert f"does not exist, and {expected(deployment)}" in problem
    assert counter.calls == {"dynamodb.Query": 1, "s3.HeadBucket": 1}


def test_a_second_table_made_earlier_in_the_wrong_region_is_named_by_doctor_and_setup(
    deployment: dict[str, str],
) -> None:
    # What setup() did there before it checked: a table of the same name in AWAY.
    from langgraph.checkpoint.s3dynamo.format.schema import table_definition

    boto3.client("dynamodb", region_name=AWAY).create_table(
        **table_definition(deployment["S3DYNAMO_TABLE"])
    )
    saver = S3DynamoSaver.from_env()
    counter = counted(saver)
    report = saver.ops.check(raise_on_problem=False)
    assert report.lines[0].startswith("table: DynamoDB table ")
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"bucket: {expected(deployment)}")
    assert "is not the deployment's table" in report.problems[0]
    # The Query of the control partition, the listing, the HeadBucket.
    assert counter.calls == {"dynamodb.Query": 1, "s3.ListObjectsV2": 1, "s3.HeadBucket": 1}
    with pytest.raises(StorageConfigError, match=r"^setup\(\) refused: bucket "):
        saver.setup()


def test_in_the_deployments_region_setup_and_doctor_add_one_headbucket_each(
    deployment: dict[str, str],
) -> None:
    saver = S3DynamoSaver.from_env(region=HOME)
    counter = counted(saver)
    saver.setup()  # finds both: the check, DescribeTable, HeadBucket, the record's Query
    assert counter.calls == {"s3.HeadBucket": 2, "dynamodb.DescribeTable": 1, "dynamodb.Query": 1}
    counter.reset()
    report = saver.ops.check()
    assert report.ok, report
    assert counter.calls == {"dynamodb.Query": 1, "s3.ListObjectsV2": 1, "s3.HeadBucket": 1}
