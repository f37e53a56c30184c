"""Erasing a data subject (`saver.erase_subject`, `ops/subjects.py`): its key destroyed,
then its threads, catalog entries and Store namespaces removed, an erasure record kept;
a copy of the storage taken before and restored after gives back none of it, and every
other subject whole; a run that loaded the subject before writes nothing; the subject
starts afresh under a new key."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any
from uuid import UUID

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import create_checkpoint
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.blobs.sealing import SUBJECT_KEY_MARK
from langgraph.checkpoint.s3dynamo.errors import (
    InvalidConfigError,
    SubjectErasedError,
    SubjectErasingError,
    ThreadDeletedError,
)
from tests.support import chats
from tests.support.savers import memory_saver
from tests.support.subjects import KEYS, SECRET, another, key_ids, subject_saver, talk, world


def history(saver: Any, tid: str) -> list[Any]:
    return chats.view(chats.graph(saver), tid)


def notes(store: Any, user: str) -> list[str]:
    return sorted(i.value["text"] for i in store.search(("users", user)))


async def _collected(records: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    return [record async for record in records]


def test_an_erasure_removes_the_subjects_data_and_nothing_else() -> None:
    saver, keys, store = world()
    bob_before = history(saver, "bob-1"), notes(store, "bob")
    done = saver.erase_subject("alice")
    assert done["threads"] == 2 and done["namespaces"] == 2 and done["items"] == 2
    assert done["key"].startswith(SUBJECT_KEY_MARK)
    # Nothing of alice is stored: no thread, no catalog entry, no namespace, no key.
    other, other_store = another(saver, keys)
    for tid in ("alice-1", "alice-2"):
        assert other.get_tuple({"configurable": {"thread_id": tid}}) is None
    assert other.search_threads(metadata={"user_id": "alice"}) == []
    assert notes(other_store, "alice") == []
    assert ("users", "alice", "notes-1") not in other_store.list_namespaces(prefix=("users",))
    assert done["key"] not in key_ids(saver)
    assert all("alice" not in str(item) for item in keys.items())
    # bob reads back whole.
    assert (history(other, "bob-1"), notes(other_store, "bob")) == bob_before


def test_a_backup_restored_after_an_erasure_gives_back_none_of_the_subject() -> None:
    saver, keys, store = world()
    backup = saver.index.clone(), saver.objects.clone()
    bob_before = history(saver, "bob-2"), notes(store, "bob")
    saver.erase_subject("alice")
    # The table and the bucket as they were; the key table as it is.
    restored, restored_store = another(saver, keys, *backup)
    with pytest.raises(SubjectErasedError, match="erased"):
        restored.get_tuple({"configurable": {"thread_id": "alice-1"}})
    with pytest.raises(SubjectErasedError):
        history(restored, "alice-2")
    with pytest.raises(SubjectErasedError):
        restored_store.get(("users", "alice", "notes-1"), "m")
    with pytest.raises(SubjectErasedError):
        restored_store.search(("users", "alice", "notes-2"))
    assert (history(restored, "bob-2"), notes(restored_store, "bob")) == bob_before
    # What lists every subject lists everyone but alice.
    assert {t.thread_id for t in restored.search_threads()} >= {"bob-1", "bob-2"}
    with pytest.raises(SubjectErasedError):
        restored.search_threads(metadata={"user_id": "alice"})
    listed = restored_store.list_namespaces(prefix=("users",))
    assert ("users", "bob", "notes-1") in listed and ("users", "alice", "notes-1") not in listed
    everyone = {c.config["configurable"]["thread_id"] for c in restored.list(None)}
    assert everyone >= {"bob-1", "bob-2"} and not any(t.startswith("alice") for t in everyone)
    # `verify` names what the restore brought back and what to do, and checks the rest.
    report = restored.ops.verify()
    kinds = {p["kind"] for p in report.problems}
    assert kinds == {"erased subject"}, report.problems
    assert all("erase the subject again" in p["detail"] for p in report.problems)
    assert report.checked["opened"] > 0 and report.memory["store"]["opened"] > 0
    # Her fence, restored, names the destroyed key: her next write makes a new one.
    talk(restored, "alice-3", "alice", turns=1)
    restored_store.put(("users", "alice", "notes-3"), "m", {"kind": "pref", "text": "again"})
    assert len(history(restored, "alice-3")) == 3
    assert notes(restored_store, "alice") == ["again"]
    # Erased again after the restore: what the backup brought back goes too.
    restored.erase_subject("alice")
    for tid in ("alice-1", "alice-2", "alice-3"):
        assert restored.get_tuple({"configurable": {"thread_id": tid}}) is None
    assert notes(restored_store, "alice") == []


def test_a_run_that_loaded_the_subject_before_its_erasure_writes_nothing() -> None:
    saver, keys, _ = world()
    config = {"configurable": {"thread_id": "alice-1", "user_id": "alice"}}
    g = chats.graph(saver)
    g.get_state(config)  # what a run does first: loads the thread
    loaded = saver.get_tuple(config)
    other, _ = another(saver, keys)
    other.erase_subject("alice")
    before = len(saver.index.items())
    child = create_checkpoint(loaded.checkpoint, None, 9)
    with pytest.raises(ThreadDeletedError) as refused:
        saver.put(loaded.config, child, {"user_id": "alice", "step": 9}, {})
    assert refused.value.is_stale_write_owner_error
    assert len(saver.index.items()) == before


def test_after_an_erasure_the_subject_starts_afresh_under_a_new_key() -> None:
    saver, keys, store = world()
    first = saver.erase_subject("alice")["key"]
    # The same process, whose key of alice was the one destroyed, and another.
    talk(saver, "alice-3", "alice", turns=1)
    store.put(("users", "alice", "notes-1"), "m", {"kind": "pref", "text": "new"})
    other, other_store = another(saver, keys)
    assert len(history(other, "alice-3")) == 3
    assert notes(other_store, "alice") == ["new"]
    kids = {k for k in key_ids(saver) if k.startswith(SUBJECT_KEY_MARK)}
    assert first not in kids and len(kids) == 2  # alice's new key, and bob's


def test_an_erasure_is_recorded_without_personal_data() -> None:
    saver, _, _ = world()
    done = saver.erase_subject("alice")
    (record,) = saver.ops.subjects.erasures()
    assert record["subject"] == saver.ops.subjects.token("alice") != "alice"
    assert record["key"] == done["key"]
    assert record["counts"]["threads"] == 2 and record["counts"]["items"] == 2
    assert record["began"].endswith("+00:00")
    assert "alice" not in str(record)


def test_erasing_a_subject_with_nothing_does_nothing_and_a_repeat_finds_it_done() -> None:
    saver, _, _ = world()
    plan = saver.ops.subjects.plan_erasure("carol")
    assert not plan.work and plan.counts["threads"] == 0
    saver.erase_subject("alice")
    assert not saver.ops.subjects.plan_erasure("alice").work


def test_a_subject_is_refused_before_anything_is_read() -> None:
    saver, _, _ = world()
    saver.index.calls.clear()
    for bad in ("", None, 4.5, True, ["alice"]):
        with pytest.raises(InvalidConfigError, match="subject"):
            saver.erase_subject(bad)  # type: ignore[arg-type]
    assert sum(saver.index.calls.values()) == 0


def test_user_42_is_one_subject_in_metadata_and_in_a_namespace() -> None:
    saver, _, store = world()
    g = chats.graph(saver)
    g.invoke(
        {"messages": [HumanMessage("hi", id="h")]},
        {"configurable": {"thread_id": "t42", "user_id": 42}},
    )
    store.put(("users", "42", "notes"), "m", {"kind": "pref", "text": "x"})
    done = saver.erase_subject(42)
    assert done["threads"] == 1 and done["items"] == 1


# ------------------------------------------------------------------ a crash at each request


def erased_or_untouched(saver: Any, keys: Any, before: dict[str, Any]) -> str:
    """What a clean process reads of alice after a crash: all of it, as it was
    ("untouched"), or none of it, each read either empty or `SubjectErasedError`
    ("erased": her key is gone). bob reads back whole either way."""
    other, store = another(saver, keys)
    assert (history(other, "bob-1"), notes(store, "bob")) == before["bob"]
    (key,) = [i for i in keys.items() if i["sk"] == before["key"]]
    key_gone = "w" not in key  # the wrapped key is gone: destroyed
    for tid in ("alice-1", "alice-2"):
        try:
            seen = history(other, tid)
        except SubjectErasedError:
            assert key_gone
            continue
        assert seen == (before[tid] if not key_gone else [])
    try:
        assert notes(store, "alice") == ([] if key_gone else before["alice"])
    except SubjectErasedError:
        assert key_gone
    return "erased" if key_gone else "untouched"


def test_an_erasure_crashed_at_any_request_leaves_the_subject_erased_or_untouched() -> None:
    from tests.support.faults import Crash, Faults, FaultyObjects, FaultyTable

    def fresh() -> tuple[Any, Any, dict[str, Any]]:
        saver, keys, store = world()
        before = {t: history(saver, t) for t in ("alice-1", "alice-2")}
        before["alice"] = notes(store, "alice")
        before["bob"] = (history(saver, "bob-1"), notes(store, "bob"))
        before["key"] = saver.ops.subjects.plan_erasure("alice").counts["key"]
        return saver, keys, before

    def eraser(saver: Any, keys: Any, faults: Faults) -> Any:
        """A process of the deployment whose requests fail at `faults`' request."""
        return S3DynamoSaver(
            index=FaultyTable(saver.index, faults),
            object_store=FaultyObjects(saver.objects, faults),
            key_index=FaultyTable(keys, faults),
            keys=KEYS,
            secret=SECRET,
            subject_field="user_id",
            subject_label=1,
        )

    saver, keys, _ = fresh()
    counting = Faults()
    eraser(saver, keys, counting).erase_subject("alice")
    total, modes = counting.count, counting.modes
    assert total >= 10
    seen = set()
    for at in range(1, total + 1):
        for mode in modes[at - 1]:
            saver, keys, before = fresh()
            faults = Faults(at, mode)
            with pytest.raises(Crash):
                eraser(saver, keys, faults).erase_subject("alice")
            seen.add(erased_or_untouched(saver, keys, before))
            # Meanwhile `verify` checks the rest and names what the erasure has yet to remove.
            other, _ = another(saver, keys)
            found = {p["kind"] for p in other.ops.verify().problems}
            assert found <= {"erased subject", "unfinished delete", "dangling back-reference"}
            # A repeat finishes it: nothing of alice, one record, and she may start anew.
            other, _ = another(saver, keys)
            other.erase_subject("alice")
            assert erased_or_untouched(saver, keys, before) == "erased"
            assert [e["counts"]["threads"] for e in other.ops.subjects.erasures()] == [2]
            talk(other, "alice-9", "alice", turns=1)
    assert seen == {"erased", "untouched"}


