"""The Store's searches that cost what they return: by query through each namespace's
sealed vector index, by an equality on a declared field through its filter tokens; each
answering as `InMemoryStore` answers the same calls (LangGraph's semantics), through puts
that replace values, deletes, the expiry sweep, compaction and crashes between its
requests; and the bugs the index work found (one text shared by two items, a value the
serializer cannot store, the node cache's setup and its TTLs to the millisecond).

On the in-memory twins; tests taking `backend` run through DynamoDB and S3 too, and those
marked `aws` count requests and read units as DynamoDB bills them.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    StoreMissingError,
    ValueNotSerializableError,
)
from langgraph.checkpoint.s3dynamo.format.layout import LOG_MARK, MANIFEST_SK, TOKEN_MARK, log_sk
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory import vector_index
from langgraph.checkpoint.s3dynamo.table import item_size
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support import raw
from tests.support.backends import Backend
from tests.support.embeddings import random_embedding
from tests.support.faults import Crash, CrashingPort, is_request
from tests.support.memory_index import MemoryIndex
from tests.support.savers import Clients, RequestCounter, make_saver

pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")

KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
K2 = f"k2:{base64.b64encode(bytes(range(32, 64))).decode()}"
SECRET = bytes(range(100, 132))
NS = ("users", "u1", "memories")
DIMS = 24


embed = random_embedding(DIMS)


INDEX: Any = {"dims": DIMS, "embed": embed, "fields": ["text"]}


class Ticking:
    """A clock a millisecond later at each reading: every put has a time of its own."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def newest(items: Sequence[Any]) -> list[Any]:
    """Newest first, as LangGraph's SQL stores (and this one) order a search by filter."""
    return sorted(items, key=lambda i: i.updated_at, reverse=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def make(
    index: MemoryIndex | None = None, objects: MemoryObjects | None = None, keys: str = KEYS
) -> S3DynamoSaver:
    return S3DynamoSaver(
        index=index if index is not None else MemoryIndex(),
        object_store=objects if objects is not None else MemoryObjects(),
        keys=keys,
        secret=SECRET,
    )


def store_of(saver: S3DynamoSaver, **options: Any) -> S3DynamoStore:
    return S3DynamoStore.from_saver(saver, **options)


def memories(n: int) -> list[tuple[str, dict[str, Any]]]:
    topics = ["tea", "coffee", "Oslo", "hiking", "jazz", "cats", "trains"]
    return [
        (f"m{i}", {"text": f"memory {i} about {topics[i % 7]}", "kind": ["fact", "pref"][i % 2]})
        for i in range(n)
    ]


def both(**options: Any) -> tuple[S3DynamoStore, InMemoryStore]:
    ours = store_of(make(), **options)
    theirs = InMemoryStore(index=options.get("index"))
    return ours, theirs


def keys(items: Sequence[Any]) -> list[str]:
    return [i.key for i in items]


# Cosine differences int8 cannot tell apart: items this close may trade places.
NEAR = 0.01


def ranked_like(
    got: Sequence[Any], want: Sequence[Any], reference: InMemoryStore, query: str
) -> None:
    """`got` ranks as `want` does: the same length, and at each place an item whose exact
    score (InMemoryStore's) is within `NEAR` of the one there (near-ties may swap)."""
    assert len(got) == len(want)
    prefixes = {i.namespace for i in [*got, *want]}
    exact = {
        (i.namespace, i.key): i.score
        for ns in prefixes
        for i in reference.search(ns, query=query, limit=10_000)
    }
    for a, b in zip(got, want, strict=True):
        if b.score is None:
            assert a.score is None
            continue
        assert a.score is not None and abs(exact[(a.namespace, a.key)] - b.score) < NEAR
        assert abs(a.score - exact[(a.namespace, a.key)]) < NEAR


# ------------------------------------------------------------------ by query


@pytest.fixture(params=["numpy", "pure Python"])
def scorer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each search by query scores with numpy (the `vectors` extra) and without it."""
    from langgraph.checkpoint.s3dynamo.memory import vectors

    if request.param == "numpy":  # in the test extra
        monkeypatch.setattr(vectors, "_NUMPY", [])
    else:
        monkeypatch.setattr(vectors, "_NUMPY", [None])
    return str(request.param)


@pytest.mark.parametrize("count", [5, 60])
def test_a_query_ranks_as_in_memory_store_does(count: int, scorer: str) -> None:
    ours, theirs = both(index=INDEX)
    for store in (ours, theirs):
        for key, value in memories(count):
            store.put(NS, key, value)
    for query in ("tea in Oslo", "a cat on a train", "memory 7 about cats"):
        for offset, limit in ((0, 10), (3, 4)):
            got = ours.search(NS, query=query, limit=limit, offset=offset)
            want = theirs.search(NS, query=query, limit=limit, offset=offset)
            ranked_like(got, want, theirs, query)


def test_a_score_is_a_cosine_within_minus_one_and_one_as_in_memory_store(scorer: str) -> None:
    """int8 vectors round a cosine by up to about 0.01: the text itself, and its opposite,
    still score 1.0 and -1.0 at most, as InMemoryStore's do (code thresholds on them)."""

    def axis(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 2.0, 0.0, 0.0] if t == "tea" else [-1.0, -2.0, 0.0, 0.0] for t in texts]

    ours, theirs = both(index={"dims": 4, "embed": axis, "fields": ["text"]})
    for store in (ours, theirs):
        store.put(NS, "same", {"text": "tea"})
        store.put(NS, "opposite", {"text": "not tea"})
    got = {i.key: i.score for i in ours.search(NS, query="tea")}
    want = {i.key: i.score for i in theirs.search(NS, query="tea")}
    assert got.keys() == want.keys()
    assert all(-1.0 <= s <= 1.0 and abs(s - want[k]) < NEAR for k, s in got.items())


