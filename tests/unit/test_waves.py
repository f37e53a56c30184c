"""The shared wave pool: order kept, nested waves finish, nothing outlives a call."""

from __future__ import annotations

import threading
import time

import pytest

from langgraph.checkpoint.s3dynamo import waves


def test_results_keep_order_and_waves_share_one_pool() -> None:
    names: set[str] = set()

    def square(x: int) -> int:
        names.add(threading.current_thread().name)
        time.sleep(0.001)
        return x * x

    for _ in range(3):
        assert waves.parallel(square, list(range(50))) == [x * x for x in range(50)]
    assert names and all(n.startswith("s3dynamo-wave") for n in names)
    assert len(names) <= waves.WAVE_WORKERS


def test_nested_waves_from_every_worker_finish() -> None:
    def outer(i: int) -> int:
        return sum(waves.parallel(lambda j: i + j, list(range(4))))

    args = list(range(3 * waves.WAVE_WORKERS))
    assert waves.parallel(outer, args) == [4 * i + 6 for i in args]


def test_a_failed_wave_returns_only_after_every_call_ended() -> None:
    running, finished = threading.Event(), []

    def call(i: int) -> None:
        if i == 0:
            assert running.wait(5)
            raise ValueError("first fails")
        running.set()
        time.sleep(0.2)
        finished.append(i)

    with pytest.raises(ValueError):
        waves.parallel(call, [0, 1])
    assert finished == [1]


def test_a_failed_wave_raises_its_calls_error_even_when_one_before_it_never_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker can take a call and fail it before another worker begins the call taken
    before it; that one is then cancelled. The wave raises the failure, never the
    cancellation (a retention sweep whose second thread's removal failed raised
    `CancelledError`)."""
    from concurrent.futures import Future

    class Taken(Future[int]):
        """A call a worker has taken and not begun: cancelled, it ends when the worker
        gets to it (`set_running_or_notify_cancel`), at once here."""

        def cancel(self) -> bool:
            cancelled = super().cancel()
            if cancelled:
                self.set_running_or_notify_cancel()
            return cancelled

    class Pool:
        """A pool whose first call is taken and not yet begun when the second fails."""

        def submit(self, fn: object, arg: int) -> Future[int]:
            future: Future[int] = Taken()
            if arg == 1:
                future.set_running_or_notify_cancel()
                future.set_exception(RuntimeError("the second call failed"))
            return future

    monkeypatch.setattr(waves, "_shared_pool", Pool)
    with pytest.raises(RuntimeError, match="the second call failed"):
        waves.parallel(lambda x: x, [0, 1])