def test_an_interrupted_erasure_refuses_the_subjects_writes_by_name_until_repeated() -> None:
    """An erasure stopped for good after it marked the subject's key as erasing: a Store
    write of the subject, and a run of one of their threads, are refused with
    `SubjectErasingError`, which says how to finish it, and write nothing; bob writes
    on; once the erasure is repeated, alice writes again (under a new key)."""
    from tests.support.faults import Crash, Faults, FaultyTable

    for at in range(1, 10):
        saver, keys, _ = world()
        with pytest.raises(Crash):
            another(saver, FaultyTable(keys, Faults(at)))[0].erase_subject("alice")
        other, store = another(saver, keys)
        before = len(saver.index.items())
        try:
            store.put(("users", "alice", "notes-3"), "m", {"kind": "pref", "text": "x"})
        except SubjectErasingError as refused:
            assert "run erase_subject again" in str(refused)
            assert saver.ops.subjects.token("alice") in str(refused)
            break
    else:
        raise AssertionError("no crash left the erasure begun")
    # A batch of bob's put and alice's writes neither.
    from langgraph.store.base import PutOp

    bob, alice = (
        PutOp(("users", u, "notes-9"), "m", {"kind": "pref", "text": u}) for u in ("bob", "alice")
    )
    with pytest.raises(SubjectErasingError):
        store.batch([bob, alice])
    assert len(saver.index.items()) == before and notes(store, "bob") == ["bob 1", "bob 2"]
    with pytest.raises(SubjectErasingError, match="run erase_subject again"):
        talk(other, "alice-3", "alice", turns=1)
    assert len(saver.index.items()) == before
    store.put(("users", "bob", "notes-3"), "m", {"kind": "pref", "text": "bob 3"})
    other.erase_subject("alice")
    store.put(("users", "alice", "notes-3"), "m", {"kind": "pref", "text": "new"})
    talk(other, "alice-3", "alice", turns=1)
    assert notes(store, "alice") == ["new"] and len(history(other, "alice-3")) == 3