def test_a_query_sees_puts_that_replace_and_deletes(backend: Backend) -> None:
    store = store_of(backend.saver(), index=INDEX)
    reference = InMemoryStore(index=INDEX)
    for s in (store, reference):
        for key, value in memories(30):
            s.put(NS, key, value)
    # The first search indexes the namespace; later puts go to its log.
    ranked_like(store.search(NS, query="tea"), reference.search(NS, query="tea"), reference, "tea")
    for s in (store, reference):
        s.put(NS, "m3", {"text": "tea tea tea", "kind": "fact"})  # a new vector
        s.put(NS, "plain", {"text": "no embedding here", "kind": "fact"}, index=False)
        s.delete(NS, "m5")
        s.put(NS, "new", {"text": "tea in a new memory", "kind": "pref"})
    for query in ("tea tea tea", "memory 4 about coffee", "tea"):
        got = store.search(NS, query=query, limit=40)
        ranked_like(got, reference.search(NS, query=query, limit=40), reference, query)
        assert "m5" not in keys(got) and keys(got)[-1] == "plain"  # deleted; unscored last


def test_a_query_searches_the_namespaces_below_its_prefix() -> None:
    ours, theirs = both(index=INDEX)
    for store in (ours, theirs):
        store.put(("users", "a"), "x", {"text": "tea"})
        store.put(("users", "a", "deep"), "y", {"text": "coffee"})
        store.put(("users", "b"), "z", {"text": "tea and coffee"})
        store.put(("other",), "w", {"text": "tea"})
    for prefix in (("users",), ("users", "a"), ()):
        got, want = ours.search(prefix, query="tea"), theirs.search(prefix, query="tea")
        ranked_like(got, want, theirs, "tea")
        assert {(i.namespace, i.key) for i in got} == {(i.namespace, i.key) for i in want}


def test_a_query_with_a_filter_keeps_only_matches() -> None:
    ours, theirs = both(index=INDEX)
    for store in (ours, theirs):
        for key, value in memories(40):
            store.put(NS, key, value)
    for flt in ({"kind": "pref"}, {"kind": {"$ne": "pref"}}, {"kind": "none"}):
        got = ours.search(NS, query="tea", filter=flt, limit=7)
        ranked_like(got, theirs.search(NS, query="tea", filter=flt, limit=7), theirs, "tea")
        assert all(_matches(i.value, flt) for i in got)


