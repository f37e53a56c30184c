"""Request budgets from the design, counted exactly on the botocore clients."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.blobs.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from tests.support import savers
from tests.support.graphs import converse, delta_graph
from tests.support.savers import (
    BACKEND,
    PUT_REQUEST,
    RequestCounter,
    make_saver,
    thread_config,
)
from tests.support.scenarios import chat_graph


@pytest.fixture(autouse=True, params=["no catalog", "catalog"])
def catalog(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every budget here holds whether or not the deployment declares catalog fields
    (LangGraph's server's three): an ordinary put files nothing new."""
    declared = request.param == "catalog"
    if declared and BACKEND == "real":
        pytest.skip("dynalite: detection off, so a thread's first put files it with a batch")
    if declared:
        plain = savers.make_saver

        def with_catalog(clients: Any, **kwargs: Any) -> S3DynamoSaver:
            kwargs.setdefault("catalog_fields", "langgraph")
            return plain(clients, **kwargs)

        monkeypatch.setattr(savers, "make_saver", with_catalog)
        monkeypatch.setattr(f"{__name__}.make_saver", with_catalog)
        monkeypatch.setattr("tests.aws.conftest.make_saver", with_catalog)
    return declared


def test_constructor_makes_no_request(clients: tuple[Any, Any], counter: RequestCounter) -> None:
    make_saver(clients)
    assert counter.total() == 0


def test_from_env_makes_no_request_and_builds_no_client(monkeypatch: Any) -> None:
    monkeypatch.setenv("S3DYNAMO_TABLE", "t")
    monkeypatch.setenv("S3DYNAMO_BUCKET", "b")
    monkeypatch.setenv("S3DYNAMO_PREFIX", "agents/")
    monkeypatch.setenv("S3DYNAMO_PLAINTEXT", "1")
    saver = S3DynamoSaver.from_env()
    settings = saver.settings
    assert (settings.table, settings.bucket, settings.prefix) == ("t", "b", "agents/")
    # The ports (and their boto3 clients) are built on first use, not here.
    assert not any(
        saver.parts.engine.ports.built(p) for p in ("records", "control", "scans", "objects")
    )
    assert saver.parts.clients.dynamodb is None and saver.parts.clients.s3 is None


def test_from_env_reads_the_size_settings_and_names_a_bad_one(monkeypatch: Any) -> None:
    for name, value in (("TABLE", "t"), ("BUCKET", "b"), ("PLAINTEXT", "1")):
        monkeypatch.setenv(f"S3DYNAMO_{name}", value)
    monkeypatch.setenv("S3DYNAMO_INLINE_MAX", "4096")
    monkeypatch.setenv("S3DYNAMO_DELTA_MAX", "3072")
    saver = S3DynamoSaver.from_env()
    assert (saver.settings.inline_max, saver.settings.delta_max) == (4096, 3072)
    assert (saver.parts.engine.inline_max, saver.settings.delta_max) == (4096, 3072)
    monkeypatch.setenv("S3DYNAMO_DELTA_MAX", "3 KiB")
    with pytest.raises(
        InvalidConfigError, match="S3DYNAMO_DELTA_MAX must be a whole number of bytes, got '3 KiB'"
    ):
        S3DynamoSaver.from_env()


def _large_and_small(saver: S3DynamoSaver) -> tuple[dict[str, Any], dict[str, Any]]:
    cp = empty_checkpoint()
    big = os.urandom(3 * saver.settings.inline_max).hex()  # incompressible: lands in S3
    cp["channel_values"] = {"big1": big, "big2": big + "x", "small": "s"}
    versions = {ch: saver.get_next_version(None, None) for ch in cp["channel_values"]}
    cp["channel_versions"] = versions
    return cp, versions


