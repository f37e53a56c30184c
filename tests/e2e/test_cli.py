"""The `s3dynamo` command, run in process through its own entry point (`cli.app.run`,
exit code and output as a user gets them) on moto in process, on a store populated by
real graphs: outputs, JSON shapes, exit codes, plans. One test runs the installed console
script in subprocesses against moto server, as a shell would."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import Keyring, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.cli.demo import build_graph
from langgraph.checkpoint.s3dynamo.format.layout import is_control_pk, is_deployment_pk
from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.cli import Result, command_env, environment, one_line_error, run, run_all

pytest_plugins = ["langgraph.checkpoint.s3dynamo.testing"]

SCRIPT = Path(sys.executable).parent / "s3dynamo"
THREADS = ["alice", "bob", "carol"]
DAY = 86_400


def populate(sandbox: Sandbox, threads: list[str], *, days_ago: float = 0) -> None:
    """Each thread: two chat turns, then a refund request that stops at an interrupt;
    the first thread's interrupt is resumed. With `days_ago`, the records are stamped
    that long ago (idle, for retention)."""
    saver = sandbox.saver()
    if days_ago:
        saver.store.clock = lambda: time.time() - days_ago * DAY
    graph = build_graph(saver)
    for i, tid in enumerate(threads):
        config = {"configurable": {"thread_id": tid}}
        graph.invoke({"messages": [HumanMessage(f"hello from {tid}")]}, config)
        graph.invoke({"messages": [HumanMessage("my kettle is late")]}, config)
        graph.invoke({"messages": [HumanMessage("I want a refund")]}, config)
        if i == 0:
            graph.invoke(Command(resume="yes"), config)


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    """moto in process for the whole module (each test makes its own table and bucket)."""
    from moto import mock_aws

    serialize_moto()
    with mock_aws():
        yield


@pytest.fixture(scope="module")
def store(moto: None) -> tuple[Sandbox, dict[str, str | None]]:
    """One populated store for the read-only tests of this module."""
    sandbox = Sandbox()
    env = sandbox.environment()
    with environment(command_env(env)):
        populate(sandbox, THREADS)
    return sandbox, env


@pytest.fixture(scope="module")
def reads(store: tuple[Sandbox, dict[str, str | None]]) -> dict[str, Result]:
    """Every read command this module checks that needs no earlier output."""
    _, env = store
    wrong_key = {**env, "S3DYNAMO_KEYS": f"test:{_b64(os.urandom(32))}"}
    other_id = {**env, "S3DYNAMO_KEYS": f"other:{_b64(os.urandom(32))}"}
    no_settings = {k: v for k, v in env.items() if not k.startswith("S3DYNAMO_")}
    calls: dict[str, tuple[Mapping[str, str | None], tuple[str, ...]]] = {
        "threads_json": (env, ("threads", "--limit", "2", "--json")),
        "threads_text": (env, ("threads", "--limit", "2")),
        "threads_bad_token": (env, ("threads", "--page-token", "nonsense!")),
        "history_json": (env, ("history", "bob", "--json")),
        "history_text": (env, ("history", "bob")),
        "show_json": (env, ("show", "alice", "--json")),
        "diff_json": (env, ("diff", "alice", "--json")),
        "stats_json": (env, ("stats", "--json")),
        "stats_text": (env, ("stats", "bob")),
        "unknown_thread": (env, ("history", "nobody")),
        "wrong_key": (wrong_key, ("show", "alice")),
        "other_key_id": (other_id, ("show", "alice")),
        "missing_table": (env, ("threads", "--table", "no-such-table")),
        "no_settings": (no_settings, ("threads",)),
        "usage": (env, ("history",)),
        "doctor_json": (env, ("doctor", "--json")),
        "doctor_no_bucket": (env, ("doctor", "--bucket", "no-such-bucket")),
        "rotate_without_kms": (env, ("rotate-key",)),
    }
    return dict(zip(calls, run_all(*calls.values()), strict=True))


def test_threads_pages_through_every_thread(
    store: tuple[Sandbox, Any], reads: dict[str, Result]
) -> None:
    _, env = store
    first = reads["threads_json"]
    assert first.code == 0, first.err
    page = first.json()
    assert set(page) == {"threads", "next_page_token", "unreadable_records"}
    assert len(page["threads"]) == 2 and page["next_page_token"]
    row = page["threads"][0]
    assert set(row) == {
        "thread_id",
        "checkpoints",
        "namespaces",
        "last_checkpoint_id",
        "last_step",
        "last_updated",
    }
    second = run(env, "threads", "--limit", "2", "--page-token", page["next_page_token"], "--json")
    rest = second.json()
    assert rest["next_page_token"] is None
    seen = [r["thread_id"] for r in page["threads"] + rest["threads"]]
    assert sorted(seen) == sorted(THREADS)
    # Most recently updated first: carol was written last.
    assert seen[0] == "carol"
    by_id = {r["thread_id"]: r for r in page["threads"] + rest["threads"]}
    assert by_id["alice"]["checkpoints"] == 9 and by_id["bob"]["checkpoints"] == 8

    text = reads["threads_text"]
    assert text.code == 0
    *rows, next_page = text.out.splitlines()
    assert all(len(line) <= 80 for line in rows)
    # Whole on its line, to paste, though longer than the 80 columns (not a terminal).
    assert next_page == f"next page: s3dynamo threads --page-token {page['next_page_token']}"
    assert len(next_page) > 80
    bad = reads["threads_bad_token"]
    assert bad.code == 2 and "page-token" in bad.err


def test_history_lists_steps_sources_next_nodes_and_interrupts(reads: dict[str, Result]) -> None:
    r = reads["history_json"]
    assert r.code == 0, r.err
    data = r.json()
    assert data["thread_id"] == "bob"
    rows = data["checkpoints"]
    assert set(rows[0]) == {
        "checkpoint_id",
        "checkpoint_ns",
        "parent_checkpoint_id",
        "step",
        "source",
        "created_at",
        "next",
        "interrupts",
        "pending_writes",
        "item_bytes",
        "stored_bytes",
        "referenced_bytes",
    }
    assert [row["step"] for row in rows] == list(range(6, -2, -1))
    latest = rows[0]
    assert latest["next"] == ["approve"]
    assert latest["interrupts"][0]["value"] == {"question": "Approve a refund for this customer?"}
    assert rows[-1]["source"] == "input" and rows[-1]["next"] == ["__start__"]
    # The 200 KB order is stored once as a value (and once as the write that set it).
    big = [row for row in rows if row["stored_bytes"] > 10_000]
    assert [row["step"] for row in big] == [1, 0]
    assert all(row["referenced_bytes"] > 10_000 for row in rows[:-2])

    text = reads["history_text"]
    assert text.code == 0
    assert "approve (1 interrupt)" in text.out
    assert latest["checkpoint_id"][-12:] in text.out
    assert all(len(line) <= 80 for line in text.out.splitlines())


def test_show_and_diff(store: tuple[Sandbox, Any], reads: dict[str, Result]) -> None:
    _, env = store
    shown = reads["show_json"]
    assert shown.code == 0, shown.err
    state = shown.json()
    assert set(state) == {
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "created_at",
        "step",
        "source",
        "metadata",
        "next",
        "values",
        "internal_channels",
        "pending_writes",
        "interrupts",
    }
    messages = state["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai"] * 3
    assert messages[-1]["content"] == "A supervisor approved your refund."
    assert state["values"]["refund_approved"] is True
    assert len(state["values"]["order"]["lines"]) == 2000

    d = reads["diff_json"]
    assert d.code == 0, d.err
    change = d.json()
    assert set(change) == {"thread_id", "checkpoint_ns", "from", "to", "changes"}
    by_channel = {c["channel"]: c for c in change["changes"]}
    assert [m["content"] for m in by_channel["messages"]["messages_added"]] == [
        "A supervisor approved your refund."
    ]
    assert by_channel["refund_approved"]["change"] == "added"

    # The interrupted thread, by a short id as `history` prints it; and a diff of two
    # named checkpoints: the first turn against the interrupted one.
    history = reads["history_json"].json()["checkpoints"]
    short = history[0]["checkpoint_id"][-12:]
    first, last = history[-3]["checkpoint_id"], history[0]["checkpoint_id"]
    text, delta = run_all((env, ("show", "bob", short)), (env, ("diff", "bob", first, last)))
    assert text.code == 0, text.err
    assert "interrupts  1" in text.out
    assert '{"question": "Approve a refund for this customer?"}' in text.out
    assert "human: I want a refund" in text.out
    assert delta.code == 0, delta.err
    assert "messages: 3 messages added" in delta.out
    assert "+ human: my kettle is late" in delta.out


def test_show_full_prints_an_interrupt_s_values_and_subgraph_namespaces_fit_80_columns(
    moto: None,
) -> None:
    """A refund review in a subgraph (namespace `review:<uuid>`) stops at an interrupt
    asking two things: `show --full` prints both, `--redact` neither, and `history --ns
    '*'` keeps each namespace whole on one line at COLUMNS=80."""
    asked = {
        "question": "Approve a refund of $120 for order #1001?",
        "notes": "customer since 2019, two refunds this year",
    }

    class Chat(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]

    def ask(state: Chat) -> dict[str, Any]:
        interrupt(asked)
        return {}

    review = StateGraph(Chat).add_node("ask", ask).add_edge(START, "ask").compile()
    sandbox = Sandbox()
    env = sandbox.environment()
    with environment(command_env(env)):
        graph = StateGraph(Chat).add_node("review", review).add_edge(START, "review")
        graph.compile(checkpointer=sandbox.saver()).invoke(
            {"messages": [HumanMessage("refund please")]}, {"configurable": {"thread_id": "r1"}}
        )
    full, brief, redacted, redacted_json, every_ns = run_all(
        (env, ("show", "r1", "--full")),
        (env, ("show", "r1")),
        (env, ("show", "r1", "--redact", "--full")),
        (env, ("show", "r1", "--redact", "--json")),
        (env, ("history", "r1", "--ns", "*")),
    )
    for r in (full, brief, redacted, redacted_json, every_ns):
        assert r.code == 0, r.err
    interrupts = full.out[full.out.index("interrupts  1") :]
    assert f'"question": "{asked["question"]}"' in interrupts
    assert f'"notes": "{asked["notes"]}"' in interrupts
    assert f'"notes": "{asked["notes"]}"' in brief.out
    assert "{question, notes}" not in full.out + brief.out
    assert "refund" not in redacted.out and "2019" not in redacted.out
    assert '"question": "<41 chars>"' in redacted.out and "human: <13 chars>" in redacted.out
    data = redacted_json.json()
    assert data["interrupts"][0]["value"] == {"question": "<41 chars>", "notes": "<42 chars>"}
    assert "refund" not in redacted_json.out

    namespaces = json.loads(run(env, "history", "r1", "--ns", "*", "--json").out)
    sub = {row["checkpoint_ns"] for row in namespaces["checkpoints"]} - {""}
    assert len(sub) == 1 and re.fullmatch(r"review:[0-9a-f-]{36}", next(iter(sub)))
    lines = every_ns.out.splitlines()
    assert f"namespace {next(iter(sub))}" in lines and "namespace (root)" in lines
    assert all(len(line) <= 80 for line in lines), every_ns.out
    assert "ask (1 interrupt)" in every_ns.out


def test_stats_reports_sizes_ratios_and_cost(
    store: tuple[Sandbox, Any], reads: dict[str, Result]
) -> None:
    sandbox, _ = store
    r = reads["stats_json"]
    assert r.code == 0, r.err
    s = r.json()
    assert s["threads"] == 3 and s["checkpoints"] == 25
    # Thread items only: the control items (a head per namespace, the deployment record)
    # hold no state.
    items = [
        i
        for i in sandbox.dynamodb.scan(TableName=sandbox.table)["Items"]
        if not is_control_pk(i["pk"]["S"]) and not is_deployment_pk(i["pk"]["S"])
    ]
    objects = sandbox.s3.list_objects_v2(Bucket=sandbox.bucket)["Contents"]
    assert s["items"]["count"] == len(items)
    assert s["objects"] == {
        "count": len(objects),
        "bytes": sum(o["Size"] for o in objects),
        "unreferenced": 0,
    }
    assert s["stored_bytes"] == s["items"]["bytes"] + s["objects"]["bytes"]
    assert s["compression_ratio"] > 2 and s["reuse_ratio"] > 2
    order = next(c for c in s["channels"] if c["channel"] == "order")
    assert order["values"] == 3 and order["objects"] == 3 and order["references"] == 19
    cost = s["cost"]
    assert cost["dynamodb_gb_month"] == 0.25 and cost["s3_gb_month"] == 0.023
    expected = (s["items"]["bytes"] + 100 * s["items"]["count"]) / 2**30 * 0.25
    assert cost["dynamodb_monthly"] == pytest.approx(expected)
    assert cost["total_monthly"] == pytest.approx(cost["dynamodb_monthly"] + cost["s3_monthly"])

    one = reads["stats_text"]
    assert one.code == 0 and "monthly storage cost" in one.out


def test_verify_catches_tampered_missing_and_orphaned(moto: None) -> None:
    sandbox = Sandbox()
    populate(sandbox, ["alice", "bob"])
    env = sandbox.environment()
    clean = run(env, "verify", "--json")
    assert clean.code == 0, clean.out + clean.err
    assert clean.json()["ok"] is True and clean.json()["problems"] == []
    assert clean.json()["hint"] is None

    s3, bucket = sandbox.s3, sandbox.bucket
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    tampered = keys[0]
    body = bytearray(s3.get_object(Bucket=bucket, Key=tampered)["Body"].read())
    body[-5] ^= 0x01
    s3.put_object(Bucket=bucket, Key=tampered, Body=bytes(body))
    # An object of this deployment's shape that no item references.
    orphan = tampered.rsplit("/", 1)[0] + "/" + "A" * 21 + "Q"
    s3.put_object(Bucket=bucket, Key=orphan, Body=b"left behind by a crashed writer")
    missing = keys[1]
    s3.delete_object(Bucket=bucket, Key=missing)

    r, text, plan = run_all(
        (env, ("verify", "--json")),
        (env, ("verify",)),
        (env, ("gc", "--full", "--grace", "0", "--json")),
    )
    assert r.code == 1, r.err
    report = r.json()
    # docs/CLI.md's shape, key for key.
    keys = {"thread_id", "ok", "checked", "leftover_writes", "awaiting_collection"}
    keys |= {"memory", "problems", "hint"}
    assert set(report) == keys
    assert report["hint"].startswith("missing: reading its checkpoint raises ObjectNotFoundError")
    assert "tampered: the stored bytes were altered" in report["hint"]
    assert "`s3dynamo gc --full` removes it" in report["hint"]
    assert report["ok"] is False
    found = {(p["kind"], p["key"]) for p in report["problems"]}
    assert ("tampered", tampered) in found
    assert ("unreferenced", orphan) in found
    assert ("missing", missing) in found
    assert set(report["problems"][0]) == {
        "kind",
        "where",
        "key",
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "detail",
    }
    assert text.code == 1
    assert "TAMPERED: object" in text.out and "UNREFERENCED: object" in text.out
    assert text.out.splitlines()[-1] == f"what to do: {report['hint']}"

    # Garbage collection: the plan first, then only with --yes. By default it reads only
    # the upload journal, which names what crashed writes left; an object put there by
    # hand is named by no intent, so it takes the full collection (a listing) to find.
    incremental = run(env, "gc", "--grace", "0", "--json")
    assert incremental.code == 0, incremental.err
    assert incremental.json()["plan"]["mode"] == "incremental"
    assert incremental.json()["plan"]["objects"] == 0
    assert plan.code == 0, plan.err
    assert plan.json()["plan"]["mode"] == "full"
    assert plan.json()["plan"]["objects"] == 1 and plan.json()["executed"] is False
    done = run(env, "gc", "--full", "--grace", "0", "--yes", "--json")
    assert done.json()["result"] == {"deleted": 1}
    assert orphan not in {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}


def test_leftover_writes_are_counted_not_a_problem_and_gc_full_removes_them(moto: None) -> None:
    """Issue 56: after a refused run, `verify` exited 1 for good, for a writes record
    LangGraph sent for a checkpoint never committed, which no gc removed."""
    sandbox = Sandbox()
    env = sandbox.environment()
    with environment(command_env(env)):
        populate(sandbox, ["alice"])
        saver = sandbox.saver()
        latest = saver.get_tuple({"configurable": {"thread_id": "alice"}})
        assert latest is not None
        never = {
            **latest.config["configurable"],
            "checkpoint_id": "1f0d0000-0000-6000-8000-000000000000",
        }
        saver.store.clock = lambda: time.time() - 7200  # two hours ago
        saver.put_writes({"configurable": never}, [("messages", [])], "a-task")
    report, text, young = run_all(
        (env, ("verify", "--json")), (env, ("verify",)), (env, ("gc", "--full", "--json"))
    )
    assert report.code == 0 and report.json()["ok"] is True, report.out
    assert report.json()["leftover_writes"] == 1 and report.json()["problems"] == []
    assert text.code == 0 and "1 leftover writes record (of checkpoints never committed" in (
        text.out
    )
    assert young.json()["plan"]["leftover_writes"] == 1  # two hours is past the hour's grace
    done = run(env, "gc", "--full", "--yes")
    assert done.code == 0 and done.out.splitlines()[-1] == "done: deleted 0; writes deleted 1"
    assert run(env, "verify", "--json").json()["leftover_writes"] == 0


def test_a_value_shown_outside_a_terminal_stays_whole_on_its_line(moto: None) -> None:
    """docs/CLI.md: outside a terminal no line is wrapped, a value's neither: a state
    value of 500 characters is one line of `show --full` in a pipe, whatever COLUMNS."""

    class Doc(TypedDict):
        doc: str

    sandbox = Sandbox()
    env = sandbox.environment()
    text = " ".join(f"word{i}" for i in range(80))
    with environment(command_env(env)):
        graph = StateGraph(Doc).add_node("keep", lambda _: {}).add_edge(START, "keep")
        graph.compile(checkpointer=sandbox.saver()).invoke(
            {"doc": text}, {"configurable": {"thread_id": "d1"}}
        )
    for columns in ("80", "200"):
        shown = run({**env, "COLUMNS": columns}, "show", "d1", "--full")
        assert shown.code == 0, shown.err
        assert any(text in line for line in shown.out.splitlines()), shown.out


def test_maintenance_shows_a_plan_and_changes_nothing_without_yes(moto: None) -> None:
    sandbox = Sandbox()
    populate(sandbox, ["alice", "bob"])
    env = sandbox.environment()

    new = Keyring(keys={"new": os.urandom(32)}, active="new")
    rotated = {**env, "S3DYNAMO_KEYS": f"new:{_b64(new.keys['new'])},{env['S3DYNAMO_KEYS']}"}
    plan, copy, exists, exists_plan, onto_itself, rotation, newest = run_all(
        (env, ("delete", "bob")),
        (env, ("copy", "alice", "alice-copy", "--yes", "--json")),
        (env, ("copy", "alice", "bob", "--yes")),
        (env, ("copy", "alice", "bob")),
        (env, ("copy", "alice", "alice")),
        (rotated, ("reencrypt", "--json")),
        (env, ("copy", "alice", "alice-last", "--keep-last", "2", "--yes", "--json")),
    )
    # --keep-last: the newest two checkpoints, copied.
    assert newest.code == 0, newest.err
    assert newest.json()["plan"]["keep_last"] == 2
    assert newest.json()["plan"]["checkpoints"] == 2 and newest.json()["executed"] is True
    assert plan.code == 0 and "delete thread bob: 8 checkpoints" in plan.out
    assert "nothing changed" in plan.out
    assert copy.code == 0, copy.err
    assert copy.json()["plan"]["checkpoints"] == 9 and copy.json()["executed"] is True
    assert exists.code == 2 and "already has checkpoints" in one_line_error(exists)
    # Refused at the plan, as --yes is, rather than a plan that --yes then refuses.
    assert exists_plan.code == 2 and exists_plan.out == ""
    assert one_line_error(exists_plan) == one_line_error(exists)
    assert onto_itself.code == 2 and onto_itself.out == ""
    assert "source and target are the same thread 'alice'" in one_line_error(onto_itself)
    again = run(env, "copy", "alice", "alice-copy")  # a whole copy: a plan, nothing to write
    assert again.code == 0 and "all from an earlier copy of the source" in again.out
    # Key rotation: a new active key, the old one still in the keyring.
    assert rotation.json()["plan"]["active_key"] == "new"
    assert rotation.json()["plan"]["stale_item_blobs"] > 0
    assert rotation.json()["executed"] is False

    last3, zero, pruned3, pruned, deleted, resealed = run_all(
        (env, ("prune", "alice-copy", "--keep-last", "3")),
        (env, ("prune", "alice-copy", "--keep-last", "0")),
        (env, ("prune", "alice-copy", "--keep-last", "3", "--yes", "--json")),
        (env, ("prune", "alice-copy", "--yes")),
        (env, ("delete", "bob", "--yes")),
        (rotated, ("reencrypt", "alice", "--yes", "--json")),
    )
    assert last3.code == 0 and "keep 3, remove 6" in last3.out and "nothing changed" in last3.out
    assert zero.code == 2 and "--keep-last" in zero.err and "0" in zero.err
    assert pruned3.json()["plan"]["keep_last"] == 3 and pruned3.json()["executed"] is True
    assert pruned3.json()["plan"]["threads"][0]["kept"] == 3
    assert pruned.code == 0 and "keep 1, remove 2" in pruned.out
    assert deleted.code == 0
    assert resealed.json()["result"]["resealed"] > 0

    only_new = {**env, "S3DYNAMO_KEYS": f"new:{_b64(new.keys['new'])}"}
    listed, after = run_all((rotated, ("threads", "--json")), (only_new, ("verify", "alice")))
    threads = sorted(t["thread_id"] for t in listed.json()["threads"])
    assert threads == ["alice", "alice-copy", "alice-last"]
    assert after.code == 0, after.out + after.err


def test_encryption_is_turned_on_over_a_plaintext_deployment_from_the_command_line(
    moto: None,
) -> None:
    """docs/SECURITY.md's migration from plaintext, without Python: with keys set, the
    deployment is refused, naming the option; `reencrypt --allow-plaintext-read --yes`
    seals what is there, after which the threads read with the keys alone."""
    sandbox = Sandbox()
    plain = sandbox.saver(sealed=False, secret=sandbox.secret)
    build_graph(plain).invoke(
        {"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "alice"}}
    )
    env = sandbox.environment()
    refused, sealed = run_all(
        (env, ("reencrypt",)), (env, ("reencrypt", "--allow-plaintext-read", "--yes", "--json"))
    )
    assert refused.code == 2 and "s3dynamo reencrypt --allow-plaintext-read" in refused.err
    assert sealed.code == 0 and sealed.json()["result"]["resealed"] > 0, sealed.err
    after = run(env, "verify", "alice")
    assert after.code == 0, after.out + after.err


def test_a_plan_carried_out_ends_with_what_it_did_in_counts(moto: None) -> None:
    """docs/CLI.md: "A plan carried out with --yes ends with what it did, in words":
    counted as it ran, never a bare "done"."""
    sandbox = Sandbox()
    populate(sandbox, ["alice", "bob"])
    env = sandbox.environment()
    with environment(command_env(env)):
        S3DynamoStore.from_saver(sandbox.saver()).put(("users",), "m1", {"kind": "pref"})
    copied, again, pruned, deleted, forgotten = (
        run(env, *args)
        for args in (
            ("copy", "alice", "c", "--yes"),
            ("copy", "alice", "c", "--yes"),
            ("prune", "c", "--keep-last", "3", "--yes"),
            ("delete", "bob", "--yes"),
            ("memory", "delete", "users", "m1", "--yes"),
        )
    )
    last = [r.out.splitlines()[-1] for r in (copied, again, pruned, deleted, forgotten)]
    assert last == [
        "done: copied 9 checkpoints to c",
        "done: copied 0 checkpoints to c (it held the whole copy already)",
        "done: removed 6 checkpoints of 1 thread",
        "done: deleted thread bob: 8 checkpoints, 14 items, 2 objects",
        "done: deleted 1 item (item 'm1' of 'users')",
    ]
    # The same counts in --json's result; deleting the copy ends the loan of alice's
    # objects it kept, and no object goes while alice holds them.
    by_json = run(env, "delete", "c", "--yes", "--json").json()
    assert by_json["result"] == {"checkpoints": 3, "items": 6, "objects": 0}
    pruned = run(env, "prune", "alice", "--strategy", "delete", "--yes", "--json").json()
    assert pruned["result"] == {"removed_checkpoints": 9}
    with environment(command_env(env)):
        S3DynamoStore.from_saver(sandbox.saver()).put(("users",), "m2", {"kind": "pref"})
    item = run(env, "memory", "delete", "users", "m2", "--yes", "--json").json()
    assert item["result"] == {"items": 1}


def test_errors_are_one_line_with_the_fix(reads: dict[str, Result]) -> None:
    unknown = reads["unknown_thread"]
    assert unknown.code == 2
    assert "thread 'nobody' has no checkpoints" in one_line_error(unknown)

    r = reads["wrong_key"]
    assert r.code == 2
    assert "key id(s) ['test'] hold other keys than the deployment's" in one_line_error(r)
    r = reads["other_key_id"]
    assert r.code == 2 and "none of the deployment's ['test']" in one_line_error(r)

    missing = reads["missing_table"]
    assert missing.code == 2
    assert "does not exist" in one_line_error(missing)

    r = reads["no_settings"]
    assert r.code == 2 and "S3DYNAMO_TABLE" in one_line_error(r)
    assert "no table or bucket given (table='', bucket='')" in one_line_error(r)
    assert "pass --table and --bucket" in one_line_error(r)

    usage = reads["usage"]
    assert usage.code == 2 and "Missing argument" in usage.err


def test_doctor_checks_up_front_and_rotate_key_names_what_it_needs(
    reads: dict[str, Result],
) -> None:
    r = reads["doctor_json"]
    assert r.code == 0, r.err
    assert r.json()["ok"] is True and r.json()["problems"] == []
    missing = reads["doctor_no_bucket"]
    assert missing.code == 1 and "no-such-bucket" in missing.err
    rotate = reads["rotate_without_kms"]
    assert rotate.code == 2 and "S3DYNAMO_KMS_KEY_ID" in one_line_error(rotate)


@pytest.mark.unsupported_on("moto-server", "real", reason="the demo starts its own moto server")
@pytest.mark.parametrize("case", ["wrong key", "other key id", "wrong secret", "plaintext"])
def test_a_wrong_key_or_secret_is_named_by_every_reading_command(
    store: tuple[Sandbox, dict[str, str | None]], case: str
) -> None:
    """Never "no checkpoints", never "TAMPERED": the mismatch, in one line, exit 2."""
    _, env = store
    changed = {
        "wrong key": {"S3DYNAMO_KEYS": f"test:{_b64(os.urandom(32))}"},
        "other key id": {"S3DYNAMO_KEYS": f"other:{_b64(os.urandom(32))}"},
        "wrong secret": {"S3DYNAMO_SECRET": _b64(os.urandom(32))},
        "plaintext": {"S3DYNAMO_KEYS": None, "S3DYNAMO_PLAINTEXT": "1"},
    }[case]
    named = {
        "wrong key": "hold other keys than the deployment's",
        "other key id": "none of the deployment's ['test']",
        "wrong secret": "the naming key differs",
        "plaintext": "the deployment is sealed",
    }[case]
    env = {**env, **changed}
    for args in (
        ("history", "alice"),
        ("show", "alice"),
        ("threads",),
        ("stats",),
        ("stats", "alice"),
        ("verify",),
        ("verify", "alice"),
    ):
        r = run(env, *args)
        line = one_line_error(r)
        assert r.code == 2, (args, r.out, r.err)
        assert named in line and "fingerprint" in line, (args, line)
        assert "no checkpoints" not in line and "TAMPERED" not in r.out, (args, r.out)


def test_data_the_command_line_cannot_open_is_named_never_called_altered(moto: None) -> None:
    """Values sealed by LangGraph's EncryptedSerializer (the command line takes no
    serializer), and values under a key the reader's S3DYNAMO_KEYS lacks: each is a
    setting to fix, said once, exit 2; the data was not altered."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    ciphered, rotated = Sandbox(), Sandbox()
    serde = EncryptedSerializer.from_pycryptodome_aes(key=os.urandom(32))
    newer = Keyring(keys={"new": os.urandom(32), **rotated.keys.keys}, active="new")
    for saver in (ciphered.saver(serde=serde), rotated.saver(keys=newer)):
        build_graph(saver).invoke(
            {"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "alice"}}
        )
    serializer, key = (
        run(ciphered.environment(), "show", "alice"),
        run(rotated.environment(), "show", "alice"),
    )
    assert serializer.code == key.code == 2, (serializer.err, key.err)
    assert "the same EncryptedSerializer (serde=)" in one_line_error(serializer)
    assert "sealed under key id 'new'" in one_line_error(key)
    assert one_line_error(key).count("add that key") == 1
    for r in (serializer, key):
        assert "altered" not in r.err and r.out == ""


def test_the_region_comes_from_aws_region_or_the_option(
    store: tuple[Sandbox, dict[str, str | None]],
) -> None:
    _, env = store
    without = {k: v for k, v in env.items() if k not in ("AWS_REGION", "AWS_DEFAULT_REGION")}
    for region_env, args in (
        ({"AWS_REGION": "us-east-1"}, ()),  # as Lambda and most tools set it
        ({"AWS_DEFAULT_REGION": "us-east-1"}, ()),
        ({}, ("--region", "us-east-1")),  # before the command
    ):
        r = run({**without, **region_env}, *args, "threads", "--json")
        assert r.code == 0, (region_env, args, r.err)
        assert len(r.json()["threads"]) == len(THREADS)
    none = run(without, "threads")
    assert none.code == 2 and "no AWS region" in one_line_error(none)
    assert "set AWS_REGION" in one_line_error(none)


def test_threads_by_a_declared_field_come_from_the_catalog(moto: None) -> None:
    """Issue 50: `threads --filter` on a field of S3DYNAMO_CATALOG_FIELDS lists that
    user's threads from the thread catalog; `catalog build` files threads written before
    the field was declared, after showing the plan."""
    sandbox = Sandbox()
    env = sandbox.environment()
    graph = build_graph(sandbox.saver())  # declares nothing
    graph.invoke({"messages": [HumanMessage("hello")]}, _as("old", "ada"))
    graph = build_graph(sandbox.saver(setup=False, catalog_fields=["user_id"]))
    for tid, user in (("t1", "ada"), ("t2", "bob"), ("t3", "ada")):
        graph.invoke({"messages": [HumanMessage(f"hello from {user}")]}, _as(tid, user))
    env = {**env, "S3DYNAMO_CATALOG_FIELDS": "user_id"}

    scanned = run(env, "threads", "--filter", "user_id=ada", "--json")
    assert scanned.code == 0, scanned.err  # the catalog is not built yet: a scan
    rows = scanned.json()["threads"]
    assert [r["thread_id"] for r in rows] == ["t3", "t1", "old"]
    assert rows[0]["checkpoints"] is not None

    plan = run(env, "catalog", "build", "--json").json()
    assert plan["executed"] is False
    assert plan["plan"]["threads"] == 4 and plan["plan"]["fields"] == ["user_id"]
    built = run(env, "catalog", "build", "--yes")
    assert built.code == 0, built.err
    assert (
        built.out.splitlines()[-1] == "done: filed 4 threads (8 entries); the catalog is complete"
    )

    found = run(env, "threads", "--filter", "user_id=ada", "--json")
    assert found.code == 0, found.err
    rows = found.json()["threads"]
    assert [r["thread_id"] for r in rows] == ["t3", "t1", "old"]
    assert rows[0]["checkpoints"] is None and isinstance(rows[0]["last_step"], int)
    two = run(env, "threads", "--filter", "user_id=ada", "--filter", "step=1", "--json")
    assert two.json()["threads"] == []  # values are text: the metadata's step is a number
    text = run(env, "threads", "--filter", "user_id=bob")
    assert text.code == 0 and "t2" in text.out and "t1" not in text.out
    bad = run(env, "threads", "--filter", "user_id")
    assert bad.code == 2 and "expected KEY=VALUE" in bad.err


def _as(tid: str, user: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid, "user_id": user}}


