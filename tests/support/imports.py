"""What the import tests compare, and the source savers they import from: every tuple a
checkpointer lists for a thread, every state a graph shows, and AWS's DynamoDBSaver on
the test's AWS endpoints."""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from tests.support.savers import Clients


def counter(version: Any) -> int:
    """A channel version's counter: the int itself, or the text form's leading number
    (whole-number versions are written as text here, so the thread's next steps compare
    with them)."""
    return version if isinstance(version, int) else int(str(version).split(".")[0])


def tuples(saver: BaseCheckpointSaver[Any], tid: str) -> list[Any]:
    """Every tuple of a thread, every namespace, as values a test can compare."""
    out = []
    for t in saver.list({"configurable": {"thread_id": tid}}):
        cp = dict(t.checkpoint)
        cp["channel_versions"] = {k: counter(v) for k, v in cp["channel_versions"].items()}
        cp["versions_seen"] = {
            n: {k: counter(v) for k, v in seen.items()} for n, seen in cp["versions_seen"].items()
        }
        out.append((t.config, cp, t.metadata, t.parent_config, t.pending_writes))
    return sorted(out, key=lambda t: (t[0]["configurable"]["checkpoint_ns"], t[1]["id"]))


def same_order(saver: BaseCheckpointSaver[Any], tid: str) -> list[Any]:
    """`tuples()` with each task's writes in one order: DynamoDBSaver returns a task's
    special writes in the string order of their index (`__interrupt__`, -3, before
    `__resume__`, -4), LangGraph's own savers and this one in the order they were put,
    which LangGraph does not depend on within a task."""
    out = []
    for *rest, writes in tuples(saver, tid):
        tasks = list(dict.fromkeys(w[0] for w in writes))
        out.append((*rest, sorted(writes, key=lambda w: (tasks.index(w[0]), w[1]))))
    return out


def states(graph: Any, tid: str) -> list[Any]:
    config = {"configurable": {"thread_id": tid}}
    return [
        (s.config, s.values, s.next, s.metadata, s.tasks) for s in graph.get_state_history(config)
    ]


def dynamodb_saver(clients: Clients, key_prefix: str | None = None) -> Any:
    """AWS's DynamoDBSaver on a table and offload bucket of its own (its objects under
    `key_prefix`, if given), made with the test's clients (its key schema is not this
    saver's)."""
    from langgraph_checkpoint_aws import DynamoDBSaver

    ddb, s3 = clients
    table, bucket = f"lgaws-{uuid.uuid4().hex[:8]}", f"lgaws-{uuid.uuid4().hex[:8]}"
    # The table layout DynamoDBSaver documents: PK and SK, both strings.
    ddb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
    )
    s3.create_bucket(Bucket=bucket)
    region = ddb.meta.region_name
    offload = {"bucket_name": bucket, "key_prefix": key_prefix}
    return DynamoDBSaver(table_name=table, region_name=region, s3_offload_config=offload)
