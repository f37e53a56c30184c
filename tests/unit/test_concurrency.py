"""Two runs on one thread at once, on each backend (`backend`: the in-memory twins, and
the DynamoDB and S3 adapters): detection raises the clear error, the lease serializes
them, and no message is lost either way. The commit and lease conditions each index
must honour are in the port contract (`tests/support/port_contract.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from langgraph.checkpoint.s3dynamo import ItemTooLargeError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable
from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError, LeaseLostError
from langgraph.checkpoint.s3dynamo.format.records import Fence, HeadMove
from langgraph.checkpoint.s3dynamo.ops.gc import plan_gc
from langgraph.checkpoint.s3dynamo.store.format import commit_checkpoint
from langgraph.checkpoint.s3dynamo.testing import Sandbox, moto_server
from tests.support import concurrent_runs as runs
from tests.support.backends import Backend
from tests.support.raw import HEAD, LEASE
from tests.support.raw import checkpoint_record as _cp
from tests.support.savers import RequestCounter, make_saver
from tests.support.scenarios import chat_graph

# Heads and leases commit with TransactWriteItems, which dynalite does not implement.
pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")

# Turns each of two writers runs (fewer through moto, which is slower).
TURNS = {"memory": 8, "aws": 5}


def _pair(backend: Backend) -> tuple[S3DynamoSaver, S3DynamoSaver]:
    return backend.saver(), backend.saver(setup=False)


def test_a_stale_run_is_refused_with_a_clear_error(backend: Backend) -> None:
    message = runs.stale_run_is_refused(_pair(backend))
    assert "another run committed to this thread" in message
    # Its input checkpoint (and the first step's) was committed, and the other run
    # continued from it.
    assert "This run had committed 2 checkpoint(s) before" in message
    assert "do not send this run's input again" in message


def test_the_losing_process_is_told_what_it_committed_and_repeats_no_input(
    tmp_path: Path,
) -> None:
    """Issue 51, with two processes on moto server: B commits its input checkpoint and
    waits inside its node; A (this process) loads the thread, which holds B's input, and
    runs a whole turn; B's next write is refused. The error names B's input checkpoint
    as committed, and B, retrying as the README says (the input is in the latest state:
    not sent again), leaves each message in the thread once."""
    with moto_server() as url:
        sandbox = Sandbox(endpoint_url=url)
        saver = sandbox.saver()
        graph = runs.slow_chat_graph(saver, lambda: None)
        graph.invoke({"messages": [HumanMessage("hello")]}, runs.CONFIG)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
        env.update({k: v for k, v in sandbox.environment().items() if v is not None})
        env["PYTHONPATH"] = str(Path(__file__).parents[2])
        go = tmp_path / "go"
        b = subprocess.Popen(
            [sys.executable, "-c", runs.LOSING_PROCESS, str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert b.stdout is not None
            said = []
            while (line := b.stdout.readline()) and line.strip() != "inside":
                said.append(line)
            assert line, "".join(said)
            graph.invoke({"messages": [HumanMessage("from a")]}, runs.CONFIG)
            go.touch()
            out, _ = b.communicate(timeout=120)
        finally:
            b.kill()
        result = json.loads(out.strip().splitlines()[-1])
        assert result["refused"] and not result["again"], out
        input_id, first_step = result["committed"]
        found = saver.get_tuple(
            {"configurable": {**runs.CONFIG["configurable"], "checkpoint_id": input_id}}
        )
        assert found is not None and found.metadata["source"] == "input"
        assert input_id in result["message"] and first_step in result["message"]
        state = graph.get_state(runs.CONFIG).values["messages"]
        humans = [m.content for m in state if m.type == "human"]
        assert humans == ["hello", "from b", "from a"]


# One saver shared by two threads is the saver's own concern: on the twins alone.
@pytest.mark.parametrize(
    ("backend", "shared"),
    [("memory", False), ("memory", True), ("aws", False)],
    ids=["memory-two-savers", "memory-one-saver", "aws-two-savers"],
    indirect=["backend"],
)
def test_two_writers_retrying_lose_no_message(backend: Backend, shared: bool) -> None:
    pair = _pair(backend)
    savers = (pair[0], pair[0]) if shared else pair
    runs.two_writers(savers, TURNS[backend.name], "detect")
    runs.check_every_message_once(pair[1], TURNS[backend.name])


def test_what_refused_runs_leave_is_no_problem_and_the_full_collection_takes_it(
    backend: Backend,
) -> None:
    """Issue 56: after ordinary refusals (two runs on one thread, each retried), `verify`
    exited 1 for good, naming writes records of checkpoints never committed that neither
    `gc`, `gc --full` nor `prune` removed."""
    pair = _pair(backend)
    assert runs.two_writers(pair, TURNS[backend.name], "detect") > 0
    report = pair[0].ops.verify()
    assert report.ok and report.problems == [], report.problems
    later = datetime.now(timezone.utc) + timedelta(hours=2)
    plan = plan_gc(pair[0].store, grace=timedelta(hours=1), now=later)
    assert plan.to_dict()["leftover_writes"] == report.leftover_writes
    plan.execute(now=later)
    assert plan.writes_deleted == report.leftover_writes
    assert pair[0].ops.verify().leftover_writes == 0
    runs.check_every_message_once(pair[1], TURNS[backend.name])


def test_two_writers_under_the_lease_never_conflict(backend: Backend) -> None:
    pair = _pair(backend)
    assert runs.two_writers(pair, TURNS[backend.name], "lock") == 0
    runs.check_every_message_once(pair[1], TURNS[backend.name])


def test_async_locks_serialize_runs(backend: Backend) -> None:
    runs.async_locks_serialize(_pair(backend), 4)


def test_a_holder_whose_lease_was_taken_over_is_fenced(backend: Backend) -> None:
    runs.fenced_holder_is_refused(_pair(backend))


def test_a_second_holder_fails_fast_or_times_out(backend: Backend) -> None:
    runs.lock_fails_fast_or_times_out(_pair(backend))


def test_deliberate_forks_are_not_refused(backend: Backend) -> None:
    graph = chat_graph(backend.saver())
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
    graph.invoke(None, old.config)  # replay from an old checkpoint id: a branch of turn 2
    replayed = graph.get_state(config).values["messages"]
    assert [m.content for m in replayed][-1] == "turn 2; heard: q0 / q1"
    graph.invoke({"messages": [HumanMessage("after", id="a")]}, config)
    after = [m.content for m in graph.get_state(config).values["messages"]]
    assert after[-2:] == ["after", "turn 3; heard: q0 / q1 / after"]


def test_a_turn_with_detection_off_does_not_wedge_the_thread(backend: Backend) -> None:
    """A thread given a turn by a saver with detection off (a rolling redeploy, detection
    switched off and on again) was refused for good afterwards: the plain commit left the
    head at the checkpoint before, and every run continuing the latest found it there."""
    config = {"configurable": {"thread_id": "mixed"}}
    on = chat_graph(backend.saver())
    off = chat_graph(backend.saver(setup=False, detect_concurrent_runs=False))
    on.invoke({"messages": [HumanMessage("one", id="h1")]}, config)
    off.invoke({"messages": [HumanMessage("two", id="h2")]}, config)
    fresh = chat_graph(backend.saver(setup=False))
    fresh.invoke({"messages": [HumanMessage("three", id="h3")]}, config)
    on.invoke({"messages": [HumanMessage("four", id="h4")]}, config)
    latest = [m.content for m in fresh.get_state(config).values["messages"]]
    assert latest[-2:] == ["four", "turn 4; heard: one / two / three / four"]
    turns = [s.values.get("turns") for s in fresh.get_state_history(config)]
    assert {1, 2, 3, 4} <= set(turns)
    # Two runs continuing the latest, whose head a commit without detection left behind,
    # are still told apart: the second to commit on it is refused.
    off.invoke({"messages": [HumanMessage("five", id="h5")]}, config)
    a, b = backend.saver(setup=False), backend.saver(setup=False)
    put_a, put_b = _continue_latest(a, config), _continue_latest(b, config)
    put_a()
    with pytest.raises(ConcurrentUpdateError, match="another run committed to this thread"):
        put_b()
    chat_graph(b).invoke({"messages": [HumanMessage("six", id="h6")]}, config)  # its retry
    heard = fresh.get_state(config).values["messages"][-1].content
    assert heard == "turn 6; heard: one / two / three / four / five / six"


def _continue_latest(saver: S3DynamoSaver, config: dict[str, Any]) -> Any:
    """A run that loaded the namespace's latest checkpoint: its put of a child, to call."""
    latest = saver.get_tuple(config)
    assert latest is not None
    step = latest.metadata["step"] + 1
    child = create_checkpoint(latest.checkpoint, None, step)
    return lambda: saver.put(latest.config, child, {"source": "update", "step": step}, {})


