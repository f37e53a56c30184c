"""The worker threads async callers' storage calls run in: one pool per process.

The async methods run the sync core in a worker thread (`saver.py` says why). Not in the
event loop's default executor: its min(32, cpus + 4) threads (6 on 2 cores) are shared
with everything else the application sends there, and capped a server's concurrent runs
at 6 requests in flight while the clients held 32 connections (issue 31). Every saver of
the process (and what shares its storage) shares a pool of `DEFAULT_ASYNC_WORKERS` threads
(`config/settings.py`), or of the size it is given; threads start when a call finds none
idle. A process that makes no async call never loads this module.

Why not native async clients (aiobotocore): a second I/O path beside the sync one, a heavy
dependency, and the measurement (benchmarks/async_scaling.md) shows the pool reaching the
limit the process's CPU sets, which clients that still sign and parse every request in
Python would not raise.

No deadlock with the wave pool (`waves.py`): an async worker may wait for a wave, but a
wave worker never submits to or waits for this pool, and a wave started inside a wave
runs inline; the waits form no cycle. Connections: up to `workers` calls send a request
of their own while the wave pool sends up to `WAVE_WORKERS`, so the clients a saver
builds hold that many (`compose.py`). A botocore retry sleeps its backoff in the worker
that sent the request: it holds one worker of many, so other runs go on unless every
worker is backing off, which means AWS is throttling the whole process.

The caller's `contextvars` context is copied into the worker (as `asyncio.to_thread`
does): what a run holds (the run record in `store/handoff.py`, the lease's fence)
reaches the storage call. Between calls the workers are idle and hold no connection,
safe in a frozen Lambda sandbox for the reasons `waves.py` gives. An event loop hands a
pool at most `ADMITTED_PER_WORKER` calls per worker at once, and the rest wait in the
loop (issue 42: `run` says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

R = TypeVar("R")

# Calls of one event loop handed to a pool at once, per worker (module docstring).
ADMITTED_PER_WORKER = 2

_pools: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()
# Per event loop, per pool size: the semaphore of its admitted calls.
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def pool(size: int) -> ThreadPoolExecutor:
    """The process's pool of `size` workers, started on first use."""
    found = _pools.get(size)
    if found is not None:
        return found
    with _lock:
        if size not in _pools:
            _pools[size] = ThreadPoolExecutor(
                max_workers=size, thread_name_prefix=f"s3dynamo-async{size}"
            )
        return _pools[size]


def _gate(loop: asyncio.AbstractEventLoop, size: int) -> asyncio.Semaphore:
    # Each loop's own semaphores are only touched from the loop's thread.
    gates = _gates.get(loop)
    if gates is None:
        with _lock:
            gates = _gates.setdefault(loop, {})
    gate = gates.get(size)
    if gate is None:
        gate = gates[size] = asyncio.Semaphore(ADMITTED_PER_WORKER * size)
    return gate


async def run(size: int, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """`fn(*args, **kwargs)` in a worker of the pool of `size`, in a copy of the
    caller's context, without blocking the event loop.

    Admission: the loop hands the pool at most `ADMITTED_PER_WORKER * size` calls at
    once (those running, and the next ones queued for the workers that finish); a call
    made beyond them waits in the loop, on a semaphore of that loop and pool, first come
    first served, until one of them ends. Without it, thousands of calls gathered at
    once all sat in the pool's queue as soon as they were made, each with its work item,
    two futures and a copy of its context: about twice the objects the cyclic garbage
    collector tracks per waiting call, and the collector's time per call grew with the
    number of calls gathered (benchmarks/gathered_calls.md). It adds no deadlock: a
    call waits for admission only until an admitted call ends, and admitted calls stop
    ending only when every worker is blocked, when the pool's queue would have held the
    call just as long.

    A call whose awaiting task is cancelled while it runs still finishes in its worker,
    as with `asyncio.to_thread`, and stays admitted until it ends; one cancelled before
    a worker took it never runs.
    """
    loop = asyncio.get_running_loop()
    gate = _gate(loop, size)
    await gate.acquire()
    try:
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        work = pool(size).submit(call)
    except BaseException:
        gate.release()
        raise
    try:
        return await asyncio.wrap_future(work, loop=loop)
    finally:
        if work.done():
            gate.release()
        else:
            # Its awaiting task was cancelled while the call runs: admitted until it ends.
            work.add_done_callback(lambda _: _release_from_any_thread(loop, gate))


async def pulled(size: int, iterator: Iterator[R]) -> AsyncIterator[R]:
    """An iterator's items, each taken in a worker of the pool of `size` (`run`)."""
    done: Any = object()
    while (item := await run(size, next, iterator, done)) is not done:
        yield item


def _release_from_any_thread(loop: asyncio.AbstractEventLoop, gate: asyncio.Semaphore) -> None:
    # A closed loop raises RuntimeError: its semaphore went with it.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(gate.release)


def _forget_pools_after_fork() -> None:
    # The parent's worker threads do not exist in a forked child, nor do the calls its
    # loops had admitted.
    global _lock
    _pools.clear()
    _gates.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)
