"""LangGraph's own conformance suite, run against the saver on moto."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from tests.support.savers import make_saver

# With catalog fields declared, every put of the suite files its thread in the thread
# catalog (the suite's own filter keys included), and every delete removes it.
CATALOGS = [(), ("langgraph", "source", "step", "score")]


@pytest.mark.parametrize("catalog_fields", CATALOGS, ids=["", "catalog"])
def test_conformance_suite(clients: tuple[Any, Any], catalog_fields: tuple[str, ...]) -> None:
    async def factory() -> AsyncIterator[S3DynamoSaver]:
        saver = make_saver(clients, catalog_fields=catalog_fields)
        saver.setup()
        yield saver

    registered = checkpointer_test(name="S3DynamoSaver")(factory)
    report = asyncio.run(validate(registered, progress=ProgressCallbacks.verbose()))
    report.print_report()
    failing = {name: r.failures for name, r in report.results.items() if r.passed is False}
    assert not failing, failing
    detected = {name for name, r in report.results.items() if r.detected}
    assert {"put", "put_writes", "get_tuple", "list", "delete_thread"} <= detected