def test_one_text_shared_by_two_items_of_a_batch_is_embedded_once() -> None:
    seen: list[list[str]] = []

    def counting(texts: Sequence[str]) -> list[list[float]]:
        seen.append(list(texts))
        return embed(texts)

    store = store_of(make(), index={**INDEX, "embed": counting})
    store.batch(
        [
            PutOp(NS, "a", {"text": "the same words"}),
            PutOp(NS, "b", {"text": "the same words"}),
            PutOp(NS, "c", {"text": "other words"}),
        ]
    )
    assert seen == [["the same words", "other words"]]
    hits = store.search(NS, query="the same words", limit=3)
    assert sorted(keys(hits[:2])) == ["a", "b"] and hits[0].score == pytest.approx(hits[1].score)


def test_a_namespace_written_before_the_index_is_ranked_and_then_indexed() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    writer = store_of(make(index, objects), index=INDEX)
    for key, value in memories(12):
        writer.put(NS, key, value)
    # As an earlier build left it: no manifest, no log (read by another process).
    index.batch(deletes=[i.key for i in index.index_items()])
    index = index.clone()
    reader = store_of(make(index, objects), index=INDEX)
    reference = InMemoryStore(index=INDEX)
    for key, value in memories(12):
        reference.put(NS, key, value)
    ranked_like(
        reader.search(NS, query="jazz"), reference.search(NS, query="jazz"), reference, "jazz"
    )
    assert [i.key.sk for i in index.index_items()] == [MANIFEST_SK]
    index.calls.clear()
    ranked_like(
        reader.search(NS, query="jazz"), reference.search(NS, query="jazz"), reference, "jazz"
    )
    # Now from its index: one Query of the manifest and log, then the items found.
    assert index.calls == {"Query": 1, "BatchGetItem": 1}


def test_the_log_is_compacted_into_segments_and_searches_stay_right(
    monkeypatch: pytest.MonkeyPatch, scorer: str
) -> None:
    monkeypatch.setattr(vector_index, "LOG_MAX", 2_000)
    index, objects = MemoryIndex(), MemoryObjects()
    store = store_of(make(index, objects), index=INDEX)
    reference = InMemoryStore(index=INDEX)
    store.put(NS, "seed", {"text": "seed"})
    reference.put(NS, "seed", {"text": "seed"})
    store.search(NS, query="seed")  # the namespace's index starts here
    for round_ in range(6):
        for key, value in memories(15 * (round_ + 1))[15 * round_ :]:
            store.put(NS, key, value)
            reference.put(NS, key, value)
        store.delete(NS, f"m{round_}")
        reference.delete(NS, f"m{round_}")
        for query in ("tea", "trains and cats"):
            got = store.search(NS, query=query, limit=20)
            ranked_like(got, reference.search(NS, query=query, limit=20), reference, query)
    items = [i.key.sk for i in index.index_items()]
    log = [sk for sk in items if sk.startswith(LOG_MARK)]
    segments = store.space.live_leaves(store.space.pk(NS)) or set()
    # Few segments (the newest absorb the next while not much larger), a short log.
    assert MANIFEST_SK in items and len(log) < 15 and 1 <= len(segments) <= 4


def test_pages_of_equal_scores_never_overlap_across_a_compaction(
    monkeypatch: pytest.MonkeyPatch, scorer: str
) -> None:
    """Issue 49: items whose vectors are equal, paged by offset while the log is being
    compacted between pages: each item on exactly one page, ties in one order."""
    monkeypatch.setattr(vector_index, "LOG_MAX", 2_000)

    def same(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (DIMS - 1) for _ in texts]

    store = store_of(make(), index={"dims": DIMS, "embed": same, "fields": ["text"]})
    store.put(NS, "seed", {"text": "seed"})
    store.search(NS, query="q")  # the namespace's index starts here
    keys = ["seed"] + [f"d{i:03}" for i in range(120)]
    for key in keys[1:]:
        store.put(NS, key, {"text": f"same {key}"})
    paged = [
        i.key
        for page in range(0, len(keys), 10)
        for i in store.search(NS, query="q", limit=10, offset=page)
    ]
    assert sorted(paged) == sorted(keys)  # none twice, none missed
    # The same order again, whatever the compactions did meanwhile.
    assert [i.key for i in store.search(NS, query="q", limit=len(keys))] == paged


