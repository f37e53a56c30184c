"""How the Store's and the node cache's async methods run the sync core: in a worker
thread, so sync and async share one I/O path (STYLE 3). One helper, so the pool can be
swapped for the saver's own in one place."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def run(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(fn, *args)
