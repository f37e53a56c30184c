"""The unit tier: the saver on the in-memory ports, no moto, no network (the `aws` half
of `backend` tests runs with the AWS tier, `tests/conftest.py`)."""

from __future__ import annotations

import pytest

from tests.support.savers import MemorySaver, memory_saver


@pytest.fixture
def saver() -> MemorySaver:
    return memory_saver()
