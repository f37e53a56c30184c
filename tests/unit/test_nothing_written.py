"""Nothing written (issue 39): every error the saver raises before writing leaves the
table and the bucket exactly as they were (`tests/support/unchanged.py`), through the
sync method and its async twin, and through a graph run in each durability mode where the
error reaches one. docs/RELIABILITY.md, "Errors raised before anything is written", lists
them. A test taking `backend` runs on the in-memory twins and on moto."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import (
    ArgumentTypeError,
    CatalogNotBuiltError,
    ConcurrentUpdateError,
    DeploymentMismatchError,
    InvalidConfigError,
    ItemTooLargeError,
    LeaseTimeoutError,
    S3DynamoSaver,
    ThreadExistsError,
    ThreadNotFoundError,
    ValueNotSerializableError,
)
from langgraph.checkpoint.s3dynamo.ops.gc import plan_gc
from tests.support.backends import Backend
from tests.support.scenarios import chat_graph
from tests.support.unchanged import differences, nothing_written

# Random, so zstd cannot shrink it: 1 MB of text, as the user passed.
BIG = os.urandom(500_000).hex()


def put_args(tid: str = "t-new", **configurable: Any) -> tuple[Any, ...]:
    """A put of a small checkpoint on `tid`: config, checkpoint, metadata, new versions."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notes": "fine"}
    checkpoint["channel_versions"] = {"notes": "1"}
    config = {"configurable": {"thread_id": tid, "checkpoint_ns": "", **configurable}}
    return config, checkpoint, {"source": "input", "step": -1}, {"notes": "1"}


class Prepared(NamedTuple):
    saver: S3DynamoSaver
    config: dict[str, Any]  # of the checkpoint the thread "t" holds


def prepared(backend: Backend, **settings: Any) -> Prepared:
    """A deployment with two threads, "t" and "u", of one checkpoint each."""
    saver = backend.saver(**settings)
    config = saver.put(*put_args("t"))
    saver.put(*put_args("u"))
    return Prepared(saver, config)


class Call(NamedTuple):
    """A call that raises before writing: on which saver, the method, its arguments."""

    saver: S3DynamoSaver
    method: str
    args: tuple[Any, ...]


def _with(args: tuple[Any, ...], index: int, value: Any) -> tuple[Any, ...]:
    return (*args[:index], value, *args[index + 1 :])


def _body_too_large() -> tuple[Any, ...]:
    config, checkpoint, metadata, _ = put_args()
    # Channel versions of 30,000 channels: a body no index item holds (random suffixes,
    # as get_next_version makes them, so compression does not save it).
    checkpoint["channel_versions"] = {
        f"c{i}": f"{i:032}.{os.urandom(8).hex()}" for i in range(30_000)
    }
    return config, checkpoint, metadata, {}


def _own_parent(p: Prepared) -> tuple[Any, ...]:
    """A put of thread "t" whose checkpoint has the id of the one its config continues."""
    _, checkpoint, metadata, versions = put_args("t")
    own = {**checkpoint, "id": p.config["configurable"]["checkpoint_id"]}
    return p.config, own, metadata, versions


class HoldsALock:
    def __init__(self) -> None:
        self.lock = threading.Lock()


def other(backend: Backend, p: Prepared, **settings: Any) -> S3DynamoSaver:
    return backend.saver(setup=False, **settings)


