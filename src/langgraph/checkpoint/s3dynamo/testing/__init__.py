"""Test your own LangGraph agent against s3dynamo, offline, on moto.

Install the extra, which brings moto (in process and its HTTP server) and pytest::

    pip install "langgraph-checkpoint-s3dynamo[testing]"

then load the fixtures from the ``conftest.py`` at the root of your tests::

    pytest_plugins = ["langgraph.checkpoint.s3dynamo.testing"]

(or ``pytest -p langgraph.checkpoint.s3dynamo.testing``) and write a test::

    def test_agent_remembers(s3dynamo_saver):
        graph = build_agent().compile(checkpointer=s3dynamo_saver)
        config = {"configurable": {"thread_id": "t1"}}
        graph.invoke({"messages": [("user", "hi, I am Ada")]}, config)
        out = graph.invoke({"messages": [("user", "who am I?")]}, config)
        assert "Ada" in out["messages"][-1].content

The fixtures (`s3dynamo_saver`, `s3dynamo_sandbox`, `s3dynamo_server`,
`s3dynamo_server_sandbox`, `s3dynamo_server_saver`), the environment they set (no request
can reach a real AWS endpoint), `moto_saver`, `moto_sandbox` and `moto_server` for use
without pytest, and why this is a plugin you load rather than an entry point: see
docs/TESTING.md.

PYTEST_DONT_REWRITE: this module has no assert of its own, so pytest need not rewrite
it, and a conftest or test module may import `Sandbox` or `moto_saver` from it before
``pytest_plugins`` loads it without pytest warning that it cannot be rewritten.
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo import Keyring, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends import aws_clients
from langgraph.checkpoint.s3dynamo.testing.environment import (
    REGION,
    apply_environment,
    aws_environment,
    check_loopback,
    moto_server,
    patched_environ,
    serialize_moto,
)

__all__ = [
    "REGION",
    "Sandbox",
    "aws_environment",
    "moto_sandbox",
    "moto_saver",
    "moto_server",
    "s3dynamo_sandbox",
    "s3dynamo_saver",
    "s3dynamo_server",
    "s3dynamo_server_sandbox",
    "s3dynamo_server_saver",
    "serialize_moto",
]

KEY_ID = "test"


@dataclass
class Sandbox:
    """A table, a bucket and the keys of one test, on moto in process or on moto server.

    Clients are built on first use, so build them only once the environment from
    `environment()` is in place (the fixtures and `moto_sandbox` see to it).

    Attributes:
        table: DynamoDB table name, unique to this sandbox.
        bucket: S3 bucket name, unique to this sandbox.
        keys: A fresh keyring of one random 32-byte key.
        secret: A fresh random naming secret.
        endpoint_url: The moto server's URL, or None for moto in process.
        dynamodb_endpoint_url: A DynamoDB endpoint of its own on loopback (e.g. dynalite),
            overriding `endpoint_url` for DynamoDB.
        s3_endpoint_url: Likewise for S3 (e.g. another local object store).
    """

    table: str = field(default_factory=lambda: f"s3dynamo-test-{os.urandom(8).hex()}")
    bucket: str = ""
    keys: Keyring = field(
        default_factory=lambda: Keyring(keys={KEY_ID: os.urandom(32)}, active=KEY_ID)
    )
    secret: str = field(default_factory=lambda: base64.b64encode(os.urandom(32)).decode())
    endpoint_url: str | None = None
    dynamodb_endpoint_url: str | None = None
    s3_endpoint_url: str | None = None

    def __post_init__(self) -> None:
        self.bucket = self.bucket or self.table
        for url in (self.endpoint_url, self.dynamodb_endpoint_url, self.s3_endpoint_url):
            if url is not None:
                check_loopback(url)

    @cached_property
    def dynamodb(self) -> Any:
        """The boto3 DynamoDB client every saver of this sandbox uses."""
        return self._client("dynamodb")

    @cached_property
    def s3(self) -> Any:
        """The boto3 S3 client every saver of this sandbox uses."""
        return self._client("s3")

    def _client(self, service: str) -> Any:
        import boto3
        from botocore.config import Config

        own = self.dynamodb_endpoint_url if service == "dynamodb" else self.s3_endpoint_url
        return boto3.client(
            service,
            region_name=REGION,
            endpoint_url=own or self.endpoint_url,
            # The fixtures set fake ones; a local server of the project's own may need its
            # configured identity (SeaweedFS does).
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
            # Room for one full parallel wave of S3 requests.
            config=Config(max_pool_connections=32),
        )

    def environment(self) -> dict[str, str | None]:
        """`aws_environment` plus the ``S3DYNAMO_*`` variables of this sandbox, so that
        ``S3DynamoSaver.from_env()`` builds a saver on the same table, bucket and keys."""
        env = aws_environment(
            self.endpoint_url or self.dynamodb_endpoint_url or self.s3_endpoint_url
        )
        if self.dynamodb_endpoint_url:
            env["AWS_ENDPOINT_URL_DYNAMODB"] = self.dynamodb_endpoint_url
        if self.s3_endpoint_url:
            env["AWS_ENDPOINT_URL_S3"] = self.s3_endpoint_url
        env.update(
            {
                "S3DYNAMO_TABLE": self.table,
                "S3DYNAMO_BUCKET": self.bucket,
                "S3DYNAMO_KEYS": ",".join(
                    f"{kid}:{base64.b64encode(key).decode()}" for kid, key in self.keys.keys.items()
                ),
                "S3DYNAMO_SECRET": self.secret,
            }
        )
        return env

    def saver(self, *, sealed: bool = True, setup: bool = True, **kwargs: Any) -> S3DynamoSaver:
        """A saver on this sandbox's clients, table and bucket.

        Args:
            sealed: Seal with the sandbox's keys and secret (default); False stores
                compressed plaintext with unkeyed names (``plaintext=True``, the explicit
                choice the saver requires).
            setup: Create the table and bucket if missing (idempotent).
            **kwargs: Further `S3DynamoSaver` arguments (``inline_max``, ``prefix``, ...).

        Returns:
            The saver, ready for ``builder.compile(checkpointer=...)``.
        """
        if sealed:
            kwargs.setdefault("keys", self.keys)
            kwargs.setdefault("secret", self.secret)
        else:
            kwargs.setdefault("plaintext", True)
        saver = S3DynamoSaver(
            dynamodb_client=self.dynamodb,
            s3_client=self.s3,
            table=self.table,
            bucket=self.bucket,
            **kwargs,
        )
        if setup:
            saver.setup()
        return saver

    def setup(self) -> None:
        """Create the table and bucket if missing (idempotent), so that code under test
        calling ``S3DynamoSaver.from_env()`` finds them (with the deployment record of
        the sandbox's keys). `saver()` does it by default."""
        self.saver(setup=True)

    def stored_bytes(self) -> list[bytes]:
        """Everything stored, as raw bytes: one entry per DynamoDB item (attribute names
        and every value, binary as stored) and per S3 object (its key, then its body)."""
        found: list[bytes] = []
        for page in self.dynamodb.get_paginator("scan").paginate(TableName=self.table):
            for item in page["Items"]:
                found.append(b"\0".join(_attribute_bytes(item)))
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            for obj in page.get("Contents", []):
                body = self.s3.get_object(Bucket=self.bucket, Key=obj["Key"])["Body"].read()
                found.append(obj["Key"].encode() + b"\0" + body)
        return found

    def delete(self) -> None:
        """Delete the table and the bucket with everything in it (server sandboxes; in
        process, leaving ``mock_aws`` drops everything anyway)."""
        with contextlib.suppress(self.dynamodb.exceptions.ResourceNotFoundException):
            self.dynamodb.delete_table(TableName=self.table)
        with contextlib.suppress(self.s3.exceptions.NoSuchBucket):
            for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})
            self.s3.delete_bucket(Bucket=self.bucket)


