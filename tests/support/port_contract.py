"""What the memory format's writes leave on a table (`memory/format.py`), written once
and run on every table: `tests/unit/test_port_contract.py` on the in-memory table,
`tests/aws/test_port_contract.py` on DynamoDB (moto in process, the integration tiers'
servers). The ports' own promises ship in the package (`testing.contract`)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, BlobPolicy, LazyPorts
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import Apply
from langgraph.checkpoint.s3dynamo.blobs.steps import Batch as BatchStep
from langgraph.checkpoint.s3dynamo.format.layout import (
    DESCENDANTS_SK,
    MANIFEST_SK,
    directory_pk,
    memory_pk,
    object_key,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    ItemKey,
)
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.memory import format, sealed
from langgraph.checkpoint.s3dynamo.memory import reads as memory_reads
from langgraph.checkpoint.s3dynamo.memory.rows import (
    Batch,
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    index_item,
    row_from,
)

PK, HEAD, LEASE = "p", ItemKey("p!", "head#ns"), ItemKey("p!", "lease")

# A commit with a head or a fence is one TransactWriteItems on DynamoDB.
needs_transactions = pytest.mark.unsupported_on("real", reason="dynalite has no transactions")


def _row(pk: str, sk: str, blob: bytes | None, **fields: Any) -> MemoryRow:
    return MemoryRow(ItemKey(pk, sk), blob, fields.pop("leaf", None), **fields)


# A namespace name as the namer makes them (22 characters, the last one of four).
NS = "A" * 21 + "Q"
KEYS = f"k1:{base64.b64encode(bytes(range(32))).decode()}"
K2 = f"k2:{base64.b64encode(bytes(range(32, 64))).decode()}"


class Reads:
    """The memory reads (`memory/reads.py`), each protocol run on `engine` when called."""

    def __init__(self, engine: BlobEngine) -> None:
        self.engine = engine

    def __getattr__(self, name: str) -> Any:
        protocol = getattr(memory_reads, name)
        return lambda *args, **kwargs: self.engine.run(protocol(*args, **kwargs))


def memory_engine(table: Any, keys: str | None = None) -> BlobEngine:
    """The blob engine on `table` (objects in memory; sealed under `keys` when given),
    which writes the memory format's plans."""
    ports = LazyPorts(table=lambda: table, objects=MemoryObjects)
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
            w for plan in format.put(batch, entry=entry, marks=marks) for w in engine.do(plan)
        ]
        if entry is not None:
            return [None] * len(rows)
        return [None if w.item is None else row_from(w.item) for w in written]

    def test_puts_keep_created_and_renew_the_directory(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        self.put(engine, [_row(self.pk, "a", b"1", created_ms=10, updated_ms=10)], self.entry)
        renewed = self.entry._replace(blob=b"ignored", generation="gen-2")
        self.put(engine, [_row(self.pk, "a", b"2", created_ms=20, updated_ms=20)], renewed)
        (row,) = reads.items_at([ItemKey(self.pk, "a"), ItemKey(self.pk, "absent")])
        assert (row.blob, row.created_ms, row.updated_ms) == (b"2", 10, 20)
        # The namespace's sealed set stays as first written; the generation is the new one.
        assert reads.entry(self.entry.key) == self.entry._replace(generation="gen-2")
        assert reads.entries(self.entry.key.pk) == [self.entry._replace(generation="gen-2")]
        assert not engine.do(Apply(format.drop_entry(self.entry))).applied  # an older generation
        assert engine.do(Apply(format.drop_entry(renewed))).applied
        assert reads.entry(self.entry.key) is None

    def test_the_emptied_mark_holds_on_the_generation(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        engine.do(format.renewal(self.entry))
        stale = self.entry._replace(generation="gen-0")
        assert not engine.do(Apply(format.mark_entry(stale, True))).applied
        assert engine.do(Apply(format.mark_entry(self.entry, True))).applied
        assert reads.entry(self.entry.key) == self.entry._replace(emptied=True)
        assert engine.do(Apply(format.mark_entry(self.entry, False))).applied
        # A renewal takes the mark off, and fences off every step begun on the old one.
        engine.do(Apply(format.mark_entry(self.entry, True)))
        engine.do(format.renewal(self.entry._replace(generation="gen-2")))
        assert reads.entry(self.entry.key) == self.entry._replace(generation="gen-2")
        assert not engine.do(Apply(format.mark_entry(self.entry, True))).applied

    def test_query_pages_in_key_order(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        self.put(engine, [_row(self.pk, sk, sk.encode()) for sk in ("c", "a", "b")], self.entry)
        assert [r.key.sk for r in reads.items(self.pk)] == ["a", "b", "c"]
        assert [r.key.sk for r in reads.items(self.pk, limit=2)] == ["a", "b"]

    def test_descendants_marks_are_seen_by_a_search_only(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
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
        engine.do(renewal)
        assert reads.items_and_mark(other) == ([], True) and reads.items(other) == []
        assert reads.entry(self.entry.key) == self.entry._replace(generation="gen-2")

    def test_a_refresh_answers_with_the_item_in_the_same_request(self, table: Any) -> None:
        engine = memory_engine(table)
        key = ItemKey(self.pk, "a")
        self.put(engine, [_row(self.pk, "a", b"1", expires_ms=500, ttl_minutes=60.0)], self.entry)

        def refresh(key: ItemKey, *args: Any) -> tuple[MemoryRow | None, bool]:
            write = format.refresh(key, *args, b"stamp")
            w = engine.do(Apply(write, returning="new", found_on_refusal=True))
            return (None if w.item is None else row_from(w.item)), w.applied

        row, refreshed = refresh(key, 900, 60.0, 100)
        assert refreshed and row is not None and (row.blob, row.expires_ms) == (b"1", 900)
        assert row.refresh_seal == b"stamp"
        # Another TTL (a put since), or expired by then: refused, the item as it is.
        row, refreshed = refresh(key, 950, 5.0, 100)
        assert not refreshed and row is not None and (row.blob, row.expires_ms) == (b"1", 900)
        row, refreshed = refresh(key, 950, 60.0, 900)
        assert not refreshed and row is not None and row.expires_ms == 900
        assert refresh(ItemKey(self.pk, "absent"), 950, 60.0, 100) == (None, False)

    def test_expiry_deletes_only_what_is_still_expired(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        rows = [
            _row(self.pk, "old", b"1", expires_ms=100),
            _row(self.pk, "new", b"2", expires_ms=500),
            _row(self.pk, "never", b"3"),
        ]
        self.put(engine, rows, self.entry)
        engine.do(Apply(format.touch(ItemKey(self.pk, "old"), 300, b"s")))  # read since: renewed

        def delete(sk: str, expired_at_ms: int | None = None) -> MemoryRow | None:
            key = ItemKey(self.pk, sk)
            old = engine.do(Apply(format.delete_row(key, expired_at_ms), returning="old")).item
            return None if old is None else row_from(old)

        assert delete("old", expired_at_ms=299) is None
        gone = delete("old", expired_at_ms=300)
        assert gone is not None and gone.blob == b"1"
        assert delete("never") is not None and delete("never") is None
        engine.do(Apply(format.touch(ItemKey(self.pk, "absent"), 1, b"s")))  # nothing, no error
        assert [r.key.sk for r in reads.items(self.pk)] == ["new"]

    def test_a_put_alone_answers_with_what_it_replaced(self, table: Any) -> None:
        engine = memory_engine(table)
        self.put(engine, [_row(self.pk, "a", b"1", expires_ms=700)], self.entry)
        (old,) = self.put(engine, [_row(self.pk, "a", b"2")])
        assert old is not None and (old.blob, old.expires_ms) == (b"1", 700)
        assert self.put(engine, [_row(self.pk, "b", b"3")]) == [None]

    def test_a_put_keeps_the_creation_stamp_and_drops_the_refresh_stamp(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        first = _row(self.pk, "a", b"1", expires_ms=700, ttl_minutes=1.0, created_ms=5)
        self.put(engine, [first._replace(created_seal=b"c1")], self.entry)
        engine.do(Apply(format.touch(first.key, 900, b"r1")))
        self.put(engine, [_row(self.pk, "a", b"2", created_ms=6, created_seal=b"c2")])
        (row,) = reads.items(self.pk)
        assert (row.blob, row.created_ms, row.created_seal, row.refresh_seal) == (
            b"2",
            5,
            b"c1",
            None,
        )

    def test_a_put_past_one_transaction_uploads_each_part_s_objects_with_it(
        self, table: Any
    ) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        rows = [_row(self.pk, f"k{i:03}", None, leaf=f"L{i:03}") for i in range(150)]
        uploads = [(object_key(self.pk, f"L{i:03}"), b"body") for i in range(150)]
        batch = Batch(("n",), self.pk, rows, uploads=uploads)
        marks = [ItemKey(memory_pk("", "B" * 21 + "Q", "m"), DESCENDANTS_SK)]
        plans = format.put(batch, entry=self.entry, marks=marks)
        # Items, the entry and the mark; then the rest and the entry.
        assert [len(p.writes) for p in plans] == [100, 53]
        assert [len(p.uploads) for p in plans] == [98, 52]
        for plan in plans:
            engine.do(plan)
        assert [r.leaf for r in reads.items(self.pk)] == [r.leaf for r in rows]
        assert reads.items_and_mark(marks[0].pk) == ([], True)
        assert sorted(o.key for o in engine.objects.list_owner(self.pk)) == sorted(
            k for k, _ in uploads
        )

    def test_liveness_to_the_millisecond_and_the_entry_bound(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        bounded = self.entry._replace(live_until_ms=1_000)
        self.put(engine, [_row(self.pk, "a", b"1", expires_ms=1_000)], bounded)
        assert reads.has_live(self.pk, 999) and not reads.has_live(self.pk, 1_000)
        found = reads.entry(self.entry.key, consistent=False)
        assert found is not None and found.live_until_ms == 1_000
        engine.do(Apply(format.bound(self.entry.key, None)))
        assert (found := reads.entry(self.entry.key)) and found.live_until_ms is None
        # A renewal without a bound keeps the one there; one with a bound replaces it.
        engine.do(Apply(format.bound(self.entry.key, 5)))
        engine.do(format.renewal(self.entry._replace(generation="gen-2")))
        assert (found := reads.entry(self.entry.key)) and found.live_until_ms == 5
        absent = ItemKey(self.entry.key.pk, "absent")
        engine.do(Apply(format.bound(absent, 5)))  # nothing, and no error
        assert reads.entry(absent) is None
        assert not reads.has_live(memory_pk("", "B" * 21 + "Q", "m"), 0)

    def test_index_items_page_both_ways_and_stay_out_of_item_reads(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        self.put(engine, [_row(self.pk, "a", b"1")], self.entry, [ItemKey(self.pk, DESCENDANTS_SK)])
        tokens = [IndexItem(ItemKey(self.pk, f"~x{n}")) for n in "abcde"]
        log = IndexItem(ItemKey(self.pk, "~v1"), b"log")
        engine.do(BatchStep(puts=[index_item(i) for i in [*tokens, log]]))
        got = reads.index_items(self.pk, ("~x", "~x~"), descending=True, limit=2)
        assert [i.key.sk for i in got] == ["~xe", "~xd"]
        more = reads.index_items(self.pk, ("~x", "~x~"), descending=True, after="~xd")
        assert [i.key.sk for i in more] == ["~xc", "~xb", "~xa"]
        # The mark, the manifest and the log in one range; items never among them.
        found = reads.index_items(self.pk, (DESCENDANTS_SK, "~w"))
        assert [(i.key.sk, i.blob) for i in found] == [("~", None), ("~v1", b"log")]
        assert [r.key.sk for r in reads.items(self.pk)] == ["a"]
        assert reads.items_and_mark(self.pk)[0][0].key.sk == "a"
        engine.do(BatchStep(deletes=[t.key for t in tokens]))
        assert reads.index_items(self.pk, ("~x", "~x~")) == []

    def test_a_put_writes_its_search_entries_before_its_items(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        token = IndexItem(ItemKey(self.pk, "~xt"))
        batch = Batch(("n",), self.pk, [_row(self.pk, "a", b"1")])
        (plan,) = format.put(batch, indexes=[token])
        assert plan.batched == [index_item(token)] and plan.each
        engine.do(plan)
        assert reads.index_items(self.pk, ("~x", "~x~")) == [token]

    def test_the_manifest_is_replaced_on_its_generation(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        key = ItemKey(self.pk, MANIFEST_SK)
        first = IndexItem(key, b"m1", "g1", frozenset({"L1"}))
        segment = [(object_key(self.pk, "L1"), b"seg")]

        def compact(manifest: IndexItem, expected: str | None, replaced: list[str]) -> bool:
            plan = format.compaction(self.pk, segment, manifest, expected, replaced)
            return engine.do(plan)[0].applied

        assert compact(first, None, [])
        assert not compact(IndexItem(key, b"m2", "g2"), None, [])
        assert not compact(IndexItem(key, b"m2", "g2"), "g0", [])
        assert compact(IndexItem(key, b"m2", "g2", frozenset({"L2"})), "g1", ["L1"])
        assert reads.index_items(self.pk, (MANIFEST_SK, MANIFEST_SK)) == [
            IndexItem(key, b"m2", "g2", frozenset({"L2"}))
        ]
        assert engine.do(Apply(format.reseal(key, b"m2", b"m3"))).applied
        assert not engine.do(Apply(format.reseal(key, b"m2", b"m4"))).applied
        assert reads.index_items(self.pk, (MANIFEST_SK, MANIFEST_SK))[0].blob == b"m3"

    def test_an_item_gone_leaves_no_token_and_a_tombstone_where_indexed(self, table: Any) -> None:
        engine, reads = memory_engine(table), Reads(memory_engine(table))
        plain = memory_pk("", "B" * 21 + "Q", "m")
        tokens = [ItemKey(self.pk, "~xt#0000000000001#a"), ItemKey(plain, "~xt#0000000000001#b")]
        engine.do(BatchStep(puts=[index_item(IndexItem(k)) for k in tokens]))
        deleted = [_row(self.pk, "a", None, leaf="La"), _row(plain, "b", b"1")]
        sealer = Sealer(keyring=Keyring.parse(KEYS))
        gone = format.gone(deleted, tokens, indexed={self.pk}, at_ms=7, sealer=sealer)
        assert gone.objects == [object_key(self.pk, "La")]
        for puts, deletes in gone.indexes.values():
            engine.do(BatchStep(puts, deletes))
        (tomb,) = reads.index_items(self.pk, (DESCENDANTS_SK, "~z"))
        assert tomb.key == format.tombstones([deleted[0].key], 7, sealer, "m")[0].key
        assert format.tombstone_of(tomb) == ("a", 7)
        assert format.verified_tombstone(tomb, sealer, "m")
        assert reads.index_items(plain, (DESCENDANTS_SK, "~z")) == []

    def test_a_reseal_replaces_each_blob_only_while_unchanged(self, table: Any) -> None:
        old, new = memory_engine(table, KEYS), memory_engine(table, f"{K2},{KEYS}")
        reads, space, ns = Reads(old), "m", ("n",)
        rows = [
            _row(self.pk, sk, old.sealer.seal("memory", b"v", format.item_aad(space, ns, sk)))
            for sk in ("a", "b")
        ]
        sealed_ns = old.sealer.seal("json", b'["n"]', format.entry_aad(space, NS))
        entry = self.entry._replace(blob=sealed_ns)
        self.put(old, rows, entry)
        stored = sealed.Stored(space, ns, self.pk, reads.entry(entry.key), reads.items(self.pk))
        plan = sealed.resealed(stored, new.sealer)
        assert len(plan.writes) == 3 and plan.each
        # One item written since (under the active key): its re-seal is refused.
        self.put(new, [rows[1]._replace(blob=new.sealer.seal("memory", b"w", b"x"))])
        assert [w.applied for w in new.do(plan)] == [True, True, False]
        found = [entry.key.sk, *(r.key.sk for r in reads.items(self.pk))]
        assert found == [NS, "a", "b"]
        blobs = [e.blob for e in reads.entries(entry.key.pk)]
        blobs += [r.blob or b"" for r in reads.items(self.pk)]
        assert {new.sealer.key_id_of(b) for b in blobs} == {"k2"}
        # Under the key that sealed them, nothing is due.
        assert sealed.resealed(stored, old.sealer).writes == []
