"""LangGraph's contract for `get_delta_channel_history`, scenario by scenario, on both
backends: from a checkpoint's parent back to each channel's nearest stored value (its
seed), the writes met on the way come back oldest first, and a DeltaChannel rebuilt from
seed and writes holds what the steps made. These are the delta-channel history and
reconstruction scenarios of langgraph-checkpoint-conformance's main branch, which its
release 0.0.2 (`tests/aws/test_conformance.py`) does not run yet, then the seeds LangGraph
tests its Postgres saver with, a thread whose channel became a DeltaChannel read back by a
process that never saw it, and a checkpoint 1,500 behind its thread's head read with its
requests counted. Each history read is made sync and async, which must agree."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from typing import Annotated, Any
from uuid import uuid4

import pytest
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.backends import Backend
from tests.support.graphs import concat
from tests.support.savers import MemorySaver, memory_saver

# Task ids on either side of every uuid4, so the order of task ids is known and opposite
# to the order of the task paths given with them.
LOWEST_TASK = "00000000-0000-0000-0000-000000000000"
HIGHEST_TASK = "ffffffff-ffff-ffff-ffff-ffffffffffff"


@pytest.fixture
def saver(backend: Backend) -> S3DynamoSaver:
    return backend.saver()


class Chain:
    """One thread's checkpoints, each put as the child of the one before (index = step),
    with the values and versions given, and writes put at any of them."""

    def __init__(self, saver: S3DynamoSaver) -> None:
        self.saver, self.tid = saver, str(uuid4())
        self.configs: list[Any] = []

    def checkpoint(self, bumped: Sequence[str] = (), **values: Any) -> Any:
        """The next checkpoint, storing `values`; their channels' versions and those of
        `bumped` (a version moved with no value stored, as a delta step leaves it) move."""
        cp = empty_checkpoint()
        versions = {ch: self.saver.get_next_version(None, None) for ch in (*values, *bumped)}
        cp["channel_values"], cp["channel_versions"] = dict(values), versions
        parent = self.configs[-1] if self.configs else {"configurable": {"thread_id": self.tid}}
        self.configs.append(self.saver.put(parent, cp, {"step": len(self.configs)}, versions))
        return self.configs[-1]

    def write(self, step: int, *writes: tuple[str, Any], task: str = "", path: str = "") -> None:
        self.saver.put_writes(self.configs[step], list(writes), task or str(uuid4()), path)

    def history(self, *channels: str, at: int = -1) -> Any:
        config, asked = self.configs[at], list(channels)
        found = self.saver.get_delta_channel_history(config=config, channels=asked)
        again = asyncio.run(self.saver.aget_delta_channel_history(config=config, channels=asked))
        assert again == found
        return found


def steps(saver: S3DynamoSaver, count: int, snapshots: Sequence[int], box: bool = False) -> Chain:
    """`count` checkpoints of channel "ch": a snapshot of the step's number at each step in
    `snapshots`, a write of it at every other step (both as a one-item list with `box`)."""
    chain = Chain(saver)
    for step in range(count):
        value = [step] if box else step
        if step in snapshots:
            chain.checkpoint(ch=_DeltaSnapshot(value))
        else:
            chain.checkpoint()
            chain.write(step, ("ch", value))
    return chain


def written(entry: Any) -> list[Any]:
    return [value for _, _, value in entry["writes"]]


def test_writes_come_back_oldest_first(saver: S3DynamoSaver) -> None:
    # A snapshot at step 0, writes at 1 to 4; the head's own write is for its child.
    entry = steps(saver, 5, [0]).history("ch")["ch"]
    assert written(entry) == [1, 2, 3]
    assert all(channel == "ch" and task for task, channel, _ in entry["writes"])
    assert entry["seed"] == _DeltaSnapshot(0)


def test_the_seed_is_the_nearest_snapshot(saver: S3DynamoSaver) -> None:
    entry = steps(saver, 6, [0, 3]).history("ch")["ch"]
    assert entry == {"writes": entry["writes"], "seed": _DeltaSnapshot(3)}
    assert written(entry) == [4]


def test_the_targets_own_writes_are_left_out(saver: S3DynamoSaver) -> None:
    chain = steps(saver, 3, [0])
    chain.write(2, ("ch", "extra"))
    assert written(chain.history("ch")["ch"]) == [1]


def test_each_channel_stops_at_its_own_seed(saver: S3DynamoSaver) -> None:
    chain = Chain(saver)
    for step in range(5):
        stored = {"a": _DeltaSnapshot("a at 1")} if step == 1 else {}
        stored |= {"b": _DeltaSnapshot("b at 3")} if step == 3 else {}
        chain.checkpoint(**stored)
        chain.write(step, ("a", step), ("b", step))
    found = chain.history("a", "b")
    assert (written(found["a"]), found["a"]["seed"]) == ([1, 2, 3], _DeltaSnapshot("a at 1"))
    assert (written(found["b"]), found["b"]["seed"]) == ([3], _DeltaSnapshot("b at 3"))


def test_no_channels_asked_is_an_empty_answer_without_a_request(
    saver: S3DynamoSaver, backend: Backend
) -> None:
    chain = steps(saver, 3, [0])
    backend.reset()
    assert chain.history() == {}
    assert backend.calls() == {}


def test_a_walk_to_the_root_has_no_seed(saver: S3DynamoSaver) -> None:
    entry = steps(saver, 4, []).history("ch")["ch"]
    assert "seed" not in entry
    assert written(entry) == [0, 1, 2]


def test_a_plain_value_from_before_the_channel_was_a_delta_is_the_seed(
    saver: S3DynamoSaver,
) -> None:
    """A thread whose channel was a plain reducer stored whole values; the nearest one
    ends the walk as a DeltaChannel's snapshot would."""
    chain = Chain(saver)
    for step in range(4):
        chain.checkpoint(**({"ch": [10, 20, 30]} if step == 1 else {}))
        if step != 1:
            chain.write(step, ("ch", step))
    entry = chain.history("ch")["ch"]
    assert (entry["seed"], written(entry)) == ([10, 20, 30], [2])


