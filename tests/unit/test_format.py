"""The storage format: the deployment record says which one wrote it; a newer one than
this version reads is named before anything is read or written; a record from before the
field counts as format 1; and a prefixed deployment written by 0.1 (its prefix on object
keys only, its records at the table root) is named, never shown as an empty thread."""

from __future__ import annotations

import os
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import DeploymentMismatchError
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.format.layout import (
    DEPLOYMENT_RECORD,
    STORAGE_FORMAT,
    deployment_pk,
)
from langgraph.checkpoint.s3dynamo.format.records import LOAN_LEAVES, ControlRecord, control_item
from langgraph.checkpoint.s3dynamo.table import Update
from tests.support.memory_index import MemoryIndex
from tests.support.savers import memory_saver

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _record(index: MemoryIndex, prefix: str = "") -> ControlRecord:
    return index.control[deployment_pk(prefix)][DEPLOYMENT_RECORD]


def _store(index: MemoryIndex, record: ControlRecord, prefix: str = "") -> None:
    """Replace the deployment record as stored (what another release would write)."""
    index.load([control_item(deployment_pk(prefix), record)])


def test_the_deployment_record_names_its_format_and_a_newer_one_is_refused() -> None:
    saver = memory_saver()
    assert _record(saver.index).fields["format"] == "1"  # until a copy shares objects
    saver.put(CONFIG, empty_checkpoint(), {}, {})
    newer = _record(saver.index)
    newer.fields["format"] = str(STORAGE_FORMAT + 1)
    _store(saver.index, newer)
    with pytest.raises(DeploymentMismatchError, match=f"storage format {STORAGE_FORMAT + 1}"):
        memory_saver(  # its setup() checks the deployment, as a first read would
            saver.index, saver.objects, keys=saver.settings.keys, secret=saver.settings.secret
        )


def test_a_copy_that_shares_objects_records_format_2_first() -> None:
    saver = memory_saver(inline_max=0)  # every value an object: the copy shares them
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"doc": os.urandom(100)}
    checkpoint["channel_versions"] = {"doc": "1"}
    saver.put(CONFIG, checkpoint, {}, {"doc": "1"})
    record = _record(saver.index)
    assert record.fields["format"] == "1"
    # Written before the first loan: an older release refuses the deployment from then on.
    seen: list[str] = []
    table = saver.index
    transact = table.transact

    def noting_the_format_at_each_loan(changes: Any) -> Any:
        if any(isinstance(c, Update) and LOAN_LEAVES in c.add for c in changes):
            seen.append(str(_record(saver.index).fields["format"]))
        return transact(changes)

    table.transact = noting_the_format_at_each_loan  # type: ignore[method-assign]
    saver.copy_thread("t", "copy")
    assert seen == [str(STORAGE_FORMAT)] == ["2"]
    # Its keys and naming are as they were.
    assert {k: v for k, v in _record(saver.index).fields.items() if k != "format"} == {
        k: v for k, v in record.fields.items() if k != "format"
    }
    # A second copy writes the record no more.
    version = _record(saver.index).version
    saver.copy_thread("t", "again")
    assert _record(saver.index).version == version


def test_a_record_without_the_field_is_format_1() -> None:
    saver = memory_saver()
    saver.put(CONFIG, empty_checkpoint(), {}, {})
    record = _record(saver.index)
    del record.fields["format"]
    _store(saver.index, record)
    again = memory_saver(
        saver.index, saver.objects, keys=saver.settings.keys, secret=saver.settings.secret
    )
    assert again.get_tuple(CONFIG) is not None
    assert again.get_tuple({"configurable": {"thread_id": "unknown"}}) is None


def test_a_prefixed_deployment_written_by_0_1_is_named() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    memory_saver(index, objects, keys=keys, secret=secret)  # records at the table root
    with pytest.raises(DeploymentMismatchError, match=r"written by version 0\.1"):
        memory_saver(index, objects, keys=keys, secret=secret, prefix="tenant-a/")
    # A tenant with keys of its own is a new deployment beside it.
    tenant = memory_saver(index, objects, prefix="tenant-a/")
    tenant.put(CONFIG, empty_checkpoint(), {}, {})
    assert tenant.get_tuple(CONFIG) is not None
