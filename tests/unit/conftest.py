"""The unit tier: the saver on the in-memory ports, no moto, no network."""

from __future__ import annotations

import os

import pytest

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects


class MemorySaver(S3DynamoSaver):
    """An `S3DynamoSaver` whose index and object store live in memory, sealed."""

    index: MemoryIndex
    objects: MemoryObjects


def memory_saver(
    index: MemoryIndex | None = None, objects: MemoryObjects | None = None, **kwargs: object
) -> MemorySaver:
    """A sealed saver on in-memory ports (pass another saver's ports to share a store)."""
    index, objects = index or MemoryIndex(), objects or MemoryObjects()
    kwargs.setdefault("keys", {"k1": os.urandom(32)})
    kwargs.setdefault("secret", os.urandom(16))  # a deployment of its own
    saver = MemorySaver(index=index, object_store=objects, **kwargs)  # type: ignore[arg-type]
    saver.index, saver.objects = index, objects
    # As setup() would: the deployment record is read (or written) now, so the request
    # budgets below count only what an operation itself sends.
    saver.setup()
    index.calls.clear()
    objects.calls.clear()
    return saver


@pytest.fixture
def saver() -> MemorySaver:
    return memory_saver()
