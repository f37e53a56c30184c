"""Errors a new user meets in a first hour, each named: what came, what was expected and
the fix, raised before anything is written (issue 28, part 4). A test taking `backend`
runs on the in-memory twins and on the AWS adapters (moto). What retrying cannot fix is
a configuration error (`StorageConfigError`); what may pass stays a `StorageError`: on
moto, and on botocore answers stubbed with `botocore.stub.Stubber`. A saver pointed at
another bucket than the deployment's is refused by name on the cold path, at no extra
request."""

from __future__ import annotations

import base64
import os
import threading
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import (
    DeploymentMismatchError,
    EndpointUnreachableError,
    InvalidConfigError,
    ItemTooLargeError,
    S3DynamoSaver,
    Settings,
    StorageConfigError,
    StorageError,
    ValueNotSerializableError,
)
from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.s3 import S3Objects
from langgraph.checkpoint.s3dynamo.config.aws_names import table_problem
from langgraph.checkpoint.s3dynamo.format.layout import deployment_pk
from tests.support import raw
from tests.support.backends import Backend
from tests.support.memory_index import MemoryIndex
from tests.support.savers import MemorySaver, make_saver, thread_config

KEY_1, KEY_0 = os.urandom(32), os.urandom(32)
SECRET = "a naming secret of 32 characters"
HTML_500 = "<!doctype html><title>500 Internal Server Error</title><h1>Internal Server Error</h1>"


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def saver_on(
    index: MemoryIndex | None = None, objects: MemoryObjects | None = None, **settings: Any
) -> MemorySaver:
    """A saver on in-memory ports with no setup(): nothing is written until it writes."""
    index, objects = index or MemoryIndex(), objects or MemoryObjects()
    settings.setdefault("keys", {"k1": KEY_1})
    settings.setdefault("secret", SECRET)
    saver = MemorySaver(index=index, object_store=objects, **settings)
    saver.index, saver.objects = index, objects
    return saver


def put_value(saver: S3DynamoSaver, tid: str, value: Any) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notes": "fine", "tool": value}
    checkpoint["channel_versions"] = {"notes": "1", "tool": "1"}
    config = thread_config(tid)
    config["configurable"]["checkpoint_ns"] = ""
    return saver.put(
        config, checkpoint, {"source": "input", "step": -1}, {"notes": "1", "tool": "1"}
    )


# ------------------------------------------------ 1. keys in S3DYNAMO_KEYS' form


def test_keys_in_the_environment_form_are_the_keys_the_environment_gives(
    backend: Backend,
) -> None:
    spec = f"k1:{b64(KEY_1)},k0:{b64(KEY_0)}"
    saver = backend.saver(keys=spec)
    from_env = Settings.from_env({"S3DYNAMO_KEYS": spec, "S3DYNAMO_SECRET": SECRET})
    assert saver.settings.keys == from_env.keys
    assert saver.settings.keys is not None
    assert saver.settings.keys.active == "k1"
    assert dict(saver.settings.keys.keys) == {"k1": KEY_1, "k0": KEY_0}
    assert saver_on(keys=spec, active_key="k0").settings.keys.active == "k0"  # type: ignore[union-attr]

    # What a saver given the text wrote, a saver given the mapping reads, and back.
    put_value(saver, "t", "hello")
    same = backend.saver(setup=False, keys={"k1": KEY_1, "k0": KEY_0})
    tup = same.get_tuple(thread_config("t"))
    assert tup is not None and tup.checkpoint["channel_values"]["tool"] == "hello"
    put_value(same, "t2", "back")
    tup = saver.get_tuple(thread_config("t2"))
    assert tup is not None and tup.checkpoint["channel_values"]["tool"] == "back"


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        (
            "k1",
            r"keys \(S3DYNAMO_KEYS' form\): keyring entry 'k1' has no id: "
            "expected 'id:base64key'",
        ),
        (
            f"k1:{b64(KEY_1)[:-4]}",
            r"keys \(S3DYNAMO_KEYS' form\): key 'k1' is 30 bytes; AES-256 needs exactly 32",
        ),
        ("k1:not base64!", r"keyring entry 'k1': key is not valid base64"),
        (
            {"k1": b64(KEY_1)},
            r"keys\['k1'\] is str; a mapping must hold raw 32-byte keys .* keys='k1:<base64>'",
        ),
        (
            42,
            r"keys is int; expected keys as 'id:base64key\[,id:base64key\.\.\.\]' "
            r"\(S3DYNAMO_KEYS' form\)",
        ),
    ],
    ids=["no id", "short key", "not base64", "base64 text in a mapping", "an int"],
)
def test_keys_in_another_form_are_refused_by_name(keys: Any, named: str) -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    with pytest.raises(InvalidConfigError, match=named):
        S3DynamoSaver(index=index, object_store=objects, keys=keys, secret=SECRET)
    assert not index.calls and not objects.calls


