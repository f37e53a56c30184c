"""The port contract (`testing.contract`, shipped for other backends) on the in-memory
table, bucket and key service, and the memory format's on the in-memory table; the AWS
adapters run the same in `tests/aws/test_port_contract.py`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryKms, MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable
from langgraph.checkpoint.s3dynamo.blobs.steps import Apply
from langgraph.checkpoint.s3dynamo.blobs.steps import Batch as BatchStep
from langgraph.checkpoint.s3dynamo.errors import StorageError
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.rows import (
    Batch,
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    index_item,
)
from langgraph.checkpoint.s3dynamo.table import ItemKey, Put, keyed
from langgraph.checkpoint.s3dynamo.testing.contract import (
    KeyServiceTests,
    ObjectStoreTests,
    TableTests,
)
from tests.support.port_contract import MemoryFormatContract, Reads, _row, memory_engine


class TestMemoryTable(TableTests):
    @pytest.fixture
    def table(self) -> MemoryTable:
        return MemoryTable()

    @pytest.fixture
    def missing_table(self) -> MemoryTable:
        return MemoryTable(exists=False)

    def test_a_transaction_over_4_mb_is_refused_and_nothing_is_written(
        self, table: MemoryTable
    ) -> None:
        """As DynamoDB refuses it (moto stores it, so the shipped contract cannot ask)."""
        puts = [Put(keyed(ItemKey("p", f"s{i}"), v="x" * 390_000)) for i in range(11)]
        with pytest.raises(StorageError, match="exceed 4 MB"):
            table.transact(puts)
        assert table.query("p").items == []
        table.transact(puts[:10])


class TestMemoryObjects(ObjectStoreTests):
    @pytest.fixture
    def objects(self) -> MemoryObjects:
        return MemoryObjects()

    @pytest.fixture
    def missing_objects(self) -> MemoryObjects:
        return MemoryObjects(exists=False)


class TestMemoryKms(KeyServiceTests):
    @pytest.fixture
    def keys(self) -> MemoryKms:
        return MemoryKms()


class TestMemoryFormat(MemoryFormatContract):
    @pytest.fixture
    def table(self) -> MemoryTable:
        return MemoryTable()

    def test_each_read_and_plan_sends_the_requests_the_budgets_count(self) -> None:
        table = MemoryTable()
        engine = memory_engine(table)
        reads = Reads(engine)

        def sent(call: Callable[[], object]) -> dict[str, int]:
            before = table.calls.copy()
            call()
            return dict(table.calls - before)

        def put(rows: list[MemoryRow], entry: DirectoryEntry | None = None) -> None:
            for plan in format.put(Batch(("n",), self.pk, rows), entry=entry):
                engine.do(plan)

        rows = [_row(self.pk, f"k{i:03}", b"v", expires_ms=i) for i in range(60)]
        assert sent(lambda: put(rows, self.entry)) == {"TransactWriteItems": 1}
        assert sent(lambda: put(rows[:3])) == {"UpdateItem": 3}
        keys = [r.key for r in rows] * 2 + [ItemKey(self.pk, f"x{i}") for i in range(50)]
        assert sent(lambda: reads.items_at(keys)) == {"BatchGetItem": 2}
        # The first live item is on the third page of 25.
        assert sent(lambda: reads.has_live(self.pk, 55)) == {"Query": 3}
        refresh = format.refresh(rows[0].key, 9, 1.0, 0, b"stamp")
        assert sent(lambda: engine.do(Apply(refresh, returning="new"))) == {"UpdateItem": 1}
        assert sent(lambda: reads.entry(self.entry.key)) == {"GetItem": 1}
        assert sent(lambda: engine.do(format.renewal(self.entry))) == {"UpdateItem": 1}
        tokens = [index_item(IndexItem(ItemKey(self.pk, f"~x{i:02}"))) for i in range(30)]
        assert sent(lambda: engine.do(BatchStep(puts=tokens))) == {"BatchWriteItem": 2}
        assert sent(lambda: engine.do(BatchStep())) == {}
        delete = format.delete_row(rows[0].key, expired_at_ms=0)
        assert sent(lambda: engine.do(Apply(delete))) == {"DeleteItem": 1}
        assert sent(lambda: reads.index_items(self.pk, ("~x", "~y"), limit=5)) == {"Query": 1}
