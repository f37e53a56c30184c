"""`S3DynamoStore.delete_namespace(prefix)`: every item of the namespace and of every
namespace below it removed, with what search and `list_namespaces` find of them (filter
tokens, vector indexes, directory entries, objects), a sibling that only shares text
left alone; bad prefixes refused before any request; its requests counted exactly (they
grow with what the prefix holds, not with the table); a crash at every request boundary
leaves each item whole or gone to every read, and a repeat completes it; a put landing
at any point of the delete is either removed with the rest or stays whole and found
(docs/RELIABILITY.md, "Deleting a namespace of the Store").

On the in-memory twins; the test taking `clients` counts the same requests on DynamoDB
and S3 (marked `aws`)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.format.layout import (
    DESCENDANTS_SK,
    LOG_MARK,
    MANIFEST_SK,
    TOKEN_MARK,
)
from langgraph.checkpoint.s3dynamo.memory.recent import DROP_MARGIN_SECONDS, LEASE_SECONDS
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.embeddings import random_embedding
from tests.support.faults import Crash, CrashingPort, is_request
from tests.support.memory_index import MemoryIndex
from tests.support.savers import Clients, RequestCounter, make_saver, memory_saver

# The first put into a namespace is one TransactWriteItems.
pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")

KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
SECRET = bytes(range(100, 132))
DIMS = 8
INDEX: Any = {"dims": DIMS, "embed": random_embedding(DIMS), "fields": ["text"]}
PREFIX = ("users", "ada")
BIG = os.urandom(20_000).hex()  # sealed, past inline_max: an object
# What the delete of PREFIX removes: the namespace, and those below it (one with a value
# large enough to be an object)...
DOOMED: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {
    PREFIX: {
        "k1": {"text": "likes tea", "kind": "pref"},
        "k2": {"text": "lives in Oslo", "kind": "fact"},
        "k3": {"text": "reads novels", "kind": "pref"},  # put last: in the vector log
    },
    (*PREFIX, "notes"): {"big": {"text": "a long note", "kind": "pref", "blob": BIG}},
    (*PREFIX, "notes", "2024"): {"n1": {"text": "went hiking", "kind": "fact"}},
}
# ...and what it leaves: a sibling whose name starts with the same text, and another user.
KEPT: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {
    ("users", "adam"): {"k1": {"text": "likes coffee", "kind": "pref"}},
    ("users", "bob"): {"k9": {"text": "plays jazz", "kind": "fact"}},
}


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Other:
    """Another process on the same storage: its own table adapter object, hence its own
    memory of leases, marks and writes."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def store_on(index: Any, objects: Any, clock: Clock | None = None) -> S3DynamoStore:
    saver = S3DynamoSaver(index=index, object_store=objects, keys=KEYS, secret=SECRET)
    store = S3DynamoStore.from_saver(saver, index=INDEX, filter_fields=["kind"])
    if clock is not None:
        store.space.clock = clock
    return store


def populated(index: MemoryIndex, objects: MemoryObjects) -> S3DynamoStore:
    """A store holding DOOMED and KEPT with every kind of index: filter tokens and their
    completeness items, vector manifests naming segments, and vector log entries."""
    store = store_on(Other(index), objects)
    for ns, items in {**DOOMED, **KEPT}.items():
        for key, value in items.items():
            if key != "k3":
                store.put(ns, key, value)
    store.search(("users",), query="tea")  # builds each namespace's vector index
    store.search(("users",), filter={"kind": "pref"})  # completes each one's tokens
    store.put(PREFIX, "k3", DOOMED[PREFIX]["k3"])
    held = {str(i["sk"])[:2] for i in index.items() if i["pk"] == store.space.pk(PREFIX)}
    assert held >= {MANIFEST_SK, LOG_MARK, TOKEN_MARK, DESCENDANTS_SK}
    assert objects_of(objects, store) != []  # the large value and the segments
    return store


