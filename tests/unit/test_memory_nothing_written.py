"""Nothing written, for the Store and the node cache (issue 39): every error either raises
before writing leaves the table and the bucket exactly as they were
(`tests/support/unchanged.py`), through the sync call and its async twin. The deployment
already holds items of both (with a vector index and filter tokens), so a write of any
kind would show. docs/RELIABILITY.md, "Errors raised before anything is written", lists
them. A test taking `backend` runs on the in-memory twins and on moto."""

from __future__ import annotations

import asyncio
import base64
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import (
    ArgumentTypeError,
    DeploymentMismatchError,
    InvalidConfigError,
    ValueNotSerializableError,
    VectorDimensionsError,
)
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.backends import Backend
from tests.support.embeddings import random_embedding
from tests.support.port_contract import needs_transactions
from tests.support.unchanged import nothing_written

# The first put into a namespace is one TransactWriteItems (the item and its namespace's
# directory entry).
pytestmark = needs_transactions

NS = ("users", "ada")
DIMS = 8
OTHER_KEYS = f"k1:{base64.b64encode(os.urandom(32)).decode()}"


embed = random_embedding(DIMS)


def embed_short(texts: Sequence[str]) -> list[list[float]]:
    return [v[:-1] for v in embed(texts)]  # a model of other dims than configured


def embed_nan(texts: Sequence[str]) -> list[list[float]]:
    return [[math.nan, *v[1:]] for v in embed(texts)]  # a model that broke


def embed_down(texts: Sequence[str]) -> list[list[float]]:
    raise RuntimeError("the embedding service is down")


def index(embedder: Callable[[Sequence[str]], list[list[float]]] = embed) -> Any:
    return {"dims": DIMS, "embed": embedder, "fields": ["text"]}


def wide_index() -> Any:
    return {"dims": 2 * DIMS, "embed": random_embedding(2 * DIMS), "fields": ["text"]}


class Holds:
    def __init__(self) -> None:
        self.lock = threading.Lock()


class Ready(NamedTuple):
    backend: Backend
    store: S3DynamoStore  # declared field "kind", a vector index
    cache: S3DynamoCache[Any]


def ready(backend: Backend) -> Ready:
    """A deployment holding Store items (with tokens and an indexed namespace, large
    values as objects) and cache entries."""
    saver = backend.saver(inline_max=0)
    store = S3DynamoStore.from_saver(saver, index=index(), filter_fields=["kind"])
    store.batch([PutOp(NS, f"m{i}", {"text": f"memory {i}", "kind": "fact"}) for i in range(5)])
    store.search(NS, query="memory")  # the namespace's index built
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(saver)
    cache.set({(("node",), "k"): ({"cached": 1}, 60)})
    return Ready(backend, store, cache)


def other_store(r: Ready, **options: Any) -> S3DynamoStore:
    return S3DynamoStore.from_saver(r.store.saver, **options)


def on_other_keys(r: Ready) -> S3DynamoStore:
    return S3DynamoStore.from_saver(r.backend.saver(setup=False, keys=OTHER_KEYS))


def put(store: S3DynamoStore, ops: list[Any]) -> Callable[[bool], Any]:
    def call(asynchronous: bool) -> Any:
        return asyncio.run(store.abatch(ops)) if asynchronous else store.batch(ops)

    return call


def cache_set(cache: S3DynamoCache[Any], pairs: dict[Any, Any]) -> Callable[[bool], Any]:
    def call(asynchronous: bool) -> Any:
        return asyncio.run(cache.aset(pairs)) if asynchronous else cache.set(pairs)

    return call


