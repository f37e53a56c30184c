"""Retention: idle threads go whole (or keep only their latest checkpoints), active ones
keep everything; sweeps planned from the Scan or from the idle-period index.

On the in-memory ports; tests taking `backend` run on the AWS adapters too (moto, and
the integration tiers' servers), and tests marked `aws` pin what only DynamoDB and S3
have: stamps as item attributes, the Scan's requests, what a sweep sends for two table
sizes, backfilling an old table, a table without the index. Faults at every request of
a sweep: `tests/unit/test_faults.py` (ops `expire` and `expire indexed`).
"""

from __future__ import annotations

import json
import math
import os
import pickle
import time
import tracemalloc
import uuid
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.config.settings import Settings, duration, langgraph_json_ttl
from langgraph.checkpoint.s3dynamo.errors import (
    ArgumentTypeError,
    ConcurrentUpdateError,
    InvalidConfigError,
    StorageConfigError,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    IDLE_SHARDS,
    control_pk,
    is_control_pk,
    owner_prefix,
)
from langgraph.checkpoint.s3dynamo.format.schema import IDLE_INDEX, table_definition
from langgraph.checkpoint.s3dynamo.ops.retention import SCAN_SEGMENTS, plan_expiry
from langgraph.checkpoint.s3dynamo.store import id_time
from langgraph.checkpoint.s3dynamo.table import item_size
from tests.support import raw
from tests.support.backends import Backend
from tests.support.graphs import delta_graph
from tests.support.savers import (
    BACKEND,
    Clients,
    MemorySaver,
    RequestCounter,
    make_saver,
    memory_saver,
)
from tests.support.scenarios import ask_graph, chat_graph

DAY = 86_400.0
TTL = "30d"


def at(saver: S3DynamoSaver, days_from_now: float) -> None:
    """Set the clocks (record stamps, sweeps, and in memory object modification times)
    to `days_from_now`."""
    moment = time.time() + days_from_now * DAY
    saver.store.clock = lambda: moment
    port = saver.parts.engine.objects.port
    if hasattr(port, "clock"):
        port.clock = lambda: moment


def chat(saver: S3DynamoSaver, tid: str, turns: int = 3) -> Any:
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": tid}}
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(f"{tid} message {i}", id=f"{tid}-h{i}")]}, config)
    return graph


def delta_chat(saver: S3DynamoSaver, tid: str, turns: int = 3) -> Any:
    graph = delta_graph(saver, 2)
    for i in range(turns):
        graph.invoke({"messages": [f"user: {i}"]}, {"configurable": {"thread_id": tid}})
    return graph


def history(graph: Any, tid: str) -> list[Any]:
    config = {"configurable": {"thread_id": tid}}
    return [
        (s.config["configurable"]["checkpoint_id"], s.values)
        for s in graph.get_state_history(config)
    ]


def stored(saver: MemorySaver, tid: str) -> tuple[int, int, list[str]]:
    """Records, objects and control items (heads, lease) a thread has."""
    name = saver.parts.namer.thread(tid)
    records = [r for r in saver.index.records() if r.pk == name]
    prefix = owner_prefix(name)
    objects = [k for k in saver.objects.blobs if k.startswith(prefix)]
    control = [f"{k.sk}={h}" for k, h in saver.index.heads.items() if k.pk == control_pk(name)] + [
        k.sk for k in saver.index.leases if k.pk == control_pk(name)
    ]
    return len(records), len(objects), control


@pytest.fixture
def saver() -> MemorySaver:
    # Every value in S3, so "whole" covers objects too.
    return memory_saver(inline_max=0)


def test_idle_threads_go_whole_and_active_ones_keep_every_checkpoint(saver: MemorySaver) -> None:
    at(saver, -40)
    chat(saver, "old-chat")
    delta_chat(saver, "old-delta")
    at(saver, -10)
    active_chat = chat(saver, "recent-chat")
    active_delta = delta_chat(saver, "recent-delta")
    before = {t: history(active_chat, t) for t in ("recent-chat",)}
    before["recent-delta"] = history(active_delta, "recent-delta")
    assert stored(saver, "old-chat")[1] > 0

    at(saver, 0)
    plan = saver.ops.expire_idle_threads(TTL)

    assert len(plan.removed) == 2 and not plan.busy and not plan.revived
    assert plan.active == 2
    for tid in ("old-chat", "old-delta"):
        records, objects, control = stored(saver, tid)
        assert (records, objects) == (0, 0)
        # Only tombstones stay, refusing late commits.
        assert control and all("=~" in c for c in control)
        assert saver.get_tuple({"configurable": {"thread_id": tid}}) is None
    assert history(chat_graph(saver), "recent-chat") == before["recent-chat"]
    assert history(delta_graph(saver, 2), "recent-delta") == before["recent-delta"]
    # DeltaChannel still rebuilds from its history after the sweep.
    assert (
        delta_graph(saver, 2)
        .get_state({"configurable": {"thread_id": "recent-delta"}})
        .values["messages"]
        == before["recent-delta"][0][1]["messages"]
    )


def test_dry_run_changes_nothing(saver: MemorySaver) -> None:
    at(saver, -40)
    chat(saver, "old")
    at(saver, 0)
    counted = stored(saver, "old")
    plan = saver.ops.expire_idle_threads(TTL, dry_run=True)
    assert list(plan.idle) == [saver.parts.namer.thread("old")]
    assert plan.records == counted[0] and not plan.removed
    assert stored(saver, "old") == counted