def keys(found: list[Any]) -> set[tuple[tuple[str, ...], str]]:
    return {(tuple(i.namespace), i.key) for i in found}


def reads_of(store: S3DynamoStore, prefix: tuple[str, ...]) -> dict[str, Any]:
    """What every kind of read shows under `prefix`."""
    return {
        "search": keys(store.search(prefix, limit=100)),
        "query": keys(store.search(prefix, query="tea", limit=100)),
        "pref": keys(store.search(prefix, filter={"kind": "pref"}, limit=100)),
        "fact": keys(store.search(prefix, filter={"kind": "fact"}, limit=100)),
        "listed": set(store.list_namespaces(prefix=prefix, limit=100)),
    }


def pairs(namespaces: dict[tuple[str, ...], dict[str, Any]]) -> set[tuple[tuple[str, ...], str]]:
    return {(ns, key) for ns, items in namespaces.items() for key in items}


def partitions_hold(index: MemoryIndex, store: S3DynamoStore) -> dict[tuple[str, ...], set[str]]:
    """The sort keys each doomed namespace's partition holds."""
    return {
        ns: {str(i["sk"]) for i in index.items() if i["pk"] == store.space.pk(ns)} for ns in DOOMED
    }


def objects_of(objects: MemoryObjects, store: S3DynamoStore) -> list[str]:
    return [
        o.key for o in objects.list("") for ns in DOOMED if o.key.startswith(store.space.pk(ns))
    ]


# ------------------------------------------------------------------ what it removes


def test_a_namespace_and_every_namespace_below_it_are_removed_whole() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    writer = populated(index, objects)
    reader = store_on(Other(index), objects)
    reader.search(("users",), filter={"kind": "pref"})  # a process that trusts the tokens
    before = reads_of(reader, ("users",))

    assert writer.delete_namespace(PREFIX) == sum(map(len, DOOMED.values())) == 5
    # Nothing of them is stored: each partition keeps only the descendants mark, which
    # nothing removes, and the bucket holds none of their objects.
    assert partitions_hold(index, writer) == {
        PREFIX: {DESCENDANTS_SK},
        (*PREFIX, "notes"): {DESCENDANTS_SK},
        (*PREFIX, "notes", "2024"): set(),
    }
    assert objects_of(objects, writer) == []

    kept = pairs(KEPT)
    fresh = store_on(Other(index), objects)
    for store in (writer, reader, fresh):
        for ns, items in DOOMED.items():
            assert all(store.get(ns, key) is None for key in items)
        assert reads_of(store, PREFIX) == {k: set() for k in before}
        after = reads_of(store, ("users",))
        # Every read under ("users",) shows what it showed before, less the deleted.
        assert after == {k: v & (kept | set(KEPT)) for k, v in before.items()}
        assert after["search"] == kept and after["listed"] == set(KEPT)
        for ns, items in KEPT.items():
            assert {k: store.get(ns, k).value for k in items} == items  # type: ignore[union-attr]
    assert writer.delete_namespace(PREFIX) == 0


def test_a_namespace_with_nothing_below_and_one_that_holds_nothing() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    store = populated(index, objects)
    ns = (*PREFIX, "notes", "2024")
    assert store.delete_namespace(ns) == 1
    assert store.get(ns, "n1") is None and store.list_namespaces(prefix=ns) == []
    assert store.get((*PREFIX, "notes"), "big") is not None  # its parent stays
    assert store.delete_namespace(("nobody",)) == 0
    assert asyncio.run(store.adelete_namespace(PREFIX)) == 4
    assert store.search(PREFIX) == [] and store.list_namespaces() == sorted(KEPT)


