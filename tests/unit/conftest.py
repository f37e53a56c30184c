"""The unit tier: the saver on the in-memory ports, no moto, no network."""

from __future__ import annotations

import pytest

from tests.support.savers import MemorySaver, memory_saver


@pytest.fixture
def saver() -> MemorySaver:
    return memory_saver()