# ------------------------------------------------------ 2. a naming secret's length


@pytest.mark.parametrize("secret", ["abc", b"fifteen bytes!!", "é" * 7])
def test_a_short_naming_secret_is_refused_with_how_to_make_one(secret: str | bytes) -> None:
    size = len(secret.encode() if isinstance(secret, str) else secret)
    with pytest.raises(InvalidConfigError) as raised:
        saver_on(secret=secret)
    message = str(raised.value)
    assert (
        f"the naming secret (secret=, S3DYNAMO_SECRET) is {size} bytes; expected at least 16"
        in message
    )
    assert "secrets.token_urlsafe(32)" in message
    with pytest.raises(InvalidConfigError, match=f"is {size} bytes; expected at least 16"):
        Settings.from_env(
            {
                "S3DYNAMO_KEYS": f"k1:{b64(KEY_1)}",
                "S3DYNAMO_SECRET": secret if isinstance(secret, str) else secret.decode(),
            }
        )


def test_a_sixteen_byte_secret_is_enough_for_every_key_source() -> None:
    assert saver_on(secret="s" * 16).settings.secret == b"s" * 16
    assert saver_on(keys=None, secret=b"\0" * 16, plaintext=True).settings.secret == b"\0" * 16


# ------------------------------------------ 3. a value the serializer cannot store


class HoldsALock:
    def __init__(self) -> None:
        self.lock = threading.Lock()


# Which value the serializer refuses is the codec's concern: each on the twins; on the
# AWS adapters, one, to show nothing at all is sent there either.
@pytest.mark.parametrize(
    ("backend", "value", "came"),
    [
        ("memory", lambda x: x, "builtins.function"),
        ("memory", threading.Lock(), "_thread.lock"),
        ("memory", HoldsALock(), "tests.unit.test_named_errors.HoldsALock"),
        ("aws", HoldsALock(), "tests.unit.test_named_errors.HoldsALock"),
    ],
    ids=["memory-a lambda", "memory-a lock", "memory-an object holding a lock", "aws"],
    indirect=["backend"],
)
def test_a_value_that_cannot_be_serialized_names_its_channel_and_writes_nothing(
    backend: Backend, value: Any, came: str
) -> None:
    # A fresh deployment, not set up: not even its record is written, nor anything read.
    saver = backend.saver(setup=False, inline_max=0)
    with pytest.raises(ValueNotSerializableError) as raised:
        put_value(saver, "customer-42", value)
    message = str(raised.value)
    assert message.startswith("thread 'customer-42' checkpoint ")
    assert (
        f": channel 'tool' holds a {came} the serializer cannot store "
        "(Type is not msgpack serializable" in message
    )
    assert (
        "nothing of this checkpoint was written" in message and "keep functions, locks" in message
    )
    assert isinstance(raised.value, TypeError)  # what callers caught before
    assert backend.calls() == {}