STORE_CASES: dict[str, tuple[type[Exception], str, Callable[[Ready], Callable[[bool], Any]]]] = {
    "a value the serializer cannot store, second of a batch": (
        ValueNotSerializableError,
        r"store item 'bad' in namespace \('users', 'ada'\)",
        lambda r: put(r.store, [PutOp(NS, "fine", {"v": 1}), PutOp(NS, "bad", {"h": Holds()})]),
    ),
    "an empty namespace": (
        InvalidNamespaceError,
        "neither empty nor under 'langgraph', got \\(\\)",
        lambda r: put(r.store, [PutOp(NS, "fine", {"v": 1}), PutOp((), "k", {"v": 1})]),
    ),
    "a namespace under 'langgraph'": (
        InvalidNamespaceError,
        "neither empty nor under 'langgraph'",
        lambda r: put(r.store, [PutOp(("langgraph", "x"), "k", {"v": 1})]),
    ),
    "a namespace label with a period": (
        InvalidNamespaceError,
        "periods",
        lambda r: put(r.store, [PutOp(("users", "a.b"), "k", {"v": 1})]),
    ),
    "a key that is no string": (
        InvalidConfigError,
        "expected a str, got int 7",
        lambda r: put(r.store, [PutOp(NS, "fine", {"v": 1}), PutOp(NS, 7, {"v": 1})]),  # type: ignore[arg-type]
    ),
    "a get's key that is no string, beside a put": (
        InvalidConfigError,
        "expected a str, got int 7",
        lambda r: put(r.store, [PutOp(NS, "fine", {"v": 1}), GetOp(NS, 7)]),  # type: ignore[arg-type]
    ),
    "a negative TTL": (
        InvalidConfigError,
        "expected a TTL in minutes .* got -1",
        lambda r: put(r.store, [PutOp(NS, "k", {"v": 1}, ttl=-1)]),
    ),
    "a TTL that is no number": (
        InvalidConfigError,
        "expected a TTL in minutes .* got '5'",
        lambda r: put(r.store, [PutOp(NS, "k", {"v": 1}, ttl="5")]),  # type: ignore[arg-type]
    ),
    "an embedding of other dimensions than the IndexConfig's": (
        VectorDimensionsError,
        r"^store item 'k' in namespace \('users', 'ada'\), its field 'text': the embedding "
        r"function returned 7 dimensions, and the IndexConfig says dims=8; set dims to what "
        r"the embedding model returns$",
        lambda r: put(
            other_store(r, index=index(embed_short)), [PutOp(NS, "k", {"text": "new text"})]
        ),
    ),
    "a query embedding of other dimensions than the IndexConfig's, beside a put": (
        VectorDimensionsError,
        r"^the query 'tea': the embedding function returned 7 dimensions, and the "
        r"IndexConfig says dims=8",
        lambda r: put(
            other_store(r, index=index(embed_short)),
            [PutOp(NS, "k", {"v": 1}), SearchOp(NS, query="tea")],
        ),
    ),
    # Issue 56: the namespace's vectors have 8 dimensions; a store of another IndexConfig.
    "an embedding of other dimensions than the namespace's vectors": (
        VectorDimensionsError,
        r"^store item 'k' in namespace \('users', 'ada'\): its embedding has 16 dimensions "
        r"\(the IndexConfig's dims\), and the vectors namespace \('users', 'ada'\) holds "
        r"have 8, written under another IndexConfig \(dims or embedding model\)\. Use "
        r"dims=8 and the model they were written with, or put the items into a new "
        r"namespace, embedded with this one$",
        lambda r: put(
            other_store(r, index=wide_index()),
            [PutOp(("users", "new"), "n", {"text": "new"}), PutOp(NS, "k", {"text": "new"})],
        ),
    ),
    "a search by a query of other dimensions than the namespace's vectors": (
        VectorDimensionsError,
        r"^search by query: its embedding has 16 dimensions .* namespace \('users', 'ada'\) "
        r"holds have 8,",
        lambda r: put(other_store(r, index=wide_index()), [SearchOp(("users",), query="tea")]),
    ),
    "an embedding holding nan": (
        InvalidConfigError,
        r"^store item 'k' in namespace \('users', 'ada'\), its field 'text': the embedding "
        r"function returned a vector holding nan or infinity",
        lambda r: put(
            other_store(r, index=index(embed_nan)), [PutOp(NS, "k", {"text": "new text"})]
        ),
    ),
    "a query embedding holding nan": (
        InvalidConfigError,
        r"^the query 'tea': the embedding function returned a vector holding nan",
        lambda r: put(other_store(r, index=index(embed_nan)), [SearchOp(NS, query="tea")]),
    ),
    "an embedding function that fails": (
        RuntimeError,
        "the embedding service is down",
        lambda r: put(
            other_store(r, index=index(embed_down)), [PutOp(NS, "k", {"text": "new text"})]
        ),
    ),
    "a store on other keys than the deployment's": (
        DeploymentMismatchError,
        "hold other keys",
        lambda r: put(on_other_keys(r), [PutOp(("users", "new"), "k", {"v": 1})]),
    ),
    # Issue 49: a namespace is a tuple, a value a mapping, a limit at least 0.
    "a namespace given as a string": (
        InvalidNamespaceError,
        r"ops\[1\].namespace must be a tuple of labels, got the string 'users'",
        lambda r: put(r.store, [PutOp(NS, "fine", {"v": 1}), PutOp("users", "k", {"v": 1})]),  # type: ignore[arg-type]
    ),
    "a value that is no mapping": (
        ArgumentTypeError,
        r"ops\[0\].value must be a dict, got list",
        lambda r: put(r.store, [PutOp(NS, "k", [1, 2])]),  # type: ignore[arg-type]
    ),
    "a search limit below 0, beside a put": (
        InvalidConfigError,
        r"ops\[1\].limit must be a whole number, at least 0, got -1",
        lambda r: put(r.store, [PutOp(NS, "fine", {"v": 1}), SearchOp(NS, None, -1)]),
    ),
    # Refused beside a good put into another namespace, which is not written either.
    "a namespace of 100 labels, second of a batch": (
        InvalidNamespaceError,
        r"the namespace of store item 'k' has 100 labels, over the 99 a Store namespace",
        lambda r: put(
            r.store,
            [PutOp(NS, "fine", {"v": 1}), PutOp(tuple(f"l{i}" for i in range(100)), "k", {})],
        ),
    ),
    "a namespace of over 200,000 bytes, second of a batch": (
        InvalidNamespaceError,
        r"the namespace of store item 'k' holds 390,005 bytes of labels, over the 200,000",
        lambda r: put(
            r.store, [PutOp(NS, "fine", {"v": 1}), PutOp(("docs", "é" * 195_000 + "x"), "k", {})]
        ),
    ),
    "put into a namespace given as a string, through the method": (
        InvalidNamespaceError,
        r"namespace must be a tuple of labels, got the string 'users', .*pass \('users',\)",
        lambda r: method(r.store, "put", "users", "k", {"v": 1}),
    ),
    "delete from a namespace given as a string, through the method": (
        InvalidNamespaceError,
        "namespace must be a tuple of labels, got the string 'users'",
        lambda r: method(r.store, "delete", "users", "k"),
    ),
}