def test_segments_replaced_are_named_for_collection_and_referenced_ones_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from datetime import datetime, timedelta, timezone

    monkeypatch.setattr(vector_index, "LOG_MAX", 1_000)
    index, objects = MemoryIndex(), MemoryObjects()
    saver = make(index, objects)
    store = store_of(saver, index=INDEX)
    for batch in range(8):
        for key, value in memories(10 * (batch + 1))[10 * batch :]:
            store.put(NS, key, value)
        store.search(NS, query="tea")
    live = store.space.live_leaves(store.space.pk(NS)) or set()
    later = datetime.now(timezone.utc) + timedelta(minutes=1)
    plan = saver.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    plan.execute(now=later)
    left = {o.key.rsplit("/", 1)[1] for o in objects.list("") if store.space.pk(NS) in o.key}
    assert left == live  # replaced segments went; the manifest's stay
    reference = _reference(memories(80))
    got = store.search(NS, query="tea", limit=80)
    ranked_like(got, reference.search(NS, query="tea", limit=80), reference, "tea")


def _matches(value: Any, flt: dict[str, Any]) -> bool:
    from langgraph.store.memory import _compare_values

    return all(_compare_values(value.get(k), v) for k, v in flt.items())


def _reference(items: list[tuple[str, dict[str, Any]]]) -> InMemoryStore:
    ref = InMemoryStore(index=INDEX)
    for key, value in items:
        ref.put(NS, key, value)
    return ref


def test_a_rotation_reseals_every_segment_whatever_key_sealed_the_manifest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A compaction after a rotation seals its manifest under the new key and keeps a
    # segment sealed under the old one: re-encryption re-seals that segment too, so the
    # old key can leave the keyring.
    monkeypatch.setattr(vector_index, "LOG_MAX", 500)
    index, objects = MemoryIndex(), MemoryObjects()
    items = memories(20)
    before = store_of(make(index, objects), index=INDEX)
    for key, value in items[:16]:
        before.put(NS, key, value)
    before.search(NS, query="tea")  # the namespace's first segment, under k1
    rotated = store_of(make(index, objects, keys=f"{K2},{KEYS}"), index=INDEX)
    for key, value in items[16:]:
        rotated.put(NS, key, value)
    rotated.search(NS, query="tea")  # the log folded: a segment and the manifest under k2
    before.delete(NS, items[0][0])  # a tombstone in the log, under k1
    items.pop(0)
    sealer = rotated.saver.parts.sealer

    def key_ids() -> list[str | None]:
        blobs = [objects.get(o.key) for o in objects.list("")]
        blobs += [i.blob for i in index.index_items() if i.blob is not None]
        return sorted({sealer.key_id_of(b) for b in blobs}, key=str)

    (manifest,) = [i for i in index.index_items() if i.key.sk == MANIFEST_SK]
    assert len(manifest.leaves) == 2 and sealer.key_id_of(manifest.blob or b"") == "k2"
    assert key_ids() == ["k1", "k2"]
    (tomb,) = [i for i in index.index_items() if "#k" in i.key.sk]
    assert sealer.key_id_of(tomb.blob or b"") == "k1"
    assert rotated.saver.ops.reencrypt() > 0
    assert key_ids() == ["k2"]
    reference = _reference(items)
    after = store_of(make(index, objects, keys=K2), index=INDEX)
    for query in ("tea", "jazz"):
        got = after.search(NS, query=query, limit=20)
        ranked_like(got, reference.search(NS, query=query, limit=20), reference, query)


@pytest.mark.parametrize("after", [False, True])
def test_a_compaction_interrupted_at_any_request_leaves_searches_right(
    after: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "LOG_MAX", 500)
    items = memories(20)
    reference = _reference(items)
    reference.delete(NS, "m2")
    requests = 0
    for at in range(1, 40):
        index, objects = MemoryIndex(), MemoryObjects()
        base = store_of(make(index, objects), index=INDEX)
        for key, value in items[:10]:
            base.put(NS, key, value)
        base.search(NS, query="tea")
        for key, value in items[10:]:
            base.put(NS, key, value)
        base.delete(NS, "m2")
        counter = [-1_000_000]
        faulty = make(
            CrashingPort(index, counter, at, after, is_request),  # type: ignore[arg-type]
            CrashingPort(objects, counter, at, after, is_request),  # type: ignore[arg-type]
        )
        store = store_of(faulty, index=INDEX)
        store.get(NS, "absent")  # the deployment check, before counting starts
        counter[0] = 0
        with contextlib.suppress(Crash):
            store.search(NS, query="tea", limit=20)  # reads, then compacts the log
        requests = max(requests, counter[0])
        clean = store_of(make(index, objects), index=INDEX)
        for query in ("tea", "jazz"):
            got = clean.search(NS, query=query, limit=20)
            ranked_like(got, reference.search(NS, query=query, limit=20), reference, query)
        if counter[0] < at:
            break  # the search finished before request `at`: every boundary was tried
    assert requests > 5


