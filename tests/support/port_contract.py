"""What each port promises (`ports.py`), and what the memory format's writes leave on a
table (`memory/format.py`), written once and run on every backend: a test module
subclasses these classes as `Test...` and gives the fixtures each names (a fresh port or
table, and one whose table or bucket does not exist). The in-memory twins run them in
`tests/unit/test_port_contract.py`, the DynamoDB, S3 and KMS adapters in
`tests/aws/test_port_contract.py` (on moto in process, and on the integration tiers'
servers). Where a twin and an adapter answer differently, the twin is wrong."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.table_index import TableIndex
from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, BlobPolicy, LazyPorts
from langgraph.checkpoint.s3dynamo.blobs.sealing import Keyring, Sealer
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    DeploymentMismatchError,
    LeaseLostError,
    ObjectNotFoundError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.layout import (
    DESCENDANTS_SK,
    MANIFEST_SK,
    deployment_pk,
    directory_pk,
    intents_before,
    journal_pk_of,
    mark_sk,
    memory_pk,
    object_key,
)
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.reads import Reads
from langgraph.checkpoint.s3dynamo.memory.rows import (
    Batch,
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    index_item,
    row_from,
)
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ControlRecord,
    Fence,
    HeadMove,
    ItemKey,
    Mark,
    WritesRecord,
    head_key,
    upload_intent,
)

PK, HEAD, LEASE = "p", ItemKey("p!", "head#ns"), ItemKey("p!", "lease")

# A commit with a head or a fence is one TransactWriteItems on DynamoDB.
needs_transactions = pytest.mark.unsupported_on("real", reason="dynalite has no transactions")


def _cp(cid: str, body: bytes | None = None, sk: str = "", **fields: Any) -> CheckpointRecord:
    body = body or b"body-" + cid.encode()
    return CheckpointRecord(PK, sk or f"ns#{cid}", body, b"m", b"t", **fields)


def _ids(index: Any, prefix: str = "ns#") -> list[str]:
    return [r.sk for r in index.query(PK, prefix=prefix).records]


def commit(
    index: Any, cid: str, parent: str | None, *, check: bool = True, fence: Any = None
) -> None:
    index.put_checkpoint(_cp(cid), HeadMove(HEAD, cid, parent, check), fence)


class IndexContract:
    """`RecordIndex`, `ControlItems` and `TableScan`: fixtures `index` (an empty index
    that exists) and `missing_index` (one whose table does not)."""

    @needs_transactions
    def test_commit_conditions(self, index: Any) -> None:
        # A new namespace: the first commit with no parent goes; a second one is refused.
        commit(index, "1", None)
        with pytest.raises(ConcurrentUpdateError):
            commit(index, "1b", None)
        # A continuation of the head goes; a second child of the same parent is refused
        # and writes nothing.
        commit(index, "2", "1")
        with pytest.raises(ConcurrentUpdateError):
            commit(index, "2b", "1")
        assert _ids(index) == ["ns#1", "ns#2"]
        # A repeat of the commit that moved the head (its answer lost) goes.
        commit(index, "2", "1")
        # A fork (unchecked) from an old parent goes and moves the head.
        commit(index, "3", "1", check=False)
        with pytest.raises(ConcurrentUpdateError):
            commit(index, "4", "2")
        commit(index, "4", "3")
        # Without a head (maintenance dropped it) any parent goes.
        index.drop_heads("p", ["ns"])
        commit(index, "5", "1")
        assert _ids(index) == ["ns#1", "ns#2", "ns#3", "ns#4", "ns#5"]

    @needs_transactions
    def test_lease_conditions(self, index: Any) -> None:
        first = index.acquire_lease(LEASE, "a", 1_000, 500)
        assert first is not None and first.token >= 1
        # Held and unexpired: a second holder is refused.
        assert index.acquire_lease(LEASE, "b", 1_200, 500) is None
        commit(index, "1", None, fence=Fence(LEASE, first.token))
        # Expired: taken over with a higher token; the first holder's writes are refused.
        second = index.acquire_lease(LEASE, "b", 1_600, 500)
        assert second is not None and second.token > first.token
        with pytest.raises(LeaseLostError):
            commit(index, "2", "1", fence=Fence(LEASE, first.token))
        with pytest.raises(LeaseLostError):
            index.merge_writes(
                WritesRecord(PK, "ns#1#t", b"t", {0: b"w"}), frozenset(), Fence(LEASE, first.token)
            )
        with pytest.raises(LeaseLostError):
            index.renew_lease(first, 1_700, 500)
        assert _ids(index) == ["ns#1"]
        index.release_lease(first)  # taken over: releasing changes nothing
        assert index.acquire_lease(LEASE, "c", 1_700, 500) is None
        # The holder writes, renews, releases; the next one gets a higher token still.
        commit(index, "2", "1", fence=Fence(LEASE, second.token))
        index.merge_writes(
            WritesRecord(PK, "ns#2#t", b"t", {0: b"w"}), frozenset(), Fence(LEASE, second.token)
        )
        renewed = index.renew_lease(second, 1_800, 500)
        assert renewed.expires_ms == 2_300
        index.release_lease(renewed)
        third = index.acquire_lease(LEASE, "c", 1_900, 500)
        assert third is not None and third.token > second.token
        # A holder's accepted write renews its lease in the same request: the expiry
        # becomes the fence's. (`third` lapses at 2_400 on its own.)
        commit(index, "3", "2", fence=Fence(LEASE, third.token, 5_000))
        assert index.acquire_lease(LEASE, "d", 3_000, 500) is None
        index.merge_writes(
            WritesRecord(PK, "ns#3#t", b"t", {0: b"w"}),
            frozenset(),
            Fence(LEASE, third.token, 6_000),
        )
        assert index.acquire_lease(LEASE, "d", 5_500, 500) is None
        # A refused write renews nothing: a fenced commit whose head condition fails...
        with pytest.raises(ConcurrentUpdateError):
            commit(index, "4", "1", fence=Fence(LEASE, third.token, 60_000))
        fourth = index.acquire_lease(LEASE, "d", 6_001, 500)
        assert fourth is not None and fourth.token > third.token
        # ... and a taken-over holder's writes: the transaction writes nothing at all.
        with pytest.raises(LeaseLostError):
            commit(index, "4", "3", fence=Fence(LEASE, third.token, 60_000))
        with pytest.raises(LeaseLostError):
            index.merge_writes(
                WritesRecord(PK, "ns#3#t", b"t", {1: b"w"}),
                frozenset(),
                Fence(LEASE, third.token, 60_000),
            )
        assert "ns#4" not in _ids(index)
        assert index.query(PK, prefix="ns#3#t").records[0].writes.keys() == {0}
        assert index.acquire_lease(LEASE, "e", 6_502, 500) is not None

    def test_marks_sort_first_and_come_apart(self, index: Any) -> None:
        writes = WritesRecord(PK, "ns#2#task", b"t", {0: b"w"})
        index.write_batch(puts=[_cp("1"), _cp("2"), writes])
        mark = Mark(PK, mark_sk("ns", "prune"), "2", frozenset({"2"}), frozenset({"0"}), 7)
        index.write_batch(puts=[mark])
        # Descending from the namespace's top, the mark comes first and counts towards the
        # limit; it comes in `marks`, never among the records, as it was written.
        top = index.query(PK, prefix="ns#", descending=True, limit=2)
        assert top.marks == (mark,) and [r.sk for r in top.records] == ["ns#2#task"]
        whole = index.query(PK, prefix="ns#")
        assert [r.sk for r in whole.records] == ["ns#1", "ns#2", "ns#2#task"]
        assert whole.marks == (mark,)
        assert mark.key in set(index.query_keys(PK))
        assert [r.sk for r in index.scan()] == ["ns#1", "ns#2", "ns#2#task"]
        index.write_batch(deletes=[mark.key])
        assert index.query(PK, prefix="ns#").marks == ()

    def test_query_orders_pages_and_bounds(self, index: Any) -> None:
        for sk in ("a#1", "a#2", "a#2#t", "a#3", "b#1"):
            record = _cp("", sk=sk) if sk.count("#") == 1 else WritesRecord(PK, sk, b"t")
            index.write_batch(puts=[record])
        first = index.query(PK, prefix="a#", descending=True, limit=2)
        assert [r.sk for r in first.records] == ["a#3", "a#2#t"]
        rest = index.query(PK, prefix="a#", descending=True, cursor=first.cursor)
        assert [r.sk for r in rest.records] == ["a#2", "a#1"] and rest.cursor is None
        ascending = index.query(PK, prefix="a#", limit=3, consistent=True)
        assert [r.sk for r in ascending.records] == ["a#1", "a#2", "a#2#t"]
        between = index.query(PK, between=("a#2", "a#3"))
        assert [r.sk for r in between.records] == ["a#2", "a#2#t", "a#3"]
        assert [k.sk for k in index.query_keys(PK, prefix="b")] == ["b#1"]
        assert index.query("another", prefix="a#").records == []

    def test_records_read_back_as_written(self, index: Any) -> None:
        record = _cp("1", run_key="run-7", objects=frozenset({"o1", "o2"}), written_at=1_700)
        record.inline["tag"] = b"\x00sealed"
        index.put_checkpoint(record, None)
        record.inline["tag"] = b"changed after the write"  # the stored copy stays
        writes = WritesRecord(PK, "ns#1#t", b"task", {0: b"w", 1: "leaf/ref"}, "bundle", 1_701)
        index.merge_writes(writes, frozenset())
        stored, stored_writes = index.query(PK, prefix="ns#", consistent=True).records
        assert stored == _cp(
            "1",
            run_key="run-7",
            objects=frozenset({"o1", "o2"}),
            written_at=1_700,
            inline={"tag": b"\x00sealed"},
        )
        assert stored_writes == writes
        assert index.run_checkpoints("run-7") == [record.key]
        assert index.run_checkpoints("run-8") == []
        assert index.item_size(stored) > len(stored.body)

    def test_merge_keeps_first_regular_write_and_last_special(self, index: Any) -> None:
        first = {0: b"first", -1: b"e1"}
        index.merge_writes(WritesRecord(PK, "a#1#t", b"t", first), frozenset({-1}))
        second = {0: b"second", 1: b"new", -1: b"e2"}
        index.merge_writes(WritesRecord(PK, "a#1#t", b"t", second), frozenset({-1}))
        (stored,) = index.query(PK).records
        assert isinstance(stored, WritesRecord)
        assert stored.writes == {0: b"first", 1: b"new", -1: b"e2"}

    def test_replace_only_if_unchanged(self, index: Any) -> None:
        old = _cp("1")
        index.put_checkpoint(old, None)
        assert index.replace_if_unchanged(old, _cp("1", b"new")) is True
        assert index.replace_if_unchanged(old, _cp("1", b"newer")) is False
        (stored,) = index.query(PK).records
        assert isinstance(stored, CheckpointRecord) and stored.body == b"new"

    def test_batches_beyond_one_request_write_and_delete_every_item(self, index: Any) -> None:
        records = [_cp(f"{i:03}") for i in range(60)]  # three BatchWriteItem requests
        index.write_batch(puts=records)
        assert len(list(index.query_keys(PK))) == 60
        # Deleting absent items is not an error; every present one goes.
        index.write_batch(deletes=[r.key for r in records] + [ItemKey(PK, "ns#absent")])
        assert list(index.query_keys(PK)) == []

    def test_heads_are_control_items_apart_from_records(self, index: Any) -> None:
        index.put_heads("p", {"ns": "1", "sub": "2"})
        stamps = {s.key: s for s in index.partition_stamps("p!")}
        assert set(stamps) == {head_key("p", "ns"), head_key("p", "sub")}
        assert stamps[head_key("p", "sub")].head == "2"
        index.put_checkpoint(_cp("2"), None)
        index.drop_heads("p", ["sub"])
        assert {s.key for s in index.partition_stamps("p!")} == {head_key("p", "ns")}
        assert [r.sk for r in index.scan()] == ["ns#2"]  # no control item among records
        index.delete_items([head_key("p", "ns"), ItemKey("p!", "absent")])
        assert index.partition_stamps("p!") == []

    def test_scans_cover_every_item_once_by_prefix(self, index: Any) -> None:
        for pk in ("t1", "t2", "x1"):
            index.write_batch(puts=[CheckpointRecord(pk, "ns#1", b"b", b"m", b"t")])
        index.put_heads("t1", {"ns": "1"})
        assert sorted(r.pk for r in index.scan()) == ["t1", "t2", "x1"]
        assert sorted(r.pk for r in index.scan("t")) == ["t1", "t2"]
        seen = [s.key for seg in range(3) for page in index.scan_stamps(seg, 3) for s in page]
        assert sorted(seen) == sorted(
            [ItemKey(pk, "ns#1") for pk in ("t1", "t2", "x1")] + [head_key("t1", "ns")]
        )
        assert [s.key.pk for page in index.scan_stamps(prefix="x") for s in page] == ["x1"]

    def test_control_records_replace_only_at_the_expected_version(self, index: Any) -> None:
        pk = deployment_pk("")
        v1 = ControlRecord("deployment", {"bucket": "b", "check": b"\x01"}, 1)
        assert index.put_control(pk, v1, None) is True
        assert index.put_control(pk, v1, None) is False  # one of that name exists
        v2 = ControlRecord("deployment", {"bucket": "c", "check": b"\x02"}, 2)
        assert index.put_control(pk, v2, 2) is False  # the stored one is at 1
        assert index.put_control(pk, v2, 1) is True
        assert index.put_control(pk, ControlRecord("keyring", {}, 1), 1) is False
        assert index.read_control(pk) == {"deployment": v2}
        # A deployment's own partition is never among a thread's records.
        assert list(index.scan()) == []

    @needs_transactions
    def test_upload_intents_are_closed_by_the_commit_that_names_them(self, index: Any) -> None:
        """Read back by key range, closed by the commit that names them (with or without
        a head, a put_writes too), even when already gone, and deleted with other control
        items; never seen by a Scan of thread records."""
        thread = "A" * 21 + "Q"
        pk = journal_pk_of(thread)
        intents = [upload_intent(thread, [f"leaf{i}"], 1_000 + i, f"n{i}") for i in range(4)]
        for intent in intents:
            index.put_intent(intent)
        assert index.intents_before(pk, intents_before(1_002)) == intents[:2]
        assert index.intents_before(pk, intents_before(5_000)) == intents
        index.put_checkpoint(_cp("1"), None, None, intents[0].key)
        index.put_checkpoint(_cp("2"), HeadMove(HEAD, "2", None, False), None, intents[1].key)
        index.merge_writes(
            WritesRecord(PK, "ns#2#t", b"t", {0: b"w"}), frozenset(), None, intents[2].key
        )
        # A repeat of a commit whose intent is already gone goes through.
        index.put_checkpoint(_cp("2"), HeadMove(HEAD, "2", None, True), None, intents[1].key)
        assert index.intents_before(pk, intents_before(5_000)) == intents[3:]
        assert _ids(index) == ["ns#1", "ns#2", "ns#2#t"]
        index.delete_items([intents[3].key])
        assert index.intents_before(pk, intents_before(5_000)) == []
        index.put_intent(intents[3])
        assert [r.sk for r in index.scan()] == ["ns#1", "ns#2", "ns#2#t"]

    def test_a_missing_table_is_named_until_created(self, missing_index: Any) -> None:
        with pytest.raises(StoreMissingError):
            missing_index.query(PK)
        assert missing_index.create_if_missing() is True
        assert missing_index.create_if_missing() is False
        assert missing_index.query(PK).records == []
        assert missing_index.run_checkpoints("r") == []


class ObjectStoreContract:
    """`ObjectStore`: fixtures `objects` (an empty store that exists) and
    `missing_objects` (one whose bucket does not)."""

    def test_objects_are_written_once_unless_overwritten(self, objects: Any) -> None:
        assert objects.put_new("t/k", b"one") is True
        assert objects.put_new("t/k", b"two") is False  # If-None-Match: the first stays
        assert objects.get("t/k") == b"one"
        (before,) = objects.list("t/")
        objects.overwrite("t/k", b"three")
        (after,) = objects.list("t/")
        assert objects.get("t/k") == b"three" and after.size == 5
        assert after.tag != before.tag  # a rewrite carries a new tag
        objects.overwrite("t/new", b"")  # or writes an absent key
        assert objects.get("t/new") == b""

    def test_a_missing_object_is_named(self, objects: Any) -> None:
        with pytest.raises(ObjectNotFoundError) as caught:
            objects.get("t/gone")
        assert caught.value.key == "t/gone"

    def test_list_gives_every_key_under_a_prefix_with_its_size(self, objects: Any) -> None:
        for key in ("a/1", "a/2", "a/sub/3", "ab/4", "b/5"):
            objects.put_new(key, key.encode())
        listed = list(objects.list("a/"))
        assert [o.key for o in listed] == ["a/1", "a/2", "a/sub/3"]
        assert [o.size for o in listed] == [3, 3, 7]
        assert all(o.modified.tzinfo is not None and o.tag for o in listed)
        assert list(objects.list("c/")) == []
        objects.probe("a/")  # the store exists and lists: no error
        assert len(list(objects.list(""))) == 5

    def test_delete_takes_present_keys_and_ignores_absent_ones(self, objects: Any) -> None:
        for key in ("d/1", "d/2", "d/3"):
            objects.put_new(key, b"x")
        objects.delete(["d/1", "d/3", "d/absent"])
        assert [o.key for o in objects.list("d/")] == ["d/2"]
        objects.delete([])
        assert [o.key for o in objects.list("d/")] == ["d/2"]

    def test_delete_unchanged_spares_what_was_written_since_listing(self, objects: Any) -> None:
        for key in ("u/kept", "u/gone", "u/deleted-before"):
            objects.put_new(key, b"x")
        listed = list(objects.list("u/"))
        objects.overwrite("u/kept", b"rewritten after the listing")
        objects.delete(["u/deleted-before"])
        assert objects.delete_unchanged(listed) == ["u/gone"]
        assert [o.key for o in objects.list("u/")] == ["u/kept"]
        assert objects.get("u/kept") == b"rewritten after the listing"
        assert objects.delete_unchanged([]) == []

    def test_stat_is_what_a_listing_says_of_one_key(self, objects: Any) -> None:
        assert objects.stat("s/k") is None
        objects.put_new("s/k", b"one")
        (listed,) = objects.list("s/k")
        assert objects.stat("s/k") == listed

    @pytest.mark.unsupported_on("real", reason="SeaweedFS creates a missing bucket on first PUT")
    def test_a_write_to_a_missing_bucket_is_refused(self, missing_objects: Any) -> None:
        with pytest.raises(StoreMissingError):
            missing_objects.put_new("k", b"v")
        with pytest.raises(StoreMissingError):
            missing_objects.get("k")

    def test_a_bucket_says_where_it_lives_and_a_missing_one_nothing(
        self, objects: Any, missing_objects: Any
    ) -> None:
        found = objects.bucket_region()
        # Made where its client sends (S3 on moto); the twin and some servers name none.
        assert found is None or found.lives_in == found.configured != ""
        assert missing_objects.bucket_region() is None

    def test_a_missing_bucket_is_named_until_created(self, missing_objects: Any) -> None:
        with pytest.raises(StoreMissingError):
            missing_objects.probe("")
        assert missing_objects.create_if_missing() is True
        assert missing_objects.create_if_missing() is False
        assert missing_objects.put_new("k", b"v") is True and missing_objects.get("k") == b"v"


class KeyServiceContract:
    """`KeyService`: fixture `keys`, a key service on a master key of its own."""

    def test_a_data_key_unwraps_under_the_context_it_was_made_for(self, keys: Any) -> None:
        context = {"table": "checkpoints"}
        plaintext, wrapped = keys.generate_data_key(context)
        assert len(plaintext) == 32 and plaintext not in wrapped
        assert keys.decrypt(wrapped, dict(context)) == plaintext
        assert keys.generate_data_key(context)[0] != plaintext  # fresh every time
        assert keys.describe()

    def test_another_context_does_not_unwrap(self, keys: Any) -> None:
        _, wrapped = keys.generate_data_key({"table": "checkpoints"})
        with pytest.raises(DeploymentMismatchError):
            keys.decrypt(wrapped, {"table": "another-table"})


def _row(pk: str, sk: str, blob: bytes | None, **fields: Any) -> MemoryRow:
    return MemoryRow(ItemKey(pk, sk), blob, fields.pop("leaf", None), **fields)


# A namespace name as the namer makes them (22 characters, the last one of four).
NS = "A" * 21 + "Q"
KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
K2 = f"k2:{base64.b64encode(bytes(range(32, 64))).decode()}"


def memory_engine(table: Any, keys: str | None = None) -> BlobEngine:
    """The blob engine on `table` (objects in memory; sealed under `keys` when given),
    which writes the memory format's plans."""
    ports = LazyPorts(index=lambda: TableIndex(table), objects=MemoryObjects)
    sealer = Sealer(keyring=Keyring.parse(keys) if keys else None)
    return BlobEngine(ports=ports, sealer=sealer, prefix="", policy=BlobPolicy(0, 0))


