"""The LangGraph server itself (`langgraph dev`: langgraph-api on its in-memory runtime, at
the versions tests/constraints.txt pins, in .venv-server) with examples/langgraph_server/'s
langgraph.json: S3DynamoSaver as its checkpointer and S3DynamoStore as its store, on moto
server, driven through langgraph-sdk as a user drives it.

A copy of the example folder gets a `.env` naming a fresh table, bucket and keys, and one
more graph (tests/support/server_graph.py: a draft, then a verdict through an interrupt,
kept in the Store). The scenario: the example's agent over two runs; an interrupt,
resume, history, an `update_state` fork resumed, `threads.copy`; runs meeting a running
one (reject, interrupt, enqueue, rollback); `threads.delete`; the store API. The same
scenario on the server's built-in persistence (the same folder without the checkpointer
and store entries) gives the same answers. Afterwards no stored byte holds a thread id,
a topic, a verdict, a message or a Store value in plaintext. The server listens on
127.0.0.1 only, and is stopped by the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

from langgraph.checkpoint.s3dynamo.testing import Sandbox, moto_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "langgraph_server"
SCENARIO_GRAPH = ROOT / "tests" / "support" / "server_graph.py"
LANGGRAPH = ROOT / ".venv-server" / "bin" / "langgraph"

# No call leaves the machine: no analytics, no version check, no LangSmith tracing.
QUIET = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")

pytestmark = pytest.mark.skipif(
    not LANGGRAPH.exists(),
    reason="the LangGraph server's environment is missing: make .venv-server/.installed "
    "(make test-e2e makes it)",
)


# ----------------------------------------------------------------------------- the server


def server_folder(tmp_path: Path, sandbox: Sandbox, *, ours: bool) -> Path:
    """A copy of the example with the scenario's graph and a `.env` for the sandbox; without
    the checkpointer and store entries where `ours` is False (the built-in persistence)."""
    folder = tmp_path / ("s3dynamo" if ours else "builtin")
    shutil.copytree(EXAMPLE, folder)
    shutil.copy(SCENARIO_GRAPH, folder / "review.py")
    conf = json.loads((folder / "langgraph.json").read_text())
    assert conf["checkpointer"]["path"] == "./checkpointer.py:s3dynamo_checkpointer"
    assert conf["store"]["path"] == "./store.py:s3dynamo_store"
    conf["graphs"]["review"] = "./review.py:graph"
    if not ours:
        del conf["checkpointer"], conf["store"]
    (folder / "langgraph.json").write_text(json.dumps(conf, indent=2))
    lines = [f"{k}={v}" for k, v in sandbox.environment().items() if v is not None]
    (folder / ".env").write_text("\n".join(lines) + "\n")
    return folder


@contextlib.contextmanager
def langgraph_dev(folder: Path) -> Iterator[tuple[str, Path, int]]:
    """`langgraph dev` in `folder` on 127.0.0.1; yields its URL, its log and its process
    id, and stops it (its process group, which it leads) when the block ends."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    env = {k: v for k, v in env.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env.update(QUIET)
    log = folder / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield wait_for_api(proc, log), log, proc.pid
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def wait_for_api(proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> str:
    """The URL the server printed (it takes another port when 2024 is taken), once /ok
    answers there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"langgraph dev exited ({proc.returncode}):\n{text(log)}"
        found = re.search(r"API: (http://[\w.]+:\d+)", text(log))
        if found:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{found[1]}/ok", timeout=2).status_code == 200:
                    return found[1]
        time.sleep(0.5)
    raise AssertionError(f"langgraph dev did not answer in {timeout} s:\n{text(log)[-5000:]}")


def text(log: Path) -> str:
    return ANSI.sub("", log.read_text(errors="replace"))


def listening(pid: int) -> set[str]:
    """The local addresses the process group's processes listen on (TCP, IPv4 and IPv6)."""
    inodes = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(proc.name)) == pid:
                    for fd in (proc / "fd").iterdir():
                        target = os.readlink(fd)
                        if target.startswith("socket:["):
                            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                address = cols[1].split(":")[0]
                found.add("127.0.0.1" if address == "0100007F" else address)
    return found


# ---------------------------------------------------------------------------- the scenario