def test_a_catalog_build_is_all_an_erasure_needs_to_find_what_was_written_before() -> None:
    """Before `subjects build`: the threads through the catalog, and the Store
    namespaces, which the catalog build names as their subjects' (as a namespace's first
    write with subjects declared does): exported, then erased, bob's kept."""
    from langgraph.store.s3dynamo import S3DynamoStore
    from tests.support.savers import memory_saver

    plain = memory_saver(keys=KEYS, secret=SECRET)
    talk(plain, "alice-1", "alice", turns=1)
    for user in ("alice", "bob"):
        S3DynamoStore.from_saver(plain).put(("users", user, "notes"), "m", {"text": user})
    saver, _ = subject_saver(plain.index, plain.objects, subject_label=1)
    store = S3DynamoStore.from_saver(saver)
    plan = saver.ops.catalog.plan_build()
    assert (plan.counts["threads"], plan.counts["namespaces"]) == (1, 2)
    plan.execute()
    exported = list(saver.export_subject("alice"))
    assert asyncio.run(_collected(saver.aexport_subject("alice"))) == exported
    assert [r["value"] for r in exported if r["type"] == "store_item"] == [{"text": "alice"}]
    assert {r["thread_id"] for r in exported if r["type"] == "checkpoint"} == {"alice-1"}
    done = saver.erase_subject("alice")
    assert (done["threads"], done["namespaces"], done["items"]) == (1, 1, 1)
    assert store.search(("users", "alice")) == [] and notes(store, "bob") == ["bob"]