# ------------------------------------------------------------------ by filter token


@pytest.mark.parametrize("declared", [["kind"], []])
def test_an_equality_on_a_declared_field_answers_as_in_memory_store(declared: list[str]) -> None:
    ours, theirs = both(filter_fields=declared)
    ours.space.clock = Ticking()
    for store in (ours, theirs):
        for key, value in memories(25):
            store.put(NS, key, value)
        store.put(NS, "m1", {"text": "changed", "kind": "fact"})  # was a "pref"
        store.put(NS, "num", {"kind": 1})
        store.put(NS, "flag", {"kind": True})
        store.delete(NS, "m3")
    for flt in ({"kind": "pref"}, {"kind": {"$eq": "fact"}}, {"kind": 1.0}, {"kind": "nope"}):
        for offset, limit in ((0, 10), (4, 3), (0, 100)):
            got = ours.search(NS, filter=flt, offset=offset, limit=limit)
            assert (
                keys(got)
                == keys(newest(theirs.search(NS, filter=flt, limit=1000)))[offset : offset + limit]
            )


def test_tokens_cover_nested_paths_and_namespaces_below_the_prefix() -> None:
    # A dotted filter key reads into nested values, as LangGraph's SQL stores read it.
    store = store_of(make(), filter_fields=["user.level"])
    store.put(("a",), "x", {"user": {"level": 3}})
    store.put(("a", "b"), "y", {"user": {"level": 3}})
    store.put(("a", "b"), "z", {"user": {"level": 4}})
    store.put(("c",), "w", {"user": {"level": 3}})
    for prefix, want in (
        (("a",), {(("a",), "x"), (("a", "b"), "y")}),
        (("a", "b"), {(("a", "b"), "y")}),
        ((), {(("a",), "x"), (("a", "b"), "y"), (("c",), "w")}),
    ):
        got = store.search(prefix, filter={"user.level": 3})
        assert {(i.namespace, i.key) for i in got} == want


def test_a_namespace_written_before_its_field_was_declared_is_read_once() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    before = store_of(make(index, objects))
    before.space.clock = Ticking()
    for key, value in memories(20):
        before.put(NS, key, value)
    index = index.clone()  # another process's view
    after = store_of(make(index, objects), filter_fields=["kind"])
    want = ["m19", "m17", "m15", "m13", "m11"]  # newest first
    assert keys(after.search(NS, filter={"kind": "pref"}, limit=5)) == want
    index.calls.clear()
    assert keys(after.search(NS, filter={"kind": "pref"}, limit=5)) == want
    # From the tokens now: the mark's and the tokens' Queries, then the 5 items.
    assert index.calls == {"Query": 2, "BatchGetItem": 1}


def test_tokens_name_values_by_keyed_hashes_only() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    store = store_of(make(index, objects), filter_fields=["kind"], index=INDEX)
    store.put(NS, "k", {"text": "a secret memory", "kind": "preference"})
    raw = b"".join(
        i.key.pk.encode() + i.key.sk.encode() + (i.blob or b"") for i in index.index_items()
    )
    assert b"preference" not in raw and b"kind" not in raw and b"secret" not in raw
    tokens = [i for i in index.index_items() if i.key.sk.startswith(TOKEN_MARK)]
    assert len(tokens) == 1 and tokens[0].blob is None
    # The vectors are sealed: neither their float32 nor their int8 bytes are stored.
    vector = embed(["a secret memory"])[0]
    for packed in (_float32(vector), _int8(vector)):
        assert packed not in raw and packed not in b"".join(
            r.blob or b"" for r in index.memory_rows()
        )


def _float32(vector: list[float]) -> bytes:
    import array

    return array.array("f", vector).tobytes()[:16]