def test_data_written_before_stamps_is_dated_by_its_checkpoint_ids(saver: MemorySaver) -> None:
    chat(saver, "legacy")
    # As an older version wrote them: no stamp on any record.
    raw.put_records(saver, [replace(r, written_at=None) for r in saver.index.records()])
    at(saver, 0)
    assert not saver.ops.expire_idle_threads(TTL).removed  # written today, by its ids
    at(saver, 31)
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.removed == [saver.parts.namer.thread("legacy")]
    assert stored(saver, "legacy")[:2] == (0, 0)


def test_records_that_cannot_be_dated_are_kept(saver: MemorySaver) -> None:
    config = {"configurable": {"thread_id": "custom", "checkpoint_ns": ""}}
    checkpoint = create_checkpoint(empty_checkpoint(), None, 1)
    checkpoint["id"] = str(uuid.uuid4())  # a UUID, but not one that tells its time
    saver.put(config, checkpoint, {"source": "input", "step": 1}, {})
    raw.put_records(saver, [replace(r, written_at=None) for r in saver.index.records()])
    at(saver, 400)
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.undated == 1 and not plan.removed
    assert stored(saver, "custom")[0] == 1


def test_a_thread_held_by_its_lock_is_left_alone(backend: Backend) -> None:
    saver = backend.saver(inline_max=0)
    at(saver, -40)
    chat(saver, "held")
    at(saver, 0)
    with saver.ops.thread_lock("held", ttl=3600):
        plan = saver.ops.expire_idle_threads(TTL)
    assert plan.busy == [saver.parts.namer.thread("held")] and not plan.removed
    assert saver.get_tuple({"configurable": {"thread_id": "held"}}) is not None


def test_a_commit_between_scan_and_removal_keeps_the_thread(backend: Backend) -> None:
    saver = backend.saver(inline_max=0)
    at(saver, -40)
    graph = chat(saver, "revived")
    at(saver, 0)
    plan = saver.ops.expire_idle_threads(TTL, dry_run=True)
    before = history(graph, "revived")
    config = {"configurable": {"thread_id": "revived"}}
    graph.invoke({"messages": [HumanMessage("back again", id="back")]}, config)
    plan.execute()
    assert plan.revived == [saver.parts.namer.thread("revived")] and not plan.removed
    after = history(graph, "revived")
    assert len(after) > len(before) and after[-len(before) :] == before  # every one kept
    # Its heads are live again (no tombstone left behind): the next turn commits.
    graph.invoke(
        {"messages": [HumanMessage("and again", id="again")]},
        {"configurable": {"thread_id": "revived"}},
    )
    again = history(graph, "revived")
    assert len(again) > len(after) and again[-len(after) :] == after


def test_a_run_that_loaded_the_thread_before_removal_cannot_commit_after_it(
    saver: MemorySaver,
) -> None:
    at(saver, -40)
    chat(saver, "late")
    at(saver, 0)
    config = {"configurable": {"thread_id": "late", "checkpoint_ns": ""}}
    loaded = saver.get_tuple(config)  # a run loads the latest checkpoint...
    assert loaded is not None
    saver.ops.expire_idle_threads(TTL)  # ...the sweep removes the thread...
    checkpoint = create_checkpoint(loaded.checkpoint, None, 9)
    with pytest.raises(ConcurrentUpdateError):  # ...and its commit is refused.
        saver.put(loaded.config, checkpoint, {"source": "loop", "step": 9}, {})
    assert stored(saver, "late")[0] == 0
    # The same thread id starts afresh.
    graph = chat(saver, "late", turns=1)
    assert len(graph.get_state({"configurable": {"thread_id": "late"}}).values["messages"]) == 2


def test_tombstones_go_once_older_than_the_ttl(saver: MemorySaver) -> None:
    at(saver, -40)
    chat(saver, "gone")
    at(saver, 0)
    saver.ops.expire_idle_threads(TTL)
    assert stored(saver, "gone")[2]
    chat(saver, "later")
    at(saver, 1)
    assert not saver.ops.expire_idle_threads(TTL, dry_run=True).leftovers  # nothing to do yet
    at(saver, 31)
    plan = saver.ops.expire_idle_threads(TTL)
    # The tombstones are a finished removal's: cleared, not counted as threads removed.
    assert plan.removed == [saver.parts.namer.thread("later")]
    assert plan.cleared == [saver.parts.namer.thread("gone")]
    assert (plan.result()["removed_threads"], plan.result()["leftovers_cleared"]) == (1, 1)
    assert stored(saver, "gone") == (0, 0, [])


def test_a_sweep_past_its_deadline_leaves_the_rest_for_the_next(backend: Backend) -> None:
    saver = backend.saver(inline_max=0)
    at(saver, -40)
    for i in range(3):
        chat(saver, f"t{i}", turns=1)
    at(saver, 0)
    plan = plan_expiry(saver.store, duration(TTL)).execute(deadline=time.monotonic() - 1)
    assert len(plan.unfinished) == 3 and not plan.removed
    assert len(saver.ops.expire_idle_threads(TTL).removed) == 3


def test_a_scan_past_its_deadline_judges_nothing(saver: MemorySaver) -> None:
    """A thread's records and control items may lie in different segments: a Scan cut
    short would see half of some threads, so it decides nothing and removes nothing."""
    at(saver, -40)
    for i in range(3):
        chat(saver, f"t{i}", turns=1)
    at(saver, 0)
    before = [stored(saver, f"t{i}") for i in range(3)]
    plan = saver.ops.expire_idle_threads(TTL, deadline=time.monotonic() - 1)
    assert not plan.scanned_all
    assert (plan.idle, plan.leftovers, plan.active, plan.removed) == ({}, [], 0, [])
    assert [stored(saver, f"t{i}") for i in range(3)] == before
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.scanned_all and len(plan.removed) == 3


