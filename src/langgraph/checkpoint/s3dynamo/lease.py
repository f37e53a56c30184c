"""Leases: one holder at a time per thread, with expiry, renewal and a fencing token.

`thread_lock` takes the thread's lease with one conditional UpdateItem (it succeeds if
nobody holds the lease or the holder's expiry has passed, and raises the fencing token
by one), retries with backoff until `wait` runs out (`LeaseTimeoutError`; `wait=0`
fails fast), and releases it on exit. While held, every `put` and `put_writes` of that
thread made in this context (LangGraph's worker threads and `asyncio.to_thread` inherit
it) carries the token as a condition of the same request, and sets the lease's expiry
to `ttl` from now in that request: a holder that writes keeps its lease at no extra
request. Between writes a heartbeat thread, alive only inside the `with` block, renews
the lease with one UpdateItem once a third of `ttl` passed without a write. So a live
holder keeps its lease, and a dead one (killed, frozen) loses it within `ttl`.

Given the Lambda context (`context=`), no expiry is ever set past the end of the
invocation (as Powertools' idempotency bounds its in-progress records), and the wait
ends `LAMBDA_RESERVE` seconds before it, leaving the handler time to answer.

Safety (whatever the clocks say, only the highest token's writes are accepted; clocks
only decide when a lease may be taken over) and the figures behind the defaults:
docs/RELIABILITY.md, "The lease". Each attempt, renewal and release is an operation of
its own (spans `s3dynamo.thread_lock.acquire`, `.renew`, `.release`; `telemetry.py`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Protocol

from langgraph.checkpoint.s3dynamo import backoff, telemetry
from langgraph.checkpoint.s3dynamo.backoff import Backoff
from langgraph.checkpoint.s3dynamo.errors import (
    InvalidConfigError,
    LeaseLostError,
    LeaseTimeoutError,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey, Lease
from langgraph.checkpoint.s3dynamo.store import Holding, ThreadStore, hold, holding, release

log = logging.getLogger(__name__)

# Seconds. A killed holder's lease is taken over within DEFAULT_TTL (plus one retry of
# the waiter); a live one renews it every DEFAULT_TTL / 3 without a write, so a renewal
# has two thirds of the ttl to land. Why 10: docs/RELIABILITY.md, "The lease".
DEFAULT_TTL = 10.0
HEARTBEAT_SHARE = 1 / 3
# Inside Lambda the wait ends this long before the invocation would be killed.
LAMBDA_RESERVE = 1.0


class LambdaContext(Protocol):
    """What `thread_lock` reads of AWS Lambda's context object."""

    def get_remaining_time_in_millis(self) -> int: ...


