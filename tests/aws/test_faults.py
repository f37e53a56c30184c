"""Faults and shared buckets through the AWS adapters (moto): a botocore event hook fails
request N before it is sent or after its answer came back, and garbage collection is run
in a bucket other deployments and other data share. The exhaustive runs are on the
in-memory ports in `tests/unit/test_faults.py`."""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.faults import Crash, History, read_history
from tests.support.savers import RequestCounter, make_saver
from tests.support.scenarios import chat_graph

READS = ("Query", "GetObject", "ListObjectsV2", "Scan")


class Hook:
    """Fails the `at`-th AWS request: before it is sent, or after it was applied."""

    def __init__(self, clients: tuple[Any, Any]) -> None:
        self.at: int | None = None
        self.mode = "before"
        self.count = 0
        for client in clients:
            client.meta.events.register("before-call.*.*", self._before)
            client.meta.events.register("after-call.*.*", self._after)

    def arm(self, at: int | None, mode: str = "before") -> None:
        self.at, self.mode, self.count = at, mode, 0
        self.names: list[str] = []

    def _before(self, model: Any, **_: Any) -> None:
        self.count += 1
        self.names.append(model.name)
        if self.count == self.at and self.mode == "before":
            raise Crash(f"injected before request {self.at}")

    def _after(self, **_: Any) -> None:
        if self.count == self.at and self.mode == "after":
            raise Crash(f"injected after request {self.at}")


def _history(graph: Any, tid: str) -> History:
    return read_history(graph, tid)


def test_copy_thread_through_aws_survives_a_fault_at_any_request(
    clients: tuple[Any, Any],
) -> None:
    saver = make_saver(clients, inline_max=0)
    saver.setup()
    graph = chat_graph(saver)
    for i in range(1):
        graph.invoke(
            {"messages": [HumanMessage(f"m{i}", id=f"h{i}")]}, {"configurable": {"thread_id": "t"}}
        )
    source = _history(graph, "t")
    hook = Hook(clients)
    hook.arm(None)
    saver.copy_thread("t", "reference")
    names = ["", *hook.names, ""]
    assert _history(graph, "reference") == source
    for at in range(1, len(names) - 1):
        name = names[at]
        if name in READS and names[at - 1] in READS:
            continue  # the stores are as at the read before: already tried
        if name == "PutObject" and names[at - 1] == names[at + 1] == name:
            continue  # inside one upload wave, the first and the last are tried
        for mode in ("before",) if name in READS else ("before", "after"):
            target = f"copy-{at}-{mode}"
            hook.arm(at, mode)
            with contextlib.suppress(Crash):
                saver.copy_thread("t", target)
            hook.arm(None)
            reader = chat_graph(make_saver(clients, inline_max=0))
            seen = _history(reader, target)
            assert seen in ([], source), (at, mode)  # nothing at the target, or all of it
            saver.copy_thread("t", target)  # the repeat finishes it
            assert _history(reader, target) == source, (at, mode)
    assert _history(graph, "t") == source


def test_delete_thread_through_aws_survives_a_fault_at_any_request(
    clients: tuple[Any, Any],
) -> None:
    saver = make_saver(clients, inline_max=0)
    saver.setup()
    graph = chat_graph(saver)
    for i in range(2):
        graph.invoke(
            {"messages": [HumanMessage(f"m{i}", id=f"h{i}")]}, {"configurable": {"thread_id": "t"}}
        )
    source = _history(graph, "t")
    hook = Hook(clients)
    hook.arm(None)
    saver.copy_thread("t", "reference")
    hook.arm(None)
    saver.delete_thread("reference")
    # Keys; marks; tombstones; checkpoints; writes; objects (listed, the records read
    # for what they reference, deleted); marks; heads (read, deleted).
    assert hook.names == [
        "Query",
        *["BatchWriteItem"] * 4,
        "ListObjectsV2",
        "Query",
        "DeleteObjects",
        "BatchWriteItem",
        "Query",
        "BatchWriteItem",
    ]
    names = ["", *hook.names, ""]
    assert _history(graph, "reference") == []
    for at in range(1, len(names) - 1):
        name = names[at]
        if name in READS and names[at - 1] in READS:
            continue  # the stores are as at the read before: already tried
        for mode in ("before",) if name in READS else ("before", "after"):
            target = f"delete-{at}-{mode}"
            hook.arm(None)
            saver.copy_thread("t", target)
            hook.arm(at, mode)
            with contextlib.suppress(Crash):
                saver.delete_thread(target)
            hook.arm(None)
            reader = chat_graph(make_saver(clients, inline_max=0))
            # Deleted, or (before its marks were written) unchanged: never cut back.
            assert _history(reader, target) in ([], source), (at, mode)
            saver.delete_thread(target)  # the repeat finishes it
            assert _history(reader, target) == [], (at, mode)
            prefix = saver.store.objects.thread_prefix(saver.store.namer.thread(target))
            assert not list(saver.store.objects.port.list(prefix)), (at, mode)
    assert _history(graph, "t") == source


def _put_big(saver: S3DynamoSaver, run_id: str, version: str | None = None) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": os.urandom(3 * saver.settings.inline_max)}
    cp["channel_versions"] = {"doc": version or saver.get_next_version(None, None)}
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    return saver.put(config, cp, {"run_id": run_id}, cp["channel_versions"])


def test_gc_in_a_shared_bucket_touches_only_its_own_keys(clients: tuple[Any, Any]) -> None:
    _, s3 = clients
    savers = []
    for n, prefix in enumerate(("", "tenant-b/", "")):
        saver = make_saver(
            clients,
            table=f"{clients.table}-{n}",  # type: ignore[attr-defined]
            bucket=clients.bucket,  # type: ignore[attr-defined]
            prefix=prefix,
            secret=f"naming secret of deployment {n}",
        )
        saver.setup()
        _put_big(saver, "gone")
        _put_big(saver, "kept")
        saver.delete_for_runs(["gone"])
        savers.append(saver)
    s3.put_object(Bucket=clients.bucket, Key="reports/2025/summary.csv", Body=b"a,b")  # type: ignore[attr-defined]

    def keys() -> set[str]:
        out = s3.list_objects_v2(Bucket=clients.bucket)  # type: ignore[attr-defined]
        return {o["Key"] for o in out.get("Contents", [])}

    assert len(keys()) == 7
    for saver in savers:
        before = keys()
        plan = saver.ops.plan_garbage_collection(grace=timedelta(0), scope=saver.store.prefix)
        assert plan.objects == 1 and plan.execute() == 1
        assert len(before - keys()) == 1
        for other in savers:
            assert other.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    assert "reports/2025/summary.csv" in keys() and len(keys()) == 4


def test_a_writer_refreshes_an_object_it_finds_already_there(
    saver: S3DynamoSaver, counter: RequestCounter
) -> None:
    version = saver.get_next_version(None, None)
    _put_big(saver, "run-1", version)
    _put_big(saver, "run-2")
    saver.delete_for_runs(["run-1"])  # the first value is now an orphan
    plan = saver.ops.plan_garbage_collection(grace=timedelta(0))
    assert plan.objects == 1
    counter.reset()
    config = _put_big(saver, "run-3", version)  # same name: 412, then written again
    assert counter["s3.PutObject"] == 2
    # Execution lists again, marks again and spares what the new record references.
    assert plan.execute() == 0
    assert saver.get_tuple(config) is not None
