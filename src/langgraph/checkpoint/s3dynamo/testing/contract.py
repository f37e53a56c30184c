"""What each port promises (`ports.py`), as test classes a backend's suite subclasses:
the table (`TableTests`), the object store (`ObjectStoreTests`) and the key service
(`KeyServiceTests`). A subclass gives the fixtures each names (a fresh port, and one whose
table or bucket does not exist), and runs every stored format on that backend unchanged::

    from langgraph.checkpoint.s3dynamo.testing.contract import TableTests

    class TestMyTable(TableTests):
        @pytest.fixture
        def table(self): return MyTable(...)

        @pytest.fixture
        def missing_table(self): return MyTable(..., absent=True)

This project runs them on the in-memory ports, on DynamoDB, S3 and KMS through moto in
process and moto server, and on dynalite and SeaweedFS. Where two backends answer
differently, at least one is wrong.
"""

from __future__ import annotations

from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    DeploymentMismatchError,
    ItemTooLargeError,
    ObjectNotFoundError,
    StorageError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.format.schema import IDLE_INDEX, RUN_INDEX
from langgraph.checkpoint.s3dynamo.table import (
    Between,
    Check,
    Delete,
    ItemKey,
    Put,
    Table,
    Update,
    begins,
    both,
    either,
    eq,
    every_item,
    exists,
    gt,
    keyed,
    le,
    lt,
    missing,
    scan_pages,
)

P = "partition"


def _sks(page: Any) -> list[str]:
    return [str(i["sk"]) for i in page.items]