def method(target: Any, name: str, *args: Any) -> Callable[[bool], Any]:
    """`target.<name>(*args)`, or its async twin."""

    def call(asynchronous: bool) -> Any:
        if asynchronous:
            return asyncio.run(getattr(target, f"a{name}")(*args))
        return getattr(target, name)(*args)

    return call


CACHE_CASES: dict[str, tuple[type[Exception], str, Callable[[Ready], Callable[[bool], Any]]]] = {
    "a value the serializer cannot store": (
        ValueNotSerializableError,
        r"cache entry 'bad' in namespace \('node',\)",
        lambda r: cache_set(
            r.cache, {(("node",), "fine"): (1, 60), (("node",), "bad"): (Holds(), 60)}
        ),
    ),
    "a negative TTL": (
        InvalidConfigError,
        "expected a TTL in seconds .* got -5",
        lambda r: cache_set(r.cache, {(("node",), "fine"): (1, 60), (("node",), "k"): (1, -5)}),
    ),
    "pairs that are no mapping": (
        ArgumentTypeError,
        "pairs must be a dict of \\(namespace, key\\)",
        lambda r: method(r.cache, "set", [(("node",), "k")]),
    ),
    "clear of one namespace given as a string": (
        ArgumentTypeError,
        r"namespaces must be a list of namespaces .* got the string 'node'",
        lambda r: method(r.cache, "clear", "node"),
    ),
    "a namespace of over 200,000 bytes": (
        InvalidNamespaceError,
        r"the namespace of cache entry 'k' holds 250,000 bytes of labels, over the 200,000",
        lambda r: cache_set(
            r.cache, {(("node",), "fine"): (1, 60), (("x" * 250_000,), "k"): (1, 60)}
        ),
    ),
    "a cache on other keys than the deployment's": (
        DeploymentMismatchError,
        "hold other keys",
        lambda r: cache_set(
            S3DynamoCache.from_saver(r.backend.saver(setup=False, keys=OTHER_KEYS)),
            {(("new",), "k"): (1, 60)},
        ),
    ),
}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("case", sorted(STORE_CASES))
def test_a_store_call_refused_before_writing_leaves_table_and_bucket_unchanged(
    backend: Backend, case: str, asynchronous: bool
) -> None:
    error, named, arrange = STORE_CASES[case]
    call = arrange(ready(backend))
    with nothing_written(backend), pytest.raises(error, match=named):
        call(asynchronous)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("case", sorted(CACHE_CASES))
def test_a_cache_call_refused_before_writing_leaves_table_and_bucket_unchanged(
    backend: Backend, case: str, asynchronous: bool
) -> None:
    error, named, arrange = CACHE_CASES[case]
    call = arrange(ready(backend))
    with nothing_written(backend), pytest.raises(error, match=named):
        call(asynchronous)


def test_a_ttl_of_zero_expires_at_once_as_in_langgraph_s_stores(backend: Backend) -> None:
    r = ready(backend)
    # Writes within one millisecond: each is stamped a millisecond past the one before
    # (so `updated_at` orders them), ahead of the clock; a TTL counts from the clock.
    now = time.time()
    r.store.space.clock = r.cache.space.clock = lambda: now
    r.store.put(NS, "before", {"v": 0})
    r.store.put(NS, "brief", {"v": 1}, ttl=0)
    assert r.store.get(NS, "brief") is None
    r.cache.set({(("node",), "before"): (0, 60)})
    r.cache.set({(("node",), "brief"): (1, 0)})
    assert r.cache.get([(("node",), "brief")]) == {}
