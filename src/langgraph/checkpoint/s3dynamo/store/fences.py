"""Which leases this context holds: every write it makes to such a thread carries the
lease's fencing token, and pushes the lease's expiry out in the same request (see
`lease.py`). Kept per execution context (`contextvars`), so LangGraph's worker threads
and `asyncio.to_thread` inherit it from the run that took the lease, and nothing else
sees it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token

from langgraph.checkpoint.s3dynamo.format.records import Fence, ItemKey


class Holding:
    """A lease held by this context: the fence its writes carry, and how far each of them
    (and each renewal) pushes the expiry: `ttl_ms` past now, never past `until_ms` (the
    end of the Lambda invocation holding it, when known)."""

    def __init__(
        self,
        key: ItemKey,
        token: int,
        expires_ms: int,
        ttl_ms: int,
        until_ms: int | None,
        now_ms: Callable[[], int],
    ) -> None:
        self.key, self.token, self.ttl_ms, self.until_ms = key, token, ttl_ms, until_ms
        self.now_ms = now_ms
        self._expires_ms = expires_ms
        # Writes come from LangGraph's worker threads, renewals from the heartbeat.
        self._lock = threading.Lock()

    @property
    def expires_ms(self) -> int:
        """The latest expiry this holder has set (its clock, ms since the epoch)."""
        return self._expires_ms

    def next_expiry(self) -> int:
        """The expiry a write or renewal made now sets."""
        expiry = self.now_ms() + self.ttl_ms
        return expiry if self.until_ms is None else min(expiry, self.until_ms)

    def stamp(self) -> Fence:
        """The fence of a write about to be sent: the token, and the expiry it sets."""
        return Fence(self.key, self.token, self.next_expiry())

    def extended(self, expires_ms: int) -> None:
        """A write or renewal that set `expires_ms` was accepted."""
        with self._lock:
            self._expires_ms = max(self._expires_ms, expires_ms)


# (store id, thread name) -> the lease held on that thread.
Held = Mapping[tuple[int, str], Holding] | None
HELD: ContextVar[Held] = ContextVar("s3dynamo_held_leases", default=None)


def holding(store_id: int, thread_name: str) -> Holding | None:
    """The lease this context holds on the thread, if any."""
    return (HELD.get() or {}).get((store_id, thread_name))


def hold(store_id: int, thread_name: str, held: Holding | None) -> Token[Held]:
    """Make this context's writes to the thread carry `held` (None: no longer); returns
    the token that `release` takes."""
    leases = dict(HELD.get() or {})
    if held is None:
        leases.pop((store_id, thread_name), None)
    else:
        leases[(store_id, thread_name)] = held
    return HELD.set(leases)


def release(token: Token[Held]) -> None:
    HELD.reset(token)