def test_expire_removes_idle_threads_after_showing_the_plan(moto: None) -> None:
    sandbox = Sandbox()
    env = sandbox.environment()
    with environment(command_env(env)):
        populate(sandbox, ["old"], days_ago=2)
    plan, missing, last3, slip = run_all(
        (env, ("expire", "--older-than", "1d", "--json")),
        (env, ("expire",)),
        (env, ("expire", "--older-than", "1d", "--strategy", "keep_latest", "--keep-last", "3")),
        (env, ("expire", "--older-than", "1d", "--keep-last", "3")),
    )
    assert plan.json()["plan"]["idle_threads"] == 1 and plan.json()["executed"] is False
    assert "each keeps the 3 newest checkpoints of each namespace" in " ".join(last3.out.split())
    assert slip.code == 2 and "strategy='keep_latest'" in one_line_error(slip)
    assert missing.code == 2 and "--older-than 30d" in one_line_error(missing)
    with environment(command_env(env)):
        build_graph(sandbox.saver()).invoke(
            {"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "new"}}
        )
    done = run({**env, "S3DYNAMO_RETENTION": "1d"}, "expire", "--yes", "--json")
    assert done.json()["result"]["removed_threads"] == 1, done.err
    listed = run(env, "threads", "--json")
    assert [t["thread_id"] for t in listed.json()["threads"]] == ["new"]
    again = run({**env, "S3DYNAMO_RETENTION": "1d"}, "expire", "--yes")
    assert "nothing to do" in again.out


def test_expire_says_what_to_do_about_threads_another_holds(moto: None) -> None:
    """A thread under another's lease (here a run's thread_lock; a sweep killed midway
    holds its threads the same way) is left: the plan is printed before the work, and the
    done line says why those stayed and when to run again."""
    sandbox = Sandbox()
    env = sandbox.environment()
    with environment(command_env(env)):
        populate(sandbox, ["old"], days_ago=2)
        with sandbox.saver().ops.thread_lock("old"):
            held = run(env, "expire", "--older-than", "1d", "--yes")
    lines = held.out.splitlines()
    assert lines[0].startswith("1 thread idle for over 1d") and lines[-1].startswith("done:")
    assert lines[-1].endswith(
        "busy threads 1; revived threads 0; 1 thread held under another's lease (a run's "
        "thread_lock, or a sweep: one stopped midway holds its threads for up to 15m): run "
        "again after that to finish them"
    ), lines[-1]
    done = run(env, "expire", "--older-than", "1d", "--yes", "--json")
    assert done.json()["result"]["removed_threads"] == 1


def test_tenants_each_see_their_own_and_a_sweep_without_a_prefix_names_its_scope(
    moto: None,
) -> None:
    sandbox = Sandbox()
    root_env = sandbox.environment()
    tenant_env = {
        **root_env,
        "S3DYNAMO_PREFIX": "tenant-42/",
        "S3DYNAMO_KEYS": f"t42:{_b64(os.urandom(32))}",
        "S3DYNAMO_SECRET": _b64(os.urandom(32)),
    }
    with environment(command_env(root_env)):
        populate(sandbox, ["root-thread"], days_ago=2)
    with environment(command_env(tenant_env)):
        tenant = S3DynamoSaver.from_env()
        build_graph(tenant).invoke(
            {"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "t42-thread"}}
        )
    root_threads, tenant_threads, flag_threads = run_all(
        (root_env, ("threads", "--json")),
        (tenant_env, ("threads", "--json")),
        ({**tenant_env, "S3DYNAMO_PREFIX": None}, ("--prefix", "tenant-42/", "threads", "--json")),
    )
    assert [t["thread_id"] for t in root_threads.json()["threads"]] == ["root-thread"]
    assert [t["thread_id"] for t in tenant_threads.json()["threads"]] == ["t42-thread"]
    assert flag_threads.json() == tenant_threads.json()

    refused = run(root_env, "expire", "--older-than", "1d", "--yes")
    assert refused.code == 2 and "--scope ''" in one_line_error(refused)
    assert "'tenant-42/'" in refused.err
    done = run(root_env, "expire", "--older-than", "1d", "--scope", "", "--yes", "--json")
    assert done.json()["result"]["removed_threads"] == 1, done.err
    after = run(tenant_env, "threads", "--json")
    assert [t["thread_id"] for t in after.json()["threads"]] == ["t42-thread"]


def test_the_installed_script_in_a_shell(s3dynamo_server_sandbox: Sandbox) -> None:
    """The console script in subprocesses, against moto server: its help, options before
    or after the command, a reader closing the pipe early, missing credentials."""
    sandbox = s3dynamo_server_sandbox
    long_id = "customer-" + "x" * 131
    populate(sandbox, ["alice", long_id])
    env = command_env(sandbox.environment())
    table = env.pop("S3DYNAMO_TABLE")

    def script(*args: str, **extra: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *args], env=extra.pop("env", env), capture_output=True, text=True,
            timeout=120, **extra,
        )  # fmt: skip

    assert SCRIPT.exists(), f"{SCRIPT} missing: pip install -e '.[cli]'"
    helped = script("--help")
    assert helped.returncode == 0
    for command in ("threads", "history", "show", "diff", "stats", "verify", "gc", "prune"):
        assert command in helped.stdout
    before = script("--table", table, "threads", "--json")
    after = script("threads", "--table", table, "--json")
    assert before.returncode == after.returncode == 0, before.stderr + after.stderr
    assert json.loads(before.stdout) == json.loads(after.stdout)
    # Its stdout a pipe, at COLUMNS=80: the id and the page token each whole on a line.
    listed = script("--table", table, "threads", "--limit", "1")
    token = json.loads(script("--table", table, "threads", "--limit", "1", "--json").stdout)
    lines = listed.stdout.splitlines()
    assert lines[2].split()[0] == long_id, listed.stdout
    assert lines[-1] == f"next page: s3dynamo threads --page-token {token['next_page_token']}"
    # `s3dynamo show ... | head -1`: the reader goes away; the command ends quietly, 0.
    shell = subprocess.run(
        f"set -o pipefail; '{SCRIPT}' --table {table} show alice --full | head -1",
        shell=True, executable="/bin/bash", env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shell.returncode == 0 and shell.stderr == "", shell.stderr
    bare = {k: v for k, v in env.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    denied = script("--table", table, "threads", env=bare)
    assert denied.returncode == 2 and "no AWS credentials" in denied.stderr, denied.stderr


def test_without_the_cli_extra_the_command_names_the_pip_line() -> None:
    code = (
        "import sys; sys.modules['rich'] = None; "
        "from langgraph.checkpoint.s3dynamo.cli import main; main()"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "s3dynamo: the command line needs rich, which is not installed; install it with: "
        'pip install "langgraph-checkpoint-s3dynamo[cli]" (from a clone: pip install ".[cli]")'
    )


@pytest.mark.unsupported_on("moto-server", "real", reason="the demo starts its own moto server")
def test_the_demo_runs_and_nothing_it_said_is_readable_at_rest() -> None:
    r = subprocess.run(
        [str(SCRIPT), "demo"], env=command_env({}), capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "'blue kettle' found in 0 of" in r.stdout and "'customer-42' found in 0 of" in r.stdout
    assert "$ s3dynamo history customer-42" in r.stdout and "\nok\n" in r.stdout


@pytest.mark.unsupported_on("moto-server", "real", reason="the demo starts its own moto server")
def test_demo_keep_prints_an_environment_that_works_in_a_new_shell_and_stops_on_sigterm() -> None:
    """Two `export` lines: the first reaches the server and holds no table, bucket or key
    (a shell keeps its own, as the README's s3dynamo.env does); the second adds the
    demo's own, to read what it stored."""
    demo = subprocess.Popen(
        [str(SCRIPT), "demo", "--keep"],
        env=command_env({}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        exports: list[dict[str, str]] = []
        assert demo.stdout is not None
        for line in demo.stdout:
            if line.strip().startswith("export "):
                exports.append(dict(i.split("=", 1) for i in shlex.split(line.strip()[7:])))
                if len(exports) == 2:
                    break
        assert len(exports) == 2, demo.stderr.read() if demo.stderr else ""
        reach, data = exports
        assert {"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_ENDPOINT_URL_S3"} <= set(reach), reach
        assert not any(k.startswith("S3DYNAMO_") for k in reach), reach
        assert set(data) == {
            "S3DYNAMO_TABLE",
            "S3DYNAMO_BUCKET",
            "S3DYNAMO_KEYS",
            "S3DYNAMO_SECRET",
        }
        # A new shell: nothing but what the demo printed (and a PATH).
        shell = {"PATH": os.environ["PATH"], **reach, **data}
        listed = subprocess.run(
            [str(SCRIPT), "threads", "--json"], env=shell, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        assert [t["thread_id"] for t in json.loads(listed.stdout)["threads"]] == ["customer-42"]
        # The Quickstart on the same server, with a table, bucket and keys of its own.
        own = {
            "PATH": os.environ["PATH"],
            **reach,
            "S3DYNAMO_TABLE": "agent-checkpoints",
            "S3DYNAMO_BUCKET": "agent-checkpoints-4242",
            "S3DYNAMO_KEYS": f"k1:{_b64(os.urandom(32))}",
            "S3DYNAMO_SECRET": _b64(os.urandom(32)),
        }
        quickstart = (
            "from langgraph.checkpoint.s3dynamo import S3DynamoSaver\n"
            "from langgraph.checkpoint.base import empty_checkpoint\n"
            "saver = S3DynamoSaver.from_env(); saver.setup()\n"
            "saver.put({'configurable': {'thread_id': 'user-42', 'checkpoint_ns': ''}},"
            " empty_checkpoint(), {}, {})\n"
        )
        wrote = subprocess.run(
            [sys.executable, "-c", quickstart], env=own, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert wrote.returncode == 0, wrote.stderr
        mine = subprocess.run(
            [str(SCRIPT), "threads", "--json"], env=own, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert [t["thread_id"] for t in json.loads(mine.stdout)["threads"]] == ["user-42"]
        url = reach["AWS_ENDPOINT_URL_S3"]
    finally:
        demo.send_signal(signal.SIGTERM)
        demo.communicate(timeout=30)
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "the demo's moto server still runs"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_every_command_and_option_is_in_docs_cli_md() -> None:
    """docs/CLI.md's table names every command `s3dynamo --help` lists, subcommands too,
    and the page every long option of each."""
    import click

    from langgraph.checkpoint.s3dynamo.cli.app import cli

    doc = (Path(__file__).parents[2] / "docs" / "CLI.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| `")]
    commands = {}
    for name, command in cli.commands.items():
        subs = command.commands if isinstance(command, click.Group) else {}
        commands |= {f"{name} {sub}": c for sub, c in subs.items()} or {name: command}
    missing = [n for n in commands if not any(f"`{n}" in row for row in rows)]
    assert missing == []
    options = {
        f"{name} {flag}"
        for name, command in commands.items()
        for param in command.params
        for flag in getattr(param, "opts", [])
        if flag.startswith("--") and flag not in doc
    }
    assert options == set()