CASES: dict[str, tuple[type[Exception], str, Callable[[Backend, Prepared], Call]]] = {
    "put without a thread id": (
        InvalidConfigError,
        "config has no thread_id",
        lambda b, p: Call(p.saver, "put", _with(put_args(), 0, {"configurable": {}})),
    ),
    "put with a thread id too long": (
        InvalidConfigError,
        "thread_id is 2000 bytes",
        lambda b, p: Call(p.saver, "put", put_args("x" * 2000)),
    ),
    "put with a thread id of another type": (
        TypeError,
        "thread_id must be a str",
        lambda b, p: Call(p.saver, "put", put_args(1.5)),  # type: ignore[arg-type]
    ),
    "put of a malformed checkpoint id": (
        InvalidConfigError,
        "checkpoint id",
        lambda b, p: Call(p.saver, "put", _with(put_args(), 1, {**put_args()[1], "id": "a#b"})),
    ),
    "put whose config is too large for its metadata": (
        ItemTooLargeError,
        "copies from the config into every checkpoint.*'user_profile'",
        lambda b, p: Call(p.saver, "put", put_args("t", user_profile=BIG)),
    ),
    "put of metadata too large": (
        ItemTooLargeError,
        "metadata is .* largest key is 'blob'",
        lambda b, p: Call(p.saver, "put", _with(put_args(), 2, {"blob": BIG})),
    ),
    "put of a body too large": (
        ItemTooLargeError,
        "the checkpoint body",
        lambda b, p: Call(p.saver, "put", _body_too_large()),
    ),
    "put of a value the serializer cannot store": (
        ValueNotSerializableError,
        "channel 'notes' holds a tests.unit.test_nothing_written.HoldsALock",
        lambda b, p: Call(
            p.saver,
            "put",
            _with(put_args(), 1, {**put_args()[1], "channel_values": {"notes": HoldsALock()}}),
        ),
    ),
    "put of metadata the serializer cannot store": (
        ValueNotSerializableError,
        "the metadata holds",
        lambda b, p: Call(p.saver, "put", _with(put_args(), 2, {"step": -1, "f": HoldsALock()})),
    ),
    "put of a new thread by a saver on another bucket": (
        DeploymentMismatchError,
        "go to bucket",
        lambda b, p: Call(other(b, p, bucket=f"{b.bucket}-typo"), "put", put_args()),
    ),
    "put of a new thread by a saver with other keys": (
        DeploymentMismatchError,
        r"key id\(s\) \['k1'\] hold other keys",
        lambda b, p: Call(other(b, p, keys={"k1": os.urandom(32)}), "put", put_args()),
    ),
    "put_writes without a checkpoint id": (
        InvalidConfigError,
        "put_writes needs the checkpoint the writes belong to",
        lambda b, p: Call(p.saver, "put_writes", (put_args("t")[0], [("notes", "x")], "task")),
    ),
    "put_writes with a task id of another type": (
        TypeError,
        "task_id must be a str",
        lambda b, p: Call(p.saver, "put_writes", (p.config, [("notes", "x")], 7)),
    ),
    "put_writes whose config is too large for its checkpoint's metadata": (
        ItemTooLargeError,
        "the writes of task 'task'.*'user_profile'",
        lambda b, p: Call(
            p.saver,
            "put_writes",
            (
                {"configurable": {**p.config["configurable"], "user_profile": BIG}},
                [("notes", "x")],
                "task",
            ),
        ),
    ),
    "put_writes of a write the serializer cannot store": (
        ValueNotSerializableError,
        "the write of task 'task' to channel 'tool'",
        lambda b, p: Call(
            p.saver, "put_writes", (p.config, [("notes", "ok"), ("tool", HoldsALock())], "task")
        ),
    ),
    "copy_thread onto a thread with checkpoints": (
        ThreadExistsError,
        "'u'",
        lambda b, p: Call(p.saver, "copy_thread", ("t", "u")),
    ),
    "copy_thread onto itself": (
        ThreadExistsError,
        "the same thread 't'",
        lambda b, p: Call(p.saver, "copy_thread", ("t", "t")),
    ),
    "prune with an unknown strategy": (
        InvalidConfigError,
        "unknown prune strategy 'newest'",
        lambda b, p: Call(p.saver, "prune", (["t"], "newest")),
    ),
    # Issue 49: arguments of another type, each named before any request.
    "prune of one string, not a list of thread ids": (
        ArgumentTypeError,
        r"thread_ids must be a list of thread ids .* got the string 'tu'.*pass \['tu'\]",
        lambda b, p: Call(p.saver, "prune", ("tu", "keep_latest")),
    ),
    "prune with keep_last as text": (
        ArgumentTypeError,
        "keep_last must be a whole number",
        lambda b, p: Call(p.saver, "prune", (["t"], "keep_latest", "2")),
    ),
    "copy_thread from a thread that does not exist": (
        ThreadNotFoundError,
        "copy_thread source 'nobody' has no checkpoints",
        lambda b, p: Call(p.saver, "copy_thread", ("nobody", "copy")),
    ),
    "delete_for_runs of one string": (
        ArgumentTypeError,
        "run_ids must be a list of run ids",
        lambda b, p: Call(p.saver, "delete_for_runs", ("run-1",)),
    ),
    "put of a checkpoint that is no mapping": (
        ArgumentTypeError,
        "checkpoint must be a dict, got the string",
        lambda b, p: Call(p.saver, "put", _with(put_args(), 1, "checkpoint")),
    ),
    "put of a checkpoint naming itself as its parent": (
        InvalidConfigError,
        "names this checkpoint as its own parent",
        lambda b, p: Call(p.saver, "put", _own_parent(p)),
    ),
    "put of a config that is no mapping": (
        ArgumentTypeError,
        "config must be a config such as",
        lambda b, p: Call(p.saver, "put", _with(put_args(), 0, "t")),
    ),
    # Issue 50: the thread catalog's search, its arguments named before any request.
    "search_threads with a limit as text": (
        ArgumentTypeError,
        "limit must be a whole number",
        lambda b, p: Call(p.saver, "search_threads", ({"limit": "3"},)),
    ),
    "search_threads with metadata as text": (
        ArgumentTypeError,
        "metadata must be a dict, got the string 'user_id=ada'",
        lambda b, p: Call(p.saver, "search_threads", ({"metadata": "user_id=ada"},)),
    ),
    "search_threads before a number": (
        ArgumentTypeError,
        "before must be a thread search_threads returned, its cursor",
        lambda b, p: Call(p.saver, "search_threads", ({"before": 5},)),
    ),
    "search_threads by a saver that declares no catalog field": (
        InvalidConfigError,
        "declares no catalog field",
        lambda b, p: Call(p.saver, "search_threads", ({"metadata": {"user_id": "ada"}},)),
    ),
    "search_threads before the catalog is built": (
        CatalogNotBuiltError,
        "catalog of field 'user_id' is not complete",
        lambda b, p: Call(
            other(b, p, catalog_fields="langgraph"),
            "search_threads",
            ({"metadata": {"user_id": "ada"}},),
        ),
    ),
    "put_writes of writes as one string": (
        ArgumentTypeError,
        "writes must be a list of \\(channel, value\\) pairs",
        lambda b, p: Call(p.saver, "put_writes", (p.config, "notes", "task")),
    ),
}