def _in_order(clients: tuple[Any, Any]) -> list[str]:
    """The operations the clients send from now on, in the order they start."""
    sent: list[str] = []
    for client in clients:
        service = client.meta.service_model.service_name
        client.meta.events.register(
            "before-call.*.*", lambda model, s=service, **_: sent.append(f"{s}.{model.name}")
        )
    return sent


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
def test_put_is_an_intent_one_wave_then_one_dynamodb_write(
    counter: RequestCounter, clients: tuple[Any, Any]
) -> None:
    saver = make_saver(clients, detect_concurrent_runs=True)
    saver.setup()
    counter.reset()
    cp, versions = _large_and_small(saver)
    sent = _in_order(clients)
    saver.put(thread_config("t", checkpoint_ns=""), cp, {"step": 1}, versions)
    # The upload intent (1 PutItem) before the wave, the commit (which deletes it) after.
    assert counter.calls == {
        "dynamodb.PutItem": 1,
        "s3.PutObject": 2,
        "dynamodb.TransactWriteItems": 1,
    }
    assert sent == [
        "dynamodb.PutItem",
        "s3.PutObject",
        "s3.PutObject",
        "dynamodb.TransactWriteItems",
    ]
    assert not saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).intents


def test_without_detection_a_put_deletes_its_intent_after_its_plain_commit(
    counter: RequestCounter, clients: tuple[Any, Any], catalog: bool
) -> None:
    """Concurrent-run detection off (a store without transactions): the commit stays one
    PutItem, and the intent goes in a request after it. A thread's first put files it in
    the catalog with one BatchWriteItem before the commit."""
    saver = make_saver(clients, detect_concurrent_runs=False)
    saver.setup()
    counter.reset()
    cp, versions = _large_and_small(saver)
    sent = _in_order(clients)
    config = saver.put(thread_config("t", checkpoint_ns=""), cp, {"step": 1}, versions)
    assert sent == [
        "dynamodb.PutItem",
        "s3.PutObject",
        "s3.PutObject",
        *(["dynamodb.BatchWriteItem"] if catalog else []),
        "dynamodb.PutItem",
        "dynamodb.BatchWriteItem",
    ]
    counter.reset()
    saver.put_writes(config, [("a", os.urandom(3 * saver.settings.inline_max))], "task")
    assert counter.calls == {
        "dynamodb.PutItem": 1,
        "s3.PutObject": 1,
        "dynamodb.UpdateItem": 1,
        "dynamodb.BatchWriteItem": 1,
    }
    assert not saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).intents


def test_put_with_nothing_to_upload_writes_no_intent(
    saver: S3DynamoSaver, counter: RequestCounter
) -> None:
    cp = empty_checkpoint()
    cp["channel_values"] = {"small": "s"}
    cp["channel_versions"] = versions = {"small": saver.get_next_version(None, None)}
    saver.put(thread_config("t", checkpoint_ns=""), cp, {"step": 1}, versions)
    assert counter.calls == {PUT_REQUEST: 1}


def test_put_uploads_only_new_versions(saver: S3DynamoSaver, counter: RequestCounter) -> None:
    cp, versions = _large_and_small(saver)
    first = saver.put(thread_config("t", checkpoint_ns=""), cp, {"step": 1}, versions)
    saver.get_tuple(first)
    counter.reset()
    child = dict(cp, id=empty_checkpoint()["id"])
    bumped = saver.get_next_version(versions["small"], None)
    child["channel_versions"] = dict(versions, small=bumped)
    child["channel_values"] = dict(cp["channel_values"], small="t")
    saver.put(first, child, {"step": 2}, {"small": child["channel_versions"]["small"]})
    # The two large values are referenced, not uploaded again; the small one is inline.
    assert counter.calls == {PUT_REQUEST: 1}
    got = saver.get_tuple(thread_config("t"))
    assert got is not None and got.checkpoint["channel_values"] == child["channel_values"]


