"""Bad input gets a clear error, raised before anything is written."""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import (
    CheckFailedError,
    InvalidConfigError,
    S3DynamoSaver,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.config.runnable_config import (
    MAX_NAMESPACE_BYTES,
    MAX_THREAD_ID_BYTES,
)
from tests.support.savers import RequestCounter, make_saver, thread_config


def _put(saver: S3DynamoSaver, config: dict[str, Any], values: dict[str, Any]) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = values
    cp["channel_versions"] = {k: saver.get_next_version(None, None) for k in values}
    return saver.put(config, cp, {"step": 0}, cp["channel_versions"])


def test_missing_thread_id_says_how_to_pass_it(saver: S3DynamoSaver) -> None:
    with pytest.raises(InvalidConfigError, match=r"graph.invoke\(inputs, \{'configurable'"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidConfigError, match="no thread_id"):
        _put(saver, {"configurable": {"checkpoint_ns": ""}}, {"a": 1})


def test_int_thread_id_is_its_decimal_string(saver: S3DynamoSaver) -> None:
    _put(saver, {"configurable": {"thread_id": 42, "checkpoint_ns": ""}}, {"a": 1})
    got = saver.get_tuple(thread_config("42"))
    assert got is not None and got.checkpoint["channel_values"] == {"a": 1}
    assert got.config["configurable"]["thread_id"] == "42"


@pytest.mark.parametrize("bad", [4.2, b"bytes", ["list"], None, True])
def test_other_thread_id_types_are_type_errors(
    saver: S3DynamoSaver, counter: RequestCounter, bad: Any
) -> None:
    with pytest.raises(TypeError, match="thread_id must be a str"):
        _put(saver, {"configurable": {"thread_id": bad, "checkpoint_ns": ""}}, {"a": 1})
    assert counter.total() == 0


def test_too_long_ids_are_refused_before_any_request(
    saver: S3DynamoSaver, counter: RequestCounter
) -> None:
    with pytest.raises(InvalidConfigError, match=f"limit is {MAX_THREAD_ID_BYTES}"):
        _put(saver, thread_config("x" * (MAX_THREAD_ID_BYTES + 1), checkpoint_ns=""), {"a": 1})
    with pytest.raises(InvalidConfigError, match=f"{MAX_NAMESPACE_BYTES}-byte limit"):
        _put(saver, thread_config("t", checkpoint_ns="n" * (MAX_NAMESPACE_BYTES + 1)), {"a": 1})
    assert counter.total() == 0


def test_odd_ids_work_and_stay_apart(saver: S3DynamoSaver) -> None:
    odd = ["", "#", "a#b", "ünï/cødé 🚀", "x" * MAX_THREAD_ID_BYTES, "\x00nul", "a" + "/" * 50]
    for i, tid in enumerate(odd):
        _put(saver, thread_config(tid, checkpoint_ns="sub:#|ns"), {"i": i})
    for i, tid in enumerate(odd):
        got = saver.get_tuple(thread_config(tid, checkpoint_ns="sub:#|ns"))
        assert got is not None and got.checkpoint["channel_values"] == {"i": i}
        assert got.config["configurable"]["thread_id"] == tid


def test_unserializable_value_writes_nothing(saver: S3DynamoSaver, counter: RequestCounter) -> None:
    with pytest.raises(TypeError):
        _put(saver, thread_config("t", checkpoint_ns=""), {"lock": threading.Lock()})
    config = _put(saver, thread_config("t", checkpoint_ns=""), {"a": 1})
    counter.reset()
    with pytest.raises(TypeError):
        saver.put_writes(config, [("ok", 1), ("bad", threading.Lock())], "task")
    assert counter.total() == 0
    got = saver.get_tuple(config)
    assert got is not None and got.pending_writes == []


@pytest.mark.unsupported_on("real", reason="SeaweedFS creates a missing bucket on first PUT")
def test_missing_table_and_bucket_name_the_fix(clients: tuple[Any, Any]) -> None:
    missing = f"nope-{uuid.uuid4().hex[:8]}"
    saver = make_saver(clients, table=missing, bucket=missing)
    # The region and endpoint in use come first: a table missing here may live elsewhere.
    where = r"\(region \S+, endpoint \S+\) does not exist.*another region.*terraform/"
    with pytest.raises(StoreMissingError, match=rf"table 'nope-\w+' {where}"):
        saver.get_tuple(thread_config("t"))
    with pytest.raises(CheckFailedError, match=rf"table 'nope-\w+' {where}"):
        saver.ops.check()
    saver.parts.engine.ports.table.create_if_missing()
    # check() finds the missing bucket up front, before any value is large enough for S3.
    with pytest.raises(CheckFailedError, match=rf"bucket: .*bucket 'nope-\w+' {where}"):
        saver.ops.check()
    big = os.urandom(3 * saver.settings.inline_max)
    with pytest.raises(StoreMissingError, match=rf"bucket 'nope-\w+' {where}"):
        _put(saver, thread_config("t", checkpoint_ns=""), {"big": big})


@pytest.mark.unsupported_on("real", reason="subjects need transactions, which dynalite lacks")
def test_the_subjects_key_table_is_checked_before_it_is_used(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    """The key table is a table of its own (a backup of the data table must bring back
    no key an erasure destroyed), named as DynamoDB names tables; `check()` finds it
    missing up front, with the variable to fix."""
    subjects: dict[str, Any] = {"keys": {"k1": os.urandom(32)}, "secret": os.urandom(16)}
    subjects["subject_field"] = "user_id"
    table = getattr(clients, "table", "checkpoints")
    with pytest.raises(
        InvalidConfigError, match=f"the key table is the data table \\('{table}'\\)"
    ):
        make_saver(clients, key_table=table, **subjects)
    with pytest.raises(InvalidConfigError, match=r"table 'k' is no name.*fix S3DYNAMO_KEY_TABLE"):
        make_saver(clients, key_table="k", **subjects).setup()
    assert counter.calls == {}
    make_saver(clients, **subjects).setup()  # the table, the bucket and `<table>-keys`
    missing = f"nope-{uuid.uuid4().hex[:8]}-keys"
    report = make_saver(clients, key_table=missing, **subjects).ops.check(raise_on_problem=False)
    assert [p.split(" (")[0] for p in report.problems] == [f"key table: DynamoDB table '{missing}'"]
    assert "does not exist" in report.problems[0]


def test_setup_is_idempotent(clients: tuple[Any, Any], counter: RequestCounter) -> None:
    saver = make_saver(clients)
    saver.setup()
    config = _put(saver, thread_config("t", checkpoint_ns=""), {"a": 1})
    counter.reset()
    saver.setup()  # finds both, creates nothing, keeps what is stored
    # The region check and the existence check: one HeadBucket each.
    assert counter.calls == {"dynamodb.DescribeTable": 1, "s3.HeadBucket": 2}
    got = saver.get_tuple(config)
    assert got is not None and got.checkpoint["channel_values"] == {"a": 1}


def test_large_value_lands_in_s3_and_item_stays_small(
    saver: S3DynamoSaver, clients: tuple[Any, Any]
) -> None:
    ddb, s3 = clients
    five_mb = os.urandom(5 * 1024 * 1024)
    config = _put(saver, thread_config("t", checkpoint_ns=""), {"doc": five_mb, "n": 1})
    saver.put_writes(config, [("doc", five_mb)], "task")
    items = [
        i for i in ddb.scan(TableName=saver.settings.table)["Items"] if i["pk"]["S"] != "#s3dynamo"
    ]
    sizes = [sum(len(k) + len(str(v)) for k, v in i.items()) for i in items]
    # The checkpoint and writes records, and the namespace's head (a control item) where
    # concurrent runs are detected.
    heads = [i for i in items if i["pk"]["S"].endswith("!")]
    expected_heads = 1 if saver.settings.detect_concurrent_runs else 0
    assert len(heads) == expected_heads and len(items) == 2 + expected_heads
    assert max(sizes) < 10 * 1024
    objects = s3.list_objects_v2(Bucket=saver.settings.bucket)["Contents"]
    assert sorted(o["Size"] > 5 * 1024 * 1024 for o in objects) == [True, True]
    got = saver.get_tuple(config)
    assert got is not None and got.checkpoint["channel_values"]["doc"] == five_mb
    assert got.pending_writes == [("task", "doc", five_mb)]


def test_many_inline_values_never_overflow_an_item(
    saver: S3DynamoSaver, clients: tuple[Any, Any]
) -> None:
    ddb, _ = clients
    values = {f"ch{i}": os.urandom(saver.settings.inline_max - 200) for i in range(200)}
    config = _put(saver, thread_config("t", checkpoint_ns=""), values)
    saver.put_writes(config, list(values.items()), "task")
    for item in ddb.scan(TableName=saver.settings.table)["Items"]:
        assert sum(len(v.get("B", b"")) for v in item.get("iv", {}).get("M", {}).values()) < 70_000
    got = saver.get_tuple(config)
    assert got is not None and got.checkpoint["channel_values"] == values
    assert [w[2] for w in got.pending_writes or []] == list(values.values())


def test_setup_on_a_mistyped_table_name_warns_that_it_starts_a_second_deployment(
    clients: tuple[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    make_saver(clients).setup()  # the deployment: table and bucket
    typo = make_saver(clients, table=f"{clients.table}-typo")  # the same bucket
    with caplog.at_level("WARNING", logger="langgraph.checkpoint.s3dynamo.saver"):
        typo.setup()
    (warned,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"setup() created DynamoDB table '{clients.table}-typo' (region " in warned
    assert f"for bucket '{clients.bucket}', which was already there" in warned
    assert "a typo in S3DYNAMO_TABLE" in warned and "start from nothing" in warned
    caplog.clear()
    with caplog.at_level("WARNING", logger="langgraph.checkpoint.s3dynamo.saver"):
        typo.setup()  # both there now: nothing made, nothing said
        make_saver(clients, table=f"{clients.table}-new", bucket=f"{clients.bucket}-new").setup()
    assert [r for r in caplog.records if r.levelname == "WARNING"] == []