def _call(call: Call, asynchronous: bool) -> Any:
    if call.method == "search_threads":  # keywords only
        if asynchronous:
            return asyncio.run(call.saver.asearch_threads(**call.args[0]))
        return call.saver.search_threads(**call.args[0])
    if call.method == "prune":  # its strategy and keep_last are keywords
        thread_ids, strategy, *keep_last = call.args
        more = {"keep_last": keep_last[0]} if keep_last else {}
        if asynchronous:
            return asyncio.run(call.saver.aprune(thread_ids, strategy=strategy, **more))
        return call.saver.prune(thread_ids, strategy=strategy, **more)
    if asynchronous:
        return asyncio.run(getattr(call.saver, f"a{call.method}")(*call.args))
    return getattr(call.saver, call.method)(*call.args)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_call_refused_before_writing_leaves_table_and_bucket_unchanged(
    backend: Backend, case: str, asynchronous: bool
) -> None:
    error, named, arrange = CASES[case]
    call = arrange(backend, prepared(backend, inline_max=0))  # every value an object
    with nothing_written(backend), pytest.raises(error, match=named):
        _call(call, asynchronous)


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"plaintext": "false", "keys": None, "secret": None}, "no sealing key is configured"),
        ({"plaintext": "no", "keys": None, "secret": None}, "no sealing key is configured"),
        ({"table": 123}, "table must be a str"),
        ({"inline_max": "big"}, "inline_max must be a whole number"),
        ({"detect_concurrent_runs": "sometimes"}, "detect_concurrent_runs must be yes or no"),
        ({"catalog_fields": 5}, "catalog_fields must be a list of metadata field names"),
        ({"catalog_fields": ["user_id", ""]}, r"catalog_fields\[1\] must be a field name"),
    ],
)
def test_a_saver_refused_as_it_is_made_writes_nothing(
    backend: Backend, settings: dict[str, Any], named: str
) -> None:
    """Issue 49: a setting given as an argument of another type or spelling; no saver,
    so nothing it could write."""
    prepared(backend)
    with nothing_written(backend), pytest.raises(InvalidConfigError, match=named):
        backend.saver(setup=False, **settings)