def test_data_written_before_subjects_is_sealed_under_their_keys_by_a_build() -> None:
    from langgraph.store.s3dynamo import S3DynamoStore
    from tests.support.savers import memory_saver

    plain = memory_saver(keys=KEYS, secret=SECRET)
    talk(plain, "alice-1", "alice", turns=2)
    talk(plain, "anon-1", None, turns=1)
    S3DynamoStore.from_saver(plain).put(("users", "alice", "notes"), "m", {"text": "tea"})
    saver, keys = subject_saver(plain.index, plain.objects, subject_label=1)
    store = S3DynamoStore.from_saver(saver)
    before = history(saver, "alice-1")
    saver.ops.catalog.build()
    plan = saver.ops.subjects.plan_build()
    assert plan.counts == {"subjects": 1, "threads": 1, "namespaces": 1, "skipped_threads": 0}
    assert plan.execute().result()["resealed"] > 0
    alice = saver.store.name_of("alice-1")
    alice_ns = store.space.pk(("users", "alice", "notes"))
    under_k1 = " ".join(key_ids(saver)["k1"])
    assert alice not in under_k1 and alice_ns not in under_k1
    assert saver.store.name_of("anon-1") in under_k1  # no subject: the keyring's
    assert history(saver, "alice-1") == before
    # Erased, from a backup taken after the build as from the table.
    backup = saver.index.clone(), saver.objects.clone()
    assert saver.erase_subject("alice")["threads"] == 1
    restored, restored_store = another(saver, keys, *backup)
    with pytest.raises(SubjectErasedError):
        history(restored, "alice-1")
    with pytest.raises(SubjectErasedError):
        restored_store.get(("users", "alice", "notes"), "m")
    # A second build finds nothing more to seal.
    assert saver.ops.subjects.plan_build().execute().result()["resealed"] == 0


def test_a_key_a_writer_made_and_never_used_goes_with_the_subject() -> None:
    saver, keys, _ = world()
    # A process makes carol's first key and dies before its commit (what it uploaded
    # under the key would be garbage collection's, and still sealed under it).
    made, _ = saver.parts.subjects.for_writing("carol")
    assert [i["sk"] for i in keys.items() if "w" in i and i["sk"] == made.kid]
    plan = saver.ops.subjects.plan_erasure("carol")
    assert plan.work and plan.counts["keys"] == 1 and plan.counts["threads"] == 0
    saver.erase_subject("carol")
    assert not [i for i in keys.items() if i["sk"] == made.kid and "w" in i]