def test_the_seed_checkpoints_own_writes_are_replayed(saver: S3DynamoSaver) -> None:
    """A stored value is what enters its checkpoint; the writes at that checkpoint made
    its child, so they come back; those of older checkpoints are in the value already."""
    chain = Chain(saver)
    roles = ["older than the seed", "at the seed", "after the seed", "pending at the head"]
    for step, role in enumerate(roles):
        chain.checkpoint(**({"ch": [10, 20][: step + 1]} if step < 2 else {}))
        chain.write(step, ("ch", role))
    entry = chain.history("ch")["ch"]
    assert (entry["seed"], written(entry)) == ([10, 20], ["at the seed", "after the seed"])


def test_parallel_writes_replay_in_task_path_order(saver: S3DynamoSaver) -> None:
    """LangGraph applies one step's tasks in the order of their paths; a task id is a hash
    of its path, so ordering by task id would reverse these two."""
    chain = steps(saver, 3, [0])
    chain.write(1, ("ch", "second"), task=LOWEST_TASK, path="~pull, 02")
    chain.write(1, ("ch", "first"), task=HIGHEST_TASK, path="~pull, 01")
    assert written(chain.history("ch")["ch"]) == [1, "first", "second"]


def test_writes_without_a_task_path_replay_first(saver: S3DynamoSaver) -> None:
    """A graph's input is written with no task path, and applied before any task's."""
    chain = steps(saver, 3, [0])
    chain.write(1, ("ch", "from a node"), task=LOWEST_TASK, path="~pull, a")
    chain.write(1, ("ch", "from the input"), task=HIGHEST_TASK)
    assert written(chain.history("ch")["ch"]) == [1, "from the input", "from a node"]


@pytest.mark.parametrize(
    ("count", "snapshots", "rebuilt"),
    [(5, [0], [0, 1, 2, 3]), (6, [0, 3], [3, 4]), (4, [], [0, 1, 2])],
    ids=["snapshot-at-the-root", "snapshot-mid-chain", "no-snapshot"],
)
def test_a_delta_channel_rebuilds_from_seed_and_writes(
    saver: S3DynamoSaver, count: int, snapshots: list[int], rebuilt: list[int]
) -> None:
    entry = steps(saver, count, snapshots, box=True).history("ch")["ch"]
    channel = DeltaChannel(concat).from_checkpoint(entry.get("seed"))
    channel.replay_writes(entry["writes"])
    assert channel.get() == rebuilt


def seeded(saver: S3DynamoSaver, seed: Any) -> Chain:
    """Four checkpoints, `seed` stored at step 1 only, one write at each."""
    chain = Chain(saver)
    for step in range(4):
        chain.checkpoint(**({"ch": seed} if step == 1 else {}), bumped=() if step == 1 else ["ch"])
        chain.write(step, ("ch", f"w{step}"))
    return chain


@pytest.mark.parametrize(
    "seed",
    [[10, 20], _DeltaSnapshot([10, 20]), 42, "x", 3.5, True, _DeltaSnapshot(True), None],
    ids=repr,
)
def test_every_kind_of_stored_value_is_a_seed(saver: S3DynamoSaver, seed: Any) -> None:
    """Whatever the value (a scalar, `True` or a snapshot of `True`, `None`: stored, so
    LangGraph's own savers seed from it too), the walk stops at it, type and all."""
    entry = seeded(saver, seed).history("ch")["ch"]
    assert entry["seed"] == seed and type(entry["seed"]) is type(seed)
    assert written(entry) == ["w1", "w2"]