def _attribute_bytes(value: Any) -> Iterator[bytes]:
    """Every name and value in a DynamoDB item or attribute value, as bytes."""
    if isinstance(value, bytes):
        yield value
    elif isinstance(value, str):
        yield value.encode()
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k).encode()
            yield from _attribute_bytes(v)
    elif isinstance(value, (list, tuple, set)):
        for v in value:
            yield from _attribute_bytes(v)
    else:
        yield str(value).encode()


# --------------------------------------------------------------- without pytest


@contextlib.contextmanager
def moto_sandbox(endpoint_url: str | None = None) -> Iterator[Sandbox]:
    """A fresh `Sandbox` and its environment for the duration of the block.

    Args:
        endpoint_url: A moto server's URL on loopback (see `moto_server`); None runs moto
            in process (``mock_aws``).

    Yields:
        The sandbox; its table and bucket do not exist until a saver's ``setup()``.
    """
    sandbox = Sandbox(endpoint_url=endpoint_url)
    with patched_environ(sandbox.environment()):
        if endpoint_url is None:
            from moto import mock_aws

            serialize_moto()
            with mock_aws():
                yield sandbox
        else:
            try:
                yield sandbox
            finally:
                sandbox.delete()


@contextlib.contextmanager
def moto_saver(endpoint_url: str | None = None, **kwargs: Any) -> Iterator[S3DynamoSaver]:
    """A ready, sealed saver on moto with a fresh table and bucket, for code not on pytest.

    Args:
        endpoint_url: A moto server's URL on loopback; None runs moto in process.
        **kwargs: Passed to `Sandbox.saver` (``sealed``, ``inline_max``, ...).

    Yields:
        The saver. The environment is restored and the storage dropped after the block.
    """
    with moto_sandbox(endpoint_url) as sandbox:
        yield sandbox.saver(**kwargs)


