"""Parallel waves: one round of concurrent requests, the unit of every request budget.

A wave runs on a thread pool created for it and shut down before the call returns:
nothing outlives a call, which is what a frozen Lambda sandbox needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Matches the clients' connection pool (`max_pool_connections=32` leaves room for two
# waves from concurrent graph tasks).
MAX_WAVE_WORKERS = 16


def parallel(fn: Callable[[T], R], args: Sequence[T]) -> list[R]:
    """Run `fn` over `args` as one concurrent wave; results keep the order of `args`."""
    if len(args) <= 1:
        return [fn(a) for a in args]
    with ThreadPoolExecutor(max_workers=min(len(args), MAX_WAVE_WORKERS)) as pool:
        return list(pool.map(fn, args))
