"""How the Store's and the node cache's async methods run the sync core: in a worker of
the process's pool that the saver's async methods use (`executor.py`), of the size its
settings give (`async_workers`), so saver, store and cache share one pool and sync and
async share one I/O path (STYLE 3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from langgraph.checkpoint.s3dynamo import executor
from langgraph.checkpoint.s3dynamo.compose import Components

T = TypeVar("T")


async def run(parts: Components, fn: Callable[..., T], *args: Any) -> T:
    return await executor.run(parts.settings.async_workers, fn, *args)