@needs_transactions  # a put that renews its directory entry is one transaction
class MemoryFormatContract:
    """The memory format (`memory/format.py`) on a table: what each plan and write leaves,
    read back as the Store reads it (`memory/reads.py`), and each condition refused as it
    should be. Fixture `table`: an empty table that exists."""

    pk = memory_pk("", NS, "m")
    entry = DirectoryEntry(ItemKey(directory_pk("", "m"), NS), b"sealed-ns", "gen-1")

    def put(
        self,
        engine: BlobEngine,
        rows: list[MemoryRow],
        entry: DirectoryEntry | None = None,
        marks: Sequence[ItemKey] = (),
        uploads: Sequence[tuple[str, bytes]] = (),
    ) -> list[MemoryRow | None]:
        batch = Batch(("n",), rows[0].key.pk, rows, uploads=list(uploads))
        written = [
            w for plan in format.put(batch, entry=entry, marks=marks) for w in engine.write(plan)
        ]
        if entry is not None:
            return [None] * len(rows)
        return [None if w.item is None else row_from(w.item) for w in written]

    def test_puts_keep_created_and_renew_the_directory(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        self.put(engine, [_row(self.pk, "a", b"1", created_ms=10, updated_ms=10)], self.entry)
        renewed = self.entry._replace(blob=b"ignored", generation="gen-2")
        self.put(engine, [_row(self.pk, "a", b"2", created_ms=20, updated_ms=20)], renewed)
        (row,) = reads.items_at([ItemKey(self.pk, "a"), ItemKey(self.pk, "absent")])
        assert (row.blob, row.created_ms, row.updated_ms) == (b"2", 10, 20)
        # The namespace's sealed set stays as first written; the generation is the new one.
        assert reads.entry(self.entry.key) == self.entry._replace(generation="gen-2")
        assert reads.entries(self.entry.key.pk) == [self.entry._replace(generation="gen-2")]
        assert not engine.apply(format.drop_entry(self.entry)).applied  # an older generation
        assert engine.apply(format.drop_entry(renewed)).applied
        assert reads.entry(self.entry.key) is None

    def test_the_emptied_mark_holds_on_the_generation(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        engine.write(format.renewal(self.entry))
        stale = self.entry._replace(generation="gen-0")
        assert not engine.apply(format.mark_entry(stale, True)).applied
        assert engine.apply(format.mark_entry(self.entry, True)).applied
        assert reads.entry(self.entry.key) == self.entry._replace(emptied=True)
        assert engine.apply(format.mark_entry(self.entry, False)).applied
        # A renewal takes the mark off, and fences off every step begun on the old one.
        engine.apply(format.mark_entry(self.entry, True))
        engine.write(format.renewal(self.entry._replace(generation="gen-2")))
        assert reads.entry(self.entry.key) == self.entry._replace(generation="gen-2")
        assert not engine.apply(format.mark_entry(self.entry, True)).applied

    def test_query_pages_in_key_order(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        self.put(engine, [_row(self.pk, sk, sk.encode()) for sk in ("c", "a", "b")], self.entry)
        assert [r.key.sk for r in reads.items(self.pk)] == ["a", "b", "c"]
        assert [r.key.sk for r in reads.items(self.pk, limit=2)] == ["a", "b"]

    def test_descendants_marks_are_seen_by_a_search_only(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        parent, other = memory_pk("", "B" * 21 + "Q", "m"), memory_pk("", "C" * 21 + "Q", "m")
        self.put(engine, [_row(self.pk, "a", b"1")], self.entry, [ItemKey(parent, DESCENDANTS_SK)])
        # Item sort keys are URL-safe base64: from "-" to "z", all before the mark.
        self.put(engine, [_row(parent, sk, sk.encode()) for sk in ("-a", "p", "zz")])
        rows, marked = reads.items_and_mark(parent)
        assert ([r.key.sk for r in rows], marked) == (["-a", "p", "zz"], True)
        assert [r.key.sk for r in reads.items(parent)] == ["-a", "p", "zz"]
        assert [r.key.sk for r in reads.items(parent, limit=3)] == ["-a", "p", "zz"]
        rows, marked = reads.items_and_mark(self.pk)
        assert ([r.key.sk for r in rows], marked) == (["a"], False)
        # A renewal alone writes its marks too, in the same request.
        renewal = format.renewal(
            self.entry._replace(generation="gen-2"), [ItemKey(other, DESCENDANTS_SK)]
        )
        engine.write(renewal)
        assert reads.items_and_mark(other) == ([], True) and reads.items(other) == []
        assert reads.entry(self.entry.key) == self.entry._replace(generation="gen-2")

    def test_a_refresh_answers_with_the_item_in_the_same_request(self, table: Any) -> None:
        engine = memory_engine(table)
        key = ItemKey(self.pk, "a")
        self.put(engine, [_row(self.pk, "a", b"1", expires_ms=500, ttl_minutes=60.0)], self.entry)

        def refresh(key: ItemKey, *args: Any) -> tuple[MemoryRow | None, bool]:
            w = engine.apply(format.refresh(key, *args), returning="new", found_on_refusal=True)
            return (None if w.item is None else row_from(w.item)), w.applied

        row, refreshed = refresh(key, 900, 60.0, 100)
        assert refreshed and row is not None and (row.blob, row.expires_ms) == (b"1", 900)
        # Another TTL (a put since), or expired by then: refused, the item as it is.
        row, refreshed = refresh(key, 950, 5.0, 100)
        assert not refreshed and row is not None and (row.blob, row.expires_ms) == (b"1", 900)
        row, refreshed = refresh(key, 950, 60.0, 900)
        assert not refreshed and row is not None and row.expires_ms == 900
        assert refresh(ItemKey(self.pk, "absent"), 950, 60.0, 100) == (None, False)

    def test_expiry_deletes_only_what_is_still_expired(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        rows = [
            _row(self.pk, "old", b"1", expires_ms=100),
            _row(self.pk, "new", b"2", expires_ms=500),
            _row(self.pk, "never", b"3"),
        ]
        self.put(engine, rows, self.entry)
        engine.apply(format.touch(ItemKey(self.pk, "old"), 300))  # read since: renewed

        def delete(sk: str, expired_at_ms: int | None = None) -> MemoryRow | None:
            key = ItemKey(self.pk, sk)
            old = engine.apply(format.delete_row(key, expired_at_ms), returning="old").item
            return None if old is None else row_from(old)

        assert delete("old", expired_at_ms=299) is None
        gone = delete("old", expired_at_ms=300)
        assert gone is not None and gone.blob == b"1"
        assert delete("never") is not None and delete("never") is None
        engine.apply(format.touch(ItemKey(self.pk, "absent"), 1))  # nothing, and no error
        assert [r.key.sk for r in reads.items(self.pk)] == ["new"]

    def test_a_put_alone_answers_with_what_it_replaced(self, table: Any) -> None:
        engine = memory_engine(table)
        self.put(engine, [_row(self.pk, "a", b"1", expires_ms=700)], self.entry)
        (old,) = self.put(engine, [_row(self.pk, "a", b"2")])
        assert old is not None and (old.blob, old.expires_ms) == (b"1", 700)
        assert self.put(engine, [_row(self.pk, "b", b"3")]) == [None]

    def test_a_put_past_one_transaction_uploads_each_part_s_objects_with_it(
        self, table: Any
    ) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        rows = [_row(self.pk, f"k{i:03}", None, leaf=f"L{i:03}") for i in range(150)]
        uploads = [(object_key(self.pk, f"L{i:03}"), b"body") for i in range(150)]
        batch = Batch(("n",), self.pk, rows, uploads=uploads)
        marks = [ItemKey(memory_pk("", "B" * 21 + "Q", "m"), DESCENDANTS_SK)]
        plans = format.put(batch, entry=self.entry, marks=marks)
        # Items, the entry and the mark; then the rest and the entry.
        assert [len(p.writes) for p in plans] == [100, 53]
        assert [len(p.uploads) for p in plans] == [98, 52]
        for plan in plans:
            engine.write(plan)
        assert [r.leaf for r in reads.items(self.pk)] == [r.leaf for r in rows]
        assert reads.items_and_mark(marks[0].pk) == ([], True)
        assert sorted(o.key for o in engine.list_owner(self.pk)) == sorted(k for k, _ in uploads)

    def test_liveness_to_the_millisecond_and_the_entry_bound(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        bounded = self.entry._replace(live_until_ms=1_000)
        self.put(engine, [_row(self.pk, "a", b"1", expires_ms=1_000)], bounded)
        assert reads.has_live(self.pk, 999) and not reads.has_live(self.pk, 1_000)
        found = reads.entry(self.entry.key, consistent=False)
        assert found is not None and found.live_until_ms == 1_000
        engine.apply(format.bound(self.entry.key, None))
        assert (found := reads.entry(self.entry.key)) and found.live_until_ms is None
        # A renewal without a bound keeps the one there; one with a bound replaces it.
        engine.apply(format.bound(self.entry.key, 5))
        engine.write(format.renewal(self.entry._replace(generation="gen-2")))
        assert (found := reads.entry(self.entry.key)) and found.live_until_ms == 5
        absent = ItemKey(self.entry.key.pk, "absent")
        engine.apply(format.bound(absent, 5))  # nothing, and no error
        assert reads.entry(absent) is None
        assert not reads.has_live(memory_pk("", "B" * 21 + "Q", "m"), 0)

    def test_index_items_page_both_ways_and_stay_out_of_item_reads(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        self.put(engine, [_row(self.pk, "a", b"1")], self.entry, [ItemKey(self.pk, DESCENDANTS_SK)])
        tokens = [IndexItem(ItemKey(self.pk, f"~x{n}")) for n in "abcde"]
        log = IndexItem(ItemKey(self.pk, "~v1"), b"log")
        engine.batch(puts=[index_item(i) for i in [*tokens, log]])
        got = reads.index_items(self.pk, ("~x", "~x~"), descending=True, limit=2)
        assert [i.key.sk for i in got] == ["~xe", "~xd"]
        more = reads.index_items(self.pk, ("~x", "~x~"), descending=True, after="~xd")
        assert [i.key.sk for i in more] == ["~xc", "~xb", "~xa"]
        # The mark, the manifest and the log in one range; items never among them.
        found = reads.index_items(self.pk, (DESCENDANTS_SK, "~w"))
        assert [(i.key.sk, i.blob) for i in found] == [("~", None), ("~v1", b"log")]
        assert [r.key.sk for r in reads.items(self.pk)] == ["a"]
        assert reads.items_and_mark(self.pk)[0][0].key.sk == "a"
        engine.batch(deletes=[t.key for t in tokens])
        assert reads.index_items(self.pk, ("~x", "~x~")) == []

    def test_a_put_writes_its_search_entries_before_its_items(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        token = IndexItem(ItemKey(self.pk, "~xt"))
        batch = Batch(("n",), self.pk, [_row(self.pk, "a", b"1")])
        (plan,) = format.put(batch, indexes=[token])
        assert plan.indexes == [index_item(token)] and plan.each
        engine.write(plan)
        assert reads.index_items(self.pk, ("~x", "~x~")) == [token]

    def test_the_manifest_is_replaced_on_its_generation(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        key = ItemKey(self.pk, MANIFEST_SK)
        first = IndexItem(key, b"m1", "g1", frozenset({"L1"}))
        segment = [(object_key(self.pk, "L1"), b"seg")]

        def compact(manifest: IndexItem, expected: str | None, replaced: list[str]) -> bool:
            plan = format.compaction(self.pk, segment, manifest, expected, replaced)
            return engine.write(plan)[0].applied

        assert compact(first, None, [])
        assert not compact(IndexItem(key, b"m2", "g2"), None, [])
        assert not compact(IndexItem(key, b"m2", "g2"), "g0", [])
        assert compact(IndexItem(key, b"m2", "g2", frozenset({"L2"})), "g1", ["L1"])
        assert reads.index_items(self.pk, (MANIFEST_SK, MANIFEST_SK)) == [
            IndexItem(key, b"m2", "g2", frozenset({"L2"}))
        ]
        assert engine.apply(format.reseal(key, b"m2", b"m3")).applied
        assert not engine.apply(format.reseal(key, b"m2", b"m4")).applied
        assert reads.index_items(self.pk, (MANIFEST_SK, MANIFEST_SK))[0].blob == b"m3"

    def test_an_item_gone_leaves_no_token_and_a_tombstone_where_indexed(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table).ports)
        plain = memory_pk("", "B" * 21 + "Q", "m")
        tokens = [ItemKey(self.pk, "~xt#0000000000001#a"), ItemKey(plain, "~xt#0000000000001#b")]
        engine.batch(puts=[index_item(IndexItem(k)) for k in tokens])
        deleted = [_row(self.pk, "a", None, leaf="La"), _row(plain, "b", b"1")]
        gone = format.gone(deleted, tokens, indexed={self.pk}, at_ms=7)
        assert gone.objects == [object_key(self.pk, "La")]
        for puts, deletes in gone.indexes.values():
            engine.batch(puts, deletes)
        (tomb,) = reads.index_items(self.pk, (DESCENDANTS_SK, "~z"))
        assert tomb == format.tombstones([deleted[0].key], 7)[0] and tomb.blob is None
        assert reads.index_items(plain, (DESCENDANTS_SK, "~z")) == []

    def test_a_reseal_replaces_each_blob_only_while_unchanged(self, table: Any) -> None:
        old, new = memory_engine(table, KEYS), memory_engine(table, f"{K2},{KEYS}")
        reads, space, ns = Reads(old.ports), "m", ("n",)
        rows = [
            _row(self.pk, sk, old.sealer.seal("memory", b"v", format.item_aad(space, ns, sk)))
            for sk in ("a", "b")
        ]
        sealed_ns = old.sealer.seal("json", b'["n"]', format.entry_aad(space, NS))
        entry = self.entry._replace(blob=sealed_ns)
        self.put(old, rows, entry)
        stored = format.Stored(space, ns, self.pk, reads.entry(entry.key), reads.items(self.pk))
        plan = format.resealed(stored, new.sealer)
        assert len(plan.writes) == 3 and plan.each
        # One item written since (under the active key): its re-seal is refused.
        self.put(new, [rows[1]._replace(blob=new.sealer.seal("memory", b"w", b"x"))])
        assert [w.applied for w in new.write(plan)] == [True, True, False]
        found = [entry.key.sk, *(r.key.sk for r in reads.items(self.pk))]
        assert found == [NS, "a", "b"]
        blobs = [e.blob for e in reads.entries(entry.key.pk)]
        blobs += [r.blob or b"" for r in reads.items(self.pk)]
        assert {new.sealer.key_id_of(b) for b in blobs} == {"k2"}
        # Under the key that sealed them, nothing is due.
        assert format.resealed(stored, old.sealer).writes == []
