"""DeltaChannel threads: rebuilt state equals InMemorySaver's through every operation
that touches history (the rebuild's request budget is in `tests/aws/test_budgets.py`)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo import S3DynamoSaver, ThreadNotFoundError
from tests.support.graphs import converse, delta_graph, history, view


@pytest.mark.parametrize("frequency", [100, 4, 1])
def test_thirty_turns_match_in_memory(saver: S3DynamoSaver, frequency: int) -> None:
    ours, theirs = delta_graph(saver, frequency), delta_graph(InMemorySaver(), frequency)
    for graph in (ours, theirs):
        converse(graph, "t", 30)
    assert view(ours, "t") == view(theirs, "t")
    assert len(view(ours, "t")["values"]["messages"]) == 60
    assert history(ours, "t") == history(theirs, "t")


def test_parallel_writers_in_one_step(saver: S3DynamoSaver) -> None:
    ours, theirs = delta_graph(saver, 3, True), delta_graph(InMemorySaver(), 3, True)
    for graph in (ours, theirs):
        converse(graph, "t", 7)
    assert view(ours, "t") == view(theirs, "t")


def test_update_state_fork(saver: S3DynamoSaver) -> None:
    results = []
    for cp in (saver, InMemorySaver()):
        graph = delta_graph(cp, 3)
        converse(graph, "t", 6)
        config = {"configurable": {"thread_id": "t"}}
        old = [s for s in graph.get_state_history(config) if s.values.get("turns") == 2][-1]
        forked = graph.update_state(old.config, {"messages": ["user: a fork"]})
        graph.invoke(None, forked)
        converse(graph, "t", 2, start=100)
        results.append((view(graph, "t"), history(graph, "t")))
    assert results[0] == results[1]
    assert "user: message 5" not in results[0][0]["values"]["messages"]


def test_prune_keep_latest_keeps_what_reconstruction_needs(saver: S3DynamoSaver) -> None:
    # Two updates a turn, a snapshot every 4: after 9 turns the latest is 2 past one.
    graph = delta_graph(saver, 4)
    converse(graph, "t", 9)
    before = view(graph, "t")
    saver.prune(["t"], strategy="keep_latest")
    assert view(graph, "t") == before
    kept = list(saver.list({"configurable": {"thread_id": "t"}}))
    assert 1 < len(kept) <= 1 + 3 * 2  # ancestors back to the last snapshot, no more
    converse(graph, "t", 1, start=9)
    assert len(view(graph, "t")["values"]["messages"]) == 20


def test_copy_thread_reads_back_equal(saver: S3DynamoSaver) -> None:
    graph = delta_graph(saver, 4)
    converse(graph, "src", 9)
    saver.copy_thread("src", "dst")
    assert view(graph, "dst") == view(graph, "src")
    assert history(graph, "dst") == history(graph, "src")
    converse(graph, "dst", 1, start=50)
    assert len(view(graph, "src")["values"]["messages"]) == 18


def test_delete_for_runs_of_a_later_run(saver: S3DynamoSaver) -> None:
    graph = delta_graph(saver, 4)
    # As on LangGraph's platform, each run carries its id in the config's metadata.
    for i in range(5):
        run = {"configurable": {"thread_id": "t"}, "metadata": {"run_id": f"run-{i}"}}
        graph.invoke({"messages": [f"user: message {i}"]}, run)
    before = view(graph, "t")
    later = {"configurable": {"thread_id": "t"}, "metadata": {"run_id": "run-later"}}
    graph.invoke({"messages": ["user: regretted"]}, later)
    assert graph.get_state(later).metadata["run_id"] == "run-later"
    saver.delete_for_runs(["run-later"])
    assert view(graph, "t") == before
    graph.invoke({"messages": ["user: again"]}, later)
    assert view(graph, "t")["values"]["messages"][-2:][0] == "user: again"


def test_unknown_prune_strategy_names_the_valid_ones(saver: S3DynamoSaver) -> None:
    with pytest.raises(ValueError, match="'keep_latest', 'delete'"):
        saver.prune(["t"], strategy="oldest")


def test_unknown_threads_are_noops_and_a_copy_of_one_is_refused(saver: S3DynamoSaver) -> None:
    saver.prune(["nobody"], strategy="keep_latest")
    saver.prune(["nobody"], strategy="delete")
    saver.delete_for_runs(["no-such-run"])
    with pytest.raises(ThreadNotFoundError, match="source 'nobody' has no checkpoints"):
        saver.copy_thread("nobody", "somebody")
    assert list(saver.list({"configurable": {"thread_id": "somebody"}})) == []


def test_bundled_writes_older_than_a_seed_are_not_replayed(saver: S3DynamoSaver) -> None:
    """A channel's history stops at its seed even when another channel walks further and
    passes a checkpoint whose writes were bundled (over 64 in one call)."""
    from langgraph.checkpoint.base import empty_checkpoint

    def put(parent: Any, values: dict[str, Any], versions: dict[str, str]) -> Any:
        cp = empty_checkpoint()
        cp["channel_values"], cp["channel_versions"] = values, versions
        config = parent or {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        return saver.put(config, cp, {}, versions)

    root = put(None, {}, {"x": "1", "y": "1"})
    saver.put_writes(root, [("x", f"old-{i}") for i in range(70)], "task")
    seeded = put(root, {"x": ["seed"]}, {"x": "2", "y": "1"})
    target = put(seeded, {}, {"x": "2", "y": "1"})
    history = saver.get_delta_channel_history(config=target, channels=["x", "y"])
    assert history["x"] == {"writes": [], "seed": ["seed"]}
    assert history["y"] == {"writes": []}
