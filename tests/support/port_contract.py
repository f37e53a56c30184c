"""What each port promises (`ports.py`), written once and run on every backend: a test
module subclasses these classes as `Test...` and gives the fixtures each names (a fresh
port, and one whose table or bucket does not exist). The in-memory twins run them in
`tests/unit/test_port_contract.py`, the DynamoDB, S3 and KMS adapters in
`tests/aws/test_port_contract.py` (on moto in process, and on the integration tiers'
servers). Where a twin and an adapter answer differently, the twin is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo.layout import (
    DESCENDANTS_SK,
    directory_pk,
    memory_pk,
)
from langgraph.checkpoint.s3dynamo.memory.rows import DirectoryEntry, IndexItem, MemoryRow
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    HeadMove,
    ItemKey,
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


def _row(pk: str, sk: str, blob: bytes, **fields: Any) -> MemoryRow:
    return MemoryRow(ItemKey(pk, sk), blob, None, **fields)


# A namespace name as the namer makes them (22 characters, the last one of four).
NS = "A" * 21 + "Q"


@needs_transactions  # a put is one transaction with its directory entry
class MemoryItemsContract:
    """`MemoryItems`: fixture `items`, an empty index that exists."""

    pk = memory_pk("", NS, "m")
    entry = DirectoryEntry(ItemKey(directory_pk("", "m"), NS), b"sealed-ns", "gen-1")

    def test_puts_keep_created_and_renew_the_directory(self, items: Any) -> None:
        items.memory_put([_row(self.pk, "a", b"1", created_ms=10, updated_ms=10)], self.entry)
        renewed = self.entry._replace(blob=b"ignored", generation="gen-2")
        items.memory_put([_row(self.pk, "a", b"2", created_ms=20, updated_ms=20)], renewed)
        (row,) = items.memory_get([ItemKey(self.pk, "a"), ItemKey(self.pk, "absent")])
        assert (row.blob, row.created_ms, row.updated_ms) == (b"2", 10, 20)
        # The namespace's sealed set stays as first written; the generation is the new one.
        assert items.directory_get(self.entry.key) == self.entry._replace(generation="gen-2")
        assert items.directory(self.entry.key.pk) == [self.entry._replace(generation="gen-2")]
        assert items.directory_drop(self.entry) is False  # an older generation
        assert items.directory_drop(renewed) is True
        assert items.directory_get(self.entry.key) is None

    def test_query_pages_in_key_order(self, items: Any) -> None:
        rows = [_row(self.pk, sk, sk.encode()) for sk in ("c", "a", "b")]
        items.memory_put(rows, self.entry)
        assert [r.key.sk for r in items.memory_query(self.pk)] == ["a", "b", "c"]
        assert [r.key.sk for r in items.memory_query(self.pk, limit=2)] == ["a", "b"]

    def test_descendants_marks_are_seen_by_a_search_only(self, items: Any) -> None:
        parent, other = memory_pk("", "B" * 21 + "Q", "m"), memory_pk("", "C" * 21 + "Q", "m")
        items.memory_put([_row(self.pk, "a", b"1")], self.entry, [ItemKey(parent, DESCENDANTS_SK)])
        # Item sort keys are URL-safe base64: from "-" to "z", all before the mark.
        items.memory_put([_row(parent, sk, sk.encode()) for sk in ("-a", "p", "zz")], None)
        rows, marked = items.memory_search(parent)
        assert ([r.key.sk for r in rows], marked) == (["-a", "p", "zz"], True)
        assert [r.key.sk for r in items.memory_query(parent)] == ["-a", "p", "zz"]
        assert [r.key.sk for r in items.memory_query(parent, limit=3)] == ["-a", "p", "zz"]
        rows, marked = items.memory_search(self.pk)
        assert ([r.key.sk for r in rows], marked) == (["a"], False)
        # A renewal alone writes its marks too, in the same request.
        items.directory_renew(
            self.entry._replace(generation="gen-2"), [ItemKey(other, DESCENDANTS_SK)]
        )
        assert items.memory_search(other) == ([], True) and items.memory_query(other) == []
        assert items.directory_get(self.entry.key) == self.entry._replace(generation="gen-2")

    def test_a_refresh_answers_with_the_item_in_the_same_request(self, items: Any) -> None:
        key = ItemKey(self.pk, "a")
        items.memory_put([_row(self.pk, "a", b"1", expires_ms=500, ttl_minutes=60.0)], self.entry)
        row, refreshed = items.memory_refresh(key, 900, 60.0, 100)
        assert refreshed and (row.blob, row.expires_ms) == (b"1", 900)
        # Another TTL (a put since), or expired by then: refused, the item as it is.
        row, refreshed = items.memory_refresh(key, 950, 5.0, 100)
        assert not refreshed and (row.blob, row.expires_ms) == (b"1", 900)
        row, refreshed = items.memory_refresh(key, 950, 60.0, 900)
        assert not refreshed and row.expires_ms == 900
        assert items.memory_refresh(ItemKey(self.pk, "absent"), 950, 60.0, 100) == (None, False)

    def test_expiry_deletes_only_what_is_still_expired(self, items: Any) -> None:
        rows = [
            _row(self.pk, "old", b"1", expires_ms=100),
            _row(self.pk, "new", b"2", expires_ms=500),
            _row(self.pk, "never", b"3"),
        ]
        items.memory_put(rows, self.entry)
        items.memory_touch(ItemKey(self.pk, "old"), 300)  # read since: renewed
        assert items.memory_delete(ItemKey(self.pk, "old"), expired_at_ms=299) is None
        gone = items.memory_delete(ItemKey(self.pk, "old"), expired_at_ms=300)
        assert gone is not None and gone.blob == b"1"
        assert items.memory_delete(ItemKey(self.pk, "never")) is not None
        assert items.memory_delete(ItemKey(self.pk, "never")) is None
        items.memory_touch(ItemKey(self.pk, "absent"), 1)  # nothing, and no error
        assert [r.key.sk for r in items.memory_query(self.pk)] == ["new"]

    def test_a_put_alone_answers_with_what_it_replaced(self, items: Any) -> None:
        items.memory_put([_row(self.pk, "a", b"1", expires_ms=700)], self.entry)
        (old,) = items.memory_put([_row(self.pk, "a", b"2")], None)
        assert old is not None and (old.blob, old.expires_ms) == (b"1", 700)
        assert items.memory_put([_row(self.pk, "b", b"3")], None) == [None]

    def test_liveness_to_the_millisecond_and_the_entry_bound(self, items: Any) -> None:
        bounded = self.entry._replace(live_until_ms=1_000)
        items.memory_put([_row(self.pk, "a", b"1", expires_ms=1_000)], bounded)
        assert items.memory_has_live(self.pk, 999) and not items.memory_has_live(self.pk, 1_000)
        assert items.directory_get(self.entry.key, consistent=False).live_until_ms == 1_000
        items.directory_bound(self.entry.key, None)
        assert items.directory_get(self.entry.key).live_until_ms is None
        # A renewal without a bound keeps the one there; one with a bound replaces it.
        items.directory_bound(self.entry.key, 5)
        items.directory_renew(self.entry._replace(generation="gen-2"))
        assert items.directory_get(self.entry.key).live_until_ms == 5
        items.directory_bound(ItemKey(self.entry.key.pk, "absent"), 5)  # nothing, no error
        assert items.directory_get(ItemKey(self.entry.key.pk, "absent")) is None
        assert not items.memory_has_live(memory_pk("", "B" * 21 + "Q", "m"), 0)

    def test_index_items_page_both_ways_and_stay_out_of_item_reads(self, items: Any) -> None:
        items.memory_put([_row(self.pk, "a", b"1")], self.entry, [ItemKey(self.pk, DESCENDANTS_SK)])
        tokens = [IndexItem(ItemKey(self.pk, f"~x{n}")) for n in "abcde"]
        items.index_write(puts=[*tokens, IndexItem(ItemKey(self.pk, "~v1"), b"log")])
        got = items.index_query(self.pk, ("~x", "~x~"), descending=True, limit=2)
        assert [i.key.sk for i in got] == ["~xe", "~xd"]
        more = items.index_query(self.pk, ("~x", "~x~"), descending=True, after="~xd")
        assert [i.key.sk for i in more] == ["~xc", "~xb", "~xa"]
        # The mark, the manifest and the log in one range; items never among them.
        found = items.index_query(self.pk, (DESCENDANTS_SK, "~w"))
        assert [(i.key.sk, i.blob) for i in found] == [("~", None), ("~v1", b"log")]
        assert [r.key.sk for r in items.memory_query(self.pk)] == ["a"]
        assert items.memory_search(self.pk)[0][0].key.sk == "a"
        items.index_write(deletes=[t.key for t in tokens])
        assert items.index_query(self.pk, ("~x", "~x~")) == []

    def test_the_manifest_is_replaced_on_its_generation(self, items: Any) -> None:
        key = ItemKey(self.pk, "~i")
        first = IndexItem(key, b"m1", "g1", frozenset({"L1"}))
        assert items.manifest_put(first, None) is True
        assert items.manifest_put(IndexItem(key, b"m2", "g2"), None) is False
        assert items.manifest_put(IndexItem(key, b"m2", "g2"), "g0") is False
        assert items.manifest_put(IndexItem(key, b"m2", "g2", frozenset({"L2"})), "g1") is True
        assert items.index_query(self.pk, ("~i", "~i")) == [
            IndexItem(key, b"m2", "g2", frozenset({"L2"}))
        ]
        assert items.memory_reseal(key, b"m2", b"m3") is True
        assert items.index_query(self.pk, ("~i", "~i"))[0].blob == b"m3"
