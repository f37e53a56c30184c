"""A saver configured with another key or naming secret than the deployment's is told so,
by name, on every read path: never an empty thread, never "tampered". A blob that was
really altered is still reported as altered."""

from __future__ import annotations

import os
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import DeploymentMismatchError, IntegrityError
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.records import CheckpointRecord
from tests.support.savers import MemorySaver, memory_saver
from tests.support.scenarios import chat_graph

KEY, SECRET = os.urandom(32), os.urandom(16)
CONFIG = {"configurable": {"thread_id": "customer-42"}}
CASES = {
    "wrong key under the same id": (
        {"keys": {"k1": os.urandom(32)}, "secret": SECRET},
        r"key id\(s\) \['k1'\] hold other keys",
    ),
    "wrong key id": ({"keys": {"k2": KEY}, "secret": SECRET}, r"none of the deployment's \['k1'\]"),
    "wrong naming secret": (
        {"keys": {"k1": KEY}, "secret": os.urandom(16)},
        "the naming key differs",
    ),
}


def written() -> tuple[MemoryIndex, MemoryObjects]:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = memory_saver(index, objects, keys={"k1": KEY}, secret=SECRET)
    graph = chat_graph(saver)
    for i in range(2):
        graph.invoke({"messages": [HumanMessage(f"my kettle is late {i}", id=f"h{i}")]}, CONFIG)
    return index, objects


def reader(index: MemoryIndex, objects: MemoryObjects, **settings: Any) -> MemorySaver:
    saver = MemorySaver(index=index, object_store=objects, **settings)  # no setup(): a reader
    saver.index, saver.objects = index, objects
    return saver


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_read_path_names_the_mismatch(case: str) -> None:
    settings, named = CASES[case]
    other = reader(*written(), **settings)
    reads = {
        "get_tuple": lambda: other.get_tuple(CONFIG),
        "list": lambda: list(other.list(CONFIG)),
        "get_state": lambda: chat_graph(other).get_state(CONFIG),
        "history": lambda: other.ops.history("customer-42"),
        "stats": lambda: other.ops.stats("customer-42"),
        "verify": lambda: other.ops.verify("customer-42"),
        "verify everything": lambda: other.ops.verify(),
        "threads": lambda: other.ops.threads(),
        "copy": lambda: other.copy_thread("customer-42", "copy"),
        "delta history": lambda: other.get_delta_channel_history(config=CONFIG, channels=["x"]),
    }
    for name, read in reads.items():
        with pytest.raises(DeploymentMismatchError, match=named) as exc:
            read()
        assert "fingerprint" in str(exc.value), name


def test_a_flipped_byte_is_still_reported_as_tampering() -> None:
    index, objects = written()
    [record] = [r for r in index.records() if isinstance(r, CheckpointRecord) and r.inline][-1:]
    tag, blob = next(iter(record.inline.items()))
    record.inline[tag] = blob[:-1] + bytes([blob[-1] ^ 1])
    index.write_batch(puts=[record])
    same = reader(index, objects, keys={"k1": KEY}, secret=SECRET)
    with pytest.raises(IntegrityError) as exc:
        for _ in same.list(CONFIG):
            pass
    assert not isinstance(exc.value, DeploymentMismatchError)
    assert "authentication failed" in str(exc.value)
    report = same.ops.verify("customer-42")
    assert [p["kind"] for p in report.problems] == ["tampered"]
