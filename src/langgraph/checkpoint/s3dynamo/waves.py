"""Parallel waves: one round of concurrent requests, the unit of every request budget.

Every wave of the process runs on one shared pool of `WAVE_WORKERS` threads, so a wave's
requests never outnumber the connections kept for them (each client the saver builds
holds `WAVE_WORKERS` connections plus one per async worker, `executor.py`), however many
graph tasks start waves at once; and a wave costs no thread start-up (a wave per
checkpoint read or written used to start and join up to 16 threads).

Why a long-lived pool is safe in a frozen Lambda sandbox: a wave returns only after every
one of its requests finished (also when one failed: the others are waited for before the
error is raised), so no request is ever in flight across an invocation boundary, and
between invocations the workers are idle, blocked on an empty queue; a freeze and thaw
leave them as they were. No connection is held by an idle worker (connections belong to
the clients' pools), and nothing needs closing at exit: the workers are daemon-like
threads of `ThreadPoolExecutor`, joined by the interpreter at shutdown. After `fork()`
the child starts a new pool (the parent's threads do not exist there).

A wave started from inside a wave's worker (deleting a namespace's checkpoints while
other namespaces are deleted in parallel) runs inline in that worker: a nested wave
waiting for workers that are all busy waiting for it could never finish.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from langgraph.checkpoint.s3dynamo import telemetry

T = TypeVar("T")
R = TypeVar("R")

# Part of the clients' `max_pool_connections` (compose.py adds the async workers).
WAVE_WORKERS = 32

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_worker = threading.local()


def _mark_worker() -> None:
    _in_worker.active = True


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=WAVE_WORKERS,
                thread_name_prefix="s3dynamo-wave",
                initializer=_mark_worker,
            )
        return _pool


def _forget_pool_after_fork() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def parallel(fn: Callable[[T], R], args: Sequence[T]) -> list[R]:
    """Run `fn` over `args` as one concurrent wave; results keep the order of `args`.
    Returns (or raises the first error) only once every call has finished."""
    if getattr(_in_worker, "active", False):
        return [fn(a) for a in args]
    if args:
        telemetry.add("waves")
    if len(args) == 1:
        return [fn(args[0])]
    pool = _shared_pool()
    # The workers' requests count in the caller's operation (`telemetry.py`).
    fn = telemetry.carried(fn)
    futures: list[Future[R]] = [pool.submit(fn, a) for a in args]
    done, _ = wait(futures, return_when=FIRST_EXCEPTION)
    failed = [f for f in futures if f in done and f.exception() is not None]
    if failed:
        # Cancel what has not started, wait for what has: nothing outlives the call. The
        # error raised is the call's own: a call cancelled before it started (one a
        # worker had taken but not yet begun) is no error of the wave.
        for f in futures:
            f.cancel()
        wait(futures)
        error = failed[0].exception()
        assert error is not None
        raise error
    return [f.result() for f in futures]
