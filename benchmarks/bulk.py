"""Deleting, copying and pruning a long thread: AWS requests, stored bytes and the latency
model, for s3dynamo and, in the same run, AWS's DynamoDBSaver (`delete_thread`; its
`copy_thread` and `prune` are LangGraph's base ones, which raise NotImplementedError:
the script checks that they still do).

    .venv/bin/python benchmarks/bulk.py [--turns 100]

Each saver gets a fresh moto account and one thread of `--turns` turns of a two-step
graph (START -> first -> second: four checkpoints and three tasks' writes a turn, every
value small). Then, each with the modelled latency slept inside every request in the
calling thread (`aws_mock.RequestMeter`: 6 ms a DynamoDB request, 20 ms an S3 GET,
LIST or DELETE, 30 ms an S3 PUT), so that requests sent in parallel overlap as they
would on AWS: s3dynamo copies the thread twice, prunes one copy with `keep_last` 5 and
the other with `keep_latest`, deletes the original, copies a thread whose state holds
a 2 MB document (the copy shares its objects), then deletes that source and, last, the
copy; DynamoDBSaver deletes its thread. Reported per
operation: requests by kind, the stored bytes (table items as DynamoDB bills them, plus
objects) it added or removed, their modelled latencies summed ("serial"), and the wall
time with the latency slept, less what moto spent answering ("modelled wall"): the
latency a Lambda in the table's region would wait, give or take the saver's own CPU time.
"""

from __future__ import annotations

import argparse
import operator
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).parent))

from aws_mock import (
    MOTO,
    RequestMeter,
    aws_account,
    new_client,
    stored_bytes,
    use_fake_credentials,
)
from langgraph.graph import END, START, StateGraph
from savers import create_dynamodb_saver_resources
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import S3DynamoSaver


class Steps(TypedDict):
    steps: Annotated[list[str], operator.add]


def two_step_graph(checkpointer: Any) -> Any:
    def first(state: Steps) -> dict[str, Any]:
        return {"steps": [f"first read {len(state['steps'])}"]}

    def second(state: Steps) -> dict[str, Any]:
        return {"steps": [f"second read {len(state['steps'])}"]}

    g = StateGraph(Steps)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    return g.compile(checkpointer=checkpointer)


class Document(TypedDict):
    document: str


def document_graph(checkpointer: Any) -> Any:
    g = StateGraph(Document)
    g.add_node("read", lambda state: {})
    g.add_edge(START, "read")
    g.add_edge("read", END)
    return g.compile(checkpointer=checkpointer)


def converse(checkpointer: Any, tid: str, turns: int) -> None:
    graph = two_step_graph(checkpointer)
    for i in range(turns):
        graph.invoke({"steps": [f"turn {i}"]}, {"configurable": {"thread_id": tid}})


def timed(
    meter: RequestMeter, op: Callable[[], object], where: tuple[str, str | None]
) -> dict[str, Any]:
    stored0 = stored_bytes(*where).total
    counts0, serial0 = meter.snapshot()
    _, moto_wall0 = MOTO.snapshot()
    meter.sleep = True
    wall0 = time.perf_counter()
    try:
        op()
    finally:
        wall = time.perf_counter() - wall0
        meter.sleep = False
    counts, serial = meter.snapshot()
    _, moto_wall = MOTO.snapshot()
    return {
        "requests": dict(sorted((counts - counts0).items())),
        "serial_ms": (serial - serial0) * 1000,
        "wall_ms": (wall - (moto_wall - moto_wall0)) * 1000,
        "stored": stored_bytes(*where).total - stored0,
    }


