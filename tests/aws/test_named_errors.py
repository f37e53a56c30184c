"""What retrying cannot fix is a configuration error, named as one (`StorageConfigError`);
what may pass stays a `StorageError` (issue 28, part 4). And a saver pointed at another
bucket than the deployment's is refused by name on the cold path, at no extra request.
On moto, and on botocore answers stubbed with `botocore.stub.Stubber`."""

from __future__ import annotations

import os
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import (
    DeploymentMismatchError,
    EndpointUnreachableError,
    InvalidConfigError,
    StorageConfigError,
    StorageError,
)
from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoIndex
from langgraph.checkpoint.s3dynamo.backends.s3 import S3Objects
from tests.support.savers import RequestCounter, make_saver, thread_config

HTML_500 = "<!doctype html><title>500 Internal Server Error</title><h1>Internal Server Error</h1>"


def put_large(saver: Any, tid: str) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"doc": "x" * 50_000}
    checkpoint["channel_versions"] = {"doc": "1"}
    config = thread_config(tid)
    config["configurable"]["checkpoint_ns"] = ""
    out: dict[str, Any] = saver.put(config, checkpoint, {"step": -1}, {"doc": "1"})
    return out


@pytest.mark.unsupported_on("real", reason="SeaweedFS accepts any bucket name")
def test_an_invalid_bucket_name_is_a_configuration_error_that_says_the_rules(
    clients: Any,
) -> None:
    saver = make_saver(clients, bucket="ab")  # S3 names have 3 to 63 characters
    with pytest.raises(StorageConfigError) as raised:
        saver.setup()
    message = str(raised.value)
    assert "CreateBucket on S3 bucket 'ab' (region us-east-1" in message
    assert "S3 refused the bucket name (InvalidBucketName" in message
    assert "retrying does not fix" in message and "fix S3DYNAMO_BUCKET (bucket=)" in message
    assert "3 to 63 characters of lowercase letters" in message
    assert isinstance(raised.value, InvalidConfigError)
    assert not isinstance(raised.value, StorageError)  # not "retry later"


def test_a_bucket_name_botocore_refuses_before_sending_is_named_too(clients: Any) -> None:
    saver = make_saver(clients, bucket="Agent Checkpoints!")
    with pytest.raises(StorageConfigError, match=r"botocore refused a request to S3 bucket "):
        saver.setup()