class TableTests:
    """The table port (`table.Table`): fixtures `table` (an empty table that exists) and
    `missing_table` (one that does not). A backend without transactions (dynalite) sets
    `transactions = False`: their test is skipped, saying so."""

    transactions = True
    # Whether a refused conditional write can return the item it found (DynamoDB's
    # ReturnValuesOnConditionCheckFailure; dynalite does not).
    returns_refused_items = True

    def test_values_of_every_kind_read_back_as_written(self, table: Table) -> None:
        item = keyed(
            ItemKey(P, "a"),
            s="text",
            b=b"\x00bytes",
            n=42,
            f=0.25,
            ss=frozenset({"x", "y"}),
            m={"tag": b"sealed", "other": b""},
        )
        assert table.write(Put(item)).applied
        assert table.get(ItemKey(P, "a")) == item
        assert table.get(ItemKey(P, "absent")) is None
        assert table.item_size(item) > len(b"\x00bytes")

    def test_a_condition_holds_or_the_write_is_refused_and_changes_nothing(
        self, table: Table
    ) -> None:
        key = ItemKey(P, "c")
        assert table.write(Put(keyed(key, v=1), when=missing())).applied
        assert not table.write(Put(keyed(key, v=2), when=missing())).applied
        refused = table.write(Update(key, set={"v": 3}, when=eq("v", 2)), found_on_refusal=True)
        assert not refused.applied
        if self.returns_refused_items:
            assert refused.item == keyed(key, v=1)
        assert table.write(Update(key, set={"v": 3}, when=both(exists("v"), le("v", 1)))).applied
        assert table.write(Update(key, set={"w": "x"}, when=either(lt("v", 0), gt("v", 2)))).applied
        assert table.write(Update(key, set={"w": "y"}, when=begins("w", "x"))).applied
        with pytest.raises(KeyError):
            table.write(Delete(key, when=eq("v", 9), refusal=KeyError("named")))
        assert table.get(key) == keyed(key, v=3, w="y")
        assert table.write(Delete(key, when=Between("v", 3, 4)), returning="old").item == keyed(
            key, v=3, w="y"
        )
        assert table.get(key) is None

    def test_an_update_sets_keeps_removes_adds_and_takes(self, table: Table) -> None:
        key = ItemKey(P, "u")
        first = Update(key, set={"a": 1}, keep={"c": "first"}, add={"n": 2, "s": frozenset("x")})
        assert table.write(first, returning="new").item == keyed(
            key, a=1, c="first", n=2, s=frozenset("x")
        )
        again = Update(key, keep={"c": "second"}, remove=("a",), add={"n": 3, "s": frozenset("y")})
        old = table.write(again, returning="old").item
        assert old == keyed(key, a=1, c="first", n=2, s=frozenset("x"))
        assert table.get(key) == keyed(key, c="first", n=5, s=frozenset("xy"))
        # A set emptied is no attribute.
        table.write(Update(key, take={"s": frozenset("xy")}))
        assert table.get(key) == keyed(key, c="first", n=5)
        # One attribute changed twice in one update is refused, whatever the store.
        with pytest.raises(StorageError, match="overlap"):
            table.write(Update(key, add={"s": frozenset("z")}, take={"s": frozenset("z")}))
        assert table.get(key) == keyed(key, c="first", n=5)

    def test_queries_order_page_and_bound_by_sort_key(self, table: Table) -> None:
        table.batch([keyed(ItemKey(P, sk)) for sk in ("a#1", "a#2", "a#2#t", "a#3", "b#1")])
        table.write(Put(keyed(ItemKey("other", "a#1"))))
        first = table.query(P, where=begins("sk", "a#"), descending=True, limit=2)
        assert _sks(first) == ["a#3", "a#2#t"] and first.cursor is not None
        rest = table.query(P, where=begins("sk", "a#"), descending=True, cursor=first.cursor)
        assert _sks(rest) == ["a#2", "a#1"] and rest.cursor is None
        assert _sks(table.query(P, where=Between("sk", "a#2", "a#3"))) == ["a#2", "a#2#t", "a#3"]
        assert _sks(table.query(P, where=lt("sk", "a#2"), consistent=True)) == ["a#1"]
        assert [str(i["sk"]) for i in every_item(table, P, limit=2)] == [
            "a#1",
            "a#2",
            "a#2#t",
            "a#3",
            "b#1",
        ]
        assert table.query("absent").items == []

    def test_filters_drop_after_the_limit_and_projections_keep_the_keys(self, table: Table) -> None:
        table.batch([keyed(ItemKey(P, f"k{i}"), v=i, big=b"x" * 10) for i in range(6)])
        page = table.query(P, limit=3, filter=gt("v", 0), attributes=("v",))
        # Three read, the first dropped by the filter.
        assert page.items == [keyed(ItemKey(P, f"k{i}"), v=i) for i in (1, 2)]
        keys = table.query(P, attributes=())
        assert keys.items[0] == keyed(ItemKey(P, "k0"))

    def test_a_transaction_writes_all_or_nothing(self, table: Table) -> None:
        if not self.transactions:
            pytest.skip("this backend serves no transactions")
        table.write(Put(keyed(ItemKey(P, "head"), h="1")))
        moved = Update(ItemKey(P, "head"), set={"h": "2"}, when=eq("h", "1"))
        table.transact([Put(keyed(ItemKey(P, "rec"))), moved, Delete(ItemKey(P, "absent"))])
        assert table.get(ItemKey(P, "head")) == keyed(ItemKey(P, "head"), h="2")

        def found(item: Any) -> Exception:
            return ConcurrentUpdateError(f"found {item['h']}")

        stale = Update(ItemKey(P, "head"), set={"h": "3"}, when=eq("h", "1"), refusal=found)
        with pytest.raises(ConcurrentUpdateError, match="found 2"):
            table.transact([Put(keyed(ItemKey(P, "rec2"))), stale])
        assert table.get(ItemKey(P, "rec2")) is None
        # A check changes nothing and holds the transaction to its condition.
        guard = Check(ItemKey(P, "head"), eq("h", "1"), refusal=KeyError("moved"))
        with pytest.raises(KeyError, match="moved"):
            table.transact([Put(keyed(ItemKey(P, "rec4"))), guard])
        table.transact([Put(keyed(ItemKey(P, "rec4"))), Check(ItemKey(P, "head"), eq("h", "2"))])
        assert table.get(ItemKey(P, "head")) == keyed(ItemKey(P, "head"), h="2")
        assert table.get(ItemKey(P, "rec4")) is not None
        with pytest.raises(ConcurrentUpdateError):  # a refusal that names no error
            table.transact([Put(keyed(ItemKey(P, "rec3"))), Delete(ItemKey(P, "x"), when=exists())])
        assert table.get(ItemKey(P, "rec3")) is None

    def test_batches_and_gets_beyond_one_request(self, table: Table) -> None:
        items = [keyed(ItemKey(P, f"{i:03}"), v=i) for i in range(130)]
        table.batch(items)  # six BatchWriteItem requests
        keys = [ItemKey(P, f"{i:03}") for i in range(130)]
        found = table.get_many([*keys, keys[0], ItemKey(P, "absent")])  # two BatchGetItem
        assert sorted(found, key=lambda i: str(i["sk"])) == items
        table.batch(deletes=[*keys, ItemKey(P, "absent")])
        assert table.query(P).items == []

    def test_an_item_over_400_kb_is_refused_and_nothing_is_written(self, table: Table) -> None:
        big = keyed(ItemKey(P, "big"), v="x" * (400 * 1024))
        # ItemTooLargeError, as the shipped adapters say it; a StorageError passes too.
        refused = (ItemTooLargeError, StorageError)
        with pytest.raises(refused):
            table.write(Put(big))
        # DynamoDB refuses the whole batch; moto stores the items before the large one.
        with pytest.raises(refused):
            table.batch([keyed(ItemKey(P, "small")), big])
        if self.transactions:
            with pytest.raises(refused):
                table.transact([Put(keyed(ItemKey(P, "small2"))), Put(big)])
        assert _sks(table.query(P)) in ([], ["small"])

    def test_segments_of_a_scan_hold_every_item_once(self, table: Table) -> None:
        table.batch([keyed(ItemKey(f"p{i}", "s"), v=i) for i in range(12)])
        whole = [i for page in scan_pages(table) for i in page]
        split = [
            i
            for seg in range(3)
            for page in scan_pages(table, segment=seg, segments=3)
            for i in page
        ]
        assert len(whole) == 12 and sorted(map(str, split)) == sorted(map(str, whole))
        kept = [i for page in scan_pages(table, filter=begins("pk", "p1")) for i in page]
        assert sorted(str(i["pk"]) for i in kept) == ["p1", "p10", "p11"]

    def test_secondary_indexes_find_items_by_their_keys(self, table: Table) -> None:
        table.batch(
            [
                keyed(ItemKey("t1", "ns#1"), rk="run-7"),
                keyed(ItemKey("t2", "ns#1"), rk="run-7"),
                keyed(ItemKey("t3", "ns#1"), rk="run-8"),
                keyed(ItemKey("a/t4!", "head#x"), ik="day-1"),
                keyed(ItemKey("b/t5!", "head#x"), ik="day-1"),
            ]
        )
        runs = every_item(table, "run-7", index=RUN_INDEX)
        assert sorted(str(i["pk"]) for i in runs) == ["t1", "t2"]
        idle = every_item(table, "day-1", index=IDLE_INDEX, where=begins("pk", "a/"))
        assert [(i["pk"], i["sk"]) for i in idle] == [("a/t4!", "head#x")]

    def test_a_missing_table_is_named_until_created(self, missing_table: Table) -> None:
        with pytest.raises(StoreMissingError):
            missing_table.query(P)
        assert missing_table.create_if_missing() is True
        assert missing_table.create_if_missing() is False
        assert missing_table.query(P).items == []


