"""Data subjects (`subjects.py`): every blob of a subject's threads is sealed under a key
of the subject's own, kept wrapped in the key table, and read back in another process;
what has no subject keeps the deployment's keys; the request budgets of a warm put and
of a read stay as they are."""

from __future__ import annotations

import contextlib
import os

import pytest
from langgraph.store.base import PutOp

from langgraph.checkpoint.s3dynamo.blobs.sealing import SUBJECT_KEY_MARK
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from tests.support import chats
from tests.support.faults import Crash, CrashingPort, is_request
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


def test_a_subjects_key_made_by_a_store_put_is_its_key_once_the_put_lands() -> None:
    """A Store put that makes a subject's first key makes its fence in its commit; once
    it lands, the process's next puts into the subject's namespaces check the fence and
    write under the lease that put took (one transaction each), as after a thread's."""
    from langgraph.store.s3dynamo import S3DynamoStore

    saver, keys = subject_saver(subject_label=1)
    store = S3DynamoStore.from_saver(saver)
    store.put(("users", "alice", "memories"), "m1", {"text": "tea"})
    assert keys.calls["PutItem"] == 1  # the key made
    saver.index.calls.clear()
    store.put(("users", "alice", "memories"), "m2", {"text": "toast"})
    store.put(("users", "alice", "memories"), "m1", {"text": "coffee"})
    assert saver.index.calls == {"TransactWriteItems": 2}


def test_subjects_need_the_deployments_own_keys_and_run_detection() -> None:
    with pytest.raises(InvalidConfigError, match="detect_concurrent_runs"):
        subject_saver(detect_concurrent_runs=False)


def test_a_subject_setting_of_the_wrong_form_is_refused_by_its_own_name() -> None:
    from langgraph.checkpoint.s3dynamo.config.settings import Settings

    with pytest.raises(InvalidConfigError, match=r"subject_label \(S3DYNAMO_SUBJECT_LABEL\) is -1"):
        Settings(subject_field="user_id", subject_label=-1)  # never counted from the end
    with pytest.raises(InvalidConfigError, match=r"^subject_field.*'user id' cannot be"):
        Settings(subject_field="user id")


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


def test_a_subjects_store_puts_name_every_object_they_replace() -> None:
    """A subject's put writes in a transaction that checks the subject's fence, and a
    transaction returns no old item. So each item goes only while it holds the object
    last seen there (what the read a process's first put takes its lease from found,
    else what the process last wrote there, else none); a refusal hands back the item,
    and the transaction is sent again expecting it: every replaced object goes with
    incremental collection, whichever process wrote it, and a put that replaces none,
    or the one its process wrote there last, costs one transaction."""
    from datetime import datetime, timedelta, timezone

    from langgraph.store.s3dynamo import S3DynamoStore

    def large() -> dict[str, str]:
        return {"text": os.urandom(20_000).hex()}

    saver, keys = subject_saver(subject_label=1)
    ns = ("users", "alice", "memories")
    first = S3DynamoStore.from_saver(saver)
    first.put(ns, "m1", large())
    other, _ = subject_saver(Process(saver.index), saver.objects, keys, subject_label=1)
    store = S3DynamoStore.from_saver(other)
    calls = saver.index.calls
    # The second process's first put: its lease from one read of the entry and the item.
    reads, sent = calls["BatchGetItem"], calls["TransactWriteItems"]
    store.put(ns, "m1", {"text": "short now"})
    assert (calls["BatchGetItem"], calls["TransactWriteItems"]) == (reads + 1, sent + 1)
    # Under the lease it holds: a new item, an inline value replaced, one transaction each.
    sent = calls["TransactWriteItems"]
    store.put(ns, "m2", {"text": "new"})
    store.put(ns, "m1", {"text": "shorter"})
    assert calls["TransactWriteItems"] == sent + 2
    # An object it wrote itself, replaced: it expects that one, one transaction.
    store.put(ns, "m1", large())
    sent = calls["TransactWriteItems"]
    store.put(ns, "m1", large())
    assert calls["TransactWriteItems"] == sent + 1
    # One the first process wrote meanwhile: refused, and sent again expecting it.
    first.put(ns, "m1", large())
    sent = calls["TransactWriteItems"]
    store.batch([PutOp(ns, "m1", {"text": "done"}), PutOp(ns, "m3", large())])
    assert calls["TransactWriteItems"] == sent + 2
    assert len(saver.objects.blobs) == 5  # the four replaced, and m3's
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    collection = other.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later)
    assert collection.execute(now=later) == 4 and len(saver.objects.blobs) == 1
    assert store.get(ns, "m1").value == {"text": "done"}
    assert other.ops.verify().problems == []


@pytest.mark.parametrize("after", [False, True])
def test_a_subjects_put_sent_again_crashed_at_any_request_leaves_old_or_new(after: bool) -> None:
    """The put above, refused once and sent again, killed before (or after) each of its
    requests: a reader sees the old value or the new, a repeat of the put completes it,
    and after the collections nothing but the new value's object is left."""
    from datetime import datetime, timedelta, timezone

    from langgraph.store.s3dynamo import S3DynamoStore

    ns, new = ("users", "alice", "memories"), {"text": "new " + os.urandom(15_000).hex()}
    for at in range(1, 40):
        saver, keys = subject_saver(subject_label=1)
        counter = [-1_000_000]  # no fault while the crashing process takes its lease
        crashing, _ = subject_saver(
            CrashingPort(Process(saver.index), counter, at, after, is_request),
            CrashingPort(saver.objects, counter, at, after, is_request),
            keys,
            subject_label=1,
        )
        store = S3DynamoStore.from_saver(crashing)
        store.put(ns, "m1", {"text": "its own"})
        old = {"text": os.urandom(20_000).hex()}
        S3DynamoStore.from_saver(saver).put(ns, "m1", old)  # unknown to the crashing one
        counter[0] = 0
        with contextlib.suppress(Crash):
            store.put(ns, "m1", new)
        sent, counter[0] = counter[0], -1_000_000
        reader, _ = subject_saver(Process(saver.index), saver.objects, keys, subject_label=1)
        assert S3DynamoStore.from_saver(reader).get(ns, "m1").value in (old, new)
        store.put(ns, "m1", new)
        assert S3DynamoStore.from_saver(reader).get(ns, "m1").value == new
        later = datetime.now(timezone.utc) + timedelta(hours=1)
        saver.ops.plan_incremental_garbage_collection(grace=timedelta(0), now=later).execute(
            now=later
        )
        saver.ops.memory.collect_garbage(grace=timedelta(0))
        assert saver.ops.verify().problems == [] and len(saver.objects.blobs) == 1
        if sent < at:
            break  # the put finished before request `at`: every boundary was tried
    assert at > 3


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
