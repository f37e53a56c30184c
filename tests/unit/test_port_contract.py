"""The port contract (`testing.contract`, shipped for other backends) on the in-memory
table, bucket and key service; the AWS adapters run the same in
`tests/aws/test_port_contract.py`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryKms, MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable
from langgraph.checkpoint.s3dynamo.backends.table_index_memory import MemoryOnTable
from langgraph.checkpoint.s3dynamo.memory.rows import IndexItem
from langgraph.checkpoint.s3dynamo.table import ItemKey, Table
from langgraph.checkpoint.s3dynamo.testing.contract import (
    KeyServiceTests,
    ObjectStoreTests,
    TableTests,
)
from tests.support.port_contract import MemoryItemsContract, _row


class TestMemoryTable(TableTests):
    @pytest.fixture
    def table(self) -> MemoryTable:
        return MemoryTable()

    @pytest.fixture
    def missing_table(self) -> MemoryTable:
        return MemoryTable(exists=False)


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


class TestMemoryItems(MemoryItemsContract):
    @pytest.fixture
    def items(self) -> MemoryIndex:
        return MemoryIndex()


class _MemoryOnTable(MemoryOnTable):
    def __init__(self, table: Table) -> None:
        self.table = table


class TestMemoryOnTable(MemoryItemsContract):
    @pytest.fixture
    def items(self) -> MemoryOnTable:
        return _MemoryOnTable(MemoryTable())

    def test_each_method_sends_the_requests_the_budgets_count(self) -> None:
        table = MemoryTable()
        items = _MemoryOnTable(table)

        def sent(call: Callable[[], object]) -> dict[str, int]:
            before = table.calls.copy()
            call()
            return dict(table.calls - before)

        rows = [_row(self.pk, f"k{i:03}", b"v", expires_ms=i) for i in range(60)]
        assert sent(lambda: items.memory_put(rows, self.entry)) == {"TransactWriteItems": 1}
        assert sent(lambda: items.memory_put(rows[:3], None)) == {"UpdateItem": 3}
        keys = [r.key for r in rows] * 2 + [ItemKey(self.pk, f"x{i}") for i in range(50)]
        assert sent(lambda: items.memory_get(keys)) == {"BatchGetItem": 2}
        # The first live item is on the third page of 25.
        assert sent(lambda: items.memory_has_live(self.pk, 55)) == {"Query": 3}
        assert sent(lambda: items.memory_refresh(rows[0].key, 9, 1.0, 0)) == {"UpdateItem": 1}
        assert sent(lambda: items.directory_get(self.entry.key)) == {"GetItem": 1}
        assert sent(lambda: items.directory_renew(self.entry)) == {"UpdateItem": 1}
        tokens = [IndexItem(ItemKey(self.pk, f"~x{i:02}")) for i in range(30)]
        assert sent(lambda: items.index_write(puts=tokens)) == {"BatchWriteItem": 2}
        assert sent(lambda: items.index_write()) == {}
        assert sent(lambda: items.memory_delete(rows[0].key, expired_at_ms=0)) == {"DeleteItem": 1}
