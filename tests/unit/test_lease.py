"""The thread lease's timing, on the in-memory ports: a dead holder's lease is taken over
within ttl + 1 s, a holder that writes or beats keeps it, a stalled one loses it and is
fenced, and the Lambda context bounds both the expiry and the wait. A clock that moves
only when told measures the takeovers; the heartbeat runs on real time with short ttls.
The same takeover after a real SIGKILL on moto server: `tests/e2e/test_lease_kill.py`."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import (
    InvalidConfigError,
    LeaseLostError,
    LeaseTimeoutError,
    S3DynamoSaver,
    StorageError,
)
from langgraph.checkpoint.s3dynamo import lease as leases
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.format.layout import LEASE_SK
from tests.support.concurrent_runs import CONFIG, TID, human_ids, slow_chat_graph
from tests.support.memory_index import MemoryIndex
from tests.support.savers import memory_saver

TTL = leases.DEFAULT_TTL


class FakeClock(leases.Clock):
    """Wall and monotonic time that move only by `sleep` (a waiter's backoff) or
    `advance`; thread-safe, since writes stamp their fences from LangGraph's threads."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0
        self.lock = threading.Lock()

    def time(self) -> float:
        with self.lock:
            return self.now

    def monotonic(self) -> float:
        return self.time()

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


class FakeContext:
    """AWS Lambda's context object, as far as the lease reads it: `ms` left, counted down
    on `clock`."""

    def __init__(self, clock: FakeClock, ms: int) -> None:
        self.clock, self.ends = clock, clock.time() + ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return round((self.ends - self.clock.time()) * 1000)


def _pair() -> tuple[S3DynamoSaver, S3DynamoSaver]:
    """Two savers (two processes, say) on one store."""
    index, objects = MemoryIndex(), MemoryObjects()
    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    return (
        memory_saver(index, objects, keys=keys, secret=secret),
        memory_saver(index, objects, keys=keys, secret=secret),
    )


def _turn(saver: S3DynamoSaver, message_id: str) -> None:
    slow_chat_graph(saver, lambda: None).invoke(
        {"messages": [HumanMessage(message_id, id=message_id)]}, CONFIG
    )


def _taken(saver: S3DynamoSaver, clock: leases.Clock) -> bool:
    """Whether another holder could take the lease now (it lets it go at once)."""
    try:
        with leases.thread_lock(saver.store, TID, wait=0, heartbeat=False, clock=clock):
            return True
    except LeaseTimeoutError:
        return False


def _heartbeats() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("s3dynamo-lease-")]


def test_a_dead_holders_lease_is_taken_over_within_ttl_plus_one_second() -> None:
    a, b = _pair()
    clock = FakeClock()

    abandoned = []

    def take_write_and_die() -> None:
        # Acquired, one turn written (which renews the lease), heartbeat stopped as a
        # killed process's would be, never released (the context manager is kept, so
        # collecting it cannot release the lease either).
        lock = leases.thread_lock(a.store, TID, clock=clock)
        abandoned.append(lock)
        held = lock.__enter__()
        _turn(a, "a")
        held.stop_heartbeat()

    dead = contextvars.copy_context()
    dead.run(take_write_and_die)
    died = clock.time()
    with leases.thread_lock(b.store, TID, clock=clock) as held:  # default ttl and wait
        took = clock.time() - died
        _turn(b, "b")
    assert TTL == 10.0
    # Not before the dead holder's lease lapsed, and within one backoff step after.
    assert TTL - 0.01 < took <= TTL + 1, took
    assert held.token == 2
    assert human_ids(b) == ["a", "b"]
    # Only now, after the measurement: let the abandoned context manager end where it
    # began, as collecting it would otherwise try to (a killed process never does).
    dead.run(abandoned[0].__exit__, None, None, None)


def test_the_defaults_are_the_ones_measured() -> None:
    saver = memory_saver()
    clock = FakeClock()
    with leases.thread_lock(saver.store, TID, clock=clock) as held:
        assert held.ttl == TTL
        assert held.expires == clock.time() + TTL
    import inspect

    params = inspect.signature(saver.ops.thread_lock).parameters
    assert params["ttl"].default == TTL and params["wait"].default is None
    assert params["heartbeat"].default is True and params["context"].default is None