def test_the_segments_of_the_scan_together_see_every_thread(saver: MemorySaver) -> None:
    at(saver, -40)
    for i in range(12):
        chat(saver, f"idle{i}", turns=1)
    at(saver, 0)
    for i in range(4):
        chat(saver, f"active{i}", turns=1)
    assert saver.index.calls["Scan"] == 0
    split = plan_expiry(saver.store, duration(TTL))
    assert saver.index.calls["Scan"] == SCAN_SEGMENTS  # one request per segment
    whole = plan_expiry(saver.store, duration(TTL), segments=1)
    names = {saver.parts.namer.thread(f"idle{i}") for i in range(12)}
    assert set(split.idle) == set(whole.idle) == names
    assert split.active == whole.active == 4
    with pytest.raises(InvalidConfigError, match="at least 1"):
        plan_expiry(saver.store, duration(TTL), segments=0)


def test_the_parallel_scan_covers_the_table_once(backend: Backend) -> None:
    """Segment and TotalSegments, as the index sends them (DynamoDB's, or the twin's):
    the segments hold every item of a sequential Scan, each once."""
    saver = backend.saver()
    for i in range(6):
        chat(saver, f"t{i}", turns=1)
    store = saver.store
    whole = [s.key for page in store.stamps() for s in page]
    split = [s.key for seg in range(4) for page in store.stamps(seg, 4) for s in page]
    assert sorted(split) == sorted(whole) and len(set(split)) == len(split)
    assert len({k.pk for k in whole if not is_control_pk(k.pk)}) == 6


def test_retention_setting_and_bad_durations() -> None:
    assert duration("30d") == timedelta(days=30)
    assert duration("12h") == timedelta(hours=12)
    assert duration(7) == timedelta(days=7)
    with pytest.raises(InvalidConfigError, match="30d, 12h"):
        duration("a month")
    with pytest.raises(InvalidConfigError, match="at least one second"):
        duration("0d")
    saver = memory_saver()
    with pytest.raises(InvalidConfigError, match="S3DYNAMO_RETENTION"):
        saver.ops.expire_idle_threads()
    assert memory_saver(retention="45d").settings.retention == timedelta(days=45)


def test_checkpoint_id_time() -> None:
    from langgraph.checkpoint.base.id import uuid6

    now = time.time()
    assert abs((id_time(str(uuid6())) or 0) - now) <= 1
    assert id_time("not-a-uuid") is None


# --------------------------------------------------------------- strategy keep_latest


def test_keep_latest_keeps_the_conversation_and_drops_its_history(saver: MemorySaver) -> None:
    at(saver, -40)
    graph = chat(saver, "chat", turns=4)
    delta = delta_chat(saver, "delta", turns=7)
    asked = ask_graph(saver)
    asked.invoke({"question": "refund?"}, {"configurable": {"thread_id": "asked"}})
    before = {
        "chat": graph.get_state({"configurable": {"thread_id": "chat"}}),
        "delta": delta.get_state({"configurable": {"thread_id": "delta"}}),
        "asked": asked.get_state({"configurable": {"thread_id": "asked"}}),
    }
    objects_before = stored(saver, "chat")[1]
    at(saver, -10)
    recent = chat(saver, "recent", turns=2)
    recent_history = history(recent, "recent")

    at(saver, 0)
    dry = saver.ops.expire_idle_threads(TTL, strategy="keep_latest", dry_run=True)
    assert dry.to_dict()["strategy"] == "keep_latest" and len(dry.idle) == 3
    plan = saver.ops.expire_idle_threads(TTL, strategy="keep_latest")

    assert sorted(plan.pruned) == sorted(saver.parts.namer.thread(t) for t in before)
    assert not plan.removed and plan.active == 1
    after = {
        "chat": graph.get_state({"configurable": {"thread_id": "chat"}}),
        "delta": delta.get_state({"configurable": {"thread_id": "delta"}}),
        "asked": asked.get_state({"configurable": {"thread_id": "asked"}}),
    }
    for tid in before:  # get_state reads the same, interrupts and pending writes included
        assert after[tid].values == before[tid].values, tid
        assert after[tid].next == before[tid].next, tid
        assert after[tid].tasks == before[tid].tasks, tid
    assert len(history(graph, "chat")) == 1  # one checkpoint per namespace is left
    # The DeltaChannel thread keeps what its latest state is rebuilt from, and no more
    # than the checkpoints back to its last snapshot.
    assert 1 <= len(history(delta, "delta")) <= 3
    assert stored(saver, "chat")[1] < objects_before  # unreferenced objects went too
    control = stored(saver, "chat")[2]  # the namespace's head, no marker, no lease
    assert len(control) == 1 and control[0].startswith("head#") and "~" not in control[0]
    assert history(recent, "recent") == recent_history  # the active thread is untouched
    # The conversation goes on, and the next sweep finds nothing more to drop.
    graph.invoke(
        {"messages": [HumanMessage("back again", id="chat-back")]},
        {"configurable": {"thread_id": "chat"}},
    )
    at(saver, 40)
    again = saver.ops.expire_idle_threads(TTL, strategy="keep_latest", dry_run=True)
    assert saver.parts.namer.thread("chat") in again.idle  # two checkpoints now
    assert saver.parts.namer.thread("asked") not in again.idle
    # The idle index does not even read it again; the full Scan counts it kept.
    full = saver.ops.expire_idle_threads(TTL, strategy="keep_latest", dry_run=True, full=True)
    assert saver.parts.namer.thread("asked") not in full.idle and full.kept >= 1


