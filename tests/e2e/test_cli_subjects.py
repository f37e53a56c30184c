"""`s3dynamo export-subject`, `erase-subject`, `erasures` and `subject-hash` on moto in
process, on a deployment whose threads' subject is their `user_id` and whose Store
namespaces' is their second label: an export of a user's data as JSON Lines, an erasure
planned then carried out, and the record an auditor reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support import chats
from tests.support.cli import command_env, environment, one_line_error, run


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    from moto import mock_aws

    serialize_moto()
    with mock_aws():
        yield Sandbox()


def test_a_users_data_is_exported_then_erased(sandbox: Sandbox, tmp_path: Path) -> None:
    env = {
        **sandbox.environment(),
        "S3DYNAMO_SUBJECT_FIELD": "user_id",
        "S3DYNAMO_SUBJECT_LABEL": "1",
    }
    with environment(command_env(env)):
        saver = sandbox.saver(subject_field="user_id", subject_label=1)
        graph = chats.graph(saver)
        for user in ("alice", "bob"):
            config = {"configurable": {"thread_id": f"{user}-1", "user_id": user}}
            graph.invoke({"messages": [HumanMessage(f"hello from {user}", id="h")]}, config)
            S3DynamoStore.from_saver(saver).put(
                ("users", user, "memories"), "m1", {"text": f"{user} likes tea"}
            )

    exported = tmp_path / "alice.jsonl"
    done = run(env, "export-subject", "alice", "--output", str(exported))
    assert done.code == 0, done.err
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    kinds = {r["type"] for r in records}
    assert kinds == {"checkpoint", "store_item"}
    assert {r["thread_id"] for r in records if r["type"] == "checkpoint"} == {"alice-1"}
    assert "hello from alice" in exported.read_text() and "bob" not in exported.read_text()
    (item,) = [r for r in records if r["type"] == "store_item"]
    assert item["namespace"] == ["users", "alice", "memories"]
    assert item["value"] == {"text": "alice likes tea"}
    assert f"exported {len(records)} records" in done.err and not done.out

    plan = run(env, "erase-subject", "alice", "--json").json()
    assert plan["executed"] is False
    assert plan["plan"]["threads"] == 1 and plan["plan"]["namespaces"] == 1
    shown = run(env, "erase-subject", "alice").out
    assert "1 thread, 1 Store namespace" in shown and "nothing changed" in shown
    erased = run(env, "erase-subject", "alice", "--yes")
    assert erased.code == 0, erased.err
    assert "done: erased subject" in erased.out and "1 thread" in erased.out

    (record,) = run(env, "erasures", "--json").json()
    assert record["subject"] == run(env, "subject-hash", "alice").out.strip()
    hashed = run(env, "--json", "subject-hash", "alice").json()
    assert hashed == {"subject_hash": record["subject"]}
    assert record["counts"]["threads"] == 1 and record["counts"]["items"] == 1
    assert "alice" not in json.dumps(record)
    assert run(env, "erase-subject", "alice").out.strip().endswith("nothing to do")
    # bob is all there is.
    bob = run(env, "export-subject", "bob").out.splitlines()  # to standard output
    assert bob and all("alice" not in line for line in bob)
    assert {json.loads(line)["type"] for line in bob} == {"checkpoint", "store_item"}
    assert run(env, "threads", "--json").json()["threads"][0]["thread_id"] == "bob-1"


def test_a_catalog_not_built_yet_is_named_with_the_command_that_builds_it(
    sandbox: Sandbox,
) -> None:
    """Threads written before the subject field was declared: exporting or erasing a
    subject is refused until `s3dynamo catalog build` has filed them, in one line, exit 2
    (a step to take, as a setting to fix is), and nothing is written."""
    env = sandbox.environment()
    with environment(command_env(env)):
        config = {"configurable": {"thread_id": "a-1", "user_id": "alice"}}
        chats.graph(sandbox.saver()).invoke({"messages": [HumanMessage("hi", id="h")]}, config)
    env = {**env, "S3DYNAMO_SUBJECT_FIELD": "user_id"}
    for command in ("export-subject", "erase-subject"):
        refused = run(env, command, "alice")
        assert refused.code == 2, (command, refused.err)
        assert "catalog build" in one_line_error(refused) and refused.out == ""