async def wait_until(check: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = await check()
        if got:
            return got
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def steps(history: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A thread's history as the scenario compares it: each checkpoint's step, source,
    next nodes, values and pending interrupts, newest first."""
    return [
        (
            h["metadata"].get("step"),
            h["metadata"].get("source"),
            h["next"],
            h["values"],
            [i["value"] for t in h["tasks"] for i in t["interrupts"]],
        )
        for h in history
    ]


async def scenario(client: LangGraphClient) -> dict[str, Any]:
    """Everything a user of the server sees, with ids and times left out."""
    seen: dict[str, Any] = {}
    threads, runs, store = client.threads, client.runs, client.store

    # The example's agent: a second run on a thread sees the first.
    chat = (await threads.create())["thread_id"]
    replies = []
    for said in ("remember the milk", "and the bread"):
        out = await runs.wait(
            chat, "agent", input={"messages": [{"role": "human", "content": said}]}
        )
        replies.append(out["messages"][-1]["content"])
    seen["agent"] = replies

    # An interrupt, its resume, the history, a fork by update_state, resumed too.
    tid = (await threads.create())["thread_id"]
    paused = await runs.wait(tid, "review", input={"topic": "otters"})
    seen["paused"] = {k: v for k, v in paused.items() if k != "__interrupt__"}
    seen["asks"] = [i["value"] for i in paused["__interrupt__"]]
    state = await threads.get_state(tid)
    seen["paused_next"] = state["next"]
    seen["resumed"] = await runs.wait(tid, "review", command={"resume": "approved"})
    history = await threads.get_history(tid)
    seen["history"] = steps(history)
    at_interrupt = next(h for h in history if h["next"] == ["review"])
    await threads.update_state(
        tid, {"topic": "seals"}, checkpoint_id=at_interrupt["checkpoint"]["checkpoint_id"]
    )
    forked = await threads.get_state(tid)
    seen["forked"] = (forked["values"], forked["next"])
    seen["fork_resumed"] = await runs.wait(tid, "review", command={"resume": "rejected"})
    seen["fork_history"] = steps(await threads.get_history(tid, limit=20))

    # threads.copy: the copy has the same history, and goes on alone.
    copy = (await threads.copy(tid))["thread_id"]
    seen["copy_history"] = steps(await threads.get_history(copy, limit=20))
    assert seen["copy_history"] == seen["fork_history"]

    # Runs meeting a running one, each started once the running one's draft step is under
    # way (its first checkpoints written, so what they leave does not depend on timing).
    async def started(thread: str, topic: str) -> str:
        run = await runs.create(thread, "review", input={"topic": topic, "delay": 60})

        async def drafting() -> bool:
            return (await threads.get_state(thread))["next"] == ["write"]

        await wait_until(drafting, f"run on {topic} to start its draft")
        return str(run["run_id"])

    busy = (await threads.create())["thread_id"]
    first = await started(busy, "gulls")
    try:
        await runs.create(busy, "review", input={"topic": "x"}, multitask_strategy="reject")
        seen["reject"] = "accepted"
    except ConflictError:
        seen["reject"] = "409 conflict"
    second = await runs.create(
        busy, "review", input={"topic": "terns", "delay": 1}, multitask_strategy="interrupt"
    )
    # Queued behind the second, which it lets finish.
    third = await runs.create(
        busy, "review", input={"topic": "puffins"}, multitask_strategy="enqueue"
    )
    await runs.join(busy, third["run_id"])
    statuses = {r["run_id"]: r["status"] for r in await runs.list(busy)}
    seen["interrupt_enqueue_runs"] = [
        statuses.get(first),
        statuses[second["run_id"]],
        statuses[third["run_id"]],
    ]
    seen["interrupt_enqueue_history"] = steps(await threads.get_history(busy, limit=20))

    rolled = (await threads.create())["thread_id"]
    gone = await started(rolled, "herons")
    kept = await runs.create(
        rolled, "review", input={"topic": "cranes"}, multitask_strategy="rollback"
    )
    await runs.join(rolled, kept["run_id"])
    seen["rollback_runs"] = sorted(
        ("kept" if r["run_id"] == kept["run_id"] else "other", r["status"])
        for r in await runs.list(rolled)
    )
    rollback_history = await threads.get_history(rolled, limit=20)
    seen["rollback_history"] = steps(rollback_history)
    # The rolled-back run's checkpoints are gone: every one left is the kept run's.
    seen["rollback_history_runs"] = sorted(
        {"kept" if h["metadata"].get("run_id") == kept["run_id"] else "other"
         for h in rollback_history}
    )  # fmt: skip
    assert gone not in {h["metadata"].get("run_id") for h in rollback_history}

    # threads.delete: the thread is gone, its copy stays.
    await threads.delete(tid)
    try:
        await threads.get_state(tid)
        seen["deleted"] = "still there"
    except NotFoundError:
        seen["deleted"] = "404 not found"
    seen["copy_after_delete"] = (await threads.get_state(copy))["values"]

    # The store API, beside what the graph's review node kept.
    user = ["preferences", "ada-lovelace"]
    await store.put_item(user, "drink", {"kind": "taste", "text": "Earl Grey, no sugar"})
    await store.put_item(user, "hour", {"kind": "habit", "text": "writes before dawn"})
    await store.put_item(["preferences", "babbage"], "drink", {"kind": "taste", "text": "cocoa"})
    item = await store.get_item(user, "drink")
    seen["store_get"] = item and (item["namespace"], item["key"], item["value"])
    found = await store.search_items(["preferences"], filter={"kind": "taste"})
    seen["store_search"] = sorted((i["namespace"], i["key"]) for i in found["items"])
    seen["store_namespaces"] = sorted(await store.list_namespaces(prefix=["preferences"]))
    await store.delete_item(user, "hour")
    seen["store_deleted"] = await store.get_item(user, "hour")
    reviews = await store.search_items(["reviews"])
    seen["store_reviews"] = sorted((i["key"], i["value"]) for i in reviews["items"])

    seen["ids"] = [chat, tid, copy, busy, rolled, first, second["run_id"], gone]
    return seen


def run_scenario(url: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        client = get_client(url=url)
        try:
            return await scenario(client)
        finally:
            await client.aclose()

    return asyncio.run(go())


# ------------------------------------------------------------------------------- the test


def test_the_langgraph_server_with_s3dynamo_answers_as_with_its_own_persistence(
    tmp_path: Path,
) -> None:
    with moto_server() as url:
        sandbox = Sandbox(endpoint_url=url)
        sandbox.setup()  # the table and bucket, as Terraform makes them
        answers, logs = {}, {}
        for ours in (False, True):
            folder = server_folder(tmp_path, sandbox, ours=ours)
            with langgraph_dev(folder) as (api, log, pid):
                assert api.startswith("http://127.0.0.1:"), api
                assert listening(pid) == {"127.0.0.1"}
                answers[ours] = run_scenario(api)
            logs[ours] = text(log)
        stored = sandbox.stored_bytes()
        reader = sandbox.saver()
        ids = answers[True].pop("ids")
        answers[False].pop("ids")
        left = [tid for tid in ids[:5] if reader.get_tuple({"configurable": {"thread_id": tid}})]
        sandbox.delete()

    ours_log, builtin_log = logs[True], logs[False]
    assert "Using custom checkpointer: S3DynamoSaver" in ours_log
    assert "Using custom store: <langgraph.checkpoint.s3dynamo" in ours_log
    assert "Using custom" not in builtin_log
    # Nothing the server failed at, such as cleaning up after a rolled-back run.
    for line in ours_log.splitlines():
        assert not re.search(r"\[(error|critical)\s*\]", line), line

    ours, builtin = answers[True], answers[False]
    assert ours["agent"] == [
        "so far you said: remember the milk",
        "so far you said: remember the milk | and the bread",
    ]
    assert ours["asks"] == [{"draft": "a draft about otters"}]
    assert ours["resumed"] == {
        "topic": "otters", "draft": "a draft about otters", "verdict": "approved"
    }  # fmt: skip
    assert ours["fork_resumed"] == {
        "topic": "seals", "draft": "a draft about otters", "verdict": "rejected"
    }  # fmt: skip
    assert ours["reject"] == "409 conflict"
    assert ours["interrupt_enqueue_runs"] == ["interrupted", "success", "success"]
    assert ours["rollback_runs"] == [("kept", "success")]
    assert ours["rollback_history_runs"] == ["kept"]
    assert ours["deleted"] == "404 not found"
    assert ours["copy_after_delete"]["verdict"] == "rejected"
    assert ours["store_get"] == (
        ["preferences", "ada-lovelace"], "drink", {"kind": "taste", "text": "Earl Grey, no sugar"}
    )  # fmt: skip
    assert ours["store_deleted"] is None
    assert ours["store_reviews"] == [("otters", {"verdict": "approved"}),
                                     ("seals", {"verdict": "rejected"})]  # fmt: skip
    # Every answer, key by key, as the server's built-in persistence gives it.
    for key in builtin:
        assert ours[key] == builtin[key], key

    # The deleted thread is gone from the table; the others are there, sealed.
    chat, _deleted, copy, busy, rolled = ids[:5]
    assert left == [chat, copy, busy, rolled]
    plaintexts = [*ids, "otters", "seals", "approved", "rejected", "remember the milk",
                  "a draft about", "Earl Grey", "ada-lovelace", "preferences",
                  "babbage"]  # fmt: skip
    assert len(stored) > 20
    for needle in plaintexts:
        assert not any(needle.encode() in blob for blob in stored), needle
