"""S3DynamoStore and S3DynamoCache on the in-memory twins: sealing, tamper, wrong keys,
TTL, the directory, large values, crashes between requests, and graphs using them."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.types import CachePolicy

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.errors import DeploymentMismatchError, IntegrityError
from langgraph.store.s3dynamo import S3DynamoStore

KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
SECRET = bytes(range(100, 132))


def make(
    index: MemoryIndex | None = None,
    objects: MemoryObjects | None = None,
    *,
    keys: str = KEYS,
    secret: bytes = SECRET,
    **options: Any,
) -> S3DynamoSaver:
    return S3DynamoSaver(
        index=index if index is not None else MemoryIndex(),
        object_store=objects if objects is not None else MemoryObjects(),
        keys=keys,
        secret=secret,
        **options,
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def parts() -> tuple[MemoryIndex, MemoryObjects]:
    return MemoryIndex(), MemoryObjects()


@pytest.fixture
def store(parts: tuple[MemoryIndex, MemoryObjects]) -> S3DynamoStore:
    return S3DynamoStore.from_saver(make(*parts))


def raw_bytes(index: MemoryIndex, objects: MemoryObjects) -> bytes:
    """Everything stored, keys and bodies, as one byte string."""
    out = bytearray()
    for row in index.memory_rows():
        out += row.key.pk.encode() + row.key.sk.encode() + (row.blob or b"")
        out += (row.leaf or "").encode()
    for entry in index.directory_entries():
        out += entry.key.pk.encode() + entry.key.sk.encode() + entry.blob
    for info in objects.list(""):
        out += info.key.encode() + objects.get(info.key)
    return bytes(out)


def test_is_a_base_store_with_ttl(store: S3DynamoStore) -> None:
    assert isinstance(store, BaseStore) and store.supports_ttl


def test_round_trip_search_list_delete(store: S3DynamoStore) -> None:
    store.put(("users", "a", "memories"), "k1", {"food": "pizza", "n": 1})
    store.put(("users", "a", "prefs"), "k2", {"food": "sushi", "n": 2})
    store.put(("users", "b", "memories"), "k3", {"food": "pasta", "n": 3})
    item = store.get(("users", "a", "memories"), "k1")
    assert item is not None and item.value == {"food": "pizza", "n": 1}
    assert item.namespace == ("users", "a", "memories")
    found = store.search(("users", "a"))
    assert sorted(i.key for i in found) == ["k1", "k2"]
    assert [i.key for i in store.search(("users",), filter={"n": {"$gte": 2}})] in (
        ["k3", "k2"],
        ["k2", "k3"],
    )
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "a"),
        ("users", "b"),
    ]
    assert store.list_namespaces(suffix=("memories",)) == [
        ("users", "a", "memories"),
        ("users", "b", "memories"),
    ]
    store.delete(("users", "b", "memories"), "k3")
    assert store.get(("users", "b", "memories"), "k3") is None
    # A namespace left empty leaves the directory.
    assert ("users", "b", "memories") not in store.list_namespaces()


def test_overwrite_keeps_created_at(store: S3DynamoStore) -> None:
    store.put(("a",), "k", {"v": 1})
    first = store.get(("a",), "k")
    store.put(("a",), "k", {"v": 2})
    second = store.get(("a",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2} and second.created_at == first.created_at
    assert second.updated_at >= first.updated_at


def test_nothing_readable_at_rest(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    store = S3DynamoStore.from_saver(make(*parts))
    store.put(("tenant-secret-ns", "alice"), "secret-key-name", {"pw": "hunter2-value"})
    store.put(("tenant-secret-ns", "alice"), "big-secret-key", {"blob": os.urandom(40000).hex()})
    raw = raw_bytes(*parts)
    for word in (b"tenant-secret-ns", b"alice", b"secret-key-name", b"hunter2", b"big-secret"):
        assert word not in raw
    assert list(parts[1].list("")), "a large value goes to an object"


def test_large_value_is_an_object_and_reads_back(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    store = S3DynamoStore.from_saver(make(*parts))
    value = {"blob": os.urandom(30000).hex()}
    store.put(("docs",), "big", value)
    (row,) = parts[0].memory_rows()
    assert row.blob is None and row.leaf
    got = store.get(("docs",), "big")
    assert got is not None and got.value == value
    store.delete(("docs",), "big")
    assert list(parts[1].list("")) == []


def test_swapped_values_are_refused(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    index, _ = parts
    store = S3DynamoStore.from_saver(make(*parts))
    store.put(("a",), "k1", {"v": 1})
    store.put(("a",), "k2", {"v": 2})
    store.put(("b",), "k1", {"v": 3})
    rows = {r.key: r for r in index.memory_rows()}
    keys = list(rows)
    # Swap the payloads of two items of one namespace, and move one to another namespace.
    with index._lock:
        one, two = keys[0], keys[1]
        index._memory[one.pk][one.sk] = rows[one]._replace(blob=rows[two].blob)
    with pytest.raises(IntegrityError):
        store.search(("a",)) + store.search(("b",))


def test_wrong_secret_is_named_not_empty(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    S3DynamoStore.from_saver(make(*parts)).put(("a",), "k", {"v": 1})
    other = S3DynamoStore.from_saver(make(*parts, secret=os.urandom(32)))
    with pytest.raises(DeploymentMismatchError):
        other.search(("a",))
    other_keys = S3DynamoStore.from_saver(
        make(*parts, keys=f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    )
    with pytest.raises(DeploymentMismatchError):
        other_keys.get(("a",), "k")


def test_ttl_hides_expired_and_expire_removes(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    clock = Clock()
    store = S3DynamoStore.from_saver(make(*parts), ttl={"default_ttl": 10})
    store.space.clock = clock
    store.put(("a",), "short", {"v": 1})
    store.put(("a",), "forever", {"v": 2}, ttl=None)
    clock.now += 9 * 60
    assert store.get(("a",), "short") is not None  # a read refreshes (refresh_on_read)
    clock.now += 9 * 60
    assert store.get(("a",), "short", refresh_ttl=False) is not None
    clock.now += 2 * 60
    assert store.get(("a",), "short") is None
    assert [i.key for i in store.search(("a",))] == ["forever"]
    assert store.space.expire() == (1, 0)
    assert len(parts[0].memory_rows()) == 1
    store.delete(("a",), "forever")
    assert store.list_namespaces() == []


def test_expire_drops_namespaces_left_empty(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    clock = Clock()
    store = S3DynamoStore.from_saver(make(*parts))
    store.space.clock = clock
    store.put(("gone",), "k", {"v": 1}, ttl=1)
    clock.now += 120
    # Marked emptied while a writer's lease on it may run, dropped after.
    assert store.space.expire() == (1, 0)
    assert store.list_namespaces() == []
    clock.now += 1200
    assert store.space.expire() == (0, 1)
    assert store.list_namespaces() == [] and parts[0].directory_entries() == []


def test_semantic_search_ranks_by_similarity(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "cat" in t else [0.0, 1.0] for t in texts]

    store = S3DynamoStore.from_saver(
        make(*parts), index={"dims": 2, "embed": embed, "fields": ["text"]}
    )
    store.put(("docs",), "dog", {"text": "a dog"})
    store.put(("docs",), "cat", {"text": "a cat"})
    store.put(("docs",), "plain", {"text": "x"}, index=False)
    hits = store.search(("docs",), query="cat please")
    assert [h.key for h in hits][:2] == ["cat", "dog"]
    assert hits[0].score == pytest.approx(1.0) and hits[-1].score is None


def test_async_twins(store: S3DynamoStore) -> None:
    async def go() -> None:
        await store.aput(("a",), "k", {"v": 1})
        item = await store.aget(("a",), "k")
        assert item is not None and item.value == {"v": 1}
        assert [i.key for i in await store.asearch(("a",))] == ["k"]
        assert await store.alist_namespaces() == [("a",)]
        await store.adelete(("a",), "k")
        assert await store.aget(("a",), "k") is None

    asyncio.run(go())


def test_graph_with_checkpointer_and_store(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    saver = make(*parts)
    store = S3DynamoStore.from_saver(saver)

    class State(TypedDict):
        n: int

    def remember(state: State, *, store: BaseStore) -> State:
        store.put(("memories",), str(state["n"]), {"n": state["n"]})
        return {"n": len(store.search(("memories",)))}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    graph = builder.compile(checkpointer=saver, store=store)
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"n": 7}, config) == {"n": 1}
    assert graph.invoke({"n": 8}, config) == {"n": 2}
    # Threads and memories share the table; thread maintenance still reads it whole.
    assert saver.ops.stats().threads == 1


# ------------------------------------------------------------------ crashes


class Crash(Exception):
    pass


class Faulty:
    """Wraps a port: memory-port call number `at` (and object calls) raises `Crash`,
    before or after it is applied."""

    def __init__(self, inner: Any, counter: list[int], at: int, after: bool) -> None:
        self._inner, self._counter, self._at, self._after = inner, counter, at, after

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target) or not (
            name.startswith(("memory_", "directory")) or name in ("put_new", "get", "delete")
        ):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self._counter[0] += 1
            if self._counter[0] == self._at and not self._after:
                raise Crash(name)
            out = target(*args, **kwargs)
            if self._counter[0] == self._at:
                raise Crash(name)
            return out

        return call


@pytest.mark.parametrize("after", [False, True])
@pytest.mark.parametrize("operation", ["put", "put_large", "delete"])
def test_a_crash_between_requests_leaves_old_or_new(operation: str, after: bool) -> None:
    old, new = {"v": "old"}, {"v": "new" + ("x" * 30000 if operation == "put_large" else "")}
    big_old = {"v": os.urandom(20000).hex()}
    for at in range(1, 12):
        index, objects = MemoryIndex(), MemoryObjects()
        S3DynamoStore.from_saver(make(index, objects)).put(("ns",), "k", big_old)
        S3DynamoStore.from_saver(make(index, objects)).put(("ns",), "other", old)
        counter = [-1_000_000]  # no fault during the deployment check below
        saver = make(
            Faulty(index, counter, at, after),  # type: ignore[arg-type]
            Faulty(objects, counter, at, after),  # type: ignore[arg-type]
        )
        store = S3DynamoStore.from_saver(saver)
        store.get(("ns",), "other")  # the deployment check, before counting starts
        counter[0] = 0
        try:
            if operation == "delete":
                store.delete(("ns",), "k")
            else:
                store.put(("ns",), "k", new)
        except Crash:
            pass
        clean = S3DynamoStore.from_saver(make(index, objects))
        got = clean.get(("ns",), "k")
        expected_new = None if operation == "delete" else new
        assert got is None or got.value in (big_old, expected_new)
        if got is not None:
            assert ("ns",) in clean.list_namespaces()
            assert "k" in [i.key for i in clean.search(("ns",))]


# ------------------------------------------------------------------ cache


def test_cache_serves_a_graph_across_instances(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    calls: list[int] = []

    class State(TypedDict):
        x: int

    def double(state: State) -> State:
        calls.append(1)
        return {"x": state["x"] * 2}

    builder = StateGraph(State)
    builder.add_node("double", double, cache_policy=CachePolicy(ttl=60))
    builder.add_edge(START, "double")
    first = builder.compile(cache=S3DynamoCache.from_saver(make(*parts)))
    assert first.invoke({"x": 2}) == {"x": 4}
    # Another process (a new Lambda sandbox) on the same table finds the cached result.
    second = builder.compile(cache=S3DynamoCache.from_saver(make(*parts)))
    assert second.invoke({"x": 2}) == {"x": 4}
    assert len(calls) == 1


def test_cache_ttl_clear_and_sealing(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    clock = Clock()
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(make(*parts))
    cache.space.clock = clock
    cache.set({(("node", "a"), "k1"): ("secret-result", 30), (("node", "b"), "k2"): (42, None)})
    assert cache.get([(("node", "a"), "k1")]) == {(("node", "a"), "k1"): "secret-result"}
    assert b"secret-result" not in raw_bytes(*parts) and b"node" not in raw_bytes(*parts)
    clock.now += 31
    assert cache.get([(("node", "a"), "k1")]) == {}
    cache.clear([("node", "b")])
    assert cache.get([(("node", "b"), "k2")]) == {}
    cache.set({(("node", "c"), "k"): (1, None)})
    asyncio.run(cache.aclear())
    assert asyncio.run(cache.aget([(("node", "c"), "k")])) == {}


def test_memory_partitions_are_no_thread_s() -> None:
    from langgraph.checkpoint.s3dynamo.layout import (
        directory_pk,
        is_control_pk,
        memory_object_key,
        memory_pk,
        memory_scope,
        object_scope,
        scope_of,
        split_object_key,
    )

    name = "A" * 21 + "w"
    for prefix in ("", "tenant-1/"):
        pk, directory = memory_pk(prefix, name, "m"), directory_pk(prefix, "c")
        assert memory_scope(pk) == (prefix, "m", name)
        assert memory_scope(directory) == (prefix, "c", None)
        # Thread scans (this release's and 0.2.0's) skip partitions ending in "!";
        # retention and garbage collection map them to no deployment's thread.
        assert is_control_pk(pk) and is_control_pk(directory)
        assert scope_of(pk) is None and scope_of(directory) is None
        key = memory_object_key(pk, name)
        assert split_object_key(prefix, key) is None and object_scope(key) is None
    assert memory_scope(name + "!") is None and memory_scope(name) is None


def test_langgraph_store_and_cache_stay_namespace_packages() -> None:
    # Installed beside langgraph's own `langgraph.store.memory` and
    # `langgraph.cache.memory`: this project ships no `__init__.py` above its packages.
    import langgraph.cache
    import langgraph.store

    src = Path(__file__).resolve().parents[2] / "src" / "langgraph"
    for part in ("", "store", "cache", "checkpoint"):
        assert not (src / part / "__init__.py").exists(), part
    for package in (langgraph.store, langgraph.cache):
        assert getattr(package, "__file__", None) is None, package  # a namespace package
        assert any(str(src) in p for p in package.__path__), package.__path__


def test_async_methods_run_in_the_saver_s_pool(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    import threading

    saver = make(*parts, async_workers=7)
    store = S3DynamoStore.from_saver(saver)
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(saver)
    seen: list[str] = []
    real = store.space.get

    def spy(*args: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(*args)

    store.space.get = spy  # type: ignore[method-assign]
    cache.space.get = spy  # type: ignore[method-assign]

    async def go() -> None:
        await store.aget(("a",), "k")
        await cache.aget([(("a",), "k")])

    asyncio.run(go())
    assert len(seen) == 2 and all(name.startswith("s3dynamo-async7") for name in seen), seen


def test_replaced_large_values_are_collected_after_the_grace(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    from datetime import timedelta

    from langgraph.checkpoint.s3dynamo.memory.admin import collect_memory_garbage

    saver = make(*parts)
    store = S3DynamoStore.from_saver(saver)
    store.put(("docs",), "big", {"v": os.urandom(20000).hex()})
    latest = {"v": os.urandom(20000).hex()}
    store.put(("docs",), "big", latest)  # the first object is now referenced by nothing
    assert len(list(parts[1].list(""))) == 2
    # Within the grace nothing goes (a put may be between its upload and its commit).
    assert collect_memory_garbage(saver.parts, timedelta(hours=1)) == {"store": 0, "cache": 0}
    assert collect_memory_garbage(saver.parts, timedelta(0)) == {"store": 1, "cache": 0}
    assert len(list(parts[1].list(""))) == 1
    got = store.get(("docs",), "big")
    assert got is not None and got.value == latest