def test_large_metadata_is_refused_before_any_request_naming_the_key(backend: Backend) -> None:
    saver = backend.saver()
    config = {"configurable": {"thread_id": "t", "user_profile": os.urandom(500_000).hex()}}
    with pytest.raises(ItemTooLargeError, match="'user_profile'"):
        chat_graph(saver).invoke({"messages": [HumanMessage("hi", id="h")]}, config)
    # Nothing was written, neither the checkpoint nor the writes LangGraph stores for it
    # while its put runs (tests/unit/test_nothing_written.py, in every durability mode).
    assert backend.writes() == {}
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
    backend.reset()
    with pytest.raises(ItemTooLargeError, match="'blob'"):
        put_config = {"configurable": {"thread_id": "t2", "checkpoint_ns": ""}}
        saver.put(put_config, empty_checkpoint(), {"blob": os.urandom(500_000).hex()}, {})
    assert backend.calls() == {}
    assert saver.get_tuple({"configurable": {"thread_id": "t2"}}) is None


def test_a_put_under_the_lease_is_still_one_request(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    saver = make_saver(clients)
    saver.setup()
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("hi", id="h0")]}, config)
    counter.reset()
    with saver.ops.thread_lock("t"):
        graph.invoke({"messages": [HumanMessage("again", id="h1")]}, config)
    # Acquire and release are one UpdateItem each; every write carries the fence in its
    # own request (a TransactWriteItems).
    assert counter.calls == {
        "dynamodb.Query": 1,
        "dynamodb.UpdateItem": 2,
        "dynamodb.TransactWriteItems": 5,
    }
    assert [m.content for m in graph.get_state(config).values["messages"]][-2] == "again"


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
    head, fence = HeadMove(HEAD, "2", "1", True), Fence(LEASE, 3)
    conflict = ["None", "TransactionConflict", "None"]
    client = _Cancelling(conflict, conflict)
    _commit(DynamoTable(client, "t"), _cp("2"), head, fence)
    assert client.sent == 3
    with pytest.raises(ConcurrentUpdateError, match="kept changing"):
        _commit(DynamoTable(_Cancelling(*[conflict] * 5), "t"), _cp("2"), head, fence)
    with pytest.raises(LeaseLostError):
        lost = ["None", "ConditionalCheckFailed", "ConditionalCheckFailed"]
        _commit(DynamoTable(_Cancelling(lost), "t"), _cp("2"), head, fence)
    client = _Cancelling(["None", "ConditionalCheckFailed"])
    with pytest.raises(ConcurrentUpdateError, match="head moved"):
        _commit(DynamoTable(client, "t"), _cp("2"), head)
    assert client.sent == 1


def test_clients_retry_in_standard_mode_with_the_stated_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("S3DYNAMO_TABLE", "t")
    monkeypatch.setenv("S3DYNAMO_BUCKET", "b")
    monkeypatch.setenv("S3DYNAMO_MAX_ATTEMPTS", "7")
    monkeypatch.setenv("S3DYNAMO_PLAINTEXT", "1")
    saver = S3DynamoSaver.from_env()
    for port in (saver.parts.engine.ports.table, saver.parts.engine.objects.port):
        retries = port.client.meta.config.retries  # type: ignore[attr-defined]
        assert retries == {"mode": "standard", "total_max_attempts": 7}
    assert S3DynamoSaver(table="t", bucket="b", plaintext=True).settings.max_attempts == 5


def _commit(table: DynamoTable, record: Any, head: Any, fence: Any = None) -> None:
    """A checkpoint's commit, as the thread store hands it to the table."""
    table.transact(commit_checkpoint(record, head, fence, 0))
