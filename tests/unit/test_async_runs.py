"""Many async runs in one process (issue 31): they all finish with the right state, and
their storage calls run in the saver's own pool, not the event loop's default executor
(min(32, cpus + 4) threads), so more requests are in flight at once than that allows.
On the in-memory ports, each call delayed as a request to AWS would be; the throughput
figures are the benchmark's (benchmarks/async_scaling.py), not a timed test's."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph.checkpoint.s3dynamo import S3DynamoSaver, executor
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.config.settings import DEFAULT_ASYNC_WORKERS, Settings
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from langgraph.checkpoint.s3dynamo.waves import WAVE_WORKERS
from tests.support.memory_index import MemoryIndex

RUNS = 256
TURNS = 2
LATENCY = 0.005  # seconds slept per request, so that concurrent requests overlap
DEFAULT_EXECUTOR = min(32, (os.cpu_count() or 1) + 4)


class InFlight:
    """A port whose every call first sleeps a modelled latency (outside the port's lock),
    counting the most calls in flight at once."""

    def __init__(self, port: Any, meter: Meter) -> None:
        self._port, self._meter = port, meter

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._port, name)
        if not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._meter:
                time.sleep(LATENCY)
                return found(*args, **kwargs)

        return call


class Meter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = self.most = 0

    def __enter__(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self.now -= 1


def _delayed_saver(meter: Meter) -> S3DynamoSaver:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = S3DynamoSaver(
        index=InFlight(index, meter),  # type: ignore[arg-type]
        object_store=InFlight(objects, meter),  # type: ignore[arg-type]
        keys={"k1": os.urandom(32)},
        secret=os.urandom(16),
    )
    saver.setup()
    return saver


def _graph(saver: S3DynamoSaver) -> Any:
    async def respond(state: MessagesState) -> dict[str, Any]:  # async: no executor of its own
        heard = [m.content for m in state["messages"] if m.type == "human"]
        return {"messages": [AIMessage(f"heard {len(heard)}: {heard[-1]}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    return builder.compile(checkpointer=saver)


async def _converse(graph: Any, run: int) -> None:
    config = {"configurable": {"thread_id": f"run-{run}"}}
    for turn in range(TURNS):
        await graph.ainvoke({"messages": [HumanMessage(f"run {run} turn {turn}")]}, config)


def _expected(run: int) -> list[tuple[str, str]]:
    said = [f"run {run} turn {t}" for t in range(TURNS)]
    return [
        pair
        for t, text in enumerate(said)
        for pair in (("human", text), ("ai", f"heard {t + 1}: {text}"))
    ]


def test_256_concurrent_ainvokes_on_distinct_threads_all_keep_their_state() -> None:
    meter = Meter()
    graph = _graph(_delayed_saver(meter))

    async def main() -> list[Any]:
        await asyncio.gather(*(_converse(graph, run) for run in range(RUNS)))
        return await asyncio.gather(
            *(graph.aget_state({"configurable": {"thread_id": f"run-{r}"}}) for r in range(RUNS))
        )

    states = asyncio.run(main())
    for run, state in enumerate(states):
        got = [(m.type, m.content) for m in state.values["messages"]]
        assert got == _expected(run), f"thread run-{run} read back wrong"
        assert state.next == ()
    # The default executor would have capped this at its own size.
    assert meter.most > DEFAULT_EXECUTOR, (meter.most, DEFAULT_EXECUTOR)


class Recording(ThreadPoolExecutor):
    """An event loop's default executor that records every call it is given."""

    def __init__(self) -> None:
        super().__init__(2)
        self.calls: list[Callable[..., Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.calls.append(fn)
        return super().submit(fn, *args, **kwargs)


def test_the_async_methods_never_use_the_loops_default_executor() -> None:
    recording = Recording()
    saver = _delayed_saver(Meter())
    graph = _graph(saver)
    config: Any = {"configurable": {"thread_id": "alone"}}

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(recording)
        await _converse(graph, 0)
        thread: Any = {"configurable": {"thread_id": "run-0"}}
        state = await graph.aget_state(thread)
        assert len(state.values["messages"]) == 2 * TURNS
        assert len([s async for s in graph.aget_state_history(thread)]) > TURNS
        await saver.aput_writes(state.config, [("messages", [])], "task-1")
        await saver.acopy_thread("run-0", "copy")
        await saver.aprune(["copy"])
        await saver.adelete_thread("copy")
        assert await saver.aget_tuple(config) is None
        await saver.adelete_for_runs([])

    asyncio.run(main())
    assert recording.calls == []
    names = {t.name for t in threading.enumerate()}
    assert any(n.startswith(f"s3dynamo-async{saver.settings.async_workers}") for n in names)


def test_the_pool_size_is_a_setting_and_an_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().async_workers == DEFAULT_ASYNC_WORKERS
    monkeypatch.setenv("S3DYNAMO_ASYNC_WORKERS", "12")
    assert Settings().async_workers == 12
    assert Settings(async_workers=3).async_workers == 3
    assert Settings.from_env({"S3DYNAMO_ASYNC_WORKERS": "7"}).async_workers == 7
    monkeypatch.setenv("S3DYNAMO_ASYNC_WORKERS", "many")
    with pytest.raises(InvalidConfigError, match="S3DYNAMO_ASYNC_WORKERS must be a whole"):
        Settings()
    with pytest.raises(InvalidConfigError, match=r"async_workers must be .* at least 1, got 0"):
        Settings(async_workers=0)
    # Savers asking for one size share one pool.
    assert executor.pool(5) is executor.pool(5)
    assert executor.pool(5) is not executor.pool(6)


def test_a_small_pool_whose_puts_fan_out_into_waves_never_deadlocks() -> None:
    # Two async workers, each waiting on S3 waves (every value goes to S3), while far
    # more runs queue for them: the waits form no cycle, so every run finishes.
    meter = Meter()
    index, objects = MemoryIndex(), MemoryObjects()
    saver = S3DynamoSaver(
        index=InFlight(index, meter),  # type: ignore[arg-type]
        object_store=InFlight(objects, meter),  # type: ignore[arg-type]
        plaintext=True,
        inline_max=0,
        async_workers=2,
    )
    saver.setup()
    graph = _graph(saver)

    async def main() -> list[Any]:
        await asyncio.wait_for(asyncio.gather(*(_converse(graph, r) for r in range(40))), 60)
        return [await graph.aget_state(_config(r)) for r in range(40)]

    for run, state in enumerate(asyncio.run(main())):
        assert [(m.type, m.content) for m in state.values["messages"]] == _expected(run)
    assert objects.calls["put"] > 0  # the values went through S3 waves


def test_the_clients_hold_a_connection_for_every_async_and_wave_worker() -> None:
    saver = S3DynamoSaver(
        table="t", bucket="b", region="us-east-1", plaintext=True, async_workers=3
    )
    client = saver.parts.engine.ports.table.client  # type: ignore[attr-defined]
    assert client.meta.config.max_pool_connections == 3 + WAVE_WORKERS


def _config(run: int) -> Any:
    return {"configurable": {"thread_id": f"run-{run}"}}


# ----------------------------------------------------- calls gathered at once (issue 42)


class InPool(ThreadPoolExecutor):
    """A pool that counts the calls it holds (queued or running), and the most at once."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self._lock = threading.Lock()
        self.now = self.most = self.ran = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._left)
        return future

    def _left(self, future: Future[Any]) -> None:
        with self._lock:
            self.now -= 1
            self.ran += not future.cancelled()


def test_calls_gathered_beyond_two_per_worker_wait_in_the_loop_not_in_the_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each call handed to the pool holds its work item, futures and context until a
    # worker takes it: 1,000 gathered calls must not all be there at once.
    in_pool = InPool(3)
    monkeypatch.setattr(executor, "pool", lambda size: in_pool)
    go = threading.Event()

    def call(i: int) -> int:
        go.wait(10)
        return i

    async def main() -> list[int]:
        gathered = asyncio.gather(*(executor.run(3, call, i) for i in range(1000)))
        await asyncio.sleep(0.05)
        assert in_pool.now == 3 * executor.ADMITTED_PER_WORKER  # 3 running, 3 queued
        go.set()
        return await gathered

    assert asyncio.run(main()) == list(range(1000))
    assert in_pool.most == 3 * executor.ADMITTED_PER_WORKER
    assert in_pool.ran == 1000


def test_a_call_cancelled_while_it_runs_stays_admitted_until_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    in_pool = InPool(1)
    monkeypatch.setattr(executor, "pool", lambda size: in_pool)
    go, ran = threading.Event(), []

    def call(i: int) -> int:
        ran.append(i)
        go.wait(10)
        return i

    async def main() -> None:
        # One worker: two calls admitted (0 runs, 1 is queued), 2, 3 and 4 wait in the loop.
        calls = [asyncio.ensure_future(executor.run(1, call, i)) for i in range(5)]
        await asyncio.sleep(0.05)
        calls[0].cancel()  # running: it goes on in its worker, still admitted
        calls[1].cancel()  # queued in the pool: it never runs, and 3 is admitted
        calls[2].cancel()  # waiting for admission: it never runs
        await asyncio.sleep(0.05)
        assert (ran, in_pool.now) == ([0], 2)
        go.set()
        assert await asyncio.gather(calls[3], calls[4]) == [3, 4]
        assert all(c.cancelled() for c in calls[:3])

    asyncio.run(main())
    assert ran == [0, 3, 4]
    assert in_pool.most == 2


def test_gathered_first_calls_of_a_store_send_one_deployment_check() -> None:
    # A process's first calls, gathered, on a deployment another process recorded: each
    # waits for the one check (the deployment record's Query), none sends its own.
    from langgraph.store.s3dynamo import S3DynamoStore

    index, objects = MemoryIndex(), MemoryObjects()
    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    S3DynamoSaver(index=index, object_store=objects, keys=keys, secret=secret).setup()

    def fresh() -> S3DynamoStore:
        saver = S3DynamoSaver(index=index, object_store=objects, keys=keys, secret=secret)
        return S3DynamoStore.from_saver(saver)

    async def puts(store: S3DynamoStore) -> None:
        await asyncio.gather(*(store.aput(("n", str(i)), "k", {"i": i}) for i in range(300)))

    async def gets(store: S3DynamoStore) -> list[Any]:
        return await asyncio.gather(*(store.aget(("n", str(i)), "k") for i in range(300)))

    index.calls.clear()
    asyncio.run(puts(fresh()))
    # Per namespace, the read of its directory entry and its item, then one transaction:
    # its first item and the entry.
    assert dict(index.calls) == {"Query": 1, "BatchGetItem": 300, "TransactWriteItems": 300}
    index.calls.clear()
    found = asyncio.run(gets(fresh()))
    assert [item.value["i"] for item in found] == list(range(300))
    assert dict(index.calls) == {"Query": 1, "BatchGetItem": 300}


def test_gathered_first_puts_into_a_namespace_renew_its_entry_once() -> None:
    # 300 puts gathered into 4 new namespaces: one reads and renews each entry, the others
    # wait for its lease and write alone (no transactions contending for one entry).
    from langgraph.store.s3dynamo import S3DynamoStore

    index = MemoryIndex()
    saver = S3DynamoSaver(
        index=index,
        object_store=MemoryObjects(),
        keys={"k1": os.urandom(32)},
        secret=os.urandom(16),
    )
    saver.setup()
    store = S3DynamoStore.from_saver(saver)

    async def puts() -> None:
        await asyncio.gather(
            *(store.aput(("n", str(i % 4)), f"k{i}", {"i": i}) for i in range(300))
        )

    index.calls.clear()
    asyncio.run(puts())
    # One read of each entry, one transaction renewing it with its first item, then one
    # UpdateItem for each other item.
    assert index.calls == {"BatchGetItem": 4, "TransactWriteItems": 4, "UpdateItem": 296}
    entries = index.directory_entries()
    assert len(entries) == len({e.key for e in entries}) == 4
    assert len(store.search(("n",), limit=1000)) == 300
