"""The command line's pure formatting: JSON values, diffs, next nodes, sizes, cost,
page tokens."""

from __future__ import annotations

import ast
import operator
from pathlib import Path
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Interrupt, Send
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo.cli import plans, render, views


def test_jsonable_turns_messages_bytes_and_sets_into_json() -> None:
    value = {
        "messages": [HumanMessage("hi", id="1"), AIMessage("hello", id="2")],
        "raw": b"\x00\x01",
        "tags": {"b", "a"},
        "pair": (1, 2),
    }
    assert render.jsonable(value) == {
        "messages": [
            {"type": "human", "content": "hi", "id": "1"},
            {"type": "ai", "content": "hello", "id": "2"},
        ],
        "raw": {"base64": "AAE="},
        "tags": ["a", "b"],
        "pair": [1, 2],
    }


def test_diff_shows_added_messages_and_changed_keys() -> None:
    before = render.jsonable(
        {"messages": [HumanMessage("hi", id="1")], "order": {"a": 1, "b": 2}, "n": 1}
    )
    after = render.jsonable(
        {
            "messages": [HumanMessage("hi", id="1"), AIMessage("hello", id="2")],
            "order": {"a": 1, "b": 3, "c": 4},
            "n": 1,
            "done": True,
        }
    )
    changes = render.diff_states(before, after)
    assert [c["channel"] for c in changes] == ["done", "messages", "order"]
    done, messages, order = changes
    assert done["change"] == "added"
    assert messages["messages_added"] == [{"type": "ai", "content": "hello", "id": "2"}]
    assert (order["keys_added"], order["keys_removed"], order["keys_changed"]) == (
        ["c"],
        [],
        ["b"],
    )
    assert render.diff_lines(changes) == [
        "done: added true",
        "messages: 1 message added",
        "  + ai: hello",
        'order: {"a": 1, "b": 2} -> {"a": 1, "b": 3, "c": 4}',
        "  + c: 4",
        "  ~ b: 3",
    ]
    assert render.diff_lines([]) == ["no channel changed"]


def test_next_nodes_from_trigger_channels_and_sends() -> None:
    checkpoint = {
        "channel_versions": {"branch:to:a": "2.0.1", "branch:to:b": "3.0.1", "__start__": "1"},
        "versions_seen": {"a": {"branch:to:a": "2.0.1"}, "b": {"branch:to:b": "1.0.5"}},
        # branch:to:a was consumed; __start__ consumed too.
        "channel_values": {"branch:to:b": None, "__pregel_tasks": [Send("worker", {"x": 1})]},
    }
    assert render.next_nodes(checkpoint) == ["b", "worker"]


class JoinState(TypedDict):
    log: Annotated[list[str], operator.add]


