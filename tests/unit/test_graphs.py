"""Real graphs compiled with the saver read back exactly what InMemorySaver gives."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.scenarios import (
    ASYNC_INTERRUPTS,
    INTERRUPTING,
    NO_ASYNC_INTERRUPTS,
    SCENARIOS,
    Runner,
)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_graph_matches_in_memory(saver: S3DynamoSaver, name: str, mode: str) -> None:
    if mode == "async" and name in INTERRUPTING and not ASYNC_INTERRUPTS:
        pytest.skip(NO_ASYNC_INTERRUPTS)
    scenario = SCENARIOS[name]
    expected = scenario(InMemorySaver(), Runner(mode), "thread-1")
    got = scenario(saver, Runner(mode), "thread-1")
    assert got == expected


def test_parallel_failure_does_not_rerun_successful_branch(saver: S3DynamoSaver) -> None:
    result: Any = SCENARIOS["parallel_failure"](saver, Runner("sync"), "t")
    assert result["error"] == "flaky branch failed"
    assert result["calls"] == {"good": 1, "flaky": 2}
    assert sorted(result["final"]["results"]) == ["flaky", "good", "joined 2"]
