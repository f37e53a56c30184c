"""pytest settings for the unpacked suite: its async tests run on anyio's pytest plugin
(which this project's test environment has) instead of pytest-asyncio."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