class Clock:
    """Time as the lease sees it; tests pass one that moves only when told."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK = Clock()


class ThreadLease:
    """A held lease, as `thread_lock` yields it."""

    def __init__(self, store: ThreadStore, tid: str, lease: Lease, held: Holding) -> None:
        self.store, self.tid, self.lease, self.held = store, tid, lease, held
        self.lost = False
        self.released = False
        self.renewals = 0
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    @property
    def token(self) -> int:
        """The fencing token: higher than every earlier holder's."""
        return self.lease.token

    @property
    def ttl(self) -> float:
        """How long past its holder's last write or renewal the lease lasts (seconds)."""
        return self.held.ttl_ms / 1000

    @property
    def expires(self) -> float:
        """When the lease lapses unless a write or renewal pushes it out (seconds since
        the epoch, the holder's clock)."""
        return self.held.expires_ms / 1000

    @property
    def until(self) -> float | None:
        """The end of the Lambda invocation holding it (no expiry is set later), if
        known (seconds since the epoch)."""
        return None if self.held.until_ms is None else self.held.until_ms / 1000

    def renew(self) -> None:
        """Push the expiry `ttl` seconds out now (never past `until`); `LeaseLostError`
        if another holder took the lease over. Writes and the heartbeat do this anyway."""
        if self.released:
            raise LeaseLostError(
                f"thread lease {self.token}: released when its `with` block ended, so "
                "renewing it would take it back unseen; take a new one with thread_lock"
            )
        expires = self.held.next_expiry()
        now = self.held.now_ms()
        self.store.renew_lease(self.lease, now, max(1, expires - now))
        self.held.extended(expires)
        self.renewals += 1

    # --------------------------------------------------------------- heartbeat

    def start_heartbeat(self) -> None:
        self._beat = threading.Thread(
            target=self._heartbeat, name=f"s3dynamo-lease-{self.token}", daemon=True
        )
        self._beat.start()

    def stop_heartbeat(self) -> None:
        """Stop renewing; returns once the heartbeat thread has ended."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None

    def _heartbeat(self) -> None:
        interval = self.held.ttl_ms * HEARTBEAT_SHARE
        # A renewal that failed for a transient reason is tried again after a pause.
        delay, retry = 0.0, Backoff()
        while True:
            if self.held.until_ms is not None and self.held.next_expiry() <= self.held.expires_ms:
                # Already set to the invocation's end: no renewal can push it further.
                self._stop.wait()
                return
            # Due once a third of ttl passed since the last write or renewal.
            due_in = (self.held.expires_ms - self.held.ttl_ms + interval) - self.held.now_ms()
            if self._stop.wait(max(due_in / 1000, delay)):
                return
            if self.held.expires_ms - self.held.ttl_ms + interval > self.held.now_ms():
                continue  # a write renewed it meanwhile
            try:
                self.renew()
                delay, retry = 0.0, Backoff()
            except LeaseLostError:
                self.lost = True
                log.warning("thread lease %d: taken over by another holder", self.token)
                return
            except Exception as exc:  # a heartbeat that died silently would lose the lease
                delay = retry.pause()
                log.warning("thread lease %d: renewal failed, retrying: %s", self.token, exc)


def _check(store: ThreadStore, tid: str, ttl: float, wait: float) -> None:
    if not 0 < ttl < math.inf or not wait >= 0:
        raise InvalidConfigError(
            f"thread_lock needs a finite ttl > 0 and wait >= 0 (seconds), got ttl={ttl}, "
            f"wait={wait}; "
            f"the defaults are ttl={DEFAULT_TTL:g} and wait=ttl + {backoff.CAP:g}"
        )
    if holding(id(store), store.name_of(tid)) is not None:
        raise InvalidConfigError(
            f"thread {tid!r}: this context already holds its lease; thread_lock is not reentrant"
        )


def _timeout(tid: str, wait: float, bounded: bool) -> LeaseTimeoutError:
    why = " (bounded by the Lambda invocation's remaining time)" if bounded else ""
    return LeaseTimeoutError(
        f"thread {tid!r}: its lease is held by another run and was not released within "
        f"{wait:g} s{why}; retry later, pass a longer wait=, or wait=0 to fail fast"
    )


def lease_key(store: ThreadStore, tid: str) -> ItemKey:
    return store.lease_key(tid)


class _Plan:
    """One acquisition: the owner, its deadline to get the lease, and the bound on expiry."""

    def __init__(
        self, ttl: float, wait: float, context: LambdaContext | None, clock: Clock
    ) -> None:
        self.clock, self.owner = clock, os.urandom(16).hex()
        self.ttl_ms = max(1, int(ttl * 1000))
        self.until_ms: int | None = None
        self.bounded = False
        if context is not None:
            remaining = context.get_remaining_time_in_millis()
            self.until_ms = self.now_ms() + remaining
            bound = max(0.0, remaining / 1000 - LAMBDA_RESERVE)
            self.bounded = bound < wait
            wait = min(wait, bound)
        self.wait = wait
        self.deadline = clock.monotonic() + wait
        self.backoff = Backoff()

    def now_ms(self) -> int:
        return int(self.clock.time() * 1000)

    def attempt(self, store: ThreadStore, tid: str) -> Lease | None:
        now = self.now_ms()
        ttl = self.ttl_ms if self.until_ms is None else min(self.ttl_ms, self.until_ms - now)
        return store.acquire_lease(store.name_of(tid), self.owner, now, max(1, ttl))

    def pause(self, tid: str) -> float:
        """Seconds to sleep before the next attempt; `LeaseTimeoutError` if none is left."""
        left = self.deadline - self.clock.monotonic()
        if left <= 0:
            raise _timeout(tid, self.wait, self.bounded)
        return min(left, self.backoff.pause())

    def held(self, store: ThreadStore, tid: str, lease: Lease) -> ThreadLease:
        held = Holding(
            lease.key, lease.token, lease.expires_ms, self.ttl_ms, self.until_ms, self.now_ms
        )
        return ThreadLease(store, tid, lease, held)


@contextmanager
def thread_lock(
    store: ThreadStore,
    tid: str,
    ttl: float = DEFAULT_TTL,
    wait: float | None = None,
    *,
    context: LambdaContext | None = None,
    heartbeat: bool = True,
    clock: Clock = SYSTEM_CLOCK,
) -> Iterator[ThreadLease]:
    wait = ttl + backoff.CAP if wait is None else wait
    _check(store, tid, ttl, wait)
    plan = _Plan(ttl, wait, context, clock)
    while (lease := plan.attempt(store, tid)) is None:
        clock.sleep(plan.pause(tid))
    handle = plan.held(store, tid, lease)
    token = hold(id(store), store.name_of(tid), handle.held)
    try:
        if heartbeat:
            handle.start_heartbeat()
        yield handle
    finally:
        # The heartbeat ends first: a renewal after the release would revive the lease.
        handle.stop_heartbeat()
        handle.released = True
        release(token)
        _release(store, handle.lease)


@asynccontextmanager
async def athread_lock(
    store: ThreadStore,
    tid: str,
    ttl: float = DEFAULT_TTL,
    wait: float | None = None,
    *,
    context: LambdaContext | None = None,
    heartbeat: bool = True,
    clock: Clock = SYSTEM_CLOCK,
) -> AsyncIterator[ThreadLease]:
    wait = ttl + backoff.CAP if wait is None else wait
    _check(store, tid, ttl, wait)
    plan = _Plan(ttl, wait, context, clock)
    while (lease := await asyncio.to_thread(plan.attempt, store, tid)) is None:
        await asyncio.sleep(plan.pause(tid))
    handle = plan.held(store, tid, lease)
    token = hold(id(store), store.name_of(tid), handle.held)
    try:
        # A thread, not a task: a node that blocks the event loop must not starve it.
        if heartbeat:
            handle.start_heartbeat()
        yield handle
    finally:
        await asyncio.to_thread(handle.stop_heartbeat)
        handle.released = True
        release(token)
        await asyncio.to_thread(_release, store, handle.lease)


@telemetry.operation("thread_lock.release")
def _release(store: ThreadStore, lease: Lease) -> None:
    store.release_lease(lease)


# A span and figures for each attempt to take the lease and each heartbeat renewal (the
# heartbeat's thread starts no context of the caller's: its spans are roots).
telemetry.instrument(_Plan, {"attempt": "thread_lock.acquire"})
telemetry.instrument(ThreadLease, {"renew": "thread_lock.renew"})