def _int8(vector: list[float]) -> bytes:
    from langgraph.checkpoint.s3dynamo.memory.vectors import encode

    return encode(vector).data[:12]


# ------------------------------------------------------------------ TTL, listings


def test_expiry_is_decided_to_the_millisecond_and_listings_omit_expired_namespaces() -> None:
    clock = Clock()
    store = store_of(make(), ttl={"omit_expired": True}, filter_fields=["kind"], index=INDEX)
    store.space.clock = clock
    store.put(("users", "ada"), "k", {"text": "hi", "kind": "x"}, ttl=1.2 / 60)
    store.put(("users", "bob"), "k", {"text": "hi", "kind": "x"})
    clock.now += 1.199
    assert store.get(("users", "ada"), "k", refresh_ttl=False) is not None
    assert ("users", "ada") in store.list_namespaces()
    clock.now += 0.001
    assert store.get(("users", "ada"), "k") is None
    assert store.search(("users", "ada")) == []
    assert store.search(("users", "ada"), filter={"kind": "x"}) == []
    assert store.search(("users", "ada"), query="hi") == []
    assert store.list_namespaces() == [("users", "bob")]
    # The sweep takes the item, its token and (a tombstone) its vectors.
    assert store.sweep_ttl() == 1
    assert store.list_namespaces() == [("users", "bob")]


def test_a_put_that_shortens_an_item_s_life_makes_the_listing_check() -> None:
    clock = Clock()
    store = store_of(make())
    store.space.clock = clock
    store.put(("n",), "k", {"v": 1})  # never expires: the namespace is listed unread
    store.put(("n",), "k", {"v": 1}, ttl=1 / 60)  # now it does, in a minute
    clock.now += 61
    assert store.list_namespaces() == []


@pytest.mark.parametrize("use_async", [False, True])
def test_node_cache_ttls_hold_to_the_millisecond(use_async: bool) -> None:
    import asyncio

    clock = Clock()
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(make())
    cache.space.clock = clock
    key = (("node",), "k")
    if use_async:
        asyncio.run(cache.aset({key: ("v", 2)}))
    else:
        cache.set({key: ("v", 2)})
    clock.now += 1.999
    assert cache.get([key]) == {key: "v"}
    clock.now += 0.001
    assert cache.get([key]) == {}


def test_a_node_cache_used_alone_sets_itself_up() -> None:
    index = MemoryIndex(exists=False)
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(make(index, MemoryObjects()))
    with pytest.raises(StoreMissingError):
        cache.set({(("n",), "k"): ("v", None)})
    cache.setup()
    cache.set({(("n",), "k"): ("v", None)})
    assert cache.get([(("n",), "k")]) == {(("n",), "k"): "v"}


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("where", ["store", "async store", "cache"])
def test_a_value_the_serializer_cannot_store_is_named_and_writes_nothing(where: str) -> None:
    import asyncio

    index, objects = MemoryIndex(), MemoryObjects()
    saver = make(index, objects)
    store = store_of(saver, index=INDEX, filter_fields=["kind"])
    store.put(("ok",), "first", {"text": "x", "kind": "y"})  # the deployment, recorded
    snapshot = _snapshot(index, objects)
    value = {"text": "t", "kind": "y", "lock": threading.Lock()}
    with pytest.raises(ValueNotSerializableError) as raised:
        if where == "store":
            store.batch([PutOp(("ok",), "fine", {"v": 1}), PutOp(("users", "u1"), "bad", value)])
        elif where == "async store":
            asyncio.run(store.aput(("users", "u1"), "bad", value))
        else:
            S3DynamoCache.from_saver(saver).set({(("users", "u1"), "bad"): (value, None)})
    assert "'bad'" in str(raised.value) and "('users', 'u1')" in str(raised.value)
    assert "nothing was written" in str(raised.value)
    assert _snapshot(index, objects) == snapshot


def _snapshot(index: MemoryIndex, objects: MemoryObjects) -> Any:
    return (
        sorted(index.memory_rows()),
        sorted(index.directory_entries()),
        sorted(index.index_items()),
        sorted(index.intents.items()),
        sorted((o.key, objects.get(o.key)) for o in objects.list("")),
    )


