"""A data subject's Store puts on the DynamoDB and S3 adapters: their transaction checks
the subject's fence and returns no old item, so each item goes only while it holds the
object last seen there, and a refusal brings the item back in the cancellation
(`ReturnValuesOnConditionCheckFailure`). Two processes replace each other's large
values; every replaced object goes with incremental collection."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.savers import RequestCounter, make_saver

pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")

NS = ("users", "alice", "memories")
SUBJECTS = {"subject_field": "user_id", "subject_label": 1, "keys": {"k1": b"k" * 32}}


def large() -> dict[str, str]:
    return {"text": os.urandom(20_000).hex()}


def test_two_processes_replacing_each_others_values_name_every_object(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    first = make_saver(clients, secret=b"s" * 16, **SUBJECTS)
    first.setup()
    second = make_saver(clients, secret=b"s" * 16, **SUBJECTS)  # its own adapters
    mine, theirs = S3DynamoStore.from_saver(second), S3DynamoStore.from_saver(first)
    theirs.put(NS, "m1", large())
    mine.put(NS, "m1", {"text": "short"})  # its lease, from a read of the entry
    mine.put(NS, "m1", large())
    theirs.put(NS, "m1", large())
    counter.reset()
    mine.batch([PutOp(NS, "m1", {"text": "done"}), PutOp(NS, "m2", large())])
    # Refused on the object the other process wrote, then sent again expecting it.
    assert counter["dynamodb.TransactWriteItems"] == 2
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    collection = second.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    assert collection.execute(now=later) == 3
    assert mine.get(NS, "m1").value == {"text": "done"}
    report = second.ops.verify()
    assert report.problems == [] and report.awaiting_collection == 0