def stubbed(service: str) -> tuple[Any, Stubber]:
    client = boto3.client(
        service, region_name="eu-nowhere-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.activate()
    return client, stubber


def test_an_endpoint_answering_500_without_an_aws_error_is_a_configuration_error() -> None:
    # What moto server (or any web server) at the endpoint answers for a region it does
    # not serve: an HTML page, on every attempt.
    client, stubber = stubbed("dynamodb")
    stubber.add_client_error(
        "query", service_error_code="", service_message=HTML_500, http_status_code=500
    )
    with pytest.raises(StorageConfigError) as raised:
        DynamoIndex(client, "checkpoints").read_control("#s3dynamo")
    message = str(raised.value)
    assert "Query on DynamoDB table 'checkpoints' (region eu-nowhere-1, endpoint " in message
    assert "answered HTTP 500 without an AWS error code" in message
    assert "set AWS_REGION (or region=) to a region the service runs in" in message
    assert "S3DYNAMO_ENDPOINT_URL" in message


@pytest.mark.parametrize(
    ("service", "operation", "code", "status"),
    [
        ("dynamodb", "query", "InternalServerError", 500),
        ("dynamodb", "query", "ProvisionedThroughputExceededException", 400),
        ("s3", "put_object", "InternalError", 500),
        ("s3", "put_object", "SlowDown", 503),
        ("s3", "put_object", "", 503),  # a gateway's bodiless 503
    ],
)
def test_errors_that_may_pass_stay_storage_errors_that_say_retry(
    service: str, operation: str, code: str, status: int
) -> None:
    client, stubber = stubbed(service)
    stubber.add_client_error(
        operation, service_error_code=code, service_message="", http_status_code=status
    )
    with pytest.raises(StorageError, match="retry later") as raised:
        if service == "dynamodb":
            DynamoIndex(client, "checkpoints").read_control("#s3dynamo")
        else:
            S3Objects(client, "agent-checkpoints").overwrite("k", b"v")
    assert not isinstance(raised.value, InvalidConfigError)


@pytest.mark.parametrize("code", ["AccessDenied", "InvalidAccessKeyId"])
def test_access_and_credentials_refused_are_configuration_errors(code: str) -> None:
    client, stubber = stubbed("s3")
    stubber.add_client_error(
        "put_object", service_error_code=code, service_message="no", http_status_code=403
    )
    with pytest.raises(StorageConfigError, match="PutObject on S3 bucket 'agent-checkpoints'"):
        S3Objects(client, "agent-checkpoints").overwrite("k", b"v")


def test_a_saver_on_another_bucket_is_refused_on_the_cold_path_at_no_extra_request(
    clients: Any, counter: RequestCounter
) -> None:
    writer = make_saver(clients, inline_max=0)
    writer.setup()
    put_large(writer, "t")
    counter.reset()

    # Another process whose bucket setting has a typo: its first read sends what any
    # cold read sends (the thread's Query and the deployment record's, in one wave).
    wrong = make_saver(clients, bucket=f"{clients.bucket}-typo", inline_max=0)
    with pytest.raises(DeploymentMismatchError) as raised:
        wrong.get_tuple(thread_config("t"))
    assert counter.calls == {"dynamodb.Query": 2}
    message = str(raised.value)
    assert f"this saver's objects go to bucket '{clients.bucket}-typo'" in message
    assert f"the deployment's are in bucket '{clients.bucket}'" in message
    assert f"set S3DYNAMO_BUCKET (bucket=) to '{clients.bucket}'" in message

    # A process whose first call writes a new thread is refused before any write.
    counter.reset()
    first_put = make_saver(clients, bucket=f"{clients.bucket}-typo", inline_max=0)
    with pytest.raises(DeploymentMismatchError, match="go to bucket"):
        put_large(first_put, "new")
    assert counter.calls == {"dynamodb.Query": 1}

    right = make_saver(clients, inline_max=0)
    counter.reset()
    assert right.get_tuple(thread_config("t")) is not None
    assert counter.calls == {"dynamodb.Query": 2, "s3.GetObject": 1}


def test_the_deployment_record_names_the_bucket_it_was_set_up_with(clients: Any) -> None:
    saver = make_saver(clients)
    saver.setup()
    item = clients[0].get_item(
        TableName=clients.table, Key={"pk": {"S": "#s3dynamo"}, "sk": {"S": "deployment"}}
    )["Item"]
    assert item["bucket"] == {"S": clients.bucket}


def test_the_documented_update_names_the_bucket_of_a_record_written_without_one(
    clients: Any,
) -> None:
    """docs/FORMAT.md's update-item, sent through boto3: a 0.2.0 record (no bucket) gains
    the field, and a saver on another bucket is refused from then on."""
    ddb = clients[0]
    key = {"pk": {"S": "#s3dynamo"}, "sk": {"S": "deployment"}}
    writer = make_saver(clients)
    writer.setup()
    ddb.update_item(
        TableName=clients.table,
        Key=key,
        UpdateExpression="REMOVE #b",
        ExpressionAttributeNames={"#b": "bucket"},
    )  # as 0.2.0 wrote it
    # Unchecked: any bucket is accepted.
    assert (
        make_saver(clients, bucket=f"{clients.bucket}-typo").get_tuple(thread_config("t")) is None
    )

    ddb.update_item(
        TableName=clients.table,
        Key=key,
        UpdateExpression="SET #b = :b, #v = #v + :one",
        ExpressionAttributeNames={"#b": "bucket", "#v": "v"},
        ExpressionAttributeValues={":b": {"S": clients.bucket}, ":one": {"N": "1"}},
    )
    with pytest.raises(DeploymentMismatchError, match="go to bucket"):
        make_saver(clients, bucket=f"{clients.bucket}-typo").get_tuple(thread_config("t"))
    assert make_saver(clients).get_tuple(thread_config("t")) is None


@pytest.mark.parametrize(
    ("region", "error"),
    [("us-esat-1", StorageConfigError), ("us-east-1", EndpointUnreachableError)],
)
def test_a_region_no_one_knows_is_a_configuration_error_when_its_endpoint_does_not_answer(
    region: str, error: type[Exception], monkeypatch: pytest.MonkeyPatch
) -> None:
    # AWS's own endpoint for the region, not a local server's that the integration
    # tiers name in AWS_ENDPOINT_URL*: the test is about an AWS region.
    for name in [n for n in os.environ if n.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(name)
    # No network here: the connection fails at every attempt, as DNS fails for a region
    # that does not exist (and, for one that does, as an outage would: that may pass).
    client = boto3.client(
        "dynamodb",
        region_name=region,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"mode": "standard", "max_attempts": 2}),
    )

    def no_connection(request: Any, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=request.url)

    client.meta.events.register("before-send", no_connection)
    with pytest.raises(error) as raised:
        DynamoIndex(client, "checkpoints").read_control("#s3dynamo")
    message = str(raised.value)
    assert f"cannot reach DynamoDB table 'checkpoints' (region {region}, endpoint " in message
    if error is StorageConfigError:
        assert f"'{region}' is no AWS region botocore knows (a typo?)" in message
        assert "set AWS_REGION (or region=)" in message
    else:
        assert isinstance(raised.value, StorageError)