def test_a_second_holder_of_a_thread_lock_is_refused_without_writing(backend: Backend) -> None:
    p = prepared(backend)
    second = backend.saver(setup=False)

    async def second_async() -> None:
        async with second.ops.athread_lock("t", wait=0):
            pass

    # A long ttl: no heartbeat renews the held lease while the table is compared.
    with p.saver.ops.thread_lock("t", ttl=120):
        with nothing_written(backend), pytest.raises(LeaseTimeoutError):
            second.ops.thread_lock("t", wait=0).__enter__()
        with nothing_written(backend), pytest.raises(LeaseTimeoutError):
            asyncio.run(second_async())
        with nothing_written(backend), pytest.raises(InvalidConfigError, match="reentrant"):
            p.saver.ops.thread_lock("t").__enter__()


def test_expiring_without_a_time_to_live_is_refused_without_writing(backend: Backend) -> None:
    p = prepared(backend)
    with nothing_written(backend), pytest.raises(InvalidConfigError, match="S3DYNAMO_RETENTION"):
        p.saver.ops.expire_idle_threads()


# --------------------------------------------------------------- through a graph run

GRAPH_CASES: dict[
    str, tuple[type[Exception], str, Callable[[Backend], tuple[S3DynamoSaver, dict[str, Any]]]]
] = {
    # The user: a 1 MB string in config["configurable"], on an existing thread
    # and on a new one. Every checkpoint of the run and every task's writes are refused.
    "a config too large, existing thread": (
        ItemTooLargeError,
        "'user_profile'",
        lambda b: (b.saver(setup=False), {"thread_id": "t", "user_profile": BIG}),
    ),
    "a config too large, new thread": (
        ItemTooLargeError,
        "'user_profile'",
        lambda b: (b.saver(setup=False), {"thread_id": "t-new", "user_profile": BIG}),
    ),
    "a thread id too long": (
        InvalidConfigError,
        "thread_id is 2000 bytes",
        lambda b: (b.saver(setup=False), {"thread_id": "x" * 2000}),
    ),
    "other keys, new thread": (
        DeploymentMismatchError,
        "hold other keys",
        lambda b: (b.saver(setup=False, keys={"k1": os.urandom(32)}), {"thread_id": "t-new"}),
    ),
    "another bucket, existing thread": (
        DeploymentMismatchError,
        "go to bucket",
        lambda b: (b.saver(setup=False, bucket=f"{b.bucket}-typo"), {"thread_id": "t"}),
    ),
}


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("case", sorted(GRAPH_CASES))
def test_a_graph_run_refused_before_writing_leaves_table_and_bucket_unchanged(
    backend: Backend, case: str, asynchronous: bool, durability: str
) -> None:
    error, named, arrange = GRAPH_CASES[case]
    writer = backend.saver()
    config = {"configurable": {"thread_id": "t"}}
    chat_graph(writer).invoke({"messages": [HumanMessage("hello", id="h0")]}, config)
    saver, configurable = arrange(backend)
    graph = chat_graph(saver)
    turn = {"messages": [HumanMessage("again", id="h1")]}
    run_config = {"configurable": configurable}
    with nothing_written(backend), pytest.raises(error, match=named):
        if asynchronous:
            asyncio.run(graph.ainvoke(turn, run_config, durability=durability))
        else:
            graph.invoke(turn, run_config, durability=durability)
    # The thread reads as it was: one turn.
    state = chat_graph(writer).get_state(config).values
    assert [m.content for m in state["messages"]] == ["hello", "turn 1; heard: hello"]


# ---------------------------------------------- what a refused commit may leave behind


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
def test_a_commit_refused_for_a_stale_run_leaves_only_its_upload_intent_and_objects(
    backend: Backend,
) -> None:
    """Not an error raised before writing: the refusal comes with the commit, after the
    upload wave. Nothing is visible; the intent and the objects it names stay for garbage
    collection (docs/RELIABILITY.md)."""
    p = prepared(backend, inline_max=0)  # every value an object
    stale = backend.saver(setup=False, inline_max=0)
    latest = stale.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest is not None
    # Another run moves the thread on.
    moved = put_args("t", checkpoint_id=latest.config["configurable"]["checkpoint_id"])
    p.saver.put(*moved)
    config, checkpoint, metadata, _ = put_args(
        "t", checkpoint_id=latest.config["configurable"]["checkpoint_id"]
    )
    checkpoint["channel_values"] = {"notes": "from the stale run"}
    checkpoint["channel_versions"] = {"notes": "2"}
    before = backend.contents()
    with pytest.raises(ConcurrentUpdateError, match="another run committed"):
        stale.put(config, checkpoint, metadata, {"notes": "2"})
    added = differences(before, backend.contents())
    assert added and all(line.startswith("added ") for line in added), added
    kinds = sorted({"object" if " object " in f" {k} " else "intent" for k in added})
    assert kinds == ["intent", "object"], added
    assert all(("object" in k) or ("intents" in k) or ("~uploads" in k) for k in added), added