def test_a_holder_that_keeps_writing_keeps_its_lease_without_renewals() -> None:
    a, b = _pair()
    clock = FakeClock()
    began = clock.time()
    # No heartbeat: the writes alone keep it.
    with leases.thread_lock(a.store, TID, clock=clock, heartbeat=False) as held:
        a.index.calls.clear()
        for turn in range(7):  # a turn every ttl / 2, for 3.5 ttl
            _turn(a, f"a{turn}")
            assert held.expires == clock.time() + TTL
            clock.advance(TTL / 2)
            assert not _taken(b, clock), f"taken over at {clock.time() - began:g} s"
        assert clock.time() - began == 3.5 * TTL
        # Every write renewed it in its own request: no renewal, nothing else sent.
        assert a.index.calls["renew_lease"] == 0
        # Once it stops writing, the lease lapses ttl after its last write.
        clock.advance(TTL / 2 - 0.01)
        assert not _taken(b, clock)
        clock.advance(0.02)
        assert _taken(b, clock)


def test_a_stalled_holder_loses_its_lease_and_its_later_writes_are_fenced() -> None:
    a, b = _pair()
    clock = FakeClock()
    with leases.thread_lock(a.store, TID, clock=clock) as held:
        _turn(a, "a")
        held.stop_heartbeat()  # stalled: no writes, no heartbeat
        clock.advance(TTL + 0.01)
        with leases.thread_lock(b.store, TID, wait=0, clock=clock) as other:
            assert other.token > held.token
            _turn(b, "b")
        with pytest.raises(LeaseLostError, match="another holder took it over"):
            _turn(a, "a-late")
        with pytest.raises(LeaseLostError):
            held.renew()
    # Nothing of the stalled holder's late turn is visible; b's stands.
    assert human_ids(b) == ["a", "b"]
    assert human_ids(a) == ["a", "b"]


def test_the_heartbeat_keeps_a_quiet_holders_lease_and_ends_with_the_block() -> None:
    a, b = _pair()
    ttl = 1.0
    with leases.thread_lock(a.store, TID, ttl=ttl) as held:
        assert len(_heartbeats()) == 1
        began = time.monotonic()
        while time.monotonic() - began < 2.5 * ttl:  # no write for 2.5 ttl
            assert not _taken(b, leases.SYSTEM_CLOCK)
            time.sleep(ttl / 10)
        # A renewal every ttl / 3 (7 in 2.5 ttl; fewer if the machine is slow), not more.
        assert 4 <= held.renewals <= 7, held.renewals
        assert not held.lost
    assert _heartbeats() == []
    renewals = a.index.calls["renew_lease"]
    time.sleep(ttl)
    assert a.index.calls["renew_lease"] == renewals  # nothing after the block
    assert _taken(b, leases.SYSTEM_CLOCK)  # released on exit


def test_the_heartbeat_sends_nothing_while_writes_renew_the_lease() -> None:
    (a, _) = _pair()
    # A write every 0.05 s or so (a turn takes 5 to 30 ms here), far within ttl / 3
    # even on a loaded machine; a quiet holder would have sent 2 renewals by the end.
    ttl = 3.0
    with leases.thread_lock(a.store, TID, ttl=ttl) as held:
        began = time.monotonic()
        turn = 0
        while time.monotonic() - began < 2.2 * ttl / 3:
            _turn(a, f"a{turn}")
            turn += 1
            time.sleep(0.05)
        assert held.renewals == 0
    assert a.index.calls["renew_lease"] == 0


def test_a_renewal_that_fails_for_a_transient_reason_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = _pair()
    ttl = 1.0
    real, failures = a.index.write, []

    def flaky(write: Any, **options: Any) -> Any:
        renewal = write.key.sk == LEASE_SK and not getattr(write, "add", None)
        if renewal and not failures:
            failures.append(1)  # the first renewal of the lease (taking it adds to its token)
            raise StorageError("DynamoDB: throttled (a test's fault)")
        return real(write, **options)

    monkeypatch.setattr(a.index, "write", flaky)
    with leases.thread_lock(a.store, TID, ttl=ttl) as held:
        time.sleep(1.5 * ttl)  # past the first expiry: only a retried renewal keeps it
        assert not _taken(b, leases.SYSTEM_CLOCK)
        assert failures == [1] and held.renewals >= 2 and not held.lost