# ------------------------------------------------------------------ whose data is whose


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def test_a_subject_of_leading_zeros_is_its_own_never_the_integers() -> None:
    """ "007" names no thread of user 7 (whose key is another): exporting or erasing it
    reaches none of 7's data; any text is a subject, none a crash."""
    saver, keys, _ = world()
    talk(saver, "t7", 7, turns=1)  # type: ignore[arg-type]
    before = history(saver, "t7")
    assert list(saver.export_subject("007")) == []
    assert saver.erase_subject("007")["threads"] == 0
    for text in ("--5", "²", "٣", " 7"):
        assert saver.erase_subject(text)["threads"] == 0
    other, _ = another(saver, keys)
    assert history(other, "t7") == before
    assert {r["thread_id"] for r in saver.export_subject(7)} == {"t7"}


@pytest.mark.parametrize(
    "user", [UUID("12345678-1234-5678-1234-567812345678"), 7.5, True], ids=repr
)
def test_a_subject_field_of_another_type_is_refused_before_anything_is_written(
    user: object,
) -> None:
    """A UUID (which LangGraph leaves out of the metadata), a float or a bool in the
    subject field would make a thread nobody's that no erasure finds: refused, saying to
    pass a string."""
    saver, _, _ = world()
    before = len(saver.index.items())
    with pytest.raises(InvalidConfigError, match=r"user_id.*str\(\)"):
        chats.graph(saver).invoke(
            {"messages": [HumanMessage("hi", id="h")]},
            {"configurable": {"thread_id": "t-u", "user_id": user}},
        )
    assert len(saver.index.items()) == before


def test_an_export_holds_pending_writes_and_of_a_shared_thread_only_the_subjects() -> None:
    """A node's output kept as a pending write (its sibling failed) is in the export; a
    thread alice began and bob went on with gives each only the checkpoints that name
    them; an erasure of either removes it whole."""
    from langgraph.graph import START, StateGraph

    good_done = threading.Event()

    def good(state: Log) -> Log:
        good_done.set()
        return {"log": ["alice's pending"]}

    def bad(state: Log) -> Log:
        # Fails once its sibling has finished, so the sibling's output is kept as a
        # pending write (failing first would cancel it).
        good_done.wait(10)
        time.sleep(0.2)
        raise RuntimeError("boom")

    saver, keys, _ = world()
    builder = StateGraph(Log).add_node("good", good)
    builder = builder.add_node("bad", bad).add_edge(START, "good").add_edge(START, "bad")
    with pytest.raises(RuntimeError):
        builder.compile(checkpointer=saver).invoke(
            {"log": []}, {"configurable": {"thread_id": "t-p", "user_id": "alice"}}
        )
    exported = [r for r in saver.export_subject("alice") if r.get("thread_id") == "t-p"]
    writes = [(w["channel"], w["value"]) for r in exported for w in r["pending_writes"]]
    assert ("log", ["alice's pending"]) in writes
    talk(saver, "shared", "alice", turns=1)
    talk(saver, "shared", "bob", turns=1)
    for user in ("alice", "bob"):
        shared = [r for r in saver.export_subject(user) if r.get("thread_id") == "shared"]
        assert shared and {r["metadata"]["user_id"] for r in shared} == {user}
    assert saver.erase_subject("bob")["threads"] == 3
    assert another(saver, keys)[0].get_tuple({"configurable": {"thread_id": "shared"}}) is None


def test_an_export_after_a_restore_leaves_out_what_no_longer_opens() -> None:
    """A backup restored after alice's erasure, and alice back since: her export holds
    what she has now, and leaves out, with a warning, the threads the restore brought
    back (a search leaves them out too)."""
    saver, keys, _ = world()
    backup = saver.index.clone(), saver.objects.clone()
    saver.erase_subject("alice")
    restored, restored_store = another(saver, keys, *backup)
    talk(restored, "alice-3", "alice", turns=1)
    restored_store.put(("users", "alice", "notes-3"), "m", {"kind": "pref", "text": "again"})
    exported = list(restored.export_subject("alice"))
    assert {r["thread_id"] for r in exported if r["type"] == "checkpoint"} == {"alice-3"}
    assert [r["value"]["text"] for r in exported if r["type"] == "store_item"] == ["again"]


def test_a_subjects_data_read_without_subjects_declared_says_to_declare_them() -> None:
    saver, _, _ = world()
    plain = memory_saver(saver.index, saver.objects, keys=KEYS, secret=SECRET)
    with pytest.raises(InvalidConfigError, match="S3DYNAMO_SUBJECT_FIELD"):
        plain.get_tuple({"configurable": {"thread_id": "alice-1"}})
