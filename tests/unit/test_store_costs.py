"""What the Store's cheaper requests must not cost: a put that writes the item alone
never leaves a live item whose namespace `list_namespaces` and `search` miss, however
it interleaves with deletes and the expiry sweep of other processes; eventually
consistent reads still show a process its own writes; items of the earlier format read;
`reencrypt` re-seals the Store and the cache (docs/RELIABILITY.md, "The Store's
namespace directory")."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError
from langgraph.checkpoint.s3dynamo.memory.recent import DROP_MARGIN_SECONDS, LEASE_SECONDS
from langgraph.checkpoint.s3dynamo.records import MemoryRow
from langgraph.store.s3dynamo import S3DynamoStore

K1 = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
K2 = f"k2:{base64.b64encode(bytes(range(32, 64))).decode()}"
SECRET = bytes(range(100, 132))
NS = ("users", "u1", "memories")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Process:
    """Another process on the same storage: its own adapter object, hence its own
    leases and memory of its writes. `hooks` run before the named request."""

    def __init__(self, inner: MemoryIndex) -> None:
        self._inner = inner
        self.hooks: dict[str, Callable[[], None]] = {}

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        hook = self.hooks.get(name)
        if hook is None or not callable(target):
            return target

        def hooked(*args: Any, **kwargs: Any) -> Any:
            self.hooks.pop(name)()
            return target(*args, **kwargs)

        return hooked


class Stale(Process):
    """Eventually consistent reads served from an earlier snapshot of the storage;
    consistent reads and writes from the storage itself."""

    def __init__(self, inner: MemoryIndex, snapshot: MemoryIndex) -> None:
        super().__init__(inner)
        self.snapshot = snapshot

    def memory_get(self, keys: Any, consistent: bool = False) -> Any:
        return (self._inner if consistent else self.snapshot).memory_get(keys)

    def memory_query(self, pk: str, limit: int | None = None, consistent: bool = False) -> Any:
        return (self._inner if consistent else self.snapshot).memory_query(pk, limit)

    def directory(self, pk: str, consistent: bool = False) -> Any:
        return (self._inner if consistent else self.snapshot).directory(pk)


def store_on(index: Any, objects: MemoryObjects, clock: Clock | None = None, **kw: Any) -> Any:
    saver = S3DynamoSaver(
        index=index, object_store=objects, keys=kw.pop("keys", K1), secret=SECRET, **kw
    )
    store = S3DynamoStore.from_saver(saver)
    if clock is not None:
        store.space.clock = clock
    return store


@pytest.fixture
def storage() -> tuple[MemoryIndex, MemoryObjects]:
    return MemoryIndex(), MemoryObjects()


def test_first_put_renews_the_entry_later_puts_write_the_item_alone(
    storage: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = storage
    store = store_on(Process(index), objects)
    store.put(NS, "a", {"v": 1})
    assert index.calls["memory_put"] == 1 and index.calls["memory_update"] == 0
    store.put(NS, "b", {"v": 2})
    store.put(NS, "a", {"v": 3})
    assert index.calls["memory_put"] == 1 and index.calls["memory_update"] == 2
    # Another process learns the entry from a read and writes items alone too.
    other = store_on(Process(index), objects)
    assert other.list_namespaces() == [NS]
    other.put(NS, "c", {"v": 4})
    assert index.calls["memory_put"] == 1 and index.calls["memory_update"] == 3


def test_a_put_racing_a_delete_of_the_last_item_stays_listed(
    storage: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = storage
    clock = Clock()
    writer = store_on(Process(index), objects, clock)
    deleter = store_on(b := Process(index), objects, clock)
    reader = store_on(Process(index), objects, clock)
    writer.put(NS, "k1", {"v": 1})
    # The deleter finds the namespace empty; before it marks the entry, the writer (on
    # its lease) puts another item without touching the entry.
    b.hooks["directory_mark"] = lambda: writer.put(NS, "k2", {"v": 2})
    deleter.delete(NS, "k1")
    assert index.calls["memory_update"] == 1
    assert [e.emptied for e in index.directory_entries()] == [True]
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(("users",))] == ["k2"]
    # The sweep takes the mark off a namespace with items.
    assert reader.space.expire() == (0, 0)
    assert [e.emptied for e in index.directory_entries()] == [False]


def test_a_namespace_emptied_is_dropped_only_after_every_lease_on_it(
    storage: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = storage
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
    assert reader.space.expire() == (0, 1) and index.directory_entries() == []
    puts = index.calls["memory_put"]
    writer.put(NS, "k3", {"v": 3})
    assert index.calls["memory_put"] == puts + 1
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(NS)] == ["k3"]


def test_a_lease_that_runs_out_during_a_put_renews_the_entry(
    storage: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = storage
    clock = Clock()
    writer = store_on(a := Process(index), objects, clock)
    writer.put(NS, "k1", {"v": 1})
    generation = index.directory_entries()[0].generation
    clock.now += LEASE_SECONDS - 1

    def slow() -> None:
        clock.now += 5

    a.hooks["memory_put"] = slow
    writer.put(NS, "k2", {"v": 2})
    assert index.calls["directory_renew"] == 1
    assert index.directory_entries()[0].generation != generation


def test_eventually_consistent_reads_show_this_process_its_writes(
    storage: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = storage
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


def test_items_of_the_earlier_format_read(storage: tuple[MemoryIndex, MemoryObjects]) -> None:
    index, objects = storage
    store = store_on(index, objects)
    store.setup()
    space = store.space
    serde = store.saver.parts.codec.serde()
    # The first layout: the payload header named the namespace, and vectors were float lists.
    ik = space.item_key(NS, "old")
    body = serde.dumps_typed({"value": {"text": "cat"}, "vectors": {"text": [1.0, 0.0]}})
    payload = json.dumps([list(NS), "old", body[0]]).encode() + b"\n" + body[1]
    blob = space.sealer.seal("memory", payload, space.aad(NS, ik.sk))
    index.load_memory([MemoryRow(ik, blob, None, None, None, 1000, 1000)], [])
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


def test_reencrypt_reseals_store_items_cache_entries_and_directories(
    storage: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = storage
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

    rotated = store_on(index, objects, keys=f"{K2},{K1}")
    assert rotated.saver.ops.reencrypt() >= 5
    blobs = [r.blob for r in index.memory_rows() if r.blob is not None]
    blobs += [e.blob for e in index.directory_entries()]
    blobs += [objects.get(o.key) for o in objects.list("")]
    assert {sealer.key_id_of(b) for b in blobs} == {"k2"}
    large = rotated.get(NS, "large")
    assert large is not None and len(large.value["v"]) == 120_000
    assert rotated.list_namespaces() == [NS]
    cache = S3DynamoCache.from_saver(rotated.saver)
    assert cache.get([(("node",), "k")]) == {(("node",), "k"): {"r": 1}}
    # A second run finds nothing left to re-seal.
    assert rotated.saver.ops.reencrypt() == 0


def test_a_store_transaction_that_keeps_conflicting_names_store_items() -> None:
    from botocore.exceptions import ClientError

    from langgraph.checkpoint.s3dynamo.backends.dynamodb_memory import DynamoTableIndex
    from langgraph.checkpoint.s3dynamo.records import DirectoryEntry, ItemKey

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
    with pytest.raises(ConcurrentUpdateError, match="store items or cache entries") as err:
        DynamoTableIndex(Conflicting(), "t").memory_put([row], entry)  # type: ignore[arg-type]
    assert "thread" not in str(err.value)


def test_a_read_refreshes_an_expiry_only_when_it_moves_by_more_than_the_slack(
    storage: tuple[MemoryIndex, MemoryObjects],
) -> None:
    index, objects = storage
    clock = Clock()
    store = store_on(index, objects, clock)
    store.put(NS, "hour", {"v": 1}, ttl=60)
    store.put(NS, "minute", {"v": 2}, ttl=1)
    clock.now += 30  # under 1% of an hour (36 s), over 1% of a minute
    assert store.get(NS, "hour") is not None and store.get(NS, "minute") is not None
    assert index.calls["memory_touch"] == 1
    expiry = {r.key.sk: r.expires for r in index.memory_rows()}
    assert expiry[store.space.item_key(NS, "minute").sk] == int(clock.now + 60)
    assert expiry[store.space.item_key(NS, "hour").sk] == int(clock.now - 30 + 3600)
    clock.now += 10  # 40 s since the put: the hour's expiry moves by more than 36 s
    assert store.get(NS, "hour") is not None
    assert index.calls["memory_touch"] == 2
    hour = [r for r in index.memory_rows() if r.key == store.space.item_key(NS, "hour")]
    assert hour[0].expires == int(clock.now + 3600)