def s3dynamo_rows(turns: int) -> list[tuple[str, dict[str, Any]]]:
    with aws_account():
        ddb, s3 = new_client("dynamodb"), new_client("s3")
        meter = RequestMeter()
        meter.instrument(ddb)
        meter.instrument(s3)
        saver = S3DynamoSaver(
            table="bulk",
            bucket="bulk",
            dynamodb_client=ddb,
            s3_client=s3,
            keys={"k1": os.urandom(32)},
            secret=os.urandom(32),
        )
        saver.setup()
        converse(saver, "t", turns)
        items = len(saver.store.records("t"))
        where = ("bulk", "bulk")

        def run(op: Callable[[], object]) -> dict[str, Any]:
            return timed(meter, op, where)

        rows = [
            (f"copy_thread ({items} items)", run(lambda: saver.copy_thread("t", "c"))),
            ("prune keep_last 5 (of the copy)", run(lambda: saver.prune(["c"], keep_last=5))),
            (f"copy_thread ({items} items), again", run(lambda: saver.copy_thread("t", "d"))),
            ("prune keep_latest (of that copy)", run(lambda: saver.prune(["d"]))),
            (f"delete_thread ({items} items)", run(lambda: saver.delete_thread("t"))),
        ]
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
        assert len(list(saver.list({"configurable": {"thread_id": "c"}}))) == 5
        # A thread whose state holds a 2 MB document: one value object, sealed.
        document = document_graph(saver)
        document.invoke(
            {"document": os.urandom(1 << 20).hex()}, {"configurable": {"thread_id": "doc"}}
        )
        rows.append(
            ("copy_thread (a 2 MB document)", run(lambda: saver.copy_thread("doc", "fork")))
        )
        fork = {"configurable": {"thread_id": "fork"}}
        forked = saver.get_tuple(fork)
        # The source goes first: the copy still reads the objects it shares.
        rows.append(
            ("delete_thread (the document's source)", run(lambda: saver.delete_thread("doc")))
        )
        after = saver.get_tuple(fork)
        assert forked is not None and after is not None
        assert after.checkpoint["channel_values"] == forked.checkpoint["channel_values"]
        # The last thread that shares them: the objects go with it.
        rows.append(
            ("delete_thread (the copy, the last)", run(lambda: saver.delete_thread("fork")))
        )
        return rows


def dynamodb_saver_rows(turns: int) -> list[tuple[str, dict[str, Any]]]:
    from langgraph_checkpoint_aws import DynamoDBSaver

    with aws_account():
        create_dynamodb_saver_resources("lgaws", "lgaws")
        saver = DynamoDBSaver(
            table_name="lgaws",
            region_name="us-east-1",
            s3_offload_config={"bucket_name": "lgaws"},
        )
        meter = RequestMeter()
        meter.instrument(saver.client)
        meter.instrument(saver.storage.s3_client)
        converse(saver, "t", turns)
        for missing in (lambda: saver.copy_thread("t", "c"), lambda: saver.prune(["t"])):
            try:
                missing()
            except NotImplementedError:
                pass
            else:
                raise SystemExit("DynamoDBSaver has copy_thread or prune now: measure it here")
        row = ("delete_thread", timed(meter, lambda: saver.delete_thread("t"), ("lgaws", "lgaws")))
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
        return [row]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument(
        "--s3dynamo-only", action="store_true", help="skip DynamoDBSaver (to compare versions)"
    )
    args = parser.parse_args()
    use_fake_credentials()
    print(f"{args.turns} turns of a two-step graph ({4 * args.turns} checkpoints)\n")
    print("| saver | operation | requests | stored bytes | serial ms | modelled wall ms |")
    print("|---|---|---|---|---|---|")
    runs: list[tuple[str, Callable[[int], list[tuple[str, dict[str, Any]]]]]] = [
        ("s3dynamo, sealed", s3dynamo_rows)
    ]
    if not args.s3dynamo_only:
        runs.append(("DynamoDBSaver", dynamodb_saver_rows))
    for name, run in runs:
        rows = run(args.turns)
        for op, m in rows:
            requests = ", ".join(f"{k} {n}" for k, n in m["requests"].items())
            print(
                f"| {name} | {op} | {requests} | {m['stored']:+,} | {m['serial_ms']:,.0f} "
                f"| {m['wall_ms']:,.0f} |"
            )


if __name__ == "__main__":
    main()