class ObjectStoreTests:
    """The object store (`ports.ObjectStore`): fixtures `objects` (an empty store that
    exists) and `missing_objects` (one whose bucket does not). A backend that creates a
    missing bucket on its first write (SeaweedFS) sets `refuses_missing_buckets = False`."""

    refuses_missing_buckets = True

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

    def test_a_write_to_a_missing_bucket_is_refused(self, missing_objects: Any) -> None:
        if not self.refuses_missing_buckets:
            pytest.skip("this backend creates a missing bucket on its first write")
        with pytest.raises(StoreMissingError):
            missing_objects.put_new("k", b"v")
        with pytest.raises(StoreMissingError):
            missing_objects.get("k")

    def test_a_bucket_says_where_it_lives_and_a_missing_one_nothing(
        self, objects: Any, missing_objects: Any
    ) -> None:
        found = objects.bucket_region()
        # Made where its client sends (S3 on moto); in memory and some servers name none.
        assert found is None or found.lives_in == found.configured != ""
        assert missing_objects.bucket_region() is None

    def test_a_missing_bucket_is_named_until_created(self, missing_objects: Any) -> None:
        with pytest.raises(StoreMissingError):
            missing_objects.probe("")
        assert missing_objects.create_if_missing() is True
        assert missing_objects.create_if_missing() is False
        assert missing_objects.put_new("k", b"v") is True and missing_objects.get("k") == b"v"


class KeyServiceTests:
    """The key service (`ports.KeyService`): fixture `keys`, on a master key of its own."""

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