@pytest.mark.parametrize(
    ("prefix", "said"),
    [
        ((), "would delete the whole Store"),
        ("users", "pass ('users',) for one label"),
        (("users", ""), "each label must be a non-empty str"),
        (("users", 42), "each label must be a non-empty str, got int 42"),
        (None, "must be a tuple of labels"),
    ],
)
def test_a_bad_prefix_is_refused_before_any_request(prefix: Any, said: str) -> None:
    saver = memory_saver()
    store = S3DynamoStore.from_saver(saver)
    store.put(("users",), "k", {"v": 1})
    saver.index.calls.clear()
    with pytest.raises(InvalidNamespaceError, match="prefix") as refused:
        store.delete_namespace(prefix)
    assert said in str(refused.value)
    with pytest.raises(InvalidNamespaceError, match="prefix"):
        asyncio.run(store.adelete_namespace(prefix))
    assert not saver.index.calls and not saver.objects.calls
    assert store.get(("users",), "k") is not None


def test_an_empty_prefix_names_the_way_to_empty_the_store() -> None:
    store = S3DynamoStore.from_saver(memory_saver())
    for ns in (("a",), ("a", "b"), ("c", "d")):
        store.put(ns, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError) as refused:
        store.delete_namespace(())
    said = str(refused.value)
    assert "store.list_namespaces(max_depth=1, limit=10_000)" in said
    # What it says, done, empties the Store.
    for ns in store.list_namespaces(max_depth=1, limit=10_000):
        store.delete_namespace(ns)
    assert store.list_namespaces() == [] and store.search(()) == []


# ------------------------------------------------------------------ requests


def filled(store: S3DynamoStore, n: int, kind: str) -> Clock:
    """`n` items in PREFIX (`kind` "large": the first one an object; "searchable": with a
    declared field and an index, searched so that its tokens are complete and its vector
    index built), 50 namespaces elsewhere; then the clock past any lease on the entry."""
    clock = Clock()
    store.space.clock = clock
    for i in range(n):
        value = os.urandom(20_000).hex() if kind == "large" and i == 0 else ""
        store.put(PREFIX, f"k{i}", {"i": i, "v": value, "text": f"memory {i}", "kind": "pref"})
    if kind == "searchable":
        store.search(PREFIX, query="memory")
        store.search(PREFIX, filter={"kind": "pref"})
    for i in range(50):  # the rest of the table: read by none of the delete's requests
        store.put(("other", str(i)), "k", {"i": i})
    clock.now += LEASE_SECONDS + DROP_MARGIN_SECONDS + 1
    return clock