def test_filter_fields_given_as_one_string_are_refused() -> None:
    from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match=r"pass \['kind'\]"):
        store_of(make(), filter_fields="kind")


# ------------------------------------------------------------------ on DynamoDB (aws)


@pytest.mark.aws
def test_a_warm_search_reads_what_it_returns(clients: Clients, counter: RequestCounter) -> None:
    saver = make_saver(clients)
    saver.setup()
    store = S3DynamoStore.from_saver(saver, index=INDEX, filter_fields=["kind"])
    store.batch([PutOp(NS, key, value) for key, value in memories(300)])
    store.search(NS, query="warm up")  # builds the index
    store.search(NS, filter={"kind": "pref"})  # reads the namespace once: tokens complete
    counter.reset()
    hits = store.search(NS, query="tea", limit=10, refresh_ttl=False)
    assert len(hits) == 10
    # One Query (the manifest, the log, the mark), one BatchGetItem of the ten items.
    assert counter.calls == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 1}
    counter.reset()
    assert len(store.search(NS, filter={"kind": "pref"}, limit=10)) == 10
    # The mark's Query and the tokens' (one wave), one BatchGetItem of the ten items.
    assert counter.calls == {"dynamodb.Query": 2, "dynamodb.BatchGetItem": 1}
    counter.reset()
    assert len(store.search(NS, filter={"kind": {"$ne": "none"}}, limit=10)) == 10
    # No token for an operator: the namespace is read, in one Query, not again
    # consistently for the tokens and vector log this process wrote beside its items.
    assert counter.calls == {"dynamodb.Query": 1}


@pytest.mark.aws
def test_puts_cost_one_write_each_and_one_more_per_declared_field(
    clients: Clients, counter: RequestCounter
) -> None:
    saver = make_saver(clients)
    saver.setup()
    plain = S3DynamoStore.from_saver(saver)
    plain.put(NS, "first", {"v": 0})
    counter.reset()
    plain.put(NS, "k", {"text": "x" * 300, "kind": "pref"})
    assert counter.calls == {"dynamodb.UpdateItem": 1}
    declared = S3DynamoStore.from_saver(saver, filter_fields=["kind"])
    counter.reset()
    declared.put(NS, "k2", {"text": "x" * 300, "kind": "pref"})
    assert counter.calls == {"dynamodb.BatchWriteItem": 1, "dynamodb.UpdateItem": 1}
    embedded = S3DynamoStore.from_saver(saver, index=INDEX)
    counter.reset()
    embedded.put(NS, "k3", {"text": "x" * 300})
    # The store's first put with an embedding into a namespace reads its index once (the
    # dimensions its vectors have); the log entry is the write more.
    assert counter.calls == {
        "dynamodb.Query": 1,
        "dynamodb.BatchWriteItem": 1,
        "dynamodb.UpdateItem": 1,
    }
    counter.reset()
    embedded.put(NS, "k4", {"text": "y" * 300})
    assert counter.calls == {"dynamodb.BatchWriteItem": 1, "dynamodb.UpdateItem": 1}


# ------------------------------------- what someone who can write the table can do


def test_a_forged_tombstone_hides_no_live_item(backend: Backend) -> None:
    """Issue 51: a vector log entry saying an item was deleted is sealed; one without a
    seal (written by someone without the keys, or by an earlier build) is a hint that
    hides nothing, and a compaction reads its item back instead of sealing it into a
    segment; one moved to another item does not open."""
    store = store_of(backend.saver(), index=INDEX)
    for key, value in memories(30):
        store.put(NS, key, value)
    store.search(NS, query="tea")  # builds the index
    pk, target = store.space.pk(NS), store.space.item_key(NS, "m0")
    forged = {"pk": pk, "sk": log_sk(9_999_999_999_999, "k" + target.sk)}
    raw.put_items(store.saver, [forged])

    def found() -> bool:
        return "m0" in keys(store.search(NS, query="memory 0 about tea", limit=50))

    assert found()
    store.put(NS, "m0", {"text": "memory 0 about tea, again", "kind": "fact"})
    assert found()
    vectors, run = store.space._vectors, store.saver.parts.engine.run
    assert vectors is not None and run(vectors.compact(run(vectors.view(NS))))
    assert found()
    assert forged["sk"] not in {i["sk"] for i in raw.partition(store.saver, pk)}
    # A genuine tombstone, moved to name another item: its seal does not open there.
    store.delete(NS, "m1")
    [tomb] = [i for i in raw.partition(store.saver, pk) if "#k" in i["sk"]]
    other = store.space.item_key(NS, "m2").sk
    raw.put_items(store.saver, [{**tomb, "sk": tomb["sk"].rpartition("#k")[0] + "#k" + other}])
    with pytest.raises(IntegrityError):
        store.search(NS, query="tea")