def test_a_version_moved_without_a_value_does_not_end_the_walk(saver: S3DynamoSaver) -> None:
    chain = Chain(saver)
    chain.checkpoint(ch=[10, 20])
    for _ in range(3):
        chain.checkpoint(bumped=["ch"])
    for step in range(4):
        chain.write(step, ("ch", f"w{step}"))
    entry = chain.history("ch")["ch"]
    assert (entry["seed"], written(entry)) == ([10, 20], ["w0", "w1", "w2"])


def _graph(saver: Any, delta: bool) -> Any:
    reducer = DeltaChannel(concat) if delta else operator.add
    State = TypedDict("State", {"items": Annotated[list, reducer]})  # noqa: UP013
    g = StateGraph(State)
    g.add_node("noop", lambda state: {})
    g.add_edge(START, "noop")
    g.add_edge("noop", END)
    return g.compile(checkpointer=saver)


def test_a_channel_turned_delta_reads_back_in_a_new_process(backend: Backend) -> None:
    """Three turns with a plain list reducer, then three with a DeltaChannel on the same
    thread: a saver that never saw it reads the latest state and every checkpoint of the
    history as LangGraph's in-memory saver does, the first write after the change too."""
    config: Any = {"configurable": {"thread_id": "t"}}
    views = []
    for writer in (backend.saver(), InMemorySaver()):
        for delta, tag in ((False, "u"), (True, "d")):
            for i in range(3):
                _graph(writer, delta).invoke({"items": [f"{tag}{i}"]}, config)
        reader = backend.saver() if isinstance(writer, S3DynamoSaver) else writer
        graph = _graph(reader, True)
        latest = graph.get_state(config).values["items"]
        views.append((latest, [(s.next, s.values) for s in graph.get_state_history(config)]))
    assert views[0] == views[1]
    assert views[0][0] == ["u0", "u1", "u2", "d0", "d1", "d2"]


def test_a_checkpoint_1500_behind_the_head_reads_back_whole_in_one_query() -> None:
    """LangGraph's Postgres saver pages a thread from its head and returns an empty history
    for a target more than 1,024 checkpoints down (langgraph issue 8448). Here the Query
    starts at the target: a new process reads its history, tuple and state, and the 20
    checkpoints before it, and never reads the 1,500 newer checkpoints (1.2 MB of items
    by `table.item_size`, two pages); every value is inline, so no S3 request. "messages"
    has a snapshot every 100 steps, "events" none: its walk goes down to the root."""
    secret = b"naming secret, 16+ bytes"
    writer = memory_saver(secret=secret)
    chain = Chain(writer)
    for step in range(2001):
        snapshot = {"messages": _DeltaSnapshot([f"m{i}" for i in range(step)])}
        chain.checkpoint(bumped=["events"], **(snapshot if step and step % 100 == 0 else {}))
        chain.write(step, ("messages", f"m{step}"), ("events", f"e{step}"), task=f"t{step}")
    target = chain.configs[500]

    def fresh() -> MemorySaver:
        """A saver of a new process; the request counts start again."""
        return memory_saver(writer.index, writer.objects, keys=writer.parts.sealer.keyring,
                            secret=secret)  # fmt: skip

    def sent() -> dict[str, int]:
        return {**writer.index.calls, **{f"S3 {k}": n for k, n in writer.objects.calls.items()}}

    class State(TypedDict):
        messages: Annotated[list, DeltaChannel(concat)]
        events: Annotated[list, DeltaChannel(concat)]

    def graph() -> Any:
        g = StateGraph(State).add_node("noop", lambda state: {})
        return g.add_edge(START, "noop").add_edge("noop", END).compile(checkpointer=fresh())

    found = fresh().get_delta_channel_history(config=target, channels=["messages", "events"])
    assert sent() == {"Query": 1}
    assert found["messages"]["seed"] == _DeltaSnapshot([f"m{i}" for i in range(400)])
    assert written(found["messages"]) == [f"m{i}" for i in range(400, 500)]
    assert "seed" not in found["events"]
    assert written(found["events"]) == [f"e{i}" for i in range(500)]

    tup = fresh().get_tuple(target)
    assert sent() == {"Query": 1}
    assert tup is not None and tup.metadata["step"] == 500
    assert tup.parent_config == chain.configs[499]
    assert tup.pending_writes == [("t500", "messages", "m500"), ("t500", "events", "e500")]

    state = graph().get_state(target)
    assert sent() == {"Query": 2}  # its tuple, then its history
    assert state.values == {
        "messages": [f"m{i}" for i in range(500)],
        "events": [f"e{i}" for i in range(500)],
    }
    thread = {"configurable": {"thread_id": chain.tid}}
    older = list(graph().get_state_history(thread, before=target, limit=20))
    # The listing, then the first one's history: its ancestors serve the other 19.
    assert sent() == {"Query": 2}
    assert [s.values["events"] for s in older] == [
        [f"e{i}" for i in range(n)] for n in range(499, 479, -1)
    ]
