"""The clients the saver builds itself: botocore alone, one session."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import RegionNotSetError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends import aws_clients
from langgraph.checkpoint.s3dynamo.config.settings import DEFAULT_ASYNC_WORKERS
from langgraph.checkpoint.s3dynamo.waves import WAVE_WORKERS
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.savers import make_saver


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    env.update(
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        **extra,
    )
    return env


def test_the_saver_builds_its_clients_without_boto3() -> None:
    # A fresh interpreter, as a Lambda cold start: the clients are built (no request).
    code = (
        "import sys\n"
        "from langgraph.checkpoint.s3dynamo import S3DynamoSaver\n"
        "saver = S3DynamoSaver(table='t', bucket='b', plaintext=True)\n"
        "saver.parts.engine.ports.table, saver.parts.engine.objects.port\n"
        "assert 'botocore' in sys.modules\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'boto3'], 'boto3 imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], env=_env(), check=True)


def test_clients_share_one_session_and_keep_the_settings(monkeypatch: Any) -> None:
    for var, value in _env().items():
        monkeypatch.setenv(var, value)
    sessions = []

    class Counted(aws_clients.Session):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            sessions.append(self)

    monkeypatch.setattr(aws_clients, "Session", Counted)
    monkeypatch.setattr(aws_clients, "_session", None)
    saver = S3DynamoSaver(table="t", bucket="b", plaintext=True, max_attempts=3)
    dynamodb = saver.parts.engine.ports.table.client  # type: ignore[attr-defined]
    s3 = saver.parts.engine.objects.port.client  # type: ignore[attr-defined]
    for client, service in ((dynamodb, "dynamodb"), (s3, "s3")):
        assert client.meta.service_model.service_name == service
        assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 3}
        assert client.meta.config.max_pool_connections == WAVE_WORKERS + DEFAULT_ASYNC_WORKERS
        assert client.meta.region_name == "us-east-1"
    other = S3DynamoSaver(table="t2", bucket="b2", plaintext=True)
    assert other.parts.engine.ports.table.client is not dynamodb  # type: ignore[attr-defined]
    assert len(sessions) == 1  # one session for every client of the process


def test_a_handler_botocore_gains_after_the_first_client_reaches_the_clients_built_after(
    monkeypatch: Any,
) -> None:
    """moto, imported by a test after a module built and primed its saver, adds its
    handler to botocore's built-in ones: the clients built from then on must go through
    it, or they would send to AWS itself. The session is made again for them."""
    from botocore import handlers

    for var, value in _env().items():
        monkeypatch.setenv(var, value)

    class Reached(Exception):
        pass

    def stop(**_: Any) -> None:
        raise Reached

    def build() -> Any:
        return aws_clients.client("dynamodb", max_attempts=1, max_pool_connections=1)

    with aws_clients.set_aside():
        build()
        first = aws_clients.session()
        handlers.BUILTIN_HANDLERS.append(("before-call.dynamodb", stop))
        try:
            with pytest.raises(Reached):
                build().list_tables()
            assert aws_clients.session() is not first
        finally:
            handlers.BUILTIN_HANDLERS.remove(("before-call.dynamodb", stop))


@pytest.mark.parametrize(
    ("env", "kwargs", "expected"),
    [
        ({"AWS_REGION": "eu-west-1"}, {}, "eu-west-1"),  # what Lambda and most tools set
        ({"AWS_DEFAULT_REGION": "eu-west-2"}, {}, "eu-west-2"),
        ({"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-2"}, {}, "eu-west-1"),
        ({"S3DYNAMO_REGION": "ap-south-1", "AWS_REGION": "eu-west-1"}, {}, "ap-south-1"),
        ({"AWS_REGION": "eu-west-1"}, {"region": "us-west-2"}, "us-west-2"),
        ({"PROFILE": "eu-north-1"}, {}, "eu-north-1"),  # a profile in the config file
    ],
    ids=["AWS_REGION", "AWS_DEFAULT_REGION", "both", "S3DYNAMO_REGION", "argument", "profile"],
)
def test_the_region_is_found_the_way_aws_tools_find_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, env: dict[str, str], kwargs: dict[str, str],
    expected: str,
) -> None:  # fmt: skip
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "S3DYNAMO_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    for var, value in env.items():
        if var == "PROFILE":
            config = tmp_path / "config"
            config.write_text(f"[default]\nregion = {value}\n")
            monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
        else:
            monkeypatch.setenv(var, value)
    monkeypatch.setattr(aws_clients, "_session", None)
    monkeypatch.setenv("S3DYNAMO_TABLE", "t")
    monkeypatch.setenv("S3DYNAMO_BUCKET", "b")
    monkeypatch.setenv("S3DYNAMO_PLAINTEXT", "1")
    saver = S3DynamoSaver.from_env(**kwargs)
    assert saver.parts.engine.ports.table.client.meta.region_name == expected  # type: ignore[attr-defined]
    assert saver.parts.engine.objects.port.client.meta.region_name == expected  # type: ignore[attr-defined]


def test_no_region_says_which_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "S3DYNAMO_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setattr(aws_clients, "_session", None)
    saver = S3DynamoSaver(table="t", bucket="b", plaintext=True)
    with pytest.raises(RegionNotSetError, match="set AWS_REGION"):
        saver.parts.engine.ports.table  # noqa: B018 - building the client is what is checked


@pytest.mark.unsupported_on("real", reason="dynalite has no transactions")
def test_no_request_and_no_name_draws_from_uuid4(
    clients: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that fixes `uuid.uuid4` to make its ids repeatable (LangGraph's own do) gets
    the same ids with this saver as without it: botocore's invocation ids and transaction
    tokens, and the saver's random names (a write kept as an object, a Store namespace's
    directory entry, a lock's owner), are drawn from `os.urandom`."""
    saver = make_saver(clients, keys={"k1": os.urandom(32)}, secret=os.urandom(16), inline_max=0)
    saver.setup()

    def drawn() -> None:
        raise AssertionError("uuid.uuid4 was drawn from")

    monkeypatch.setattr(uuid, "uuid4", drawn)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    config = saver.put(config, empty_checkpoint(), {"step": -1}, {})
    saver.put_writes(config, [("messages", "x" * 5_000)], "task-1")
    with saver.ops.thread_lock("t"):
        assert saver.get_tuple(config).pending_writes[0][2] == "x" * 5_000  # type: ignore[union-attr]
    store = S3DynamoStore.from_saver(saver)
    store.put(("users", "ada"), "k", {"v": 1})
    assert store.get(("users", "ada"), "k").value == {"v": 1}  # type: ignore[union-attr]
