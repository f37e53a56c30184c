"""Long-term memory: S3DynamoStore and S3DynamoCache. Sealing, tamper, wrong keys, TTL,
the namespace directory, large values, crashes between requests, graphs using them; and
what the Store's cheaper requests must not cost: a put that writes the item alone never
leaves a live item whose namespace `list_namespaces` and `search` miss, however it
interleaves with deletes and the expiry sweep of other processes; eventually consistent
reads still show a process its own writes; items of the earlier format read; `reencrypt`
re-seals the Store and the cache (docs/RELIABILITY.md, "The Store's namespace
directory").

On the in-memory twins; tests taking `backend` run through the DynamoDB and S3 adapters
too, and tests marked `aws` pin what only DynamoDB and S3 show: requests per operation,
the ConsistentRead flag of each read, nothing readable in the table and bucket.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp
from langgraph.types import CachePolicy

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    DeploymentMismatchError,
    IntegrityError,
)
from langgraph.checkpoint.s3dynamo.format.layout import DESCENDANTS_SK
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory import vector_index, vectors
from langgraph.checkpoint.s3dynamo.memory.format import MEMORY_PUT_MAX, item_aad
from langgraph.checkpoint.s3dynamo.memory.recent import DROP_MARGIN_SECONDS, LEASE_SECONDS
from langgraph.checkpoint.s3dynamo.memory.rows import (
    ENTRY_EMPTIED,
    ENTRY_RENEWED,
    ROW_BLOB,
    MemoryRow,
    row_item,
)
from langgraph.checkpoint.s3dynamo.ops.memory import collect_memory_garbage, expire
from langgraph.checkpoint.s3dynamo.table import Update, Write
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support import raw
from tests.support.backends import Backend
from tests.support.faults import Crash, CrashingPort, is_request
from tests.support.memory_index import MemoryIndex, Process
from tests.support.savers import Clients, RequestCounter, make_saver

# The first put into a namespace is one TransactWriteItems (the item and its namespace's
# directory entry).
pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")

KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
K2 = f"k2:{base64.b64encode(bytes(range(32, 64))).decode()}"
SECRET = bytes(range(100, 132))
NS = ("users", "u1", "memories")


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


def store_of(backend: Backend, **options: Any) -> S3DynamoStore:
    return S3DynamoStore.from_saver(backend.saver(), **options)


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


def test_round_trip_search_list_delete(backend: Backend) -> None:
    store = store_of(backend)
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


def test_a_search_finds_every_namespace_below_its_prefix(backend: Backend) -> None:
    writer, reader = store_of(backend), store_of(backend)
    writer.put(("a", "b", "c"), "deep", {"v": 1})
    writer.put(("a",), "top", {"v": 2})
    writer.put(("a", "x"), "side", {"v": 3})
    writer.put(("ab",), "other", {"v": 4})

    def keys(prefix: tuple[str, ...]) -> list[str]:
        return sorted(i.key for i in reader.search(prefix))

    assert keys(("a",)) == ["deep", "side", "top"]
    assert keys(("a", "b")) == ["deep"]
    assert keys(("a", "b", "c")) == ["deep"]
    assert keys(("ab",)) == ["other"] and keys(("z",)) == []
    assert keys(()) == ["deep", "other", "side", "top"]
    # A mark outlives the namespaces below it: the search reads the directory and
    # finds nothing there.
    writer.delete(("a", "b", "c"), "deep")
    assert keys(("a",)) == ["side", "top"] and keys(("a", "b")) == []


def test_a_namespace_deeper_than_a_transaction_takes_is_refused_before_writing(
    store: S3DynamoStore, parts: tuple[MemoryIndex, MemoryObjects]
) -> None:
    deep = tuple(f"l{i}" for i in range(MEMORY_PUT_MAX + 1))
    with pytest.raises(InvalidNamespaceError, match=f"has {len(deep)} labels, over the 99"):
        store.put(deep, "k", {"v": 1})
    assert parts[0].memory_rows() == [] and parts[0].directory_entries() == []
    store.put(deep[:MEMORY_PUT_MAX], "k", {"v": 1})
    assert [i.key for i in store.search(("l0",))] == ["k"]


def test_overwrite_keeps_created_at(backend: Backend) -> None:
    store = store_of(backend)
    store.put(("a",), "k", {"v": 1})
    first = store.get(("a",), "k")
    store.put(("a",), "k", {"v": 2})
    second = store.get(("a",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2} and second.created_at == first.created_at
    assert second.updated_at >= first.updated_at


def test_an_update_within_the_same_millisecond_still_reads_as_later(backend: Backend) -> None:
    # Times are kept to the millisecond: LangGraph's Postgres store tests put twice at
    # once and expect the second `updated_at` to be later, as a user comparing them would.
    store = store_of(backend)
    store.space.clock = lambda: 1_800_000_000.0  # every put in one millisecond
    store.put(("a",), "k", {"v": 1})
    first = store.get(("a",), "k")
    store.put(("a",), "k", {"v": 2})
    second = store.get(("a",), "k")
    assert first is not None and second is not None
    assert second.updated_at > first.updated_at and second.created_at == first.created_at


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
    one, two = keys[0], keys[1]
    index.load([row_item(rows[one]._replace(blob=rows[two].blob))])
    with pytest.raises(IntegrityError):
        store.search(("a",)) + store.search(("b",))


def test_wrong_secret_is_named_not_empty(backend: Backend) -> None:
    store_of(backend).put(("a",), "k", {"v": 1})
    other = S3DynamoStore.from_saver(backend.saver(setup=False, secret=os.urandom(32)))
    with pytest.raises(DeploymentMismatchError):
        other.search(("a",))
    other_keys = S3DynamoStore.from_saver(backend.saver(setup=False, keys={"k1": os.urandom(32)}))
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
    assert expire(store.space) == (1, 0)
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
    assert expire(store.space) == (1, 0)
    assert store.list_namespaces() == []
    clock.now += 1200
    assert expire(store.space) == (0, 1)
    assert store.list_namespaces() == [] and parts[0].directory_entries() == []


def test_semantic_search_ranks_by_similarity(backend: Backend) -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "cat" in t else [0.0, 1.0] for t in texts]

    store = store_of(backend, index={"dims": 2, "embed": embed, "fields": ["text"]})
    store.put(("docs",), "dog", {"text": "a dog"})
    store.put(("docs",), "cat", {"text": "a cat"})
    store.put(("docs",), "plain", {"text": "x"}, index=False)
    hits = store.search(("docs",), query="cat please")
    assert [h.key for h in hits][:2] == ["cat", "dog"]
    assert hits[0].score == pytest.approx(1.0) and hits[-1].score is None


def test_async_twins(backend: Backend) -> None:
    store = store_of(backend)

    async def go() -> None:
        await store.aput(("a",), "k", {"v": 1})
        item = await store.aget(("a",), "k")
        assert item is not None and item.value == {"v": 1}
        assert [i.key for i in await store.asearch(("a",))] == ["k"]
        assert await store.alist_namespaces() == [("a",)]
        await store.adelete(("a",), "k")
        assert await store.aget(("a",), "k") is None

    asyncio.run(go())


def test_graph_with_checkpointer_and_store(backend: Backend) -> None:
    saver = backend.saver()
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


@pytest.mark.parametrize("after", [False, True])
@pytest.mark.parametrize("operation", ["put", "put_large", "delete"])
def test_a_crash_between_requests_leaves_old_or_new(operation: str, after: bool) -> None:
    large = os.urandom(15000).hex() if operation == "put_large" else ""
    old, new = {"v": "old"}, {"v": "new" + large}
    big_old = {"v": os.urandom(20000).hex()}
    for at in range(1, 40):
        index, objects = MemoryIndex(), MemoryObjects()
        S3DynamoStore.from_saver(make(index, objects)).put(("ns",), "k", big_old)
        S3DynamoStore.from_saver(make(index, objects)).put(("ns",), "other", old)
        counter = [-1_000_000]  # no fault during the deployment check below
        saver = make(
            CrashingPort(index, counter, at, after, is_request),  # type: ignore[arg-type]
            CrashingPort(objects, counter, at, after, is_request),  # type: ignore[arg-type]
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
        if operation != "delete":
            # The object a put lets go is named before its commit: a crash anywhere leaves
            # none that only the full collection finds (docs/RELIABILITY.md).
            assert clean.saver.ops.verify().problems == [], (at, after)
        if counter[0] < at:
            break  # the operation finished before request `at`: every boundary was tried
    assert at > 3


# ------------------------------------------------------------------ cache


def test_cache_serves_a_graph_across_instances(backend: Backend) -> None:
    calls: list[int] = []

    class State(TypedDict):
        x: int

    def double(state: State) -> State:
        calls.append(1)
        return {"x": state["x"] * 2}

    builder = StateGraph(State)
    builder.add_node("double", double, cache_policy=CachePolicy(ttl=60))
    builder.add_edge(START, "double")
    first = builder.compile(cache=S3DynamoCache.from_saver(backend.saver()))
    assert first.invoke({"x": 2}) == {"x": 4}
    # Another process (a new Lambda sandbox) on the same table finds the cached result.
    second = builder.compile(cache=S3DynamoCache.from_saver(backend.saver(setup=False)))
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
    from langgraph.checkpoint.s3dynamo.format.layout import (
        directory_pk,
        is_control_pk,
        memory_pk,
        memory_scope,
        object_key,
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
        key = object_key(pk, name)
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

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    store.space.get = spy  # type: ignore[method-assign]
    cache.space.get = spy  # type: ignore[method-assign]

    async def go() -> None:
        await store.aget(("a",), "k")
        await cache.aget([(("a",), "k")])

    asyncio.run(go())
    assert len(seen) == 2 and all(name.startswith("s3dynamo-async7") for name in seen), seen


def test_replaced_large_values_are_collected_after_the_grace(backend: Backend) -> None:
    saver = backend.saver()
    store = S3DynamoStore.from_saver(saver)
    port = saver.parts.engine.objects.port
    store.put(("docs",), "big", {"v": os.urandom(20000).hex()})
    latest = {"v": os.urandom(20000).hex()}
    store.put(("docs",), "big", latest)  # the first object is now referenced by nothing
    assert len(list(port.list(""))) == 2
    # Within the grace nothing goes (a put may be between its upload and its commit).
    assert collect_memory_garbage(saver.parts, timedelta(hours=1)) == {"store": 0, "cache": 0}
    # A grace below zero: S3 dates an object to the second.
    assert collect_memory_garbage(saver.parts, timedelta(seconds=-5)) == {"store": 1, "cache": 0}
    assert len(list(port.list(""))) == 1
    got = store.get(("docs",), "big")
    assert got is not None and got.value == latest


def test_thread_maintenance_passes_memory_items_by(backend: Backend) -> None:
    saver = backend.saver()
    store = S3DynamoStore.from_saver(saver)
    store.put(("a",), "k", {"v": 1}, ttl=1)
    S3DynamoCache.from_saver(saver).set({(("n",), "k"): (1, 60)})
    assert saver.ops.stats().threads == 0
    plan = saver.ops.plan_expiry(timedelta(days=1))
    assert plan.idle == {} and plan.leftovers == []
    assert expire(store.space, now=store.space.clock() + 1800) == (1, 1)
    assert store.list_namespaces() == []


# ------------------------------------------------------------ the namespace directory


def sets(attribute: str) -> Callable[[Write], bool]:
    """A write that sets `attribute`."""
    return lambda w: isinstance(w, Update) and attribute in w.set


class Stale(Process):
    """Eventually consistent reads served from an earlier snapshot of the storage;
    consistent reads and writes from the storage itself."""

    def __init__(self, inner: MemoryIndex, snapshot: MemoryIndex) -> None:
        super().__init__(inner)
        self.snapshot = snapshot

    def get(self, key: ItemKey, *, consistent: bool = True) -> Any:
        return (self.table if consistent else self.snapshot).get(key, consistent=consistent)

    def get_many(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> Any:
        return (self.table if consistent else self.snapshot).get_many(keys, consistent=consistent)

    def query(self, partition: str, *, consistent: bool = False, **query: Any) -> Any:
        source = self.table if consistent else self.snapshot
        return source.query(partition, consistent=consistent, **query)


def store_on(index: Any, objects: MemoryObjects, clock: Clock | None = None, **kw: Any) -> Any:
    saver = S3DynamoSaver(
        index=index, object_store=objects, keys=kw.pop("keys", KEYS), secret=SECRET, **kw
    )
    store = S3DynamoStore.from_saver(saver)
    if clock is not None:
        store.space.clock = clock
    return store


def test_first_put_renews_the_entry_later_puts_write_the_item_alone(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = parts
    store = store_on(Process(index), objects)
    store.put(NS, "a", {"v": 1})
    # The item with its entry: one transaction.
    assert index.calls["TransactWriteItems"] == 1 and index.calls["UpdateItem"] == 0
    store.put(NS, "b", {"v": 2})
    store.put(NS, "a", {"v": 3})
    assert index.calls["TransactWriteItems"] == 1 and index.calls["UpdateItem"] == 2
    # Another process learns the entry from a read and writes items alone too.
    other = store_on(Process(index), objects)
    assert other.list_namespaces() == [NS]
    other.put(NS, "c", {"v": 4})
    assert index.calls["TransactWriteItems"] == 1 and index.calls["UpdateItem"] == 3


def test_a_put_racing_a_delete_of_the_last_item_stays_listed(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = parts
    clock = Clock()
    writer = store_on(Process(index), objects, clock)
    deleter = store_on(b := Process(index), objects, clock)
    reader = store_on(Process(index), objects, clock)
    writer.put(NS, "k1", {"v": 1})
    # The deleter finds the namespace empty; before it marks the entry, the writer (on
    # its lease) puts another item without touching the entry.
    b.before(sets(ENTRY_EMPTIED), lambda: writer.put(NS, "k2", {"v": 2}))
    deleter.delete(NS, "k1")
    assert index.calls["TransactWriteItems"] == 1  # the writer's second put wrote alone
    assert [e.emptied for e in index.directory_entries()] == [True]
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(("users",))] == ["k2"]
    # The sweep takes the mark off a namespace with items.
    assert expire(reader.space) == (0, 0)
    assert [e.emptied for e in index.directory_entries()] == [False]


def test_a_namespace_emptied_is_dropped_only_after_every_lease_on_it(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = parts
    clock = Clock()
    writer = store_on(Process(index), objects, clock)
    deleter = store_on(Process(index), objects, clock)
    reader = store_on(Process(index), objects, clock)
    writer.put(NS, "k1", {"v": 1})
    deleter.delete(NS, "k1")
    assert reader.list_namespaces() == [] and reader.search(NS) == []
    # Within the lease the writer still writes items alone: the namespace shows again.
    clock.now += LEASE_SECONDS - 1
    writer.put(NS, "k2", {"v": 2})
    assert reader.list_namespaces() == [NS]
    deleter.delete(NS, "k2")
    assert reader.list_namespaces() == []
    # Past the lease and its margin the sweep drops the entry; the writer's lease is
    # over, so its next put writes the entry again with the item.
    clock.now += DROP_MARGIN_SECONDS + 2
    assert expire(reader.space) == (0, 1) and index.directory_entries() == []
    puts = index.calls["TransactWriteItems"]
    writer.put(NS, "k3", {"v": 3})
    assert index.calls["TransactWriteItems"] == puts + 1
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(NS)] == ["k3"]


def test_a_lease_that_runs_out_during_a_put_renews_the_entry(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = parts
    clock = Clock()
    writer = store_on(a := Process(index), objects, clock)
    writer.put(NS, "k1", {"v": 1})
    generation = index.directory_entries()[0].generation
    clock.now += LEASE_SECONDS - 1

    def slow() -> None:
        clock.now += 5

    a.before(sets(ROW_BLOB), slow)
    index.calls.clear()
    writer.put(NS, "k2", {"v": 2})
    # The item alone, then the entry renewed: its lease ran out meanwhile.
    assert index.calls == {"UpdateItem": 2}
    assert index.directory_entries()[0].generation != generation


def test_a_put_that_renews_the_entry_names_what_it_replaced(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    """A put whose lease on the entry ran out renews it in a transaction, which returns no
    old item: the read before it tells what the put replaces, so a replaced object goes
    with incremental collection and a replaced inline value's filter token with the put
    (an object's is left, as on every put: a search checks the values it finds)."""
    from langgraph.checkpoint.s3dynamo.format.layout import TOKEN_MARK

    index, objects = parts
    clock = Clock()
    saver = S3DynamoSaver(index=index, object_store=objects, keys=KEYS, secret=SECRET)
    store = S3DynamoStore.from_saver(saver, filter_fields=["kind"])
    store.space.clock = clock

    def tokens() -> set[str]:
        return {i.key.sk for i in index.index_items() if i.key.sk.startswith(TOKEN_MARK)}

    store.put(NS, "large", {"kind": "large", "v": os.urandom(20_000).hex()})
    assert len(list(objects.list(""))) == 1  # the large value's object
    before = tokens()
    store.put(NS, "small", {"kind": "old"})
    (small_token,) = tokens() - before
    clock.now += 2 * 86400  # two days later: the lease on the entry ran out long ago
    renewals = index.calls["TransactWriteItems"]
    store.batch([PutOp(NS, "large", {"kind": "shrunk"}), PutOp(NS, "small", {"kind": "new"})])
    assert index.calls["TransactWriteItems"] == renewals + 1
    assert small_token not in tokens()
    # Named before the commit, in an intent stamped by the writer's clock.
    later = datetime.fromtimestamp(clock.now, timezone.utc) + timedelta(hours=1)
    journal = saver.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    assert journal.execute(now=later) == 1 and list(objects.list("")) == []
    assert [i.key for i in store.search(NS, filter={"kind": "new"})] == ["small"]
    assert store.search(NS, filter={"kind": "old"}) == []
    assert saver.ops.verify().problems == []


def test_a_put_that_renews_the_entry_names_what_another_wrote_after_its_read(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    """Between a renewing put's read (of the entry and its items) and its transaction,
    another process replaces the item with a large value: the transaction, expecting
    the item as read, is refused with the item as it is now and sent again expecting
    that, so the other's object goes with incremental collection."""
    index, objects = parts
    clock = Clock()
    renewer = store_on(port := Process(index), objects, clock)
    other = store_on(Process(index), objects, clock)
    other.put(NS, "k", {"v": "old"})
    clock.now += 2 * 86400  # two days later: every lease on the entry ran out long ago
    large = {"v": os.urandom(20_000).hex()}
    port.before(sets(ENTRY_RENEWED), lambda: other.put(NS, "k", large))
    sent = index.calls["TransactWriteItems"]
    renewer.put(NS, "k", {"v": "new"})
    # The other's renewal, the refused one, and the one sent again.
    assert index.calls["TransactWriteItems"] == sent + 3
    assert len(list(objects.list(""))) == 1
    later = datetime.fromtimestamp(clock.now, timezone.utc) + timedelta(hours=1)
    journal = renewer.saver.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    assert journal.execute(now=later) == 1 and list(objects.list("")) == []
    assert other.get(NS, "k").value == {"v": "new"}
    assert renewer.saver.ops.verify().problems == []


def test_eventually_consistent_reads_show_this_process_its_writes(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = parts
    store_on(index, objects).put(("u",), "old", {"v": 0})
    snapshot = index.clone()
    store = store_on(Stale(index, snapshot), objects)
    store.put(("u",), "k", {"v": 1})
    store.put(("new",), "k", {"v": 2})
    store.put(("u",), "old", {"v": 3})
    item = store.get(("u",), "k")
    assert item is not None and item.value == {"v": 1}
    assert {i.key: i.value for i in store.search(("u",))} == {"k": {"v": 1}, "old": {"v": 3}}
    assert store.list_namespaces() == [("new",), ("u",)]
    store.delete(("u",), "old")
    assert store.get(("u",), "old") is None
    assert [i.key for i in store.search(("u",))] == ["k"]
    # Another process reading the same lagging replica sees the store as it was: the
    # trade-off of eventually consistent reads (docs/OPERATIONS.md, "Long-term memory").
    other = store_on(Stale(index, snapshot), objects)
    assert other.get(("u",), "k") is None
    old = other.get(("u",), "old")
    assert old is not None and old.value == {"v": 0}


def test_items_of_the_earlier_format_read(parts: tuple[MemoryIndex, MemoryObjects]) -> None:
    index, objects = parts
    store = store_on(index, objects)
    store.setup()
    space = store.space
    serde = store.saver.parts.codec.serde()
    # The first layout: the payload header named the namespace, and vectors were float lists.
    ik = space.item_key(NS, "old")
    body = serde.dumps_typed({"value": {"text": "cat"}, "vectors": {"text": [1.0, 0.0]}})
    payload = json.dumps([list(NS), "old", body[0]]).encode() + b"\n" + body[1]
    blob = store.saver.parts.sealer.seal("memory", payload, item_aad("m", NS, ik.sk))
    index.load([row_item(MemoryRow(ik, blob, None, None, None, 1000, 1000))])
    item = store.get(NS, "old")
    assert item is not None and item.value == {"text": "cat"}

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "cat" in t else [0.0, 1.0] for t in texts]

    indexed = S3DynamoStore.from_saver(
        store.saver, index={"dims": 2, "embed": embed, "fields": ["text"]}
    )
    indexed.put(NS, "new", {"text": "dog"})
    found = indexed.search(NS, query="cat")
    assert [(i.key, round(i.score or 0, 3)) for i in found] == [("old", 1.0), ("new", 0.0)]


def test_items_written_before_times_were_sealed_read_their_clear_times(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    """An item whose payload has no sealed times (an earlier build's) reads its clear
    created, updated and expiry times (docs/FORMAT.md); its next put seals them, and its
    creation time is that put's from then on."""
    index, objects = parts
    store = store_on(index, objects)
    store.setup()
    space = store.space
    serde = store.saver.parts.codec.serde()
    ik = space.item_key(NS, "old")
    body = serde.dumps_typed({"value": {"v": 0}, "vectors": {}})
    payload = json.dumps(["old", body[0], "v0"]).encode() + b"\n" + body[1]
    blob = store.saver.parts.sealer.seal("memory", payload, item_aad("m", NS, ik.sk))
    now = space.now_ms()
    index.load([row_item(MemoryRow(ik, blob, None, now + 60_000, 1.0, 1000, 2000))])
    item = store.get(NS, "old", refresh_ttl=False)
    assert item is not None and item.value == {"v": 0}
    assert (item.created_at.timestamp(), item.updated_at.timestamp()) == (1.0, 2.0)
    store.put(NS, "old", {"v": 1})
    again = store.get(NS, "old")
    assert again is not None and again.created_at == again.updated_at > item.updated_at
    (row,) = [r for r in index.memory_rows() if r.key == ik]
    assert row.created_ms == 1000 and row.created_seal is not None


def test_reencrypt_reseals_store_items_cache_entries_and_directories(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = parts
    old = store_on(index, objects)
    old.setup()
    old.put(NS, "small", {"v": 1})
    old.put(NS, "large", {"v": os.urandom(60_000).hex()})
    S3DynamoCache.from_saver(old.saver).set({(("node",), "k"): ({"r": 1}, None)})
    sealer = old.saver.parts.sealer
    blobs = [r.blob for r in index.memory_rows() if r.blob is not None]
    blobs += [e.blob for e in index.directory_entries()]
    blobs += [objects.get(o.key) for o in objects.list("")]
    assert {sealer.key_id_of(b) for b in blobs} == {"k1"} and len(blobs) == 5

    rotated = store_on(index, objects, keys=f"{K2},{KEYS}")
    assert rotated.saver.ops.reencrypt() >= 5
    blobs = [r.blob for r in index.memory_rows() if r.blob is not None]
    blobs += [e.blob for e in index.directory_entries()]
    blobs += [objects.get(o.key) for o in objects.list("")]
    # The creation stamps too, which a later put keeps.
    stamps = [r.created_seal for r in index.memory_rows() if r.created_seal is not None]
    assert len(stamps) == 3
    assert {sealer.key_id_of(b) for b in [*blobs, *stamps]} == {"k2"}
    large = rotated.get(NS, "large")
    assert large is not None and len(large.value["v"]) == 120_000
    assert rotated.list_namespaces() == [NS]
    cache = S3DynamoCache.from_saver(rotated.saver)
    assert cache.get([(("node",), "k")]) == {(("node",), "k"): {"r": 1}}
    # A second run finds nothing left to re-seal.
    assert rotated.saver.ops.reencrypt() == 0


def test_an_item_deleted_while_its_namespace_is_re_sealed_leaves_no_object(
    parts: tuple[MemoryIndex, MemoryObjects], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-sealing overwrites an item's object in place; another process deleting the
    item after the re-seal read it would see it written again, named by nothing. The
    re-seal's intent has incremental collection delete it."""
    from langgraph.checkpoint.s3dynamo.memory import sealed

    index, objects = parts
    old = store_on(index, objects)
    old.setup()
    old.put(NS, "large", {"v": os.urandom(60_000).hex()})
    assert len(list(objects.list(""))) == 1
    real = sealed.resealed

    def deleted_meanwhile(stored: Any, sealer: Any) -> Any:
        plan = real(stored, sealer)
        old.delete(NS, "large")
        return plan

    monkeypatch.setattr(sealed, "resealed", deleted_meanwhile)
    rotated = store_on(index, objects, keys=f"{K2},{KEYS}")
    rotated.saver.ops.reencrypt()
    assert rotated.get(NS, "large") is None
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    journal = rotated.saver.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    assert journal.execute(now=later) == 1 and list(objects.list("")) == []


def test_a_store_transaction_that_keeps_conflicting_names_store_items() -> None:
    from botocore.exceptions import ClientError

    from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable
    from langgraph.checkpoint.s3dynamo.memory import format
    from langgraph.checkpoint.s3dynamo.memory.rows import DirectoryEntry

    class Conflicting:
        sent = 0

        def transact_write_items(self, **_: object) -> None:
            self.sent += 1
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                    "CancellationReasons": [{"Code": "TransactionConflict"}],
                },
                "TransactWriteItems",
            )

    row = MemoryRow(ItemKey("p~m!", "k"), b"x", None)
    entry = DirectoryEntry(ItemKey("~m~dir!", "n"), b"n", "g")
    writes = [format.put_row(row), format.renew(entry)]
    with pytest.raises(ConcurrentUpdateError, match="kept changing the same items") as err:
        DynamoTable(Conflicting(), "t").transact(writes)  # type: ignore[arg-type]
    assert "thread" not in str(err.value)


def test_a_read_refreshes_an_expiry_only_when_it_moves_by_more_than_the_slack(
    parts: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = parts
    clock = Clock()
    store = store_on(index, objects, clock)
    store.put(NS, "hour", {"v": 1}, ttl=60)
    store.put(NS, "minute", {"v": 2}, ttl=1)
    index.calls.clear()
    clock.now += 30  # under 1% of an hour (36 s), over 1% of a minute
    assert store.get(NS, "hour") is not None and store.get(NS, "minute") is not None
    # The process wrote both: the hour is read alone, the minute refreshed and read in
    # one request.
    assert index.calls == {"BatchGetItem": 1, "UpdateItem": 1}
    expiry = {r.key.sk: r.expires_ms for r in index.memory_rows()}
    assert expiry[store.space.item_key(NS, "minute").sk] == int((clock.now + 60) * 1000)
    assert expiry[store.space.item_key(NS, "hour").sk] == int((clock.now - 30 + 3600) * 1000)
    clock.now += 10  # 40 s since the put: the hour's expiry moves by more than 36 s
    assert store.get(NS, "hour") is not None
    hour = [r for r in index.memory_rows() if r.key == store.space.item_key(NS, "hour")]
    assert hour[0].expires_ms == int((clock.now + 3600) * 1000)
    # Another process, which never saw the items: read, then refresh what is due.
    other = store_on(twin := index.clone(), objects, clock)
    assert other.get(NS, "absent") is None  # after the once-a-process deployment check
    clock.now += 40
    calls = twin.calls
    calls.clear()
    assert other.get(NS, "hour") is not None
    assert calls == {"BatchGetItem": 1, "UpdateItem": 1}


# ------------------------------------------- on DynamoDB and S3 only (marked aws)


def stored_bytes(clients: Any) -> bytes:
    """Everything the table and bucket hold, binary attributes and objects as raw bytes."""
    dynamodb, s3 = clients
    out = bytearray()
    for page in dynamodb.get_paginator("scan").paginate(TableName=clients.table):
        for item in page["Items"]:
            for name, value in item.items():
                out += name.encode() + (value["B"] if "B" in value else repr(value).encode())
    for obj in s3.list_objects_v2(Bucket=clients.bucket).get("Contents", []):
        out += (
            obj["Key"].encode()
            + s3.get_object(Bucket=clients.bucket, Key=obj["Key"])["Body"].read()
        )
    return bytes(out)


@pytest.mark.aws
def test_requests_per_operation(clients: Clients, counter: RequestCounter) -> None:
    saver = make_saver(clients)
    saver.setup()
    counter.reset()
    store = S3DynamoStore.from_saver(saver)
    # A new namespace: one consistent read of its directory entry (absent) and of the
    # item (what the put replaces), then one transaction of the item and the entry (the
    # deployment check is done by setup()).
    store.put(("users", "a"), "k", {"v": 1})
    assert counter.calls == {"dynamodb.BatchGetItem": 1, "dynamodb.TransactWriteItems": 1}
    counter.reset()
    # Another process's first put into it: the entry read with the item (renewed lately:
    # a lease), then the item alone, 1 write unit as later puts.
    other = S3DynamoStore.from_saver(make_saver(clients))
    other.put(("users", "a"), "k2", {"v": 2})
    assert counter.calls == {
        "dynamodb.Query": 1,  # the other saver's once-a-process deployment check
        "dynamodb.BatchGetItem": 1,
        "dynamodb.UpdateItem": 1,
    }
    store.delete(("users", "a"), "k2")
    counter.reset()
    assert store.get(("users", "a"), "k") is not None
    assert counter.calls == {"dynamodb.BatchGetItem": 1}
    counter.reset()
    # A namespace with none below it: its partition alone, which holds no descendants mark.
    assert [i.key for i in store.search(("users", "a"))] == ["k"]
    assert counter.calls == {"dynamodb.Query": 1}
    counter.reset()
    # A prefix with namespaces below: its partition (marked), the directory, then each
    # namespace below.
    assert [i.key for i in store.search(("users",))] == ["k"]
    assert counter.calls == {"dynamodb.Query": 3}
    counter.reset()
    # Later puts into it, while the process holds a lease on its entry: the item alone;
    # a large value's object behind an upload intent (a PutItem before it, and its
    # delete after the item's write), as a checkpoint's objects are.
    store.put(("users", "a"), "big", {"v": os.urandom(30000).hex()})
    assert counter.calls == {
        "dynamodb.PutItem": 1,
        "s3.PutObject": 1,
        "dynamodb.UpdateItem": 1,
        "dynamodb.BatchWriteItem": 1,
    }
    counter.reset()
    # Replacing it, as this process wrote it: the intent names the object replaced too and
    # stays for incremental collection, which deletes that one after its grace.
    store.put(("users", "a"), "big", {"v": os.urandom(30000).hex()})
    assert counter.calls == {"dynamodb.PutItem": 1, "s3.PutObject": 1, "dynamodb.UpdateItem": 1}
    counter.reset()
    # Replaced by a process that never saw it: what it replaced comes back with the
    # UpdateItem, and is named in an intent of its own after it.
    other.put(("users", "a"), "big", {"v": os.urandom(30000).hex()})
    assert counter.calls == {
        "dynamodb.PutItem": 2,
        "s3.PutObject": 1,
        "dynamodb.UpdateItem": 1,
        "dynamodb.BatchWriteItem": 1,
    }
    counter.reset()
    # Deleting it: the entry and the item read together, an intent naming its object
    # before the delete (a process that stops after the delete leaves the object to
    # incremental collection), the delete, a look for a live item left, the object's.
    store.delete(("users", "a"), "big")
    assert counter.calls == {
        "dynamodb.BatchGetItem": 1,
        "dynamodb.PutItem": 1,
        "dynamodb.DeleteItem": 1,
        "dynamodb.Query": 1,
        "s3.DeleteObjects": 1,
    }
    counter.reset()
    # A batch writes each namespace's items together: 99 items and the directory entry
    # a transaction, so parallel puts into one namespace never contend for its entry; the
    # read before them asks for the entry and the 150 items, 100 keys a BatchGetItem.
    store.batch([PutOp(("users", "b"), f"k{i}", {"i": i}) for i in range(150)])
    assert counter.calls == {"dynamodb.BatchGetItem": 2, "dynamodb.TransactWriteItems": 2}
    assert len(store.search(("users", "b"), limit=200)) == 150


@pytest.mark.aws
def test_a_process_writes_an_ancestors_mark_only_while_it_does_not_know_it_exists(
    clients: Clients,
) -> None:
    sent: list[list[str]] = []

    def transaction(params: dict[str, Any], **_: Any) -> None:
        sent.append([next(iter(i)) for i in params["TransactItems"]])

    clients[0].meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems", transaction
    )
    first = S3DynamoStore.from_saver(make_saver(clients))
    first.setup()
    first.put(("a", "b", "c"), "k", {"v": 1})
    first.put(("a", "b", "d"), "k", {"v": 1})
    # The item, the entry, the marks of ("a",) and ("a", "b"); then only the entry: this
    # process wrote those marks.
    assert sent == [["Update", "Update", "Put", "Put"], ["Update", "Update"]]
    sent.clear()
    # Another process that opened an item of a namespace knows its ancestors are marked.
    reader = S3DynamoStore.from_saver(make_saver(clients))
    assert reader.get(("a", "b", "c"), "k") is not None
    reader.put(("a", "b", "e"), "k", {"v": 1})
    assert sent == [["Update", "Update"]]
    sent.clear()
    blind = S3DynamoStore.from_saver(make_saver(clients))
    blind.put(("a", "x"), "k", {"v": 1})
    assert sent == [["Update", "Update", "Put"]]
    assert sorted(i.key for i in blind.search(("a",))) == ["k"] * 4


@pytest.mark.aws
def test_a_due_refresh_of_an_item_the_process_knows_is_one_request(
    clients: Clients, counter: RequestCounter
) -> None:
    saver = make_saver(clients)
    saver.setup()
    store = S3DynamoStore.from_saver(saver, ttl={"default_ttl": 60, "refresh_on_read": True})
    store.put(NS, "k", {"v": 1})
    later = store.space.clock() + 120  # over 1% of the hour: every refresh is due
    store.space.clock = lambda: later
    counter.reset()
    item = store.get(NS, "k")
    assert item is not None and item.value == {"v": 1}
    assert counter.calls == {"dynamodb.UpdateItem": 1}
    [row] = [r for r in _memory_items(clients) if r["sk"]["S"] == store.space.item_key(NS, "k").sk]
    assert int(row["me"]["N"]) == round(later * 1000) + 3_600_000
    # A process that never saw it reads, then refreshes: DynamoDBStore's two requests.
    other = S3DynamoStore.from_saver(make_saver(clients), ttl={"default_ttl": 60})
    assert other.get(NS, "absent") is None  # after the once-a-process deployment check
    other.space.clock = lambda: later + 120
    counter.reset()
    assert other.get(NS, "k") is not None
    assert counter.calls == {"dynamodb.BatchGetItem": 1, "dynamodb.UpdateItem": 1}


def _memory_items(clients: Clients) -> list[dict[str, Any]]:
    pages = clients[0].get_paginator("scan").paginate(TableName=clients.table)
    return [i for page in pages for i in page["Items"] if "me" in i]


@pytest.mark.aws
def test_the_expiry_sweep_reads_the_stores_partitions_not_the_table(
    clients: Clients, counter: RequestCounter
) -> None:
    calls = []
    for prefix, threads in (("small/", 4), ("large/", 40)):
        saver = make_saver(clients, prefix=prefix)
        saver.setup()
        for i in range(threads):
            config = {"configurable": {"thread_id": f"t{i}", "checkpoint_ns": ""}}
            saver.put(config, empty_checkpoint(), {}, {})  # type: ignore[arg-type]
        store = S3DynamoStore.from_saver(saver)
        store.put(("a",), "old", {"v": os.urandom(30000).hex()}, ttl=0.01)  # an object
        store.put(("a",), "kept", {"v": 2})
        store.put(("b", "c"), "old", {"v": 3}, ttl=0.01)
        counter.reset()
        assert expire(store.space, now=store.space.clock() + 60) == (2, 0)
        calls.append(dict(counter.calls))
        assert [i.key for i in store.search(("a",))] == ["kept"]
    # The directory and each namespace (Query 3), an intent naming the object of the
    # item expired in ("a",) before any delete (PutItem 1), the search indexes of each
    # namespace an item left, for their tokens (Query 2; none has a vector index to
    # tell), the two deletes and the object's, a look for a live item in each (Query 2)
    # and, in ("b", "c"), for any item (Query 1), then its emptied mark: whatever the
    # table holds.
    assert (
        calls[0]
        == calls[1]
        == {
            "dynamodb.Query": 8,
            "dynamodb.PutItem": 1,
            "dynamodb.DeleteItem": 2,
            "s3.DeleteObjects": 1,
            "dynamodb.UpdateItem": 1,
        }
    )


@pytest.mark.aws
def test_setup_marks_the_ancestors_of_entries_written_before_marks(clients: Clients) -> None:
    writer = S3DynamoStore.from_saver(make_saver(clients))
    writer.setup()
    writer.put(("a", "b"), "k", {"v": 1})
    # As an entry written by a build without descendants marks left it.
    mark = {"pk": {"S": writer.space.pk(("a",))}, "sk": {"S": DESCENDANTS_SK}}
    clients[0].delete_item(TableName=clients.table, Key=mark)
    reader = S3DynamoStore.from_saver(make_saver(clients))
    assert reader.search(("a",)) == []
    reader.setup()
    assert [i.key for i in reader.search(("a",))] == ["k"]
    assert "Item" in clients[0].get_item(TableName=clients.table, Key=mark)


@pytest.mark.aws
def test_nothing_readable_in_the_table_and_bucket(clients: Clients) -> None:
    keys = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
    saver = make_saver(clients, keys=keys, secret=os.urandom(32))
    saver.setup()
    store = S3DynamoStore.from_saver(saver)
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(saver)
    store.put(("tenant-ns", "alice"), "key-name", {"pw": "hunter2"})
    store.put(("tenant-ns", "alice"), "large-key", {"blob": os.urandom(30000).hex()})
    cache.set({(("cache-ns",), "cache-key"): ("cached-value", 60)})
    raw = stored_bytes(clients)
    for word in (b"tenant-ns", b"alice", b"key-name", b"hunter2", b"large-key", b"cache-"):
        assert word not in raw


@pytest.mark.aws
def test_vectors_tokens_and_segments_are_sealed(clients: Clients, monkeypatch: Any) -> None:
    # The search indexes at rest: the vector log, segments in S3 (a compaction ran), the
    # manifest and filter tokens hold neither the texts nor the values of a declared
    # field, nor the vectors in any form they were given or are ranked in.
    monkeypatch.setattr(vector_index, "LOG_MAX", 500)
    keys = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
    saver = make_saver(clients, keys=keys, secret=os.urandom(32))
    saver.setup()
    given = {
        f"text-{i}": [((i * 37 + d * 11) % 200 - 100) / 7.0 for d in range(16)] for i in range(12)
    }
    store = S3DynamoStore.from_saver(
        saver,
        index={"dims": 16, "embed": lambda texts: [given[t] for t in texts], "fields": ["text"]},
        filter_fields=["kind"],
    )
    for text in given:
        store.put(("tenant-ns",), f"key-{text}", {"text": text, "kind": "kind-secret"})
    assert len(store.search(("tenant-ns",), query="text-3", limit=3)) == 3  # compacts
    assert [i.key for i in store.search(("tenant-ns",), query="text-3", limit=1)] == ["key-text-3"]
    assert len(store.search(("tenant-ns",), filter={"kind": "kind-secret"}, limit=20)) == 12
    objects = clients[1].list_objects_v2(Bucket=clients.bucket).get("Contents", [])
    assert objects, "no segment was written"
    raw = stored_bytes(clients)
    for word in (b"tenant-ns", b"text-", b"key-", b"kind-secret", b"kind"):
        assert word not in raw, word
    for vector in given.values():
        as_float32 = struct.pack(f"<{len(vector)}f", *vector)
        as_int8 = vectors.encode(vector).data
        assert as_float32[:16] not in raw and as_int8[:12] not in raw


class Consistency:
    """The ConsistentRead flag of every DynamoDB read, in order."""

    def __init__(self, client: Any) -> None:
        self.reads: list[tuple[str, bool]] = []
        client.meta.events.register("provide-client-params.dynamodb.*", self._seen)

    def _seen(self, params: dict[str, Any], event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation == "BatchGetItem":
            for table in params["RequestItems"].values():
                self.reads.append((operation, bool(table.get("ConsistentRead"))))
        elif operation in ("Query", "GetItem"):
            self.reads.append((operation, bool(params.get("ConsistentRead"))))


@pytest.mark.aws
def test_put_is_one_update_and_reads_are_eventually_consistent(
    clients: Clients, counter: RequestCounter
) -> None:
    saver = make_saver(clients)
    saver.setup()
    counter.reset()
    store = S3DynamoStore.from_saver(saver)
    store.put(NS, "a", {"v": 1})
    assert counter.calls == {"dynamodb.BatchGetItem": 1, "dynamodb.TransactWriteItems": 1}
    counter.reset()
    store.put(NS, "b", {"v": 2})
    assert counter.calls == {"dynamodb.UpdateItem": 1}
    # A fresh process reads eventually consistently and learns the entry from a read.
    other = S3DynamoStore.from_saver(make_saver(clients))
    assert other.get(NS, "none") is None  # after the once-a-process deployment check
    seen = Consistency(clients[0])
    counter.reset()
    assert other.get(NS, "a") is not None
    assert [i.key for i in other.search(NS, filter={"v": 2})] == ["b"]
    assert [i.key for i in other.search(("users",), filter={"v": 2})] == ["b"]
    assert other.list_namespaces() == [NS]
    # get; search of the namespace: its partition; search of ("users",): its marked
    # partition, the directory, the namespace; list_namespaces: the directory.
    assert seen.reads == [("BatchGetItem", False)] + [("Query", False)] * 5
    counter.reset()
    other.put(NS, "c", {"v": 3})
    assert counter.calls == {"dynamodb.UpdateItem": 1}


@pytest.mark.aws
def test_on_dynamodb_a_put_within_its_lease_after_a_delete_stays_listed(
    clients: Clients,
) -> None:
    clock = Clock()
    stores = []
    for _ in range(3):
        store = S3DynamoStore.from_saver(make_saver(clients))
        store.space.clock = clock
        stores.append(store)
    writer, deleter, reader = stores
    writer.setup()
    writer.put(NS, "k1", {"v": 1})
    deleter.delete(NS, "k1")
    assert reader.list_namespaces() == []
    # Within its lease the writer puts without the directory entry, which the delete
    # marked emptied: the namespace is listed and searched all the same.
    writer.put(NS, "k2", {"v": 2})
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(("users",))] == ["k2"]
    assert expire(reader.space) == (0, 0)
    deleter.delete(NS, "k2")
    assert reader.list_namespaces() == []
    # After every lease and its margin the entry goes; the writer's next put, its
    # lease over, writes the entry again.
    clock.now += LEASE_SECONDS + DROP_MARGIN_SECONDS + 1
    assert expire(reader.space) == (0, 1)
    writer.put(NS, "k3", {"v": 3})
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(NS)] == ["k3"]


def test_verify_opens_the_store_its_vector_index_and_the_cache(backend: Backend) -> None:
    """Issue 51: `verify` of the whole store opens every blob of long-term memory too,
    counted apart from the threads', and names what was altered there."""
    saver = backend.saver()

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(t) % 7)] for t in texts]

    store = S3DynamoStore.from_saver(
        saver, index={"dims": 2, "embed": embed, "fields": ["text"]}, filter_fields=["kind"]
    )
    store.put(NS, "small", {"text": "tea", "kind": "pref"}, ttl=60)
    store.put(NS, "large", {"text": "doc", "kind": "doc", "body": os.urandom(40_000).hex()})
    store.search(NS, query="tea")  # builds the index: a manifest and a segment
    store.put(NS, "gone", {"text": "soon", "kind": "pref"})
    store.delete(NS, "gone")  # a log entry and a tombstone
    store.get(NS, "small")  # refreshed: a refresh stamp
    S3DynamoCache.from_saver(saver).set({(("node",), "input"): ({"r": 1}, None)})
    report = saver.ops.verify()
    assert report.ok, report.problems
    m = report.memory
    assert (m["store"]["namespaces"], m["store"]["items"], m["store"]["objects"]) == (1, 2, 2)
    assert m["store"]["index items"] >= 4 and m["store"]["blobs"] == m["store"]["opened"] >= 8
    assert (m["cache"]["namespaces"], m["cache"]["items"]) == (1, 1)
    assert m["cache"]["blobs"] == m["cache"]["opened"] == 3  # entry, payload, creation stamp
    # An item's creation stamp swapped with another's: named, where it is.
    small, large = (store.space.item_key(NS, k) for k in ("small", "large"))
    stamp = raw.table(saver).get(large)
    assert stamp is not None
    raw.set_attributes(saver, small, mk=stamp["mk"])
    (problem,) = saver.ops.verify().problems
    assert (problem["kind"], problem["where"]) == ("tampered", "store item")
    assert small.sk in problem["key"]
