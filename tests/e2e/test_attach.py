"""Every way a LangGraph user attaches a checkpointer works with s3dynamo:
`builder.compile(checkpointer=...)`, the functional API's `@entrypoint(checkpointer=...)`,
and the LangGraph server's custom checkpointer named in `langgraph.json`
(examples/langgraph_server/), each sync and async, on the testing kit's sealed saver."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends import aws_clients
from langgraph.checkpoint.s3dynamo.testing import Sandbox
from tests.support.scenarios import chat_graph

pytest_plugins = ["langgraph.checkpoint.s3dynamo.testing"]

SERVER_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_server"


def run(mode: str, call: Any, *args: Any) -> Any:
    """call.invoke(*args) or, for "async", asyncio.run(call.ainvoke(*args))."""
    if mode == "async":
        return asyncio.run(call.ainvoke(*args))
    return call.invoke(*args)


# ------------------------------------------------------ builder.compile(checkpointer=)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_compile_with_checkpointer(s3dynamo_saver: S3DynamoSaver, mode: str) -> None:
    graph = chat_graph(s3dynamo_saver)
    config = {"configurable": {"thread_id": f"compile-{mode}"}}
    run(mode, graph, {"messages": [HumanMessage("first")]}, config)
    out = run(mode, graph, {"messages": [HumanMessage("second")]}, config)
    assert out["turns"] == 2
    assert out["messages"][-1].content == "turn 2; heard: first / second"
    assert len(list(graph.get_state_history(config))) == 6


# --------------------------------------------- functional API: @entrypoint(checkpointer=)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_entrypoint_keeps_state_across_invocations(
    s3dynamo_saver: S3DynamoSaver, mode: str
) -> None:
    @task
    def double(n: int) -> int:
        return 2 * n

    @entrypoint(checkpointer=s3dynamo_saver)
    def running_total(n: int, *, previous: int | None = None) -> entrypoint.final[int, int]:
        total = (previous or 0) + double(n).result()
        return entrypoint.final(value=total, save=total)

    config = {"configurable": {"thread_id": f"total-{mode}"}}
    assert [run(mode, running_total, n, config) for n in (1, 2, 3)] == [2, 6, 12]
    other = {"configurable": {"thread_id": f"other-{mode}"}}
    assert run(mode, running_total, 5, other) == 10


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_entrypoint_interrupt_resumes(s3dynamo_saver: S3DynamoSaver, mode: str) -> None:
    drafted: list[str] = []

    @task
    def draft(topic: str) -> str:
        drafted.append(topic)
        return f"a draft about {topic}"

    @entrypoint(checkpointer=s3dynamo_saver)
    def review(topic: str) -> dict[str, str]:
        text = draft(topic).result()
        verdict = interrupt({"draft": text})
        return {"draft": text, "verdict": verdict}

    config = {"configurable": {"thread_id": f"review-{mode}"}}
    paused = run(mode, review, "otters", config)
    assert [i.value for i in paused["__interrupt__"]] == [{"draft": "a draft about otters"}]
    assert review.get_state(config).next == ("review",)

    done = run(mode, review, Command(resume="approved"), config)
    assert done == {"draft": "a draft about otters", "verdict": "approved"}
    # The task's result came back from the checkpoint: it did not run again on resume.
    assert drafted == ["otters"]
    assert review.get_state(config).next == ()


# ------------------------------------- LangGraph server: langgraph.json "checkpointer"


def load_from_path(spec: str, name: str) -> Any:
    """Resolve a langgraph.json "./file.py:attr" path relative to the example folder."""
    file, _, attr = spec.partition(":")
    module_spec = importlib.util.spec_from_file_location(name, SERVER_EXAMPLE / file)
    assert module_spec is not None and module_spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # as an import would; type hints resolve through it
    module_spec.loader.exec_module(module)
    return getattr(module, attr)


def langgraph_server_run(sandbox: Sandbox) -> None:
    conf = json.loads((SERVER_EXAMPLE / "langgraph.json").read_text())
    graph = load_from_path(conf["graphs"]["agent"], "example_server_agent")
    make_checkpointer = load_from_path(conf["checkpointer"]["path"], "example_server_cp")
    assert graph.checkpointer is None  # the server attaches one

    async def serve() -> list[str]:
        # What the server does: enter the context manager once, attach the saver to the
        # graph it serves, run requests through the async API.
        async with make_checkpointer() as saver:
            assert isinstance(saver, S3DynamoSaver)
            served = graph.copy(update={"checkpointer": saver})
            config = {"configurable": {"thread_id": "server-thread"}}
            replies = []
            for text in ("remember the milk", "and the bread"):
                out = await served.ainvoke({"messages": [HumanMessage(text)]}, config)
                replies.append(out["messages"][-1].content)
            return replies

    # The sandbox's table and bucket exist before the server starts (Terraform's job).
    reader = sandbox.saver()
    assert asyncio.run(serve()) == [
        "so far you said: remember the milk",
        "so far you said: remember the milk | and the bread",
    ]
    # from_env() found the sandbox's storage and keys: another saver reads the thread.
    stored = reader.get_tuple({"configurable": {"thread_id": "server-thread"}})
    assert stored is not None
    assert len(stored.checkpoint["channel_values"]["messages"]) == 4


def test_langgraph_server_checkpointer(s3dynamo_sandbox: Sandbox) -> None:
    langgraph_server_run(s3dynamo_sandbox)


def test_langgraph_server_checkpointer_over_http(s3dynamo_server_sandbox: Sandbox) -> None:
    langgraph_server_run(s3dynamo_server_sandbox)


def test_langgraph_server_with_the_region_of_its_env_example(
    s3dynamo_server_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.env.example` sets AWS_REGION alone, as most tools do: the server's saver finds it."""
    example = dict(
        line.split("=", 1)
        for line in (SERVER_EXAMPLE / ".env.example").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    assert "AWS_REGION" in example and "AWS_DEFAULT_REGION" not in example
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", example["AWS_REGION"])
    monkeypatch.setattr(aws_clients, "_session", None)
    langgraph_server_run(s3dynamo_server_sandbox)