# ------------------------------ the writes LangGraph sends beside a put that is refused


def _unstorable_turn(backend: Backend) -> tuple[Any, dict[str, Any]]:
    """A thread "t" of one turn, and the issue's next turn: a message holding a lock."""
    writer = backend.saver()
    config = {"configurable": {"thread_id": "t"}}
    chat_graph(writer).invoke({"messages": [HumanMessage("hello", id="h0")]}, config)
    unstorable = HumanMessage("hi", id="h1", additional_kwargs={"lock": threading.Lock()})
    return chat_graph(backend.saver(setup=False)), {"messages": [unstorable]}


@pytest.mark.parametrize("durability", ["sync", "exit"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("tid", ["t", "t-new"])
def test_a_run_whose_input_cannot_be_serialized_writes_nothing(
    backend: Backend, tid: str, asynchronous: bool, durability: str
) -> None:
    graph, turn = _unstorable_turn(backend)
    config = {"configurable": {"thread_id": tid}}
    with nothing_written(backend), pytest.raises(ValueNotSerializableError, match="nothing of"):
        if asynchronous:
            asyncio.run(graph.ainvoke(turn, config, durability=durability))
        else:
            graph.invoke(turn, config, durability=durability)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_with_async_durability_the_next_steps_writes_are_a_leftover_the_error_names(
    backend: Backend, asynchronous: bool
) -> None:
    """Issue 56: with durability "async" (LangGraph's default) the input checkpoint's put
    is refused while the step after it runs, and LangGraph sends that step's writes for a
    checkpoint it will never put. The error said "nothing was written" and `verify`
    reported the writes record as a problem for good. Now the error says what stays,
    `verify` counts it without calling it a problem, and the full collection takes it."""
    graph, turn = _unstorable_turn(backend)
    before = backend.contents()
    with pytest.raises(ValueNotSerializableError) as raised:
        if asynchronous:
            asyncio.run(graph.ainvoke(turn, {"configurable": {"thread_id": "t"}}))
        else:
            graph.invoke(turn, {"configurable": {"thread_id": "t"}})
    assert 'nothing of this checkpoint was written (with durability="async", writes' in (
        str(raised.value)
    )
    added = differences(before, backend.contents())
    assert len(added) == 1 and added[0].startswith("added item "), added
    saver = backend.saver(setup=False)
    report = saver.ops.verify()
    assert report.ok and report.leftover_writes == 1
    later = datetime.now(timezone.utc) + timedelta(hours=2)
    plan = plan_gc(saver.store, grace=timedelta(hours=1), now=later)
    plan.execute(now=later)
    assert plan.writes_deleted == 1 and differences(before, backend.contents()) == []


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
def test_writes_sent_for_a_checkpoint_whose_commit_is_refused_are_taken_back(
    backend: Backend,
) -> None:
    """The double-clicked send: the losing run's put is refused after LangGraph sent a
    task's writes for its checkpoint; those go with the refusal, and writes sent for it
    after are refused with the same error, writing nothing."""
    p = prepared(backend)
    stale = backend.saver(setup=False)
    latest = stale.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest is not None
    parent = latest.config["configurable"]["checkpoint_id"]
    p.saver.put(*put_args("t", checkpoint_id=parent))  # the other run moves the thread on
    config, checkpoint, metadata, _ = put_args("t", checkpoint_id=parent)
    checkpoint["channel_values"] = {"notes": "from the stale run"}
    checkpoint["channel_versions"] = {"notes": "2"}
    own = {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}
    with nothing_written(backend):
        stale.put_writes(own, [("notes", "sent before the put")], "task-1")
        with pytest.raises(ConcurrentUpdateError, match="another run committed") as refused:
            stale.put(config, checkpoint, metadata, {"notes": "2"})
        with pytest.raises(ConcurrentUpdateError) as again:
            stale.put_writes(own, [("notes", "sent after the put")], "task-2")
    assert again.value is refused.value  # the put's own error, as it said it
    assert p.saver.ops.verify().to_dict()["leftover_writes"] == 0
