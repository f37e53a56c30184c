"""Leases: one holder at a time per thread, with expiry and a fencing token.

`thread_lock` takes the thread's lease with one conditional UpdateItem (it succeeds if
nobody holds the lease or the holder's expiry has passed, and raises the fencing token
by one), retries with backoff until `wait` runs out (`LeaseTimeoutError`; `wait=0`
fails fast), and releases it on exit. While held, every `put` and `put_writes` of that
thread made in this context (LangGraph's worker threads and `asyncio.to_thread` inherit
it) carries the token as a condition of the same request: once the lease lapsed and
another holder took it (a higher token), the old holder's writes are refused with
`LeaseLostError` and nothing of them is visible.

Safety: two holders at once need two successful acquisitions, each of which requires
the expiry of the previous one to have passed; tokens only grow (a release keeps the
counter). So whatever the clocks say, at most one holder's writes are accepted at any
moment: the one with the highest token. Clocks matter only for liveness (a holder whose
clock runs late may see its lease taken over early; then its writes are refused, not
mixed in). Expiry lets the lease of a crashed holder lapse after `ttl`.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError, LeaseTimeoutError
from langgraph.checkpoint.s3dynamo.layout import LEASE_SK, control_pk
from langgraph.checkpoint.s3dynamo.records import Fence, ItemKey, Lease
from langgraph.checkpoint.s3dynamo.store import ThreadStore
from langgraph.checkpoint.s3dynamo.store.fences import fence, hold, release

DEFAULT_TTL = 120.0
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0


class ThreadLease:
    """A held lease, as `thread_lock` yields it."""

    def __init__(self, store: ThreadStore, tid: str, lease: Lease, ttl: float) -> None:
        self.store, self.tid, self.lease, self.ttl = store, tid, lease, ttl

    @property
    def token(self) -> int:
        """The fencing token: higher than every earlier holder's."""
        return self.lease.token

    @property
    def expires(self) -> float:
        """When the lease lapses unless renewed (seconds since the epoch)."""
        return self.lease.expires_ms / 1000

    def renew(self) -> None:
        """Push the expiry `ttl` seconds out (long runs); `LeaseLostError` if taken over."""
        self.lease = self.store.control.renew_lease(self.lease, _now_ms(), _ms(self.ttl))


def _now_ms() -> int:
    return int(time.time() * 1000)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _check(store: ThreadStore, tid: str, ttl: float, wait: float) -> None:
    if ttl <= 0 or wait < 0:
        raise InvalidConfigError(f"thread_lock needs ttl > 0 and wait >= 0, got {ttl}, {wait}")
    if fence(id(store), store.namer.thread(tid)) is not None:
        raise InvalidConfigError(
            f"thread {tid!r}: this context already holds its lease; thread_lock is not reentrant"
        )


def _timeout(tid: str, wait: float) -> LeaseTimeoutError:
    return LeaseTimeoutError(
        f"thread {tid!r}: its lease is held by another run and was not released within "
        f"{wait:g} s; retry later, pass a longer wait=, or wait=0 to fail fast"
    )


def lease_key(store: ThreadStore, tid: str) -> ItemKey:
    return ItemKey(control_pk(store.namer.thread(tid)), LEASE_SK)


def _attempt(store: ThreadStore, tid: str, owner: str, ttl: float) -> Lease | None:
    return store.control.acquire_lease(lease_key(store, tid), owner, _now_ms(), _ms(ttl))


@contextmanager
def thread_lock(store: ThreadStore, tid: str, ttl: float, wait: float) -> Iterator[ThreadLease]:
    _check(store, tid, ttl, wait)
    owner, deadline, delay = uuid.uuid4().hex, time.monotonic() + wait, FIRST_BACKOFF
    while (lease := _attempt(store, tid, owner, ttl)) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _timeout(tid, wait)
        time.sleep(min(left, delay * random.uniform(0.5, 1.0)))
        delay = min(delay * 2, MAX_BACKOFF)
    handle = ThreadLease(store, tid, lease, ttl)
    token = hold(id(store), store.namer.thread(tid), Fence(lease.key, lease.token))
    try:
        yield handle
    finally:
        release(token)
        store.control.release_lease(handle.lease)


@asynccontextmanager
async def athread_lock(
    store: ThreadStore, tid: str, ttl: float, wait: float
) -> AsyncIterator[ThreadLease]:
    _check(store, tid, ttl, wait)
    owner, deadline, delay = uuid.uuid4().hex, time.monotonic() + wait, FIRST_BACKOFF
    while (lease := await asyncio.to_thread(_attempt, store, tid, owner, ttl)) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _timeout(tid, wait)
        await asyncio.sleep(min(left, delay * random.uniform(0.5, 1.0)))
        delay = min(delay * 2, MAX_BACKOFF)
    handle = ThreadLease(store, tid, lease, ttl)
    token = hold(id(store), store.namer.thread(tid), Fence(lease.key, lease.token))
    try:
        yield handle
    finally:
        release(token)
        await asyncio.to_thread(store.control.release_lease, handle.lease)