def test_put_writes_is_one_dynamodb_write(saver: S3DynamoSaver, counter: RequestCounter) -> None:
    cp, versions = _large_and_small(saver)
    config = saver.put(thread_config("t", checkpoint_ns=""), cp, {}, versions)
    counter.reset()
    saver.put_writes(config, [("a", 1), ("b", "x" * 10), ("c", {"k": [1, 2]})], "task-1")
    assert counter.calls == {"dynamodb.UpdateItem": 1}
    counter.reset()
    saver.put_writes(config, [("a", os.urandom(3 * saver.settings.inline_max))], "task-2")
    # A large write: its intent first, then the object, then the merge with the intent's
    # delete in one transaction (without detection, where the tier may lack transactions,
    # the merge alone and the intent's delete after it).
    closing = (
        {"dynamodb.TransactWriteItems": 1}
        if saver.settings.detect_concurrent_runs
        else {"dynamodb.UpdateItem": 1, "dynamodb.BatchWriteItem": 1}
    )
    assert counter.calls == {"dynamodb.PutItem": 1, "s3.PutObject": 1, **closing}
    assert not saver.ops.plan_incremental_garbage_collection(grace=timedelta(0)).intents


def test_get_tuple_is_one_query_then_one_wave(
    saver: S3DynamoSaver, counter: RequestCounter, clients: tuple[Any, Any]
) -> None:
    cp, versions = _large_and_small(saver)
    config = saver.put(thread_config("t", checkpoint_ns=""), cp, {}, versions)
    saver.put_writes(config, [("a", os.urandom(3 * saver.settings.inline_max))], "task")
    for target in (thread_config("t"), config):  # latest, then by id
        # Another process's first read: the thread's Query with the deployment record's
        # in one wave (a new thread must be checked against it), then one wave for the
        # three objects; its next read of another thread, one Query.
        reader = make_saver(clients)
        counter.reset()
        got = reader.get_tuple(target)
        assert got is not None and got.checkpoint["channel_values"] == cp["channel_values"]
        assert counter.calls == {"dynamodb.Query": 2, "s3.GetObject": 3}
        counter.reset()
        assert reader.get_tuple(thread_config("new")) is None
        assert counter.calls == {"dynamodb.Query": 1}
        # The writer's own process holds what it wrote: no S3 request at all.
        counter.reset()
        assert saver.get_tuple(target) == got
        assert counter.calls == {"dynamodb.Query": 1}


def test_graph_turn_costs(saver: S3DynamoSaver, counter: RequestCounter) -> None:
    """A chat turn after the first: exact requests for one invoke of a one-node graph."""
    graph = chat_graph(saver)
    config = thread_config("chat")
    graph.invoke({"messages": [HumanMessage("hi", id="h0")]}, config)
    counter.reset()
    graph.invoke({"messages": [HumanMessage("again", id="h1")]}, config)
    # get_tuple (1 Query); one TransactWriteItems per checkpoint (input, after __start__,
    # after respond: the record and its namespace's head) and one UpdateItem per task's
    # writes. Unchanged values are carried from
    # the item read at the start (no re-read), and every value here fits inline: no S3.
    assert counter.calls == {
        "dynamodb.Query": 1,
        PUT_REQUEST: 3,
        "dynamodb.UpdateItem": 2,
    }


def test_rebuild_of_thirty_turn_thread_is_three_queries_and_one_wave(
    saver: S3DynamoSaver, counter: RequestCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = delta_graph(saver)
    converse(graph, "t", 30)
    waves: list[int] = []
    real_fetch = ObjectIO.fetch

    def counting_fetch(self: ObjectIO, needed: Mapping[str, str], **kw: Any) -> dict[str, bytes]:
        waves.append(len(needed))
        return real_fetch(self, needed, **kw)

    monkeypatch.setattr(ObjectIO, "fetch", counting_fetch)
    fresh = make_saver(
        (saver.parts.clients.dynamodb, saver.parts.clients.s3),
        table=saver.settings.table,
        bucket=saver.settings.bucket,
    )
    counter.reset()
    state = delta_graph(fresh).get_state({"configurable": {"thread_id": "t"}})
    assert len(state.values["messages"]) == 60
    assert counter["dynamodb.Query"] <= 3
    assert counter.total() == counter["dynamodb.Query"] + counter["s3.GetObject"]
    assert len([w for w in waves if w]) <= 1