@pytest.mark.parametrize("strategy", ["delete", "keep_latest"])
def test_a_thread_re_encrypted_before_it_expires_leaves_no_object_behind(strategy: str) -> None:
    """Re-encryption rewrites a thread's objects in place, so they are newer than the
    cutoff when the thread expires: retention deletes what the records it removes named
    whatever its age, as it does for a thread never re-encrypted."""
    keys, secret = {"k1": os.urandom(32), "k2": os.urandom(32)}, os.urandom(16)
    saver = memory_saver(inline_max=0, keys=keys, active_key="k1", secret=secret)
    at(saver, -40)
    graph = chat(saver, "t", turns=4)
    rotated = memory_saver(
        saver.index, saver.objects, inline_max=0, keys=keys, active_key="k2", secret=secret
    )
    at(rotated, -20)
    assert rotated.ops.reencrypt(["t"]) > 0
    # Incremental collection closes the re-encryption's intents (stamped by the clock of
    # the process): every object is named.
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    journal = rotated.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    assert journal.counts["intents"] > 0 and journal.execute(now=later) == 0
    latest = history(graph, "t")[0]

    at(rotated, 0)
    plan = rotated.ops.expire_idle_threads(TTL, strategy=strategy)
    assert len(plan.removed if strategy == "delete" else plan.pruned) == 1
    assert rotated.ops.verify().problems == []
    if strategy == "delete":
        assert stored(rotated, "t")[:2] == (0, 0)
    else:
        assert history(chat_graph(rotated), "t") == [latest]


@pytest.mark.parametrize("strategy", ["delete", "keep_latest"])
def test_removing_a_long_idle_thread_holds_a_page_of_its_records_at_a_time(
    monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    """Retention reads an expiring thread's records a page at a time: whole, to delete
    what they name; to prune, without the bytes of their values. A sweep in a Lambda
    function of little memory removes or prunes a thread of any length. Here 400
    records of 26 KB (their values inline), 10 MB in all."""
    saver = memory_saver(inline_max=60_000)
    at(saver, -40)
    config: dict[str, Any] = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    for step in range(400):
        checkpoint = create_checkpoint(checkpoint, None, step)
        checkpoint["channel_values"] = {"doc": os.urandom(25_000).hex()}
        checkpoint["channel_versions"] = {"doc": step + 1}
        config = saver.put(config, checkpoint, {"source": "loop", "step": step}, {"doc": step + 1})
    name = saver.parts.namer.thread("long")
    stored_bytes = sum(item_size(i) for i in saver.index.items() if i["pk"] == name)
    # As a client parsing a response does, each page comes as objects of its own (the
    # in-memory table hands out the bytes it keeps).
    query = type(saver.index).query

    def parsed(table: Any, partition: str, **options: Any) -> Any:
        page = query(table, partition, **options)
        return page._replace(items=pickle.loads(pickle.dumps(page.items)))

    monkeypatch.setattr(type(saver.index), "query", parsed)
    at(saver, 0)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        plan = saver.ops.expire_idle_threads(TTL, strategy=strategy)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    gone = plan.removed if strategy == "delete" else plan.pruned
    assert gone == [name] and stored(saver, "long")[0] == (0 if strategy == "delete" else 1)
    assert stored_bytes > 10_000_000 and peak < stored_bytes / 2, (peak, stored_bytes)


def test_keep_last_n_keeps_each_idle_thread_s_newest_n(backend: Backend) -> None:
    saver = backend.saver(inline_max=0)
    at(saver, -40)
    graph = chat(saver, "chat", turns=4)
    few = chat(saver, "few", turns=1)  # three checkpoints: nothing beyond the newest 3
    before, few_before = history(graph, "chat"), history(few, "few")
    latest = graph.get_state({"configurable": {"thread_id": "chat"}})
    at(saver, 0)
    plan = saver.ops.expire_idle_threads(TTL, strategy="keep_latest", keep_last=3)
    assert plan.to_dict()["keep_last"] == 3
    assert plan.pruned == [saver.parts.namer.thread("chat")] and plan.kept == 1
    assert history(graph, "chat") == before[:3]
    assert history(few, "few") == few_before
    after = graph.get_state({"configurable": {"thread_id": "chat"}})
    assert (after.values, after.next, after.tasks) == (latest.values, latest.next, latest.tasks)
    # Nothing more to drop at 3; at 1, the same thread has.
    again = saver.ops.expire_idle_threads(
        TTL, strategy="keep_latest", keep_last=3, dry_run=True, full=True
    )
    assert not again.idle and again.kept == 2
    once = saver.ops.expire_idle_threads(TTL, strategy="keep_latest", dry_run=True, full=True)
    assert len(once.idle) == 2


def test_the_keep_last_setting_from_arguments_the_environment_and_langgraph_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver = memory_saver(retention="30d", retention_strategy="keep_latest", retention_keep_last=4)
    assert saver.ops.plan_expiry().keep_last == 4
    # A sweep asked for "delete" takes no N from the setting.
    assert saver.ops.plan_expiry(strategy="delete").keep_last == 1
    ttl = {"strategy": "keep_latest", "default_ttl": 60, "keep_last": 5}
    assert memory_saver(ttl=ttl).settings.retention_keep_last == 5
    monkeypatch.setenv("S3DYNAMO_RETENTION_STRATEGY", "keep_latest")
    monkeypatch.setenv("S3DYNAMO_RETENTION_KEEP_LAST", " 6 ")
    assert Settings.from_env(plaintext=True).retention_keep_last == 6
    for wrong in ("three", "0", "-1", "2.5"):
        monkeypatch.setenv("S3DYNAMO_RETENTION_KEEP_LAST", wrong)
        with pytest.raises(InvalidConfigError, match=f"S3DYNAMO_RETENTION_KEEP_LAST.*{wrong!r}"):
            Settings.from_env(plaintext=True)
    with pytest.raises(InvalidConfigError, match="ttl keep_last"):
        memory_saver(ttl={"strategy": "keep_latest", "keep_last": 0})
    # keep_last counts what keep_latest keeps: beside "delete" it is a slip, said so.
    with pytest.raises(InvalidConfigError, match="keep_latest"):
        memory_saver(retention_keep_last=3)
    with pytest.raises(InvalidConfigError, match="keep_latest"):
        memory_saver(retention="30d").ops.plan_expiry(keep_last=3)


def test_keep_latest_leaves_a_thread_written_during_the_sweep_whole(backend: Backend) -> None:
    saver = backend.saver(inline_max=0)
    at(saver, -40)
    graph = chat(saver, "busy", turns=3)
    at(saver, 0)
    plan = saver.ops.plan_expiry(TTL, strategy="keep_latest")
    # After the Scan, before the sweep reaches it, the thread gets a new turn.
    graph.invoke(
        {"messages": [HumanMessage("still here", id="busy-x")]},
        {"configurable": {"thread_id": "busy"}},
    )
    full = history(graph, "busy")
    plan.execute()
    assert plan.revived == [saver.parts.namer.thread("busy")] and not plan.pruned
    assert history(graph, "busy") == full


def test_the_retention_strategy_setting_and_the_platform_names() -> None:
    saver = memory_saver(
        ttl={"strategy": "keep_latest", "default_ttl": 60, "sweep_interval_minutes": 5}
    )
    assert saver.settings.retention == timedelta(minutes=60)
    assert saver.settings.retention_strategy == "keep_latest"
    assert saver.settings.sweep_interval == timedelta(minutes=5)
    assert saver.ops.plan_expiry().strategy == "keep_latest"
    with pytest.raises(InvalidConfigError, match="keep_latest"):
        memory_saver(retention_strategy="keep_oldest")
    with pytest.raises(InvalidConfigError, match="minutes"):
        memory_saver(ttl={"default_ttl": "30d"})
    with pytest.raises(InvalidConfigError, match="unknown ttl key"):
        memory_saver(ttl={"default_ttl": 60, "refresh_on_read": True})


def test_the_platform_s_minutes_may_be_fractions_and_never_nan_or_infinite() -> None:
    saver = memory_saver(ttl={"default_ttl": 0.5, "sweep_interval_minutes": 0.05})
    assert saver.settings.retention == timedelta(seconds=30)
    assert saver.settings.sweep_interval == timedelta(seconds=3)
    for bad in (math.nan, math.inf, -1, 0):
        with pytest.raises(
            InvalidConfigError,
            match=rf"^ttl sweep_interval_minutes must be a positive, finite number of "
            rf"minutes, got {bad}$",
        ):
            memory_saver(ttl={"sweep_interval_minutes": bad})
    with pytest.raises(
        ArgumentTypeError, match=r"must be a number of minutes, got the string '5'$"
    ):
        memory_saver(ttl={"default_ttl": "5"})


def test_a_langgraph_json_ttl_and_the_environment_give_the_same_settings(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ttl = {"strategy": "keep_latest", "default_ttl": 43200, "sweep_interval_minutes": 60}
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {}, "checkpointer": {"path": "x.py:f", "ttl": ttl}}))
    from_file = memory_saver(ttl=langgraph_json_ttl(str(config))).settings
    monkeypatch.setenv("S3DYNAMO_TTL", json.dumps(ttl))
    from_env = Settings.from_env(keys={"k": b"k" * 32}, secret=b"s" * 16)
    for settings in (from_file, from_env):
        assert settings.retention == timedelta(days=30)
        assert settings.retention_strategy == "keep_latest"
        assert settings.sweep_interval == timedelta(hours=1)
    monkeypatch.setenv("S3DYNAMO_TTL", "30 days")
    with pytest.raises(InvalidConfigError, match="S3DYNAMO_TTL must be JSON"):
        Settings.from_env(keys={"k": b"k" * 32}, secret=b"s" * 16)


