"""`s3dynamo memory ...` on moto in process, on a store written by S3DynamoStore and
S3DynamoCache: namespaces, show, search, delete (plan, then --yes), stats and expiry."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo.ops.memory import expire
from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.cli import command_env, environment, run


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    from moto import mock_aws

    serialize_moto()
    with mock_aws():
        yield Sandbox()


def test_memory_commands(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        saver = sandbox.saver()
        store = S3DynamoStore.from_saver(saver)
        store.put(("users", "42", "memories"), "m1", {"text": "likes tea", "kind": "pref"})
        store.put(("users", "42", "memories"), "m2", {"text": "lives in Oslo", "kind": "fact"})
        store.put(("users", "42", "docs"), "big", {"text": os.urandom(20_000).hex()})
        store.put(("users", "7", "memories"), "m3", {"text": "short-lived"}, ttl=1)
        S3DynamoCache.from_saver(saver).set({(("node",), "k"): ("v", 3600)})

    listed = run(env, "memory", "namespaces", "--json")
    assert listed.json() == [
        ["users", "42", "docs"],
        ["users", "42", "memories"],
        ["users", "7", "memories"],
    ], listed.err
    assert run(env, "memory", "namespaces", "--max-depth", "2").out.split() == [
        "users/42",
        "users/7",
    ]
    shown = run(env, "memory", "show", "users/42/memories", "m1", "--json").json()
    assert shown["value"] == {"text": "likes tea", "kind": "pref"}
    assert run(env, "memory", "show", "users/42/memories", "nope").code == 2
    found = run(env, "memory", "search", "users", "--filter", '{"kind": "fact"}', "--json")
    assert [i["key"] for i in found.json()] == ["m2"]

    stats = run(env, "memory", "stats", "--json").json()
    assert stats["store"]["namespaces"] == 3 and stats["store"]["items"] == 4
    assert stats["store"]["objects"] == 1
    assert stats["cache"]["items"] == 1
    assert "store" in run(env, "stats").out
    # The monthly cost counts the Store's and the cache's items too.
    cost = run(env, "stats", "--json").json()["cost"]
    assert cost["memory_monthly"] > 0 and cost["total_monthly"] >= cost["memory_monthly"]
    assert "of which long-term memory $" in " ".join(run(env, "stats").out.split())
    # Thread maintenance beside memory: nothing to verify, nothing to collect, no thread.
    assert run(env, "verify").code == 0
    collected = run(env, "gc", "--grace", "0", "--json").json()
    assert collected["plan"]["objects"] == 0, collected
    assert run(env, "threads", "--json").json()["threads"] == []

    plan = run(env, "memory", "delete", "users/42/memories", "m1", "--json").json()
    assert plan["plan"]["exists"] is True and plan["executed"] is False
    assert run(env, "memory", "delete", "users/42/memories", "m1", "--yes").code == 0
    assert run(env, "memory", "show", "users/42/memories", "m1").code == 2

    # Expiry: nothing is due yet; once the minute has passed the item is hidden at once
    # and the sweep removes it and its namespace.
    assert run(env, "memory", "expire", "--json").json()["plan"]["items"]["store"] == 0
    with environment(command_env(env)):
        store.space.clock = lambda: time.time() + 120
        assert store.get(("users", "7", "memories"), "m3") is None
        expire(store.space)
    assert run(env, "memory", "namespaces", "--json").json() == [
        ["users", "42", "docs"],
        ["users", "42", "memories"],
    ]


def test_a_wrong_secret_is_named(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        S3DynamoStore.from_saver(sandbox.saver()).put(("a",), "k", {"v": 1})
    wrong = run({**env, "S3DYNAMO_SECRET": "x" * 44}, "memory", "namespaces")
    assert wrong.code == 2 and "does not match the deployment" in wrong.err


def test_memory_delete_namespace_shows_the_plan_then_deletes_with_yes(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        store = S3DynamoStore.from_saver(sandbox.saver())
        store.put(("users", "42", "memories"), "m1", {"text": "likes tea"})
        store.put(("users", "42", "memories"), "m2", {"text": "lives in Oslo"})
        store.put(("users", "42", "docs"), "big", {"text": os.urandom(20_000).hex()})
        store.put(("users", "420"), "m4", {"text": "another user"})
        store.put(("users", "7", "memories"), "m3", {"text": "another user"})
    everything = run(env, "memory", "namespaces", "--json").json()

    plan = run(env, "memory", "delete-namespace", "users/42", "--json")
    assert plan.code == 0, plan.err
    assert plan.json()["executed"] is False and plan.json()["plan"]["items"] == 3
    assert {tuple(n["namespace"]): n["items"] for n in plan.json()["plan"]["namespaces"]} == {
        ("users", "42", "memories"): 2,
        ("users", "42", "docs"): 1,
    }
    shown = run(env, "memory", "delete-namespace", "users/42").out
    assert "users/42/memories  2 items" in shown and "users/42/docs  1 item" in shown
    assert "delete 3 items in 2 namespaces" in shown and "run again with --yes" in shown
    assert run(env, "memory", "namespaces", "--json").json() == everything  # nothing changed

    done = run(env, "memory", "delete-namespace", "users/42", "--yes")
    assert done.code == 0 and done.out.splitlines()[-1] == "done: deleted 3 items under users/42"
    assert run(env, "memory", "namespaces", "--json").json() == [
        ["users", "420"],
        ["users", "7", "memories"],
    ]
    assert run(env, "memory", "search", "users/42", "--json").json() == []
    # What stats counts is what holds anything: an emptied entry stays a while.
    assert run(env, "memory", "stats", "--json").json()["store"]["namespaces"] == 2
    assert "nothing to do" in run(env, "memory", "delete-namespace", "users/42", "--yes").out

    # The whole Store is no prefix: refused before anything is read.
    for whole in ("/", ""):
        refused = run(env, "memory", "delete-namespace", whole, "--yes")
        assert refused.code == 2 and "whole Store" in refused.err
    assert len(run(env, "memory", "namespaces", "--json").json()) == 2
