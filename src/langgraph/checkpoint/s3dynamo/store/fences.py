"""Which leases this context holds: every write it makes to such a thread carries the
lease's fencing token (see `lease.py`). Kept per execution context (`contextvars`), so
LangGraph's worker threads and `asyncio.to_thread` inherit it from the run that took the
lease, and nothing else sees it."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar, Token

from langgraph.checkpoint.s3dynamo.records import Fence

# (store id, thread name) -> the fence of the lease held on that thread.
Held = Mapping[tuple[int, str], Fence] | None
HELD: ContextVar[Held] = ContextVar("s3dynamo_held_leases", default=None)


def fence(store_id: int, thread_name: str) -> Fence | None:
    """The fence of the lease this context holds on the thread, if any."""
    return (HELD.get() or {}).get((store_id, thread_name))


def hold(store_id: int, thread_name: str, held: Fence | None) -> Token[Held]:
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
