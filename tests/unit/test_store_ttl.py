"""The Store's TTL as LangGraph defines it (`TTLConfig`, issue 42), through the clock:
what LangGraph's TTL tests of its SQL stores do (an item put with a TTL, read before and
after it expires, refreshed by reads or not, swept), here with `omit_expired` set, unset
and False (this store omits expired items from every read whatever it says, which
`omit_expired` permits: "if the store supports this option"), sync and async, by get,
every kind of search and `list_namespaces`; expiry decided to the millisecond; and the
issue's own session in real time. A test taking `backend` runs on the in-memory twins
and on moto."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langgraph.store.base import TTLConfig

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support import raw
from tests.support.backends import Backend
from tests.support.embeddings import random_embedding
from tests.support.port_contract import needs_transactions

# The first put into a namespace is one TransactWriteItems (the item and its namespace's
# directory entry).
pytestmark = needs_transactions

DIMS = 8
ADA, BOB = ("users", "ada"), ("users", "bob")


embed = random_embedding(DIMS)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Reads:
    """The store's reads, sync or async: what a test does the same way both ways."""

    def __init__(self, store: S3DynamoStore, asynchronous: bool) -> None:
        self.store, self.asynchronous = store, asynchronous

    def _do(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.asynchronous:
            return asyncio.run(getattr(self.store, f"a{name}")(*args, **kwargs))
        return getattr(self.store, name)(*args, **kwargs)

    def put(self, *args: Any, **kwargs: Any) -> None:
        self._do("put", *args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._do("get", *args, **kwargs)

    def keys(self, namespace: tuple[str, ...], **kwargs: Any) -> list[str]:
        return sorted(i.key for i in self._do("search", namespace, **kwargs))

    def namespaces(self, **kwargs: Any) -> list[tuple[str, ...]]:
        return list(self._do("list_namespaces", **kwargs))


OMIT = {"set": {"omit_expired": True}, "unset": {}, "False": {"omit_expired": False}}


def store_on(backend: Backend, ttl: TTLConfig, clock: Clock) -> S3DynamoStore:
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    store = S3DynamoStore.from_saver(backend.saver(), ttl=ttl, index=index, filter_fields=["kind"])
    store.space.clock = clock
    return store


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("omit", sorted(OMIT))
def test_an_expired_item_is_in_no_read_and_its_namespace_in_no_listing(
    backend: Backend, omit: str, asynchronous: bool
) -> None:
    clock = Clock()
    r = Reads(store_on(backend, {**OMIT[omit], "refresh_on_read": False}, clock), asynchronous)  # type: ignore[arg-type]
    r.put(ADA, "brief", {"text": "tea", "kind": "pref"}, ttl=1.2 / 60)  # 1.2 s
    r.put(BOB, "kept", {"text": "tea", "kind": "pref"})
    clock.now += 1.199
    assert r.get(ADA, "brief") is not None
    assert r.keys(ADA) == r.keys(ADA, query="tea") == r.keys(ADA, filter={"kind": "pref"})
    assert r.keys(ADA) == ["brief"]
    assert r.namespaces() == [ADA, BOB]
    clock.now += 0.001  # 1.2 s after the put
    assert r.get(ADA, "brief") is None
    assert r.keys(ADA) == r.keys(ADA, query="tea") == r.keys(ADA, filter={"kind": "pref"}) == []
    assert r.keys(ADA, filter={"kind": {"$ne": "x"}}) == []
    assert r.keys(("users",)) == ["kept"]
    assert r.namespaces() == [BOB]
    assert r.namespaces(prefix=("users",), max_depth=2) == [BOB]
    # The sweep removes what the reads already hid.
    assert r.store.sweep_ttl() == 1
    assert r.namespaces() == [BOB]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_reads_refresh_the_ttl_unless_told_not_to(backend: Backend, asynchronous: bool) -> None:
    clock = Clock()
    r = Reads(store_on(backend, {"default_ttl": 1, "refresh_on_read": True}, clock), asynchronous)
    r.put(ADA, "read", {"text": "tea", "kind": "pref"})  # default_ttl: a minute
    r.put(ADA, "searched", {"text": "coffee", "kind": "fact"})
    r.put(ADA, "left", {"text": "jazz", "kind": "other"})
    r.put(ADA, "not refreshed", {"text": "cats", "kind": "other"})
    clock.now += 40
    assert r.get(ADA, "read") is not None  # refreshed: a minute from now
    assert r.keys(ADA, filter={"kind": "fact"}) == ["searched"]  # refreshed too
    assert r.get(ADA, "not refreshed", refresh_ttl=False) is not None
    clock.now += 30  # 70 s after the puts, 30 after the reads
    assert r.keys(ADA, refresh_ttl=False) == ["read", "searched"]
    clock.now += 30.001  # a minute after the reads
    assert r.keys(ADA, refresh_ttl=False) == []
    assert r.namespaces() == []


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_put_s_own_ttl_wins_over_the_default(backend: Backend, asynchronous: bool) -> None:
    clock = Clock()
    r = Reads(store_on(backend, {"default_ttl": 1}, clock), asynchronous)
    r.put(ADA, "default", {"v": 1})
    r.put(ADA, "forever", {"v": 2}, ttl=None)
    r.put(ADA, "longer", {"v": 3}, ttl=10)
    clock.now += 61
    assert r.keys(ADA, refresh_ttl=False) == ["forever", "longer"]
    clock.now += 10 * 60
    assert r.keys(ADA, refresh_ttl=False) == ["forever"]
    assert r.namespaces() == [ADA]


def test_the_issue_s_session_in_real_time(backend: Backend) -> None:
    # As the issue's user ran it, the clock the real one: a 1.2 s TTL is gone at 1.2 s.
    store = S3DynamoStore.from_saver(backend.saver(), ttl={"omit_expired": True})
    store.put(("users", "other"), "k", {"v": 0})
    store.put(ADA, "k", {"v": 1}, ttl=1.2 / 60)
    put_done = time.time()  # the put's expiry is 1.2 s from a time before this
    time.sleep(max(0.0, put_done + 1.2 - time.time()) + 0.005)
    assert store.get(ADA, "k") is None
    assert store.search(ADA) == []
    assert store.list_namespaces() == [("users", "other")]


# ------------------------------------- what someone who can write the table can do

# Issue 51: an item's expiry, TTL and times are sealed (its payload's header, its creation
# and refresh stamps); the clear copies beside them serve the sweep and never make a read
# return what the sealed ones say is expired, nor change the times it shows.


def test_a_raised_or_removed_clear_expiry_returns_no_expired_item(backend: Backend) -> None:
    clock = Clock()
    store = store_on(backend, {"refresh_on_read": True}, clock)
    cache = S3DynamoCache.from_saver(store.saver)
    cache.space.clock = clock
    store.put(ADA, "brief", {"text": "tea", "kind": "pref"}, ttl=1)
    cache.set({(("node",), "input"): ("cached", 60)})
    clock.now += 61
    item_key = store.space.item_key(ADA, "brief")
    entry_key = cache.space.item_key(("node",), "input")
    for forged in ({"me": 2**62}, {"me": None, "mx": None}, {"me": 2**62, "ml": 10_000}):
        raw.set_attributes(store.saver, item_key, **forged)
        raw.set_attributes(store.saver, entry_key, **forged)
        assert store.get(ADA, "brief") is None
        assert [i.key for i in store.search(ADA)] == []
        assert store.search(ADA, query="tea") == []
        assert store.search(ADA, filter={"kind": "pref"}) == []
        assert cache.get([(("node",), "input")]) == {}


def test_forged_clear_times_change_no_time_shown_and_no_order(backend: Backend) -> None:
    clock = Clock()
    store = store_on(backend, {}, clock)
    store.put(ADA, "old", {"text": "tea", "kind": "pref"})
    clock.now += 10
    store.put(ADA, "new", {"text": "coffee", "kind": "pref"})
    clock.now += 10
    store.put(ADA, "new", {"text": "coffee again", "kind": "pref"})  # updated, created kept
    shown = {i.key: (i.created_at, i.updated_at) for i in store.search(ADA)}
    assert [i.key for i in store.search(ADA)] == ["new", "old"]
    assert shown["new"][0] < shown["new"][1]
    old = store.space.item_key(ADA, "old")
    raw.set_attributes(store.saver, old, mc=1, mu=4_000_000_000_000)
    fresh = S3DynamoStore.from_saver(store.saver)
    for s in (store, fresh):
        assert [i.key for i in s.search(ADA)] == ["new", "old"]
        assert [i.key for i in s.search(ADA, filter={"kind": "pref"})] == ["new", "old"]
        got = s.get(ADA, "old")
        assert got is not None and (got.created_at, got.updated_at) == shown["old"]
    # A creation stamp moved from another item does not open; a refresh stamp of another
    # version of the item stands for nothing.
    stamp = raw.table(store.saver).get(store.space.item_key(ADA, "new"))
    assert stamp is not None
    raw.set_attributes(store.saver, old, mk=stamp["mk"])
    with pytest.raises(IntegrityError):
        fresh.get(ADA, "old")


def test_a_refresh_stamp_of_another_version_or_item_extends_nothing(backend: Backend) -> None:
    clock = Clock()
    store = store_on(backend, {"default_ttl": 1, "refresh_on_read": True}, clock)
    store.put(ADA, "kept", {"text": "tea"})
    clock.now += 50
    assert store.get(ADA, "kept") is not None  # refreshed: 60 s from now
    key = store.space.item_key(ADA, "kept")
    stamp = raw.table(store.saver).get(key)
    assert stamp is not None and "mr" in stamp
    store.put(ADA, "kept", {"text": "tea, put again"})  # a new version, 60 s from now
    raw.set_attributes(store.saver, key, mr=stamp["mr"])  # the old version's refresh
    clock.now += 60
    assert store.get(ADA, "kept", refresh_ttl=False) is None
    store.put(ADA, "other", {"text": "coffee"})
    raw.set_attributes(store.saver, store.space.item_key(ADA, "other"), mr=stamp["mr"])
    with pytest.raises(IntegrityError):
        store.get(ADA, "other")


def test_what_the_clear_copies_can_still_do(backend: Backend) -> None:
    """The stated limits (docs/SECURITY.md): a clear expiry lowered makes readers skip a
    live item and the sweep delete it, as deleting it would; a directory entry's clear
    liveness bound raised lists a namespace whose items have all expired, whose items
    no read returns."""
    clock = Clock()
    store = store_on(backend, {"refresh_on_read": False}, clock)
    store.put(ADA, "live", {"text": "tea", "kind": "pref"})
    store.put(BOB, "brief", {"text": "tea", "kind": "pref"}, ttl=1)
    raw.set_attributes(store.saver, store.space.item_key(ADA, "live"), me=1)
    assert store.get(ADA, "live") is None and store.search(ADA) == []
    assert store.sweep_ttl() == 1
    clock.now += 61
    entry = store.space._names.entry_key(BOB)
    raw.set_attributes(store.saver, entry, x=2**62)
    fresh = store_on(backend, {"refresh_on_read": False}, clock)
    assert fresh.list_namespaces() == [BOB]
    assert fresh.get(BOB, "brief") is None and fresh.search(BOB) == []
