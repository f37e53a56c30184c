"""`SqliteStore` and `AsyncSqliteStore` as LangGraph's SQLite store tests build them,
yielding an S3DynamoStore instead: a fresh, sealed deployment per store, on the
in-memory twins (`S3DYNAMO_CONTRACT_BACKEND=moto`: on moto in process)."""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from typing import Any

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.store.s3dynamo import S3DynamoStore


def _saver(stack: ExitStack) -> S3DynamoSaver:
    keys = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
    secret = os.urandom(32)
    if os.environ.get("S3DYNAMO_CONTRACT_BACKEND") == "moto":
        import boto3
        from moto import mock_aws

        stack.enter_context(mock_aws())
        region = "us-east-1"
        return S3DynamoSaver(
            dynamodb_client=boto3.client("dynamodb", region_name=region),
            s3_client=boto3.client("s3", region_name=region),
            table="store-contract",
            bucket="store-contract",
            keys=keys,
            secret=secret,
        )
    from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
    from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable

    return S3DynamoSaver(
        index=MemoryTable(), object_store=MemoryObjects(), keys=keys, secret=secret
    )


def _store(
    stack: ExitStack, index: Any = None, ttl: Any = None, *, sqlite_fields: bool = True
) -> S3DynamoStore:
    if index and sqlite_fields:
        # SQLite's IndexConfig has `text_fields` where LangGraph's has `fields`.
        index = {**index, "fields": index.get("text_fields")}
    store = S3DynamoStore.from_saver(_saver(stack), index=index, ttl=ttl)
    store.setup()
    return store


class SqliteStore(S3DynamoStore):
    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None, **_: Any
    ) -> Iterator[S3DynamoStore]:
        with ExitStack() as stack:
            yield _store(stack, index, ttl)


class _AsyncSetup(S3DynamoStore):
    async def setup(self) -> None:  # type: ignore[override]
        await self.asetup()


class AsyncSqliteStore(S3DynamoStore):
    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None, **_: Any
    ) -> AsyncIterator[S3DynamoStore]:
        with ExitStack() as stack:
            store = _store(stack, index, ttl)
            store.__class__ = _AsyncSetup
            yield store
