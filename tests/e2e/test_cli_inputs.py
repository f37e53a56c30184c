"""The command line given what a new user types (issue 39, part 4): a filter that is no
JSON, --json before the command, an id as `history` prints it for a subgraph's checkpoint,
an expired item, a sweep carried out, a duration or switch mistyped, a wrong region.
Usage and configuration errors are one line with the fix and exit 2; nothing prints a
Python exception or repr. In process through the entry point, on moto in process."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
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


def test_a_filter_that_is_no_json_is_a_usage_error_with_an_example(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    with environment(command_env(env)):
        S3DynamoStore.from_saver(sandbox.saver()).put(("users",), "m1", {"kind": "pref"})
    for given, example in (("kind=pref", '{"kind": "pref"}'), ("pref", '{"kind": "note"}')):
        r = run(env, "memory", "search", "users", "--filter", given)
        assert r.code == 2, r.err
        assert "JSONDecodeError" not in r.err and "Traceback" not in r.err
        assert f"expected a JSON object of field values, got {given!r}" in r.err
        assert f"--filter '{example}'" in r.err
    found = run(env, "memory", "search", "users", "--filter", '{"kind": "pref"}', "--json")
    assert [i["key"] for i in found.json()] == ["m1"]


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