# --------------------------------------------------------------------- fixtures


@pytest.fixture
def s3dynamo_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A fresh `Sandbox` on moto in process, with the test's environment pointing at it.

    Yields:
        The sandbox (clients, table, bucket, keys, secret); its table and bucket exist
        once a saver is built with ``setup=True`` (the default).
    """
    from moto import mock_aws

    sandbox = Sandbox()
    apply_environment(monkeypatch, sandbox.environment())
    serialize_moto()
    with aws_clients.set_aside(), mock_aws():
        yield sandbox


@pytest.fixture
def s3dynamo_saver(s3dynamo_sandbox: Sandbox) -> S3DynamoSaver:
    """A ready, sealed `S3DynamoSaver` on moto in process, fresh table and bucket.

    Returns:
        The saver; ``S3DynamoSaver.from_env()`` in the code under test reaches the same
        storage with the same keys.
    """
    return s3dynamo_sandbox.saver()


@pytest.fixture(scope="session")
def s3dynamo_server() -> Iterator[str]:
    """moto server on 127.0.0.1, on a free port, for the whole session.

    Yields:
        Its URL, ``http://127.0.0.1:PORT``.
    """
    with moto_server() as url:
        yield url


@pytest.fixture
def s3dynamo_server_sandbox(
    s3dynamo_server: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Sandbox]:
    """A fresh `Sandbox` on the session's moto server; deleted after the test.

    Yields:
        The sandbox; every ``AWS_ENDPOINT_URL*`` variable points at the server meanwhile.
    """
    sandbox = Sandbox(endpoint_url=s3dynamo_server)
    apply_environment(monkeypatch, sandbox.environment())
    try:
        with aws_clients.set_aside():
            yield sandbox
    finally:
        sandbox.delete()


@pytest.fixture
def s3dynamo_server_saver(s3dynamo_server_sandbox: Sandbox) -> S3DynamoSaver:
    """A ready, sealed `S3DynamoSaver` on moto server over HTTP, fresh table and bucket.

    Returns:
        The saver.
    """
    return s3dynamo_server_sandbox.saver()