@pytest.mark.parametrize("defer", [False, True], ids=["join", "deferred join"])
def test_next_nodes_are_what_get_state_shows_at_every_step_of_a_join(defer: bool) -> None:
    """A node after three parallel ones (a join; deferred, its channel also says whether
    the rest finished), which then waits on an interrupt: the checkpoint alone gives what
    LangGraph's `get_state(...).next` gives at every step."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt

    builder = StateGraph(JoinState)
    for name in ("left", "right", "mid"):
        builder.add_node(name, lambda s, name=name: {"log": [name]})
        builder.add_edge(START, name)
    builder.add_node("approve", lambda s: {"log": [str(interrupt("approve?"))]}, defer=defer)
    builder.add_edge(["left", "right", "mid"], "approve")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    history = list(graph.get_state_history(config))
    assert history[0].next == ("approve",)
    saver = graph.checkpointer
    assert isinstance(saver, InMemorySaver)
    found = [render.next_nodes(saver.get_tuple(h.config).checkpoint) for h in history]  # type: ignore[union-attr]
    assert [sorted(f) for f in found] == [sorted(h.next) for h in history]


def test_interrupts_from_pending_writes() -> None:
    writes = [
        ("t1", "messages", []),
        ("t2", "__interrupt__", [Interrupt(value={"q": "ok?"}, id="i1")]),
    ]
    assert render.interrupts(writes) == [{"task_id": "t2", "id": "i1", "value": {"q": "ok?"}}]


def test_monthly_cost_at_list_prices() -> None:
    cost = render.monthly_cost(items=1000, item_bytes=2**30 - 100_000, object_bytes=2**30)
    assert cost["dynamodb_monthly"] == pytest.approx(0.25)
    assert cost["s3_monthly"] == pytest.approx(0.023)
    assert cost["total_monthly"] == pytest.approx(0.273)
    assert render.usd(0.273) == "$0.27" and render.usd(0.0000052) == "$0.000005"


def test_page_tokens_resume_after_the_last_row() -> None:
    rows = sorted(
        [
            {"thread_id": "a", "last_updated": "2026-01-02"},
            {"thread_id": "b", "last_updated": "2026-01-03"},
            {"thread_id": "c", "last_updated": "2026-01-02"},
            {"thread_id": "d", "last_updated": None},
        ],
        key=views.thread_order,
    )
    assert [r["thread_id"] for r in rows] == ["b", "a", "c", "d"]
    token = views.row_token("2026-01-02", "a")
    assert [r["thread_id"] for r in views.after_token(rows, token)] == ["c", "d"]
    with pytest.raises(ValueError, match="page-token"):
        views.parse_page_token("not a token")


def test_sizes_and_summaries() -> None:
    assert render.human_bytes(999) == "999 B"
    assert render.human_bytes(43_100) == "43.1 kB"
    assert render.summary({"a": 1}) == '{"a": 1}'
    assert render.summary(list(range(100)), 20).startswith("list of 100")
    assert render.message_line({"type": "human", "content": "x " * 100}, 20).endswith("…")


def test_verify_and_stats_open_values_stored_as_deltas() -> None:
    from tests.support.chats import chat
    from tests.support.savers import delta_values, memory_saver

    saver = memory_saver()
    chat(saver, "t", 30)
    assert delta_values(saver, "t")
    report = saver.ops.verify("t")
    assert report.ok, report.problems
    stats = saver.ops.stats("t").to_dict()
    assert stats


def test_value_lines_show_a_value_whole_or_cut_short_and_say_what_was_cut() -> None:
    asked = {"question": "Approve a refund of $120 for order #1001?", "notes": "since 2019"}
    assert render.value_lines({"question": "ok?"}, 74, full=False) == ['{"question": "ok?"}']
    lines = render.value_lines(asked, 40, full=False)
    assert lines == [
        "{",
        '  "question": "Approve a refund of $120 for order #1001?",',
        '  "notes": "since 2019"',
        "}",
    ]
    long = {"text": "x" * 500, "items": list(range(25))}
    cut = "\n".join(render.value_lines(long, 74, full=False))
    assert '"x' + "x" * 118 + '…"' in cut and '"… 15 more"' in cut and "24" not in cut
    whole = "\n".join(render.value_lines(long, 74, full=True))
    assert "x" * 500 in whole and "24" in whole and "more" not in whole


def test_redact_keeps_the_shape_and_hides_text_and_numbers() -> None:
    value = render.jsonable(
        {
            "messages": [HumanMessage("my card is 4242", id="m1")],
            "refund": {"amount": 120.5, "approved": True, "note": None, "tags": ["vip"]},
        }
    )
    assert render.redact(value) == {
        "messages": [{"type": "human", "content": "<15 chars>", "id": "m1"}],
        "refund": {"amount": "<number>", "approved": True, "note": None, "tags": ["<3 chars>"]},
    }
    assert render.redact("a") == "<1 char>"


def test_verify_names_a_delta_base_that_was_altered_or_deleted() -> None:
    from tests.support.chats import chat
    from tests.support.savers import delta_values, memory_saver

    saver = memory_saver()
    chat(saver, "t", 30)
    bases = {s.base.key for s in delta_values(saver, "t")}
    key = sorted(bases)[0]
    body, stamp = saver.objects.blobs[key]
    saver.objects.blobs[key] = (body[:-5] + bytes([body[-5] ^ 1]) + body[-4:], stamp)
    problems = saver.ops.verify("t").to_dict()["problems"]
    assert {(p["kind"], p["where"], p["key"]) for p in problems} == {("tampered", "object", key)}
    del saver.objects.blobs[key]
    problems = saver.ops.verify("t").to_dict()["problems"]
    assert {(p["kind"], p["where"], p["key"]) for p in problems} == {("missing", "object", key)}


def test_what_an_executed_plan_did_is_a_line_of_figures_not_a_repr() -> None:
    assert render.outcome(None) == "done"
    assert render.outcome({"deleted": 3}) == "done: deleted 3"
    assert render.outcome({"removed_threads": 2, "records_deleted": 40}) == (
        "done: removed threads 2; records deleted 40"
    )
    expired = {"dry_run": False, "items": {"store": 2, "cache": 0}}
    assert render.outcome(expired) == "done: items: store 2, cache 0"
    assert render.outcome(7) == "done: 7"


def test_verify_s_hint_says_what_to_do_about_each_kind_of_problem_found_once() -> None:
    assert render.verify_hint([]) is None
    hint = render.verify_hint(
        [{"kind": "unreferenced"}, {"kind": "unopenable"}, {"kind": "unreferenced"}]
    )
    assert hint == (
        "unopenable: sealed under a key not given here; add it to S3DYNAMO_KEYS as the "
        "writers have it; unreferenced: no reader uses it; `s3dynamo gc --full` removes it "
        "once older than the grace period (a younger one may be a write under way)"
    )


def test_a_progress_bar_counts_without_a_question_mark_while_the_total_is_unknown() -> None:
    from rich.progress import Progress

    from langgraph.checkpoint.s3dynamo.cli.common import _Count

    bar, column = Progress(), _Count()
    task = bar.add_task("reading every thread", total=None)
    assert column.render(bar.tasks[0]).plain == ""  # neither "0" nor "0/?" before a count
    bar.update(task, completed=12)
    assert column.render(bar.tasks[0]).plain == "12"
    bar.update(task, completed=5, total=12)
    assert column.render(bar.tasks[0]).plain == "5/12"


def test_every_plan_reads_from_the_one_table() -> None:
    """Every plan `saver.ops` or a command makes (`Plan("name", ...)`) has its lines in
    `cli/plans.py`'s table, by name; `delete_runs` is the saver's `delete_for_runs`, no
    command's."""
    root = Path(render.__file__).resolve().parents[1]
    names = {
        node.args[0].value
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "Plan"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    assert "gc" in names and "memory_delete" in names
    assert names - set(plans.SHOWN) == {"delete_runs"}
    assert set(plans.SHOWN) <= names
