"""A user's own `with mock_aws():` test, with no testing kit and no call to
`serialize_moto()`: a graph with parallel branches and a subgraph, 50 runs sync and 50
async, none failing. Run in a fresh interpreter, so nothing this suite did before (its
fixtures serialize moto) helps it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

USER_TEST = textwrap.dedent(
    """
    import asyncio, operator, os, base64
    from typing import Annotated
    from typing_extensions import TypedDict
    from moto import mock_aws
    from langgraph.graph import START, StateGraph
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.s3dynamo import S3DynamoSaver

    class State(TypedDict):
        log: Annotated[list[str], operator.add]

    def build(saver):
        sub = StateGraph(State)
        sub.add_node("inner", lambda s: {"log": ["inner"]})
        sub.add_edge(START, "inner")
        g = StateGraph(State)
        for name in ("a", "b", "c", "d"):
            g.add_node(name, lambda s, name=name: {"log": [name]})
            g.add_edge(START, name)
        g.add_node("sub", sub.compile())
        for name in ("a", "b", "c", "d"):
            g.add_edge(name, "sub")
        return g.compile(checkpointer=saver)

    first = build(InMemorySaver()).invoke({"log": []}, {"configurable": {"thread_id": "x"}})
    expected = sorted(first["log"])
    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_REGION="us-east-1")
    with mock_aws():
        saver = S3DynamoSaver(
            table="agent-checkpoints", bucket="agent-checkpoints",
            keys={"k": os.urandom(32)}, secret=base64.b64encode(os.urandom(32)).decode(),
        )
        saver.setup()
        graph = build(saver)
        failures = 0
        for i in range(50):
            try:
                out = graph.invoke({"log": []}, {"configurable": {"thread_id": f"s{i}"}})
                assert sorted(out["log"]) == expected, out
            except Exception as exc:
                failures += 1
                print("sync", type(exc).__name__, exc)

        async def many():
            runs = [
                graph.ainvoke({"log": []}, {"configurable": {"thread_id": f"a{i}"}})
                for i in range(50)
            ]
            return await asyncio.gather(*runs, return_exceptions=True)

        for out in asyncio.run(many()):
            if isinstance(out, BaseException) or sorted(out["log"]) != expected:
                failures += 1
                print("async", repr(out)[:300])
        print("failures", failures)
    """
)


def test_a_bare_mock_aws_test_with_parallel_branches_and_a_subgraph() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", USER_TEST], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "failures 0", proc.stdout[-3000:]