@pytest.mark.parametrize("n", [1, 10, 30])
@pytest.mark.parametrize("kind", ["small", "large", "searchable"])
def test_requests_grow_with_the_items_of_the_prefix_not_with_the_table(n: int, kind: str) -> None:
    saver = memory_saver()
    options: Any = {"index": INDEX, "filter_fields": ["kind"]} if kind == "searchable" else {}
    store = S3DynamoStore.from_saver(saver, **options)
    filled(store, n, kind)
    saver.index.calls.clear()
    saver.objects.calls.clear()
    assert store.delete_namespace(PREFIX) == n
    # The partition (one Query), its directory entry (one GetItem: no descendants mark,
    # so no directory read), one DeleteItem per item; the entry settled: a Query for a
    # live item, one for any item, then the entry's DeleteItem.
    want = {"Query": 3, "GetItem": 1, "DeleteItem": n + 1}
    if kind == "large":
        # The intent naming the object (one PutItem) before anything changes; its delete.
        want |= {"PutItem": 1}
    if kind == "searchable":
        # The intent naming the index's segment; the index items (a token per item, the
        # field's completeness item, the manifest) in full batches of 25; the segment.
        want |= {"PutItem": 1, "BatchWriteItem": -(-(n + 2) // 25)}
    assert saver.index.calls == want
    assert saver.objects.calls == ({} if kind == "small" else {"delete": 1})


def test_an_entry_renewed_lately_is_marked_emptied_not_dropped() -> None:
    saver = memory_saver()
    store = S3DynamoStore.from_saver(saver)
    clock = filled(store, 10, "small")
    clock.now -= LEASE_SECONDS + DROP_MARGIN_SECONDS  # back to the puts' time
    saver.index.calls.clear()
    assert store.delete_namespace(PREFIX) == 10
    # A lease on the entry may still run: the entry is marked emptied (one UpdateItem),
    # which the expiry sweep drops later; nothing lists the namespace meanwhile.
    assert saver.index.calls == {"Query": 3, "GetItem": 1, "DeleteItem": 10, "UpdateItem": 1}
    assert sorted(e.emptied for e in saver.index.directory_entries()) == [False] * 50 + [True]
    assert PREFIX not in store.list_namespaces(limit=100)


@pytest.mark.parametrize("below", [1, 3])
def test_requests_of_a_prefix_with_namespaces_below(below: int) -> None:
    saver = memory_saver()
    store = S3DynamoStore.from_saver(saver)
    clock = Clock()
    store.space.clock = clock
    for i in range(10):
        store.put(PREFIX, f"k{i}", {"i": i})
    for j in range(below):
        store.put((*PREFIX, f"s{j}"), "k", {"j": j})
    clock.now += LEASE_SECONDS + DROP_MARGIN_SECONDS + 1
    saver.index.calls.clear()
    assert store.delete_namespace(PREFIX) == 10 + below
    # The prefix's partition (marked), the directory, each namespace's partition below;
    # per namespace its items' DeleteItems and the settling (2 Queries, 1 DeleteItem).
    assert saver.index.calls == {
        "Query": 2 + below + 2 * (below + 1),
        "DeleteItem": 10 + 2 * below + 1,
    }


# ------------------------------------------------------------------ crashes and races


def whole_or_gone(reader: S3DynamoStore, expected: dict[Any, dict[str, Any]]) -> set[Any]:
    """Check that each item of `expected` is, to every read, either its value whole (by
    key, by every search that should find it, its namespace listed) or nothing at all, and
    that no read fails; the items read whole."""
    seen = reads_of(reader, ("users",))
    whole = set()
    for ns, items in expected.items():
        for key, value in items.items():
            got = reader.get(ns, key)
            found = {n for n in ("search", "query", "pref", "fact") if (ns, key) in seen[n]}
            if got is None:
                assert found == set(), (ns, key, found)
                continue
            assert got.value == value, (ns, key)
            assert found == {"search", "query", value["kind"]}, (ns, key, found)
            assert ns in seen["listed"], ns
            whole.add((ns, key))
    return whole


def completed(index: MemoryIndex, objects: MemoryObjects) -> None:
    """A repeat of the delete, then the next incremental collection, leave nothing of the
    doomed namespaces: no read shows them, their partitions hold only descendants marks,
    the bucket none of their objects. (A repeat within the margin may leave the tokens of
    items the first run deleted, which no read shows: a token that young may be a put's
    whose item has not landed yet.)"""
    clean = store_on(Other(index), objects)
    clean.space.clock = lambda: time.time() + LEASE_SECONDS + DROP_MARGIN_SECONDS + 1
    clean.delete_namespace(PREFIX)
    assert all(sks <= {DESCENDANTS_SK} for sks in partitions_hold(index, clean).values())
    later = datetime.now(timezone.utc) + timedelta(hours=2)  # past the grace
    clean.saver.ops.plan_incremental_garbage_collection(now=later).execute(now=later)
    assert objects_of(objects, clean) == []
    assert whole_or_gone(store_on(Other(index), objects), {**DOOMED, **KEPT}) == pairs(KEPT)


@pytest.mark.parametrize("after", [False, True])
def test_a_crash_at_any_request_leaves_items_whole_or_gone_and_a_repeat_completes(
    after: bool,
) -> None:
    requests = 0
    for at in range(1, 200):
        index, objects = MemoryIndex(), MemoryObjects()
        populated(index, objects)
        counter = [-1_000_000]  # no fault during the deployment check below
        store = store_on(
            CrashingPort(index, counter, at, after, is_request),
            CrashingPort(objects, counter, at, after, is_request),
        )
        store.get(PREFIX, "absent")
        counter[0] = 0
        with contextlib.suppress(Crash):
            store.delete_namespace(PREFIX)
        requests = max(requests, counter[0])
        reader = store_on(Other(index), objects)
        assert pairs(KEPT) <= whole_or_gone(reader, {**DOOMED, **KEPT})
        completed(index, objects)
        if counter[0] < at:
            break  # the delete finished before request `at`: every boundary was tried
    assert requests > 20


class Racing:
    """A port on which `action` runs once, just before request number `at` (counted on
    every port sharing `counter`)."""

    def __init__(self, inner: Any, counter: list[int], at: int, action: Any) -> None:
        self._inner, self._counter, self._at, self._action = inner, counter, at, action

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target) or not is_request(name):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self._counter[0] += 1
            if self._counter[0] == self._at:
                self._action()
            return target(*args, **kwargs)

        return call


RACING: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {
    PREFIX: {
        "k1": {"text": "now likes coffee", "kind": "fact"},  # replaces a doomed item
        "k4": {"text": "new here", "kind": "pref"},
    },
    (*PREFIX, "notes", "fresh"): {"f1": {"text": "a new namespace", "kind": "pref"}},
}


@pytest.mark.parametrize("inside", ["the puts inside the delete", "the delete inside the puts"])
def test_puts_landing_at_any_point_of_the_delete_are_removed_or_stay_whole(inside: str) -> None:
    """Another process, which trusts each namespace's tokens (it has searched them), puts
    while the delete runs: all of its puts between two requests of the delete, or the
    whole delete between two requests of its puts (after a put's tokens and vector log
    entry, before its item, say)."""
    requests, kept_some, lost_some = 0, False, False
    for at in range(1, 200):
        index, objects = MemoryIndex(), MemoryObjects()
        populated(index, objects)
        counter = [-1_000_000]  # nothing counted before the race
        writer = store_on(Other(index), objects)
        deleter = store_on(Other(index), objects)

        def puts(writer: S3DynamoStore = writer) -> None:
            for ns, items in RACING.items():
                for key, value in items.items():
                    writer.put(ns, key, value)

        def delete(deleter: S3DynamoStore = deleter) -> None:
            deleter.delete_namespace(PREFIX)

        driver, action = (delete, puts) if inside.startswith("the puts") else (puts, delete)
        racing = writer if driver is puts else deleter
        racing.space = store_on(
            Racing(index, counter, at, action), Racing(objects, counter, at, action)
        ).space
        writer.search(("users",), filter={"kind": "pref"})
        counter[0] = 0
        driver()
        sent, counter[0] = counter[0], -1_000_000  # nothing races the reads below
        requests = max(requests, sent)
        if sent < at:
            break  # the race came after the driver's last request: every point was tried
        expected = {**DOOMED, **KEPT, (*PREFIX, "notes", "fresh"): {}}
        for ns, items in RACING.items():
            expected[ns] = {**expected[ns], **items}
        for reader in (writer, deleter, store_on(Other(index), objects)):
            whole = whole_or_gone(reader, expected)
            # Of what was there before the delete, nothing is left but the racing puts.
            assert whole - pairs(KEPT) <= pairs(RACING), whole
        kept_some |= bool(whole & pairs(RACING))
        lost_some |= not pairs(RACING) <= whole
    assert requests >= 10 and kept_some and lost_some


def test_the_same_requests_on_dynamodb_and_s3(clients: Clients, counter: RequestCounter) -> None:
    saver = make_saver(clients)
    saver.setup()
    store = S3DynamoStore.from_saver(saver)
    filled(store, 10, "large")
    counter.reset()
    assert store.delete_namespace(PREFIX) == 10
    assert counter.calls == {
        "dynamodb.Query": 3,
        "dynamodb.GetItem": 1,
        "dynamodb.PutItem": 1,
        "dynamodb.DeleteItem": 11,
        "s3.DeleteObjects": 1,
    }
    assert store.search(PREFIX) == [] and store.list_namespaces(prefix=PREFIX) == []