def test_the_heartbeat_ends_when_the_block_raises() -> None:
    saver = memory_saver()
    with (
        pytest.raises(RuntimeError, match="node failed"),
        leases.thread_lock(saver.store, TID, ttl=0.3),
    ):
        raise RuntimeError("node failed")
    assert _heartbeats() == []


def test_async_lock_beats_in_a_thread_and_stops_it_on_exit() -> None:
    a, b = _pair()
    ttl = 1.0

    async def hold() -> int:
        async with a.ops.athread_lock(TID, ttl=ttl) as held:
            # The event loop blocked (a CPU-bound async node): the heartbeat still runs.
            time.sleep(1.5 * ttl)
            assert not _taken(b, leases.SYSTEM_CLOCK)
            await asyncio.sleep(ttl / 2)
            assert not _taken(b, leases.SYSTEM_CLOCK)
            return held.renewals

    assert asyncio.run(hold()) >= 3
    assert _heartbeats() == []
    assert _taken(b, leases.SYSTEM_CLOCK)


def test_in_lambda_the_lease_never_outlives_the_invocation() -> None:
    a, b = _pair()
    clock = FakeClock()
    context = FakeContext(clock, 3_000)  # 3 s left: less than ttl
    began = clock.time()
    with leases.thread_lock(a.store, TID, context=context, clock=clock) as held:
        assert held.until == began + 3.0
        assert held.expires == began + 3.0
        clock.advance(2.0)
        _turn(a, "a")  # a write renews it, but not past the invocation's end
        assert held.expires == began + 3.0
        held.renew()
        assert held.expires == began + 3.0
        held.stop_heartbeat()
        # The invocation would be killed at 3 s: its lease lapses then, not at 2 + ttl.
        clock.advance(0.99)
        assert not _taken(b, clock)
        clock.advance(0.02)
        assert _taken(b, clock)


def test_in_lambda_a_long_invocation_keeps_the_ttl() -> None:
    saver = memory_saver()
    clock = FakeClock()
    with leases.thread_lock(
        saver.store, TID, context=FakeContext(clock, 900_000), clock=clock
    ) as h:
        assert h.expires == clock.time() + TTL


@pytest.mark.parametrize(("left_ms", "waited"), [(4_000, 3.0), (800, 0.0)])
def test_in_lambda_the_wait_ends_in_time_to_answer(left_ms: int, waited: float) -> None:
    a, b = _pair()
    clock = FakeClock()
    with leases.thread_lock(a.store, TID, clock=clock, heartbeat=False):
        context = FakeContext(clock, left_ms)
        began = clock.time()
        with (
            pytest.raises(LeaseTimeoutError, match="Lambda invocation's remaining time"),
            leases.thread_lock(b.store, TID, context=context, clock=clock),
        ):
            raise AssertionError("the lease was taken while held")
        # Given up LAMBDA_RESERVE (1 s) before the invocation ends (at once when less
        # than that is left), leaving the handler time to answer.
        assert clock.time() - began == pytest.approx(waited)
        assert context.get_remaining_time_in_millis() == left_ms - int(waited * 1000)


def test_bad_ttl_or_wait_is_refused_by_name() -> None:
    saver = memory_saver()
    for kwargs in ({"ttl": 0}, {"wait": -1}, {"ttl": float("nan")}, {"ttl": float("inf")}):
        with (
            pytest.raises(InvalidConfigError, match=r"ttl > 0 and wait >= 0.*defaults"),
            saver.ops.thread_lock(TID, **kwargs),
        ):
            pass
    assert saver.index.calls["acquire_lease"] == 0


def test_a_released_lease_cannot_be_renewed_back_to_life() -> None:
    a, b = _pair()
    clock = FakeClock()
    with leases.thread_lock(a.store, TID, heartbeat=False, clock=clock) as held:
        _turn(a, "a")
    # Renewing the handle after its block would hold the thread again, unseen.
    with pytest.raises(LeaseLostError, match="released"):
        held.renew()
    assert _taken(b, clock)