def test_a_write_that_cannot_be_serialized_names_task_and_channel_and_writes_nothing(
    backend: Backend,
) -> None:
    saver = backend.saver()
    config = put_value(saver, "customer-42", "fine")
    backend.reset()
    with pytest.raises(ValueNotSerializableError) as raised:
        saver.put_writes(config, [("notes", "ok"), ("tool", HoldsALock())], "task-7")
    message = str(raised.value)
    assert (
        f"thread 'customer-42' checkpoint {config['configurable']['checkpoint_id']}: the write "
        "of task 'task-7' to channel 'tool' holds a tests.unit.test_named_errors.HoldsALock"
    ) in message
    assert backend.writes() == {}  # the writes that could be stored are not written either
    tup = saver.get_tuple(config)
    assert tup is not None and tup.pending_writes == []


def test_a_graph_node_returning_a_function_is_told_which_channel_holds_it(
    backend: Backend,
) -> None:
    class State(TypedDict):
        question: str
        callback: Any

    def plan(state: State) -> dict[str, Any]:
        return {"callback": lambda: state["question"]}

    saver = backend.saver()
    graph = StateGraph(State).add_node(plan).add_edge(START, "plan").compile(checkpointer=saver)
    named = r"checkpoint [0-9a-f-]+: channel 'callback' holds a builtins\.function"
    with pytest.raises(ValueNotSerializableError, match=named):
        graph.invoke({"question": "why?"}, thread_config("t-graph"), durability="sync")
    # The input checkpoint, written before the node ran, is what the thread shows.
    assert graph.get_state(thread_config("t-graph")).values == {"question": "why?"}


# --------------------------------------------- 5. the bucket the deployment uses


# What a cold read sends before the mismatch is found: the thread's Query and the
# deployment record's, in one wave; the same on each backend.
COLD_READ = {"dynamodb.Query": 2}
OBJECT_GET = {"memory": "objects.get", "aws": "s3.GetObject"}


def test_a_saver_on_another_bucket_is_refused_on_the_cold_path_at_no_extra_request(
    backend: Backend,
) -> None:
    writer = backend.saver(inline_max=0)
    put_value(writer, "t", "x" * 100)
    bucket = backend.bucket

    # Another process whose bucket setting has a typo: its first read sends what any
    # cold read sends, and no object request.
    wrong = backend.saver(setup=False, bucket=f"{bucket}-typo", inline_max=0)
    for tid, sent in (("t", COLD_READ), ("new", None)):  # exists, or not
        backend.reset()
        with pytest.raises(DeploymentMismatchError) as raised:
            wrong.get_tuple(thread_config(tid))
        # Asked again, the same saver sends one Query and is refused again.
        assert backend.calls() == (sent or {k: 1 for k in COLD_READ})
        message = str(raised.value)
        assert (
            f"this saver's objects go to bucket '{bucket}-typo' and the deployment's are in "
            f"bucket '{bucket}'"
        ) in message
        assert f"set S3DYNAMO_BUCKET (bucket=) to '{bucket}'" in message

    # A process whose first call writes a new thread is refused before any write.
    first_put = backend.saver(setup=False, bucket=f"{bucket}-typo", inline_max=0)
    with pytest.raises(DeploymentMismatchError, match="go to bucket"):
        put_value(first_put, "new", "y" * 100)
    assert backend.calls() == {k: 1 for k in COLD_READ}  # one Query, no write

    right = backend.saver(setup=False, inline_max=0)
    tup = right.get_tuple(thread_config("t"))
    assert tup is not None and tup.checkpoint["channel_values"]["tool"] == "x" * 100
    # The cold read, then one object per channel ("notes" and "tool", none inline).
    assert backend.calls() == {**COLD_READ, OBJECT_GET[backend.name]: 2}
    assert right.get_tuple(thread_config("new")) is None


