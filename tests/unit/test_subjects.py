"""Data subjects (`subjects.py`): every blob of a subject's threads is sealed under a key
of the subject's own, kept wrapped in the key table, and read back in another process;
what has no subject keeps the deployment's keys; the request budgets of a warm put and
of a read stay as they are."""

from __future__ import annotations

import os

import pytest

from langgraph.checkpoint.s3dynamo.blobs.sealing import SUBJECT_KEY_MARK
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from tests.support import chats
from tests.support.memory_index import Process
from tests.support.savers import memory_saver
from tests.support.subjects import KEYS, SECRET, key_ids, subject_saver, talk


def test_a_subjects_threads_are_sealed_under_its_own_key_and_nothing_else_is() -> None:
    saver, keys = subject_saver(catalog_fields="graph_id")
    talk(saver, "alice-1", "alice")
    talk(saver, "bob-1", "bob")
    talk(saver, "anon-1", None)
    ids = key_ids(saver)
    subject_ids = {kid for kid in ids if kid.startswith(SUBJECT_KEY_MARK)}
    assert len(subject_ids) == 2  # alice's and bob's
    alice, bob = saver.store.name_of("alice-1"), saver.store.name_of("bob-1")
    anon = saver.store.name_of("anon-1")
    for kid in subject_ids:
        where = " ".join(ids[kid])
        assert (alice in where) != (bob in where), "one key per subject"
        assert anon not in where
    # Everything of anon's thread, and the deployment's records, under the keyring's key.
    assert any(anon in w for w in ids["k1"])
    assert not any(alice in w or bob in w for w in ids["k1"])
    # The key table holds each key wrapped: no stored bytes are the key itself.
    for item in keys.items():
        assert all(len(v) != 32 for v in item.values() if isinstance(v, bytes))


def test_a_subjects_thread_reads_back_in_another_process() -> None:
    saver, keys = subject_saver()
    g = talk(saver, "alice-1", "alice")
    before = chats.view(g, "alice-1")
    other, _ = subject_saver(saver.index, saver.objects, keys)
    assert chats.view(chats.graph(other), "alice-1") == before
    # The key was read once by that process, then kept.
    assert keys.calls["GetItem"] == 1


def test_a_warm_put_of_a_subject_sends_what_a_put_without_subjects_sends() -> None:
    plain = memory_saver(keys=KEYS, secret=SECRET, catalog_fields="user_id")
    talk(plain, "t", "alice", turns=2)
    plain.index.calls.clear()
    talk(plain, "t", "alice", turns=1)
    saver, keys = subject_saver()
    talk(saver, "t", "alice", turns=2)
    saver.index.calls.clear()
    keys.calls.clear()
    talk(saver, "t", "alice", turns=1)
    # As many requests; a task's writes go as a transaction with the subject's fence
    # where they went as one UpdateItem.
    assert sum(saver.index.calls.values()) == sum(plain.index.calls.values())
    assert saver.index.calls["Query"] == plain.index.calls["Query"]
    assert sum(keys.calls.values()) == 0


def test_a_subjects_first_write_in_a_process_costs_its_fence_and_its_key() -> None:
    saver, keys = subject_saver()
    talk(saver, "t", "alice", turns=1)
    # The fence read, the key made (in the key table), the fence made in the first commit.
    assert keys.calls["PutItem"] == 1
    other, _ = subject_saver(saver.index, saver.objects, keys)
    other.index.calls.clear()
    keys.calls.clear()
    talk(other, "t2", "alice", turns=1)
    assert keys.calls["GetItem"] == 1 and keys.calls["PutItem"] == 0


def test_subjects_need_the_deployments_own_keys_and_run_detection() -> None:
    with pytest.raises(InvalidConfigError, match="detect_concurrent_runs"):
        subject_saver(detect_concurrent_runs=False)


