"""A Store namespace keeps the dimensions its vectors were written with (issue 56): a put
of other dimensions (another IndexConfig) is refused by name before anything is written,
whatever the namespace's index holds (a log, segments under a manifest, a manifest of an
earlier release that names no dimensions); a search whose query has other dimensions
than a namespace's vectors, or of a namespace holding two kinds (written before puts
were checked), is a `VectorDimensionsError` naming both figures and the fix, never a
bare ValueError. Refusals of what the embedding function returns against the
IndexConfig's `dims`, and that nothing is written: tests/unit/test_memory_nothing_written.py.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph.checkpoint.s3dynamo import S3DynamoSaver, VectorDimensionsError
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.memory import vector_index
from langgraph.checkpoint.s3dynamo.memory.vector_index import VectorIndex
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.embeddings import random_embedding
from tests.support.memory_index import MemoryIndex

KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
SECRET = bytes(range(100, 132))
NS = ("users", "ada")
NARROW: Any = {"dims": 8, "embed": random_embedding(8), "fields": ["text"]}
WIDE: Any = {"dims": 16, "embed": random_embedding(16), "fields": ["text"]}


def make(index: MemoryIndex, objects: MemoryObjects | None = None) -> S3DynamoSaver:
    objects = objects if objects is not None else MemoryObjects()
    return S3DynamoSaver(index=index, object_store=objects, keys=KEYS, secret=SECRET)


def memories(n: int) -> list[tuple[str, dict[str, Any]]]:
    return [(f"m{i}", {"text": f"memory {i} about tea"}) for i in range(n)]


class EarlierManifests:
    """`json` for vector_index as an earlier release used it: a manifest without "dims"."""

    loads = staticmethod(json.loads)

    @staticmethod
    def dumps(value: Any) -> str:
        if isinstance(value, dict) and "segments" in value:
            value = {k: v for k, v in value.items() if k != "dims"}
        return json.dumps(value)


def written(index: MemoryIndex) -> list[Any]:
    return sorted(index.items(), key=lambda i: (str(i["pk"]), str(i["sk"])))


@pytest.mark.parametrize("held", ["a log", "segments", "segments of an earlier release"])
def test_a_put_of_other_dimensions_than_the_namespace_s_vectors_is_refused(
    held: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    if held == "segments of an earlier release":
        monkeypatch.setattr(vector_index, "json", EarlierManifests)
    narrow = S3DynamoStore.from_saver(make(index, objects), index=NARROW)
    narrow.batch([PutOp(NS, key, value) for key, value in memories(6)])
    if held != "a log":
        narrow.search(NS, query="tea")  # its index built: a manifest and a segment
    monkeypatch.undo()
    # Another process, its IndexConfig changed to a model of 16 dimensions.
    index = index.clone()
    wide = S3DynamoStore.from_saver(make(index, objects), index=WIDE)
    before = written(index)
    with pytest.raises(VectorDimensionsError) as refused:
        wide.batch([PutOp(("users", "bob"), "b", {"text": "tea"}), PutOp(NS, "k", {"text": "tea"})])
    assert str(refused.value) == (
        "store item 'k' in namespace ('users', 'ada'): its embedding has 16 dimensions (the "
        "IndexConfig's dims), and the vectors namespace ('users', 'ada') holds have 8, written "
        "under another IndexConfig (dims or embedding model). Use dims=8 and the model they "
        "were written with, or put the items into a new namespace, embedded with this one"
    )
    assert isinstance(refused.value, ValueError)  # an InvalidConfigError
    assert written(index) == before  # neither namespace's put was written
    # The namespace still searches under its own IndexConfig; a new one takes the new model.
    reader = S3DynamoStore.from_saver(make(index, objects), index=NARROW)
    assert len(reader.search(NS, query="tea", limit=10)) == 6
    wide.put(("users", "bob"), "b", {"text": "tea"})
    assert [i.key for i in wide.search(("users", "bob"), query="tea")] == ["b"]


def test_a_store_checks_a_namespace_once_then_knows_it() -> None:
    index = MemoryIndex()
    store = S3DynamoStore.from_saver(make(index), index=NARROW)
    store.put(NS, "a", {"text": "tea"})
    index.calls.clear()
    store.put(NS, "b", {"text": "coffee"})
    assert "Query" not in index.calls
    # Another store of the same deployment wrote 16 dimensions there meanwhile (as one of
    # an earlier release could): this store's own puts go on, a search names the mix.
    wide = S3DynamoStore.from_saver(make(index), index=WIDE)
    assert wide.space._vectors is not None
    wide.space._vectors.known_dims[wide.space.pk(NS)] = 16
    wide.put(NS, "c", {"text": "jazz"})
    with pytest.raises(VectorDimensionsError, match="holds have 8 and 16"):
        store.search(NS, query="tea")


def _unchecked(self: VectorIndex, embedded: object) -> Iterator[None]:
    """A put's dimensions left unchecked (as before puts were checked): no step."""
    yield from ()


@pytest.mark.parametrize("indexed", [False, True], ids=["items only", "indexed"])
def test_a_namespace_of_mixed_dimensions_is_named_by_every_search(
    indexed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data written before puts were checked: vectors of 8 and of 16 dimensions in one
    namespace. Every search of it by query, under either IndexConfig, names the mix and
    the way out; one without a query reads the items, and nothing is written."""
    index, objects = MemoryIndex(), MemoryObjects()
    narrow = S3DynamoStore.from_saver(make(index, objects), index=NARROW)
    narrow.batch([PutOp(NS, key, value) for key, value in memories(4)])
    if indexed:
        narrow.search(NS, query="tea")
    monkeypatch.setattr(VectorIndex, "check_puts", _unchecked)
    wide = S3DynamoStore.from_saver(make(index, objects), index=WIDE)
    wide.put(NS, "wide", {"text": "tea"})
    monkeypatch.undo()
    if not indexed:  # as a build before the index existed left it: no manifest, no log
        index.batch(deletes=[i.key for i in index.index_items()])
    before = written(index)
    for store, got in ((narrow, 8), (wide, 16)):
        with pytest.raises(VectorDimensionsError) as refused:
            store.search(("users",), query="tea")
        assert str(refused.value) == (
            f"search by query: its embedding has {got} dimensions (the IndexConfig's dims), "
            "and the vectors namespace ('users', 'ada') holds have 8 and 16, written under "
            "different IndexConfigs (dims or embedding model). Put its items into a new "
            "namespace under one IndexConfig (get reads them, as does a search without a "
            "query)"
        )
    assert written(index) == before  # no index built from them
    assert len(narrow.search(NS, limit=10)) == 5


def test_a_query_of_other_dimensions_than_the_namespace_s_vectors_is_named() -> None:
    index = MemoryIndex()
    S3DynamoStore.from_saver(make(index), index=NARROW).put(NS, "a", {"text": "tea"})
    wide = S3DynamoStore.from_saver(make(index), index=WIDE)
    for _ in range(2):  # no index yet (the namespace's items), then the log
        with pytest.raises(VectorDimensionsError, match=r"holds have 8, .* Use dims=8"):
            wide.search(NS, query="tea")