def test_a_deployment_recorded_before_the_bucket_field_is_read_and_not_stamped() -> None:
    named_index = MemoryIndex()
    put_value(saver_on(named_index, MemoryObjects(name="agent-checkpoints")), "t", "x")
    recorded = named_index.control[deployment_pk("")]["deployment"].fields
    assert recorded["bucket"] == "agent-checkpoints"

    index = MemoryIndex()
    older = saver_on(index, MemoryObjects())  # a store with no name records none
    put_value(older, "t", "small enough to stay in the index")
    assert "bucket" not in index.control[deployment_pk("")]["deployment"].fields

    # A saver on a named store reads it, writes to it, and adds a key to the record,
    # which still names no bucket: nothing proves this bucket is the deployment's.
    named = saver_on(
        index, MemoryObjects(name="agent-checkpoints"), keys={"k2": KEY_0, "k1": KEY_1}
    )
    assert named.get_tuple(thread_config("t")) is not None
    put_value(named, "t2", "also small")
    record = index.control[deployment_pk("")]["deployment"]
    assert '"k2"' in str(record.fields["keys"]) and record.version == 2
    assert "bucket" not in record.fields


# ------------------------- 6. what the AWS services answer, named as a user can act on it


@pytest.mark.parametrize(
    ("setting", "name", "rule"),
    [
        ("bucket", "ab", "S3 bucket names are 3 to 63 characters of lowercase letters"),
        ("bucket", "Agent Checkpoints!", "S3 bucket names are 3 to 63 characters"),
        ("bucket", "agent..checkpoints", "with no '..'"),
        ("bucket", "192.168.5.4", "not shaped like an IP address"),
        ("bucket", "xn--checkpoints", "not beginning with xn--, sthree-, amzn-s3-demo-"),
        ("bucket", "checkpoints-s3alias", "not ending with -s3alias"),
        ("table", "t", "DynamoDB table names are 3 to 255 characters of letters, digits"),
        ("table", "agent checkpoints", "DynamoDB table names are 3 to 255 characters"),
    ],
)
def test_a_name_the_service_would_refuse_is_refused_before_setup_creates_anything(
    clients: Any, counter: Any, setting: str, name: str, rule: str
) -> None:
    saver = make_saver(clients, **{setting: name})
    counter.reset()
    with pytest.raises(InvalidConfigError) as raised:
        saver.setup()
    message = str(raised.value)
    kind = "S3 gives a new bucket" if setting == "bucket" else "DynamoDB gives a new table"
    assert message.startswith(f"setup() refused: {setting} {name!r} is no name {kind}: ")
    assert rule in message and message.endswith("Nothing was sent or created")
    assert f"fix S3DYNAMO_{setting.upper()} ({setting}=)" in message
    assert counter.total() == 0
    # Before, the table was created, then the bucket refused: now neither exists.
    dynamodb, s3 = clients
    assert saver.settings.table not in dynamodb.list_tables()["TableNames"]
    assert saver.settings.bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_names_of_storage_passed_in_are_not_checked_and_a_table_arn_is_a_name() -> None:
    # An injected port's own names are its business (the in-memory twins take any).
    saver_on(bucket="b", table="t").setup()
    assert table_problem("arn:aws:dynamodb:eu-west-1:123456789012:table/agent-checkpoints") is None
    assert "'arn:aws:dynamodb:eu-west-1:123456789012:table/a'" in str(
        table_problem("arn:aws:dynamodb:eu-west-1:123456789012:table/a")
    )


def test_a_bucket_name_s3_refuses_on_a_later_request_says_the_rules() -> None:
    # A saver that never ran setup() learns it from S3's answer, translated.
    client, stubber = stubbed("s3")
    stubber.add_client_error(
        "put_object", service_error_code="InvalidBucketName", service_message="bad name"
    )
    with pytest.raises(StorageConfigError) as raised:
        S3Objects(client, "ab").overwrite("k", b"v")
    message = str(raised.value)
    assert "PutObject on S3 bucket 'ab' (region eu-nowhere-1" in message
    assert "S3 refused the bucket name (InvalidBucketName: bad name)" in message
    assert "3 to 63 characters of lowercase letters" in message
    assert "fix S3DYNAMO_BUCKET (bucket=)" in message


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
        DynamoTable(client, "checkpoints").query("#s3dynamo", consistent=True)
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
            DynamoTable(client, "checkpoints").query("#s3dynamo", consistent=True)
        else:
            S3Objects(client, "agent-checkpoints").overwrite("k", b"v")
    assert not isinstance(raised.value, InvalidConfigError)