def test_a_subjects_store_namespaces_are_sealed_under_the_key_of_its_threads() -> None:
    from langgraph.store.s3dynamo import S3DynamoStore

    saver, keys = subject_saver(subject_label=1)
    talk(saver, "alice-1", "alice", turns=1)
    store = S3DynamoStore.from_saver(saver, filter_fields=["kind"])
    store.put(("users", "alice", "memories"), "m1", {"kind": "pref", "text": "tea"})
    store.put(("users", "bob", "memories"), "m1", {"kind": "pref", "text": "coffee"})
    store.put(("global",), "rules", {"text": "be kind"})
    ids = key_ids(saver)
    subject_ids = sorted(kid for kid in ids if kid.startswith(SUBJECT_KEY_MARK))
    assert len(subject_ids) == 2  # alice's (her thread and her memories), and bob's
    alice_ns = store.space.pk(("users", "alice", "memories"))
    bob_ns = store.space.pk(("users", "bob", "memories"))
    global_ns = store.space.pk(("global",))
    alice_kid = next(k for k in subject_ids if any(alice_ns in w for w in ids[k]))
    assert any(saver.store.name_of("alice-1") in w for w in ids[alice_kid])
    assert not any(bob_ns in w for w in ids[alice_kid])
    assert any(global_ns in w for w in ids["k1"])
    # Another process reads each back, by key, and finds them by a filter and a listing.
    other, _ = subject_saver(saver.index, saver.objects, keys, subject_label=1)
    again = S3DynamoStore.from_saver(other, filter_fields=["kind"])
    assert again.get(("users", "alice", "memories"), "m1").value["text"] == "tea"
    found = again.search(("users",), filter={"kind": "pref"})
    assert sorted(i.value["text"] for i in found) == ["coffee", "tea"]
    assert ("users", "alice", "memories") in again.list_namespaces(prefix=("users",))


def test_a_subjects_first_store_put_in_a_process_names_the_object_it_replaced() -> None:
    """A process's first put into a subject's namespace that another renewed lately takes
    its lease from one read of the entry and the items, then writes in a transaction that
    checks the fence and returns nothing: what the read found is what the put replaced, so
    the replaced object goes with incremental collection, not only the full one."""
    from datetime import datetime, timedelta, timezone

    from langgraph.store.s3dynamo import S3DynamoStore

    saver, keys = subject_saver(subject_label=1)
    ns = ("users", "alice", "memories")
    S3DynamoStore.from_saver(saver).put(ns, "m1", {"text": os.urandom(20_000).hex()})
    assert len(saver.objects.blobs) == 1
    other, _ = subject_saver(Process(saver.index), saver.objects, keys, subject_label=1)
    store = S3DynamoStore.from_saver(other)
    reads = other.index.calls["BatchGetItem"]
    store.put(ns, "m1", {"text": "short now"})
    assert other.index.calls["BatchGetItem"] == reads + 1  # the entry and the item
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    collection = other.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    assert collection.execute(now=later) == 1 and saver.objects.blobs == {}
    assert store.get(ns, "m1").value == {"text": "short now"}
    assert other.ops.verify().problems == []


def test_a_rotation_wraps_subjects_keys_again_so_the_old_key_can_go() -> None:
    import os as _os

    saver, keys = subject_saver()
    talk(saver, "alice-1", "alice", turns=2)
    before = chats.view(chats.graph(saver), "alice-1")
    new = _os.urandom(32)
    rotated = memory_saver(
        saver.index,
        saver.objects,
        keys={"k2": new, **KEYS},
        secret=SECRET,
        key_index=keys,
        subject_field="user_id",
    )
    assert rotated.ops.reencrypt() >= 0
    assert {i["by"] for i in keys.items() if "by" in i} == {"k2"}
    # The old key gone from the keyring, alice reads back whole.
    alone = memory_saver(
        saver.index,
        saver.objects,
        keys={"k2": new},
        secret=SECRET,
        key_index=keys,
        subject_field="user_id",
    )
    assert chats.view(chats.graph(alone), "alice-1") == before
