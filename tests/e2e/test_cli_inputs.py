"""The command line given what a new user types (issue 39, part 4): a filter that is no
JSON, --json before the command, an id as `history` prints it for a subgraph's checkpoint,
an expired item, a sweep carried out, a duration or switch mistyped, a wrong region.
Usage and configuration errors are one line with the fix and exit 2; nothing prints a
Python exception or repr. In process through the entry point, on moto in process."""

from __future__ import annotations

import base64
import os
import re
import time
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.cli import command_env, environment, one_line_error, run


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    from moto import mock_aws

    serialize_moto()
    with mock_aws():
        yield Sandbox()


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _chat_with_a_subgraph(sandbox: Sandbox) -> dict[str, str | None]:
    """Thread "t": a root graph whose one node is a subgraph (namespace `review:<uuid>`)."""

    def answer(state: Chat) -> dict[str, Any]:
        return {"messages": [("ai", "looked at it")]}

    review = StateGraph(Chat).add_node("answer", answer).add_edge(START, "answer").compile()
    env = sandbox.environment()
    with environment(command_env(env)):
        graph = StateGraph(Chat).add_node("review", review).add_edge(START, "review")
        graph.compile(checkpointer=sandbox.saver()).invoke(
            {"messages": [HumanMessage("please review")]}, {"configurable": {"thread_id": "t"}}
        )
    return env


def test_json_goes_before_the_command_as_well_as_after_it(sandbox: Sandbox) -> None:
    env = _chat_with_a_subgraph(sandbox)
    for command in (("threads",), ("history", "t"), ("show", "t"), ("doctor",)):
        before, after = run(env, "--json", *command), run(env, *command, "--json")
        assert before.code == after.code == 0, before.err + after.err
        assert before.json().keys() == after.json().keys()
    assert run(env, "--json", "threads").json()["threads"][0]["thread_id"] == "t"
    assert "before or after the command" in run(env, "--help").out


def test_show_and_diff_find_an_id_as_history_prints_it_in_any_namespace(sandbox: Sandbox) -> None:
    env = _chat_with_a_subgraph(sandbox)
    rows = run(env, "history", "t", "--ns", "*", "--json").json()["checkpoints"]
    sub = next(r for r in rows if r["checkpoint_ns"])
    short = sub["checkpoint_id"][-12:]  # what the table prints
    assert short in run(env, "history", "t", "--ns", "*").out

    shown = run(env, "show", "t", short)
    assert shown.code == 0, shown.err
    assert f"(namespace {sub['checkpoint_ns']})" in shown.out
    assert f"checkpoint  {sub['checkpoint_id']}" in shown.out
    assert (
        run(env, "show", "t", sub["checkpoint_id"][:13], "--json").json()["checkpoint_ns"]
        == (sub["checkpoint_ns"])
    )
    assert run(env, "diff", "t", short).code == 0

    # Asked in another namespace, the error names the one that holds it.
    wrong = run(env, "show", "t", short, "--ns", "")
    assert wrong.code == 2
    assert f"it is in namespace {sub['checkpoint_ns']!r}: pass --ns" in one_line_error(wrong)


