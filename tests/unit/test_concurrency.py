"""Two runs on one thread at once, on the in-memory ports: detection raises the clear
error, the lease serializes them, and no message is lost either way. The same checks
run on moto in `tests/aws/test_concurrency.py`."""

from __future__ import annotations

import os

import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import ItemTooLargeError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.records import CheckpointRecord
from tests.support import concurrent_runs as runs
from tests.support.savers import memory_saver
from tests.support.scenarios import chat_graph

TURNS = 8


def _pair() -> tuple[S3DynamoSaver, S3DynamoSaver]:
    index, objects = MemoryIndex(), MemoryObjects()
    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    return (
        memory_saver(index, objects, keys=keys, secret=secret),
        memory_saver(index, objects, keys=keys, secret=secret),
    )


def test_a_stale_run_is_refused_with_a_clear_error() -> None:
    message = runs.stale_run_is_refused(_pair())
    assert "another run committed to this thread" in message and "Retry the run" in message


@pytest.mark.parametrize("shared", [False, True], ids=["two-savers", "one-saver"])
def test_two_writers_retrying_lose_no_message(shared: bool) -> None:
    pair = _pair()
    savers = (pair[0], pair[0]) if shared else pair
    runs.two_writers(savers, TURNS, "detect")
    runs.check_every_message_once(pair[1], TURNS)


def test_two_writers_under_the_lease_never_conflict() -> None:
    pair = _pair()
    assert runs.two_writers(pair, TURNS, "lock") == 0
    runs.check_every_message_once(pair[1], TURNS)


def test_async_locks_serialize_runs() -> None:
    runs.async_locks_serialize(_pair(), 4)


def test_a_holder_whose_lease_was_taken_over_is_fenced() -> None:
    runs.fenced_holder_is_refused(_pair())


def test_a_second_holder_fails_fast_or_times_out() -> None:
    runs.lock_fails_fast_or_times_out(_pair())


def test_deliberate_forks_are_not_refused() -> None:
    saver = _pair()[0]
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "f"}}
    for i in range(2):
        graph.invoke({"messages": [HumanMessage(f"q{i}", id=f"h{i}")]}, config)
    old = next(s for s in graph.get_state_history(config) if s.values.get("turns") == 1)
    forked = graph.update_state(old.config, {"messages": [HumanMessage("fork", id="f")]})
    graph.invoke(None, forked)
    latest = [m.content for m in graph.get_state(config).values["messages"]]
    assert latest[-2:] == ["fork", "turn 2; heard: q0 / q1 / fork"]  # the fork ran on
    history = [[m.content for m in s.values["messages"]] for s in graph.get_state_history(config)]
    assert ["q0", "turn 1; heard: q0", "q1", "turn 2; heard: q0 / q1"] in history  # kept
    graph.invoke(None, old.config)  # replay from an old checkpoint id
    graph.invoke({"messages": [HumanMessage("after", id="a")]}, config)


def test_large_metadata_is_refused_before_any_request_naming_the_key() -> None:
    saver = memory_saver()
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "t", "user_profile": os.urandom(500_000).hex()}}
    with pytest.raises(ItemTooLargeError, match="'user_profile'"):
        graph.invoke({"messages": [HumanMessage("hi", id="h")]}, config)
    # No checkpoint record was written (LangGraph may have stored the task's writes
    # meanwhile, invisible without their checkpoint): the thread still reads as empty.
    assert not [r for r in saver.index.records() if isinstance(r, CheckpointRecord)]
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None


class _Cancelling:
    """A DynamoDB client whose TransactWriteItems is cancelled with the given reasons."""

    def __init__(self, *reasons: list[str]) -> None:
        self.reasons, self.sent = list(reasons), 0

    def transact_write_items(self, **_: object) -> dict[str, object]:
        from botocore.exceptions import ClientError

        self.sent += 1
        if not self.reasons:
            return {}
        codes = self.reasons.pop(0)
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": [{"Code": c} for c in codes],
            },
            "TransactWriteItems",
        )


def test_a_transaction_cancelled_by_a_conflict_is_sent_again() -> None:
    from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoIndex
    from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError, LeaseLostError
    from langgraph.checkpoint.s3dynamo.records import Fence, HeadMove
    from tests.support.port_conditions import HEAD, LEASE, _cp

    head, fence = HeadMove(HEAD, "2", "1", True), Fence(LEASE, 3)
    conflict = ["None", "None", "TransactionConflict"]
    client = _Cancelling(conflict, conflict)
    DynamoIndex(client, "t").put_checkpoint(_cp("2"), head, fence)
    assert client.sent == 3
    with pytest.raises(ConcurrentUpdateError, match="kept changing"):
        DynamoIndex(_Cancelling(*[conflict] * 5), "t").put_checkpoint(_cp("2"), head, fence)
    with pytest.raises(LeaseLostError):
        lost = ["None", "ConditionalCheckFailed", "ConditionalCheckFailed"]
        DynamoIndex(_Cancelling(lost), "t").put_checkpoint(_cp("2"), head, fence)
    client = _Cancelling(["None", "ConditionalCheckFailed"])
    with pytest.raises(ConcurrentUpdateError, match="head moved"):
        DynamoIndex(client, "t").put_checkpoint(_cp("2"), head)
    assert client.sent == 1
