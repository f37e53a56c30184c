"""The port contract (`tests/support/port_contract.py`) on the in-memory twins; the AWS
adapters run the same in `tests/aws/test_port_contract.py`."""

from __future__ import annotations

import pytest

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryKms, MemoryObjects
from tests.support.port_contract import (
    IndexContract,
    KeyServiceContract,
    MemoryItemsContract,
    ObjectStoreContract,
)


class TestMemoryIndex(IndexContract):
    @pytest.fixture
    def index(self) -> MemoryIndex:
        return MemoryIndex()

    @pytest.fixture
    def missing_index(self) -> MemoryIndex:
        return MemoryIndex(exists=False)


class TestMemoryObjects(ObjectStoreContract):
    @pytest.fixture
    def objects(self) -> MemoryObjects:
        return MemoryObjects()

    @pytest.fixture
    def missing_objects(self) -> MemoryObjects:
        return MemoryObjects(exists=False)


class TestMemoryKms(KeyServiceContract):
    @pytest.fixture
    def keys(self) -> MemoryKms:
        return MemoryKms()


class TestMemoryItems(MemoryItemsContract):
    @pytest.fixture
    def items(self) -> MemoryIndex:
        return MemoryIndex()