def test_a_keyword_wins_over_s3dynamo_ttl_and_two_retentions_at_once_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`from_env(**overrides)`: keyword arguments win, setting by setting, over what
    S3DYNAMO_TTL sets too; the ttl and a retention setting given together, in arguments
    or in variables, are refused rather than one picked."""
    keys: dict[str, Any] = {"keys": {"k": b"k" * 32}, "secret": b"s" * 16}
    monkeypatch.setenv("S3DYNAMO_TTL", json.dumps({"strategy": "keep_latest", "default_ttl": 1440}))
    chosen = Settings.from_env(retention="30d", retention_strategy="delete", **keys)
    assert (chosen.retention, chosen.retention_strategy) == (timedelta(days=30), "delete")
    own = Settings.from_env(ttl={"default_ttl": 60}, **keys)  # a ttl of its own, whole
    assert (own.retention, own.retention_strategy) == (timedelta(hours=1), "delete")
    monkeypatch.setenv("S3DYNAMO_RETENTION", "7d")
    with pytest.raises(InvalidConfigError, match="S3DYNAMO_TTL and S3DYNAMO_RETENTION"):
        Settings.from_env(**keys)
    monkeypatch.delenv("S3DYNAMO_TTL")
    with pytest.raises(InvalidConfigError, match=r"^ttl and retention were both given"):
        Settings.from_env(retention="7d", ttl={"default_ttl": 1440}, **keys)
    with pytest.raises(InvalidConfigError, match=r"^ttl and retention_strategy were both"):
        memory_saver(retention_strategy="keep_latest", ttl={"default_ttl": 5})


def test_a_sweep_of_another_policy_sees_what_a_keep_latest_sweep_kept(saver: MemorySaver) -> None:
    """Pruning after a day and deleting after thirty, as two jobs: the pruned thread is
    still idle to the deleting sweep, whose cursor is its own (one per policy)."""
    for tid, days in (("forty-days", -40), ("two-days", -2)):
        at(saver, days)
        chat(saver, tid, turns=2)
    at(saver, 0)
    chat(saver, "today", turns=1)
    assert saver.ops.expire_idle_threads("60d").cursor.day is None  # the first: a Scan
    pruned = saver.ops.expire_idle_threads("1d", strategy="keep_latest")
    assert len(pruned.pruned) == 2
    deleted = saver.ops.expire_idle_threads(TTL)  # its cursor: the 60-day sweep's
    assert deleted.cursor.day is not None and len(deleted.removed) == 1
    left = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    assert left == {"two-days", "today"}


def test_the_index_sweep_keeps_a_thread_written_since_and_finds_it_once_idle(
    saver: MemorySaver,
) -> None:
    at(saver, -40)
    graph = chat(saver, "chat", turns=2)
    name = saver.parts.namer.thread("chat")
    at(saver, -39)
    first = saver.ops.expire_idle_threads(TTL)  # no cursor yet: the Scan
    assert first.cursor.day is None and not first.removed
    # Five days ago a task wrote pending writes only: no checkpoint, so its head (and its
    # index key) still says forty days ago.
    at(saver, -5)
    config = graph.get_state({"configurable": {"thread_id": "chat"}}).config
    saver.put_writes(config, [("messages", HumanMessage("late", id="late"))], "task-late")
    kept = history(graph, "chat")
    at(saver, 0)
    plan = saver.ops.expire_idle_threads(TTL)  # the index finds it under its old day
    assert plan.cursor.day is not None and name in plan.seen
    assert not plan.removed and plan.active == 1 and history(graph, "chat") == kept
    # Its index key moved up to the pending writes' day, so a later sweep finds it.
    [(key, moved)] = plan.cursor.moves
    assert key.pk == name + "!" and moved.startswith(
        time.strftime("%Y%m%d", time.gmtime(time.time() - 5 * DAY))
    )
    at(saver, 20)  # 25 days after the writes: not yet idle, and not read again
    assert name not in saver.ops.expire_idle_threads(TTL).seen
    at(saver, 26)  # 31 days after
    assert saver.ops.expire_idle_threads(TTL).removed == [name]
    assert saver.get_tuple({"configurable": {"thread_id": "chat"}}) is None


def test_a_thread_revived_under_the_index_sweep_is_indexed_again(saver: MemorySaver) -> None:
    at(saver, -40)
    graph = chat(saver, "revived")
    name = saver.parts.namer.thread("revived")
    at(saver, -39)
    saver.ops.expire_idle_threads(TTL)  # the first sweep (the Scan) sets the cursor
    at(saver, 0)
    plan = saver.ops.expire_idle_threads(TTL, dry_run=True)
    assert name in plan.idle
    graph.invoke(
        {"messages": [HumanMessage("back again", id="back")]},
        {"configurable": {"thread_id": "revived"}},
    )
    plan.execute()
    assert plan.revived == [name]
    # Its heads went with the tombstones: the next sweep reads it from the cursor's list
    # of threads left, and indexes its newest record, so it is found once idle.
    at(saver, 1)
    again = saver.ops.expire_idle_threads(TTL)
    assert name in again.seen and not again.removed and again.cursor.moves
    at(saver, 31)
    assert saver.ops.expire_idle_threads(TTL).removed == [name]


def test_a_copied_thread_is_in_the_index_and_found_once_idle(backend: Backend) -> None:
    saver = backend.saver(inline_max=0)
    at(saver, -40)
    chat(saver, "source")
    at(saver, -39)
    saver.ops.expire_idle_threads(TTL)  # the first sweep (the Scan) sets the cursor
    saver.copy_thread("source", "target")  # records written whole, no commit, no head
    at(saver, 0)
    plan = saver.ops.expire_idle_threads(TTL)
    namer = saver.parts.namer
    assert sorted(plan.removed) == sorted([namer.thread("source"), namer.thread("target")])


def test_a_tenants_indexed_sweep_reads_only_its_own_threads(saver: MemorySaver) -> None:
    other = memory_saver(saver.index, saver.objects, prefix="tenant-2/", inline_max=0)
    mine = memory_saver(saver.index, saver.objects, prefix="tenant-1/", inline_max=0)
    for s in (mine, other):
        at(s, -40)
        chat(s, "idle")
        at(s, -39)
        s.ops.expire_idle_threads(TTL)  # each tenant's first sweep scans
        at(s, 0)
    plan = mine.ops.expire_idle_threads(TTL)
    assert plan.removed == [mine.parts.namer.thread("idle")]
    assert set(plan.seen) == {mine.parts.namer.thread("idle")}  # the other's not read
    assert other.get_tuple({"configurable": {"thread_id": "idle"}}) is not None
    assert other.ops.expire_idle_threads(TTL).removed == [other.parts.namer.thread("idle")]


def test_an_indexed_sweep_out_of_time_leaves_its_days_to_the_next(saver: MemorySaver) -> None:
    at(saver, -40)
    for tid in ("a", "b"):
        chat(saver, tid, turns=1)
    at(saver, -39)
    first = saver.ops.expire_idle_threads(TTL)  # the first sweep (the Scan) sets the cursor
    at(saver, 0)
    late = saver.ops.plan_expiry(TTL)
    late.execute(deadline=time.monotonic() - 1)  # nothing started: both left
    assert len(late.unfinished) == 2 and not late.removed
    # The cursor did not move past their day, so the next sweep finds them again.
    again = saver.ops.plan_expiry(TTL)
    assert again.cursor.day == late.cursor.day == first.cursor.to_day
    assert sorted(again.execute().removed) == sorted(late.unfinished)


# ------------------------------------------- through DynamoDB and S3 only (marked aws)


def items_of(clients: Any, name: str) -> list[dict[str, Any]]:
    ddb = clients[0]
    items: list[dict[str, Any]] = []
    for pk in (name, name + "!"):
        out = ddb.query(
            TableName=clients.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
        )
        items += out["Items"]
    return items


def objects_of(clients: Any, prefix: str) -> list[str]:
    out = clients[1].list_objects_v2(Bucket=clients.bucket, Prefix=prefix)
    return [o["Key"] for o in out.get("Contents", [])]


@pytest.mark.aws
def test_through_the_adapters_an_idle_thread_goes_in_a_few_requests(
    clients: Clients, counter: RequestCounter
) -> None:
    saver = make_saver(clients, inline_max=0, prefix="agents/")
    saver.setup()
    chat(saver, "idle", turns=2)
    # Written 40 days later than "idle" (by the saver's clock), then swept 5 days after.
    later = time.time() + 40 * DAY
    saver.store.clock = lambda: later
    active = chat(saver, "active", turns=2)
    delta = delta_graph(saver, 2)
    for i in range(3):
        delta.invoke({"messages": [f"user: {i}"]}, {"configurable": {"thread_id": "delta"}})
    kept = [s.values for s in active.get_state_history({"configurable": {"thread_id": "active"}})]
    idle = saver.parts.namer.thread("idle")
    assert any("c" in i for i in items_of(clients, idle))
    assert all("a" in i for i in items_of(clients, idle) if "c" in i)  # stamped
    assert objects_of(clients, owner_prefix(idle))

    sweep = time.time() + 45 * DAY
    saver.store.clock = lambda: sweep
    plan = saver.ops.expire_idle_threads("30d", dry_run=True)
    assert list(plan.idle) == [idle] and plan.active == 2
    counter.reset()
    plan.execute()
    # Removing one thread: its lease, the tombstones, one consistent read, the record
    # deletes (each checkpoint alone, newest first, then the writes in one batch), one
    # listing, one read of its loans to copies (none), one conditional DeleteObjects,
    # one batch for the lease.
    assert counter["dynamodb.UpdateItem"] == 1
    assert counter["dynamodb.Query"] == 2
    assert counter["s3.ListObjectsV2"] == 1
    assert counter["s3.DeleteObjects"] == 1
    assert counter["dynamodb.BatchWriteItem"] <= 1 + plan.records_deleted + 1

    assert plan.removed == [idle]
    left = items_of(clients, idle)
    assert [i["sk"]["S"] for i in left] == ["head#" + next(iter(plan.seen[idle].namespaces))]
    assert left[0]["h"]["S"].startswith("~")  # the tombstone
    assert objects_of(clients, owner_prefix(idle)) == []
    assert saver.get_tuple({"configurable": {"thread_id": "idle"}}) is None
    assert [
        s.values for s in active.get_state_history({"configurable": {"thread_id": "active"}})
    ] == kept
    assert delta.get_state({"configurable": {"thread_id": "delta"}}).values["messages"][-1]
    # The same thread id starts afresh on its tombstone.
    fresh = chat(saver, "idle", turns=1)
    assert len(fresh.get_state({"configurable": {"thread_id": "idle"}}).values["messages"]) == 2


@pytest.mark.aws
def test_scan_reads_only_keys_stamps_and_heads(clients: Clients, counter: RequestCounter) -> None:
    saver = make_saver(clients)
    saver.setup()
    chat(saver, "one", turns=1)
    counter.reset()
    plan = saver.ops.expire_idle_threads("1d", dry_run=True)
    assert plan.active == 1 and not plan.idle
    # The sweep's cursor (none yet: this first sweep plans with the Scan), then the Scan.
    assert dict(counter.calls) == {"dynamodb.Query": 1, "dynamodb.Scan": SCAN_SEGMENTS}
    if BACKEND == "moto":
        stamps = list(saver.store.stamps())
        assert len(stamps) == 1 and stamps[0] and all(s.key.pk for s in stamps[0])


# The idle-period index on DynamoDB: what a sweep sends grows with the threads that
# expire (E), not with the table (N); an old table is backfilled by the first sweep (the
# Scan); a table without the index says how to add it.


def put(saver: S3DynamoSaver, tid: str) -> None:
    config = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
    saver.put(config, empty_checkpoint(), {"step": 1}, {})


def table(clients: Any, name: str, **kwargs: Any) -> S3DynamoSaver:
    saver = make_saver(clients, table=name, prefix="", **kwargs)
    saver.setup()
    return saver


def at_moment(saver: S3DynamoSaver, moment: float) -> None:
    saver.store.clock = lambda: moment


def sweep_counts(
    clients: Any, counter: RequestCounter, n: int, e: int, t0: float
) -> tuple[Counter[str], int, Any]:
    """A table of `n` threads of which `e` are idle; the second sweep's requests, the
    items its reads evaluated, and its plan."""
    saver = table(clients, f"sweep-{n}-{e}")
    at_moment(saver, t0 - 31 * DAY + 3600)
    for i in range(e):
        put(saver, f"idle-{i}")
    at_moment(saver, t0 - DAY)
    first = saver.ops.expire_idle_threads(TTL)  # no cursor yet: the Scan; none idle
    assert not first.removed and first.cursor.day is None
    at_moment(saver, t0)
    for i in range(n - e):
        put(saver, f"active-{i}")
    evaluated = [0]

    def count(parsed: Any, **_: Any) -> None:
        evaluated[0] += int(parsed.get("ScannedCount", 0)) if isinstance(parsed, dict) else 0

    clients[0].meta.events.register("after-call.dynamodb.Query", count)
    counter.reset()
    plan = saver.ops.expire_idle_threads(TTL)
    clients[0].meta.events.unregister("after-call.dynamodb.Query", count)
    calls = Counter(counter.calls)
    assert sorted(plan.removed) == sorted(saver.parts.namer.thread(f"idle-{i}") for i in range(e))
    for i in range(0, n - e, max(1, (n - e) // 5)):  # active threads keep their checkpoint
        assert saver.get_tuple({"configurable": {"thread_id": f"active-{i}"}}) is not None
    return calls, evaluated[0], plan


@pytest.mark.aws
def test_a_sweep_costs_what_expires_not_what_is_stored(
    clients: Any, counter: RequestCounter
) -> None:
    t0 = time.time()
    small, small_read, plan = sweep_counts(clients, counter, 20, 4, t0)
    large, large_read, _ = sweep_counts(clients, counter, 200, 4, t0)
    more, more_read, _ = sweep_counts(clients, counter, 20, 8, t0)
    # Ten times the threads, the same idle ones: the same requests and items read.
    assert small == large and small_read == large_read
    assert plan.active == 0  # the active threads were not even read
    # Per idle thread (one checkpoint, inline): 3 Query (its two partitions, then the
    # consistent read before removal), 1 UpdateItem (its lease), 5 BatchWriteItem
    # (tombstones, marks, records, marks removed, lease and heads), 1 ListObjectsV2 (no
    # object to delete). Per sweep: the cursor's
    # Query, the index's two days (the cutoff's and the one before) times 32 shards, the
    # journal and the cursor's PutItem.
    e = 4
    assert small == Counter(
        {
            "dynamodb.Query": 1 + 2 * IDLE_SHARDS + 3 * e,
            "dynamodb.UpdateItem": e,
            "dynamodb.BatchWriteItem": 5 * e,
            "dynamodb.PutItem": 2,
            "s3.ListObjectsV2": e,
        }
    )
    slope = {k: (more[k] - small[k]) / 4 for k in more}
    assert slope == {
        "dynamodb.Query": 3,
        "dynamodb.UpdateItem": 1,
        "dynamodb.BatchWriteItem": 5,
        "dynamodb.PutItem": 0,
        "s3.ListObjectsV2": 1,
    }
    # Items the Queries evaluated: the index entries and each idle thread's items, the
    # same for each idle thread (one fewer without heads: detection is off on dynalite).
    per_thread = 3 if BACKEND == "real" else 4
    assert (small_read, more_read) == (2 + 4 * per_thread, 2 + 8 * per_thread)


def strip_index_keys(clients: Any, name: str) -> int:
    """What an old table holds: no item carries the index key."""
    ddb, stripped = clients[0], 0
    for item in ddb.scan(TableName=name)["Items"]:
        if "ik" in item:
            ddb.update_item(
                TableName=name,
                Key={"pk": item["pk"], "sk": item["sk"]},
                UpdateExpression="REMOVE ik",
            )
            stripped += 1
    return stripped


@pytest.mark.aws
def test_the_first_sweep_on_an_old_table_scans_and_backfills(clients: Any) -> None:
    saver = table(clients, "old")
    t0 = time.time()
    at_moment(saver, t0 - 40 * DAY)
    put(saver, "old-idle")
    at_moment(saver, t0 - 20 * DAY)
    put(saver, "old-active")
    assert strip_index_keys(clients, "old") == 2
    at_moment(saver, t0)
    first = saver.ops.expire_idle_threads(TTL)  # no cursor: the Scan, which backfills
    assert first.removed == [saver.parts.namer.thread("old-idle")]
    # The active thread's head (its record, with concurrent-run detection off: no head)
    # now carries its newest write's index key.
    [(key, moved)] = first.cursor.moves
    assert key.pk.rstrip("!") == saver.parts.namer.thread("old-active")
    assert moved.startswith(time.strftime("%Y%m%d", time.gmtime(t0 - 20 * DAY)))
    # Fifteen days on the backfilled thread is idle: the index finds it, no Scan.
    at_moment(saver, t0 + 15 * DAY)
    counter = RequestCounter()
    counter.hook(clients[0])
    plan = saver.ops.expire_idle_threads(TTL)
    assert plan.removed == [saver.parts.namer.thread("old-active")]
    assert counter["dynamodb.Scan"] == 0


@pytest.mark.aws
def test_a_table_without_the_index_says_how_to_add_it(clients: Any) -> None:
    definition = table_definition("no-index")
    definition["GlobalSecondaryIndexes"] = [
        g for g in definition["GlobalSecondaryIndexes"] if g["IndexName"] != IDLE_INDEX
    ]
    definition["AttributeDefinitions"] = definition["AttributeDefinitions"][:3]
    clients[0].create_table(**definition)
    saver = make_saver(clients, table="no-index", prefix="")
    saver.setup()
    t0 = time.time()
    at_moment(saver, t0 - 40 * DAY)
    put(saver, "t")
    at_moment(saver, t0 - 39 * DAY)
    saver.ops.expire_idle_threads(TTL)  # the first sweep Scans: it needs no index
    at_moment(saver, t0)
    with pytest.raises(StorageConfigError, match="terraform") as raised:
        saver.ops.expire_idle_threads(TTL)
    assert IDLE_INDEX in str(raised.value) and "--full" in str(raised.value)
    full = saver.ops.expire_idle_threads(TTL, full=True)
    assert full.removed == [saver.parts.namer.thread("t")]
