"""`PostgresStore`, `AsyncPostgresStore` and psycopg's connections as LangGraph's Postgres
store tests use them, yielding an S3DynamoStore on a fresh sealed deployment instead
(`shim.py` builds it). The suite makes and drops a database around each store: those
connections do nothing here. `_cursor()` runs no SQL: the tests that read the store's
own tables through it are among those run.py explains."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from typing import Any

from shim import _store

from langgraph.store.s3dynamo import S3DynamoStore


def _index(index: Any) -> Any:
    # Postgres's IndexConfig adds the SQL index's settings: nothing of them applies here.
    if not index:
        return None
    return {k: v for k, v in index.items() if k not in ("ann_index_config", "distance_type")}


class _Cursor:
    def execute(self, *_: Any, **__: Any) -> None:
        return None

    def fetchall(self) -> list[Any]:
        return []

    def fetchone(self) -> None:
        return None


class _AsyncCursor(_Cursor):
    async def execute(self, *_: Any, **__: Any) -> None:  # type: ignore[override]
        return None


class PostgresStore(S3DynamoStore):
    MIGRATIONS: list[Any] = []

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None, **_: Any
    ) -> Iterator[S3DynamoStore]:
        with ExitStack() as stack:
            store = _store(stack, _index(index), ttl, sqlite_fields=False)
            store.__class__ = _Sync
            yield store


class _Sync(PostgresStore):
    @contextmanager
    def _cursor(self) -> Iterator[_Cursor]:
        yield _Cursor()

    def start_ttl_sweeper(self) -> None:
        return None

    def stop_ttl_sweeper(self) -> None:
        return None


class AsyncPostgresStore(S3DynamoStore):
    MIGRATIONS: list[Any] = []

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None, **_: Any
    ) -> AsyncIterator[S3DynamoStore]:
        with ExitStack() as stack:
            store = _store(stack, _index(index), ttl, sqlite_fields=False)
            store.__class__ = _Async
            yield store


class _Async(AsyncPostgresStore):
    async def setup(self) -> None:  # type: ignore[override]
        await self.asetup()

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[_AsyncCursor]:
        yield _AsyncCursor()

    async def start_ttl_sweeper(self) -> None:
        return None

    async def stop_ttl_sweeper(self) -> None:
        return None


class Connection:
    @classmethod
    def connect(cls, *_: Any, **__: Any) -> Connection:
        return cls()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_: Any) -> None:
        return None

    def execute(self, *_: Any, **__: Any) -> None:
        return None


class AsyncConnection:
    @classmethod
    async def connect(cls, *_: Any, **__: Any) -> AsyncConnection:
        return cls()

    async def __aenter__(self) -> AsyncConnection:
        return self

    async def __aexit__(self, *_: Any) -> None:
        return None

    async def execute(self, *_: Any, **__: Any) -> None:
        return None