def test_an_item_over_dynamodb_s_limit_is_too_large_never_retry_later(backend: Backend) -> None:
    """DynamoDB's ValidationException for an item over 400 KB (moto's, and the in-memory
    twin's) is `ItemTooLargeError`: retrying it never passes, so it never says to."""
    table = raw.table(backend.saver())
    with pytest.raises(ItemTooLargeError, match="over its 400 KB limit") as raised:
        table.batch(puts=[{"pk": "big", "sk": "one", "v": b"x" * (410 * 1024)}])
    assert "retry later" not in str(raised.value)


@pytest.mark.parametrize("code", ["AccessDenied", "InvalidAccessKeyId"])
def test_access_and_credentials_refused_are_configuration_errors(code: str) -> None:
    client, stubber = stubbed("s3")
    stubber.add_client_error(
        "put_object", service_error_code=code, service_message="no", http_status_code=403
    )
    with pytest.raises(StorageConfigError, match="PutObject on S3 bucket 'agent-checkpoints'"):
        S3Objects(client, "agent-checkpoints").overwrite("k", b"v")


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
        DynamoTable(client, "checkpoints").query("#s3dynamo", consistent=True)
    message = str(raised.value)
    assert f"cannot reach DynamoDB table 'checkpoints' (region {region}, endpoint " in message
    if error is StorageConfigError:
        assert f"'{region}' is no AWS region botocore knows (a typo?)" in message
        assert "set AWS_REGION (or region=)" in message
    else:
        assert isinstance(raised.value, StorageError)


@pytest.mark.parametrize("code", ["NotFoundException", "DisabledException"])
def test_a_kms_key_that_kms_refuses_is_a_setting_to_fix(code: str) -> None:
    from langgraph.checkpoint.s3dynamo.backends.kms import KmsKeys

    client, stubber = stubbed("kms")
    stubber.add_client_error(
        "generate_data_key",
        service_error_code=code,
        service_message="Alias arn:aws:kms:eu-nowhere-1:1:alias/nope is not found.",
        http_status_code=400,
    )
    with pytest.raises(StorageConfigError) as raised:
        KmsKeys(client, "alias/nope").generate_data_key({"s3dynamo:table": "t"})
    message = str(raised.value)
    assert message.startswith("GenerateDataKey on KMS key 'alias/nope' (region eu-nowhere-1")
    assert f"KMS refused the key ({code}" in message and "retrying does not fix" in message
    assert "fix S3DYNAMO_KMS_KEY_ID (kms_key_id=) or AWS_REGION" in message
    assert not isinstance(raised.value, StorageError)  # not "retry later"


def test_a_prefix_set_by_mistake_on_a_deployment_is_named_not_an_empty_tenant() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    put_value(saver_on(index, objects), "user-42", "hello")
    typo = saver_on(index, objects, prefix="tenat-a/")
    with pytest.raises(DeploymentMismatchError) as raised:
        typo.get_tuple(thread_config("user-42"))
    message = str(raised.value)
    assert "prefix 'tenat-a/' has no deployment of its own" in message
    assert "fix or unset S3DYNAMO_PREFIX (prefix=)" in message
    assert "a tenant on a shared table needs keys of its own" in message


def test_a_refused_writer_carries_langgraphs_stale_write_owner_marker() -> None:
    """LangGraph issue 8796's proposed marker: a server that learns to recognise stale
    writers by `is_stale_write_owner_error` recognises ours, a deleted thread's too."""
    from langgraph.checkpoint.s3dynamo import ConcurrentUpdateError, ThreadDeletedError

    for error in (ConcurrentUpdateError("moved"), ThreadDeletedError("deleted")):
        assert getattr(error, "is_stale_write_owner_error", False) is True