def test_memory_search_filters_by_key_value_as_threads_does_or_by_json(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        store = S3DynamoStore.from_saver(sandbox.saver())
        store.put(("users",), "m1", {"kind": "pref", "lang": "en", "n": 3})
        store.put(("users",), "m2", {"kind": "pref", "lang": "fr", "n": 4})
        store.put(("users",), "m3", {"kind": "fact", "lang": "en", "n": 3})

    def keys(*filters: str) -> list[str]:
        given = [arg for f in filters for arg in ("--filter", f)]
        r = run(env, "memory", "search", "users", *given, "--json")
        assert r.code == 0, r.err
        return sorted(i["key"] for i in r.json())

    assert keys("kind=pref") == ["m1", "m2"]
    assert keys("kind=pref", "lang=en") == ["m1"]  # repeatable: every one applies
    assert keys('{"kind": "pref"}') == ["m1", "m2"]  # JSON, as before
    assert keys('{"n": 3}', "lang=en") == ["m1", "m3"]  # JSON for a value that is no text
    assert keys("n=3") == []  # VALUE is text, as `threads --filter` takes it
    for given, expected in (
        ("pref", "expected KEY=VALUE, such as kind=note, got 'pref'; or a JSON object"),
        ("{kind: pref}", "expected a JSON object of field values, got '{kind: pref}'"),
    ):
        r = run(env, "memory", "search", "users", "--filter", given)
        assert r.code == 2, r.err
        assert "JSONDecodeError" not in r.err and "Traceback" not in r.err
        assert expected in " ".join(r.err.split()), r.err
        assert '--filter \'{"kind": "note"}\'' in " ".join(r.err.split()), r.err


def test_an_expired_item_and_a_sweep_are_told_in_words(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        store = S3DynamoStore.from_saver(sandbox.saver())
        store.put(("users", "42"), "last", {"text": "short-lived"}, ttl=1 / 60)  # a second
        store.put(("users", "42"), "kept", {"text": "stays"})
    time.sleep(1.1)
    shown = run(env, "memory", "show", "users/42", "last")
    assert shown.code == 2
    line = one_line_error(shown)
    assert re.search(r"item 'last' in namespace 'users/42' expired at 20\d\d-\S+ \S+ UTC", line)
    assert "`s3dynamo memory expire` removes it" in line
    never = one_line_error(run(env, "memory", "show", "users/42", "never"))
    assert "no item 'never' in namespace 'users/42': none was put there, or it was deleted" in never

    swept = run(env, "memory", "expire", "--yes")
    assert swept.code == 0, swept.err
    assert "{" not in swept.out and "dry_run" not in swept.out, swept.out
    assert swept.out.splitlines()[-1] == (
        "removed 1 expired store item (0 namespaces left empty, dropped); "
        "0 expired cache items (0 namespaces left empty, dropped)"
    )
    collected = run(env, "gc", "--grace", "0", "--yes")
    assert collected.out.splitlines()[-1] in ("nothing to do", "done: deleted 0"), collected.out


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("S3DYNAMO_DEBUG", "maybe", "S3DYNAMO_DEBUG must be yes or no, got 'maybe'"),
        ("S3DYNAMO_PLAINTEXT", "ture", "S3DYNAMO_PLAINTEXT must be yes or no, got 'ture'"),
        ("S3DYNAMO_RETENTION", "30 days", "S3DYNAMO_RETENTION must be a duration, got '30 days'"),
        ("S3DYNAMO_BUKET", "b", "did you mean S3DYNAMO_BUCKET?"),
        ("AWS_ENDPOINT_URL_DYNAMODB", "htp://127.0.0.1:1", "AWS_ENDPOINT_URL_DYNAMODB is 'htp"),
    ],
)
def test_a_mistyped_setting_is_one_line_with_the_fix(
    sandbox: Sandbox, variable: str, value: str, named: str
) -> None:
    env = {**sandbox.environment(), variable: value}
    if variable.startswith("AWS_ENDPOINT"):
        env["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = None
    r = run(env, "threads")
    assert r.code == 2, (r.out, r.err)
    assert named in one_line_error(r)


def test_a_mistyped_duration_option_is_named(sandbox: Sandbox) -> None:
    r = run(sandbox.environment(), "expire", "--older-than", "a month")
    assert r.code == 2
    assert "--older-than must be a duration, got 'a month'; expected a number with a unit" in (
        one_line_error(r)
    )


@pytest.mark.parametrize(
    ("grace", "shown"), [("3600", "1h"), ("1h", "1h"), ("30m", "30m"), ("90s", "90s"), ("0", "0s")]
)
def test_gc_grace_takes_what_expire_older_than_takes_and_plain_seconds(
    sandbox: Sandbox, grace: str, shown: str
) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        sandbox.setup()
    for full in ((), ("--full",)):
        r = run(env, "gc", *full, "--grace", grace)
        assert r.code == 0, r.err
        assert (
            r.out.splitlines()[0] == f"0 unreferenced objects older than {shown} (0 B) in 0 threads"
        )
        assert (
            run(env, "gc", *full, "--grace", grace, "--json").json()["plan"]["grace_seconds"]
            == ({"1h": 3600, "30m": 1800, "90s": 90, "0s": 0}[shown])
        )


def test_a_mistyped_gc_grace_is_named_with_what_it_takes(sandbox: Sandbox) -> None:
    for typo, named in (
        ("an hour", "got 'an hour'"),
        ("-5", "0 or at least one second, got '-5'"),
        ("0.1", "got '0.1'"),
    ):
        r = run(sandbox.environment(), "gc", "--grace", typo)
        assert r.code == 2
        line = one_line_error(r)
        assert line.startswith("s3dynamo: --grace must be ") and named in line, line
        assert (
            "a number with a unit, d, h, m or s (30d, 12h, 90m, 3600s), or a number of seconds"
            in line
        )


def test_doctor_in_another_region_names_the_region(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        sandbox.setup()
    away = {**env, "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1"}
    r = run(away, "doctor")
    assert r.code == 1, (r.out, r.err)
    assert (
        f"bucket {sandbox.bucket!r} lives in region us-east-1, this saver is configured for "
        "eu-west-1; set AWS_REGION=us-east-1"
    ) in r.err
    assert r.out.splitlines()[-1] == "1 problem"
    # Any other command: the same words, exit 2, as a setting to fix.
    threads = run(away, "threads")
    assert threads.code == 2 and "set AWS_REGION=us-east-1" in one_line_error(threads)


# ------------------------------------------------- issue 49: output that can mislead


def _put(saver: Any, tid: str) -> None:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notes": tid}
    checkpoint["channel_versions"] = {"notes": "1"}
    saver.put(
        {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}, checkpoint, {}, {"notes": "1"}
    )


def test_thread_ids_that_would_look_alike_are_shown_quoted(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    tids = ["plain", "user 42", "user 42 ", "", "a\nb", "'quoted'"]
    with environment(command_env(env)):
        saver = sandbox.saver()
        for tid in tids:
            _put(saver, tid)
    listed = run(env, "threads", "--json")
    assert sorted(t["thread_id"] for t in listed.json()["threads"]) == sorted(tids)
    text = run(env, "threads")
    assert text.code == 0, text.err
    rows = [row for row in text.out.splitlines()[2:] if row.strip()]
    assert len(rows) == len(tids), text.out  # one line each: no id breaks a row
    starts = ["plain ", "user 42 ", "'user 42 ' ", "'' ", "'a\\nb' ", "\"'quoted'\" "]
    assert sorted(next(s for s in starts if row.startswith(s)) for row in rows) == sorted(starts)


def test_a_namespace_label_holding_a_slash_is_written_apart_from_two_labels(
    sandbox: Sandbox,
) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        store = S3DynamoStore.from_saver(sandbox.saver())
        store.put(("docs", "a/b"), "k", {"v": "one label"})
        store.put(("docs", "a", "b"), "k", {"v": "two labels"})
    listed = run(env, "memory", "namespaces")
    assert listed.out.split() == ["docs/a/b", "docs/a\\/b"], listed.out
    one = run(env, "memory", "show", "docs/a\\/b", "k", "--json").json()
    two = run(env, "memory", "show", "docs/a/b", "k", "--json").json()
    assert (one["value"], two["value"]) == ({"v": "one label"}, {"v": "two labels"})
    found = run(env, "memory", "search", "docs")
    assert sorted(line.split()[0] for line in found.out.splitlines()) == [
        "docs/a/b",
        "docs/a\\/b",
    ]


def test_expire_names_its_time_to_live_as_it_was_given(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        _put(sandbox.saver(), "t")
    for given in ("30d", "12h", "90m"):
        r = run(env, "expire", "--older-than", given)
        assert r.code == 0, r.err
        assert f"0 threads idle for over {given}" in r.out, r.out
        assert "0:00:00" not in r.out


def test_the_copy_plan_says_what_it_writes_and_what_it_shares(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        _put(sandbox.saver(), "t")
    r = run(env, "copy", "t", "t2")
    assert r.code == 0, r.err
    assert "copy t -> t2: 1 checkpoint; writes 1 item, shares 0 objects (no object is written)" in (
        " ".join(r.out.split())
    )


def test_a_wrong_key_says_the_deployment_s_summary_once(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        _put(sandbox.saver(), "t")
    key = base64.b64encode(os.urandom(32)).decode()
    wrong = {**env, "S3DYNAMO_KEYS": f"{env['S3DYNAMO_KEYS'].split(':')[0]}:{key}"}
    line = one_line_error(run(wrong, "show", "t"))
    assert line.count("naming key fingerprint") == 1, line
    assert "this saver's differs in the keys' check values only" in line


def test_threads_with_only_the_key_a_rotation_retired_is_refused_never_empty(
    sandbox: Sandbox,
) -> None:
    """After a rotation (`new` first) and reencrypt, a process left with the old keyring
    opens no checkpoint: `threads` names the key it lacks, exit 2, as `show` does, never
    "no threads" with exit 0. An empty page token is usage, as any other bad one."""
    env = sandbox.environment()
    old = str(env["S3DYNAMO_KEYS"])
    rotated = {**env, "S3DYNAMO_KEYS": f"new:{base64.b64encode(os.urandom(32)).decode()},{old}"}
    with environment(command_env(rotated)):
        _put(sandbox.saver(), "t")
    assert run(rotated, "reencrypt", "--yes").code == 0
    listed = run(env, "threads")
    assert listed.code == 2, listed.out
    assert "'new'" in one_line_error(listed)
    assert run(rotated, "threads").code == 0
    empty = run(rotated, "threads", "--page-token", "")
    assert empty.code == 2 and "--page-token '' is not a token this command printed" in empty.err


def test_a_key_that_is_no_base64_says_how_to_make_one(sandbox: Sandbox) -> None:
    env = {**sandbox.environment(), "S3DYNAMO_KEYS": "k1:not base64!"}
    line = one_line_error(run(env, "threads"))
    assert "key is not valid base64" in line
    assert "make one with: python -c 'import os,base64;" in line


def test_outside_a_terminal_no_id_or_page_token_is_wrapped(sandbox: Sandbox) -> None:
    """stdout a pipe (here a buffer, as `s3dynamo threads | less` has it), at COLUMNS=80:
    a 140-character thread id and the page token after it each stay whole on one line,
    so a line copied out of the output is a command that works."""
    env = sandbox.environment()
    tid = "customer-" + "x" * 131
    with environment(command_env(env)):
        saver = sandbox.saver()
        _put(saver, "older")
        _put(saver, tid)  # the newest: first on the page, and in the page token
    token = run(env, "threads", "--limit", "1", "--json").json()["next_page_token"]
    assert len(token) > 80
    listed, shown, stats, deleting, copying = (
        run(env, *args).out.splitlines()
        for args in (
            ("threads", "--limit", "1"),
            ("show", tid),
            ("stats", tid),
            ("delete", tid),
            ("copy", tid, f"{tid}-2"),
        )
    )
    assert [line.split()[0] for line in listed[2:-1]] == [tid], listed
    assert listed[-1] == f"next page: s3dynamo threads --page-token {token}"
    assert shown[0] == f"thread      {tid}"
    assert stats[0] == f"thread {tid}: 1 thread, 1 checkpoint"
    assert deleting[0] == f"delete thread {tid}: 1 checkpoint, 1 item, 0 objects (0 B)"
    assert copying[0] == (
        f"copy {tid} -> {tid}-2: 1 checkpoint; writes 1 item, shares 0 objects "
        "(no object is written)"
    )