def test_a_forged_filter_token_changes_no_answer(backend: Backend) -> None:
    """Issue 51: a token says when its item was written, and stands for the item only
    while that is the item's sealed write time: one forged newer (or left by an older
    put) never puts an older item before a newer one within a limit."""
    saver = backend.saver()
    saver.parts.engine.clock = Ticking()
    store = store_of(saver, filter_fields=["kind"])
    store.space.clock = Ticking()
    store.put(NS, "older", {"kind": "pref"})
    store.put(NS, "newer", {"kind": "pref"})
    assert keys(store.search(NS, filter={"kind": "pref"}, limit=1)) == ["newer"]
    pk, older = store.space.pk(NS), store.space.item_key(NS, "older").sk
    token = next(
        sk
        for i in raw.partition(store.saver, pk)
        if (sk := i["sk"]).startswith(TOKEN_MARK) and sk.endswith("#" + older)
    )
    prefix = token.rsplit("#", 2)[0]
    raw.put_items(store.saver, [{"pk": pk, "sk": f"{prefix}#9999999999999#{older}"}])
    assert keys(store.search(NS, filter={"kind": "pref"}, limit=1)) == ["newer"]
    assert keys(store.search(NS, filter={"kind": "pref"})) == ["newer", "older"]


def test_a_batch_of_more_vectors_than_an_item_holds_takes_several_log_entries(
    backend: Backend,
) -> None:
    """300 items of 1,536 dimensions in one batch are some 470 KB of rows: one log entry,
    over an item's 400 KB, had DynamoDB refuse the batch (a StorageError saying "retry
    later"). Each entry now holds at most `vectors.ENTRY_MAX` bytes of rows, and a query
    ranks every item as InMemoryStore does."""
    index: Any = {"dims": 1536, "embed": random_embedding(1536), "fields": ["text"]}
    store, reference = store_of(backend.saver(), index=index), InMemoryStore(index=index)
    store.put(NS, "seed", {"text": "seed"})
    store.search(NS, query="seed")  # the index starts here: later puts go to its log
    ops = [PutOp(NS, key, value) for key, value in memories(300)]
    reference.put(NS, "seed", {"text": "seed"})
    for s in (store, reference):
        s.batch(ops)
    pk = store.space.pk(NS)
    entries = [i for i in raw.partition(store.saver, pk) if i["sk"].startswith(LOG_MARK)]
    assert len(entries) == 2 and all(item_size(e) < 400 * 1024 for e in entries)
    for query in ("tea in Oslo", "memory 299 about trains"):
        got = store.search(NS, query=query, limit=10)
        ranked_like(got, reference.search(NS, query=query, limit=10), reference, query)


def test_a_deleted_log_entry_hides_its_item_from_a_query_and_not_from_get(
    backend: Backend,
) -> None:
    """The stated limit (docs/SECURITY.md): deleting, or rolling back, an item of a
    namespace's search index is a deletion: a search by query misses the item its entry
    named, which `get` and every other search still return."""
    store = store_of(backend.saver(), index=INDEX)
    store.put(NS, "seed", {"text": "seed"})
    store.search(NS, query="seed")  # the index starts here: later puts go to its log
    store.put(NS, "hidden", {"text": "tea"})
    pk = store.space.pk(NS)
    (entry,) = [i for i in raw.partition(store.saver, pk) if i["sk"].startswith(LOG_MARK)]
    raw.table(store.saver).batch(deletes=[ItemKey(pk, entry["sk"])])
    fresh = store_of(store.saver, index=INDEX)
    assert "hidden" not in keys(fresh.search(NS, query="tea"))
    assert fresh.get(NS, "hidden") is not None and "hidden" in keys(fresh.search(NS))
