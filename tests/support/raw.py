"""What a saver's table holds, read and written the way someone with access to the table
(and no keys) would: for tests that forge, remove or inspect stored items. Nothing here
goes through the saver's own write path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.checkpoint.s3dynamo.format.layout import (
    TOMBSTONE_MARK,
    catalog_pk,
    control_pk,
    head_namespace,
    loans_prefix,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    HEAD as HEAD_ATTR,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    ItemKey,
    Loan,
    Mark,
    Record,
    loan_from,
    record_item,
)
from langgraph.checkpoint.s3dynamo.table import Item, Table, begins, every_item, key_of


def table(saver: Any) -> Table:
    """The table a saver stores in."""
    return saver.parts.engine.ports.table  # type: ignore[no-any-return]


def put_records(saver: Any, records: Iterable[Record | Mark]) -> None:
    """Write records as items, whole and unconditionally."""
    table(saver).batch([record_item(r) for r in records])


def loans(saver: Any, tid: str) -> list[Loan]:
    """The loans of a thread's objects to its copies."""
    name = saver.parts.namer.thread(tid)
    where = begins("sk", loans_prefix(None))
    return [loan_from(i) for i in every_item(table(saver), control_pk(name), where=where)]


def partition(saver: Any, pk: str) -> list[dict[str, Any]]:
    """Every item of a partition (a Store namespace's, a thread's), as stored."""
    return every_item(table(saver), pk, consistent=True)


def put_items(saver: Any, items: Iterable[dict[str, Any]]) -> None:
    """Write items whole and unconditionally, as someone with write access would."""
    table(saver).batch(list(items))


def set_attributes(saver: Any, key: ItemKey, **attributes: Any) -> None:
    """Set (a value) or remove (None) attributes of one item, in place."""
    item = table(saver).get(key)
    assert item is not None, f"no item {key}"
    for name, value in attributes.items():
        if value is None:
            item.pop(name, None)
        else:
            item[name] = value
    table(saver).batch([item])


def catalog_items(saver: Any, token: str) -> list[Item]:
    """Every entry of one partition of the thread catalog (a value's, or every thread's)."""
    return every_item(table(saver), catalog_pk(saver.parts.engine.prefix, token))


def control_keys(saver: Any, thread_name: str) -> list[ItemKey]:
    """Keys of every control item of a thread named as stored."""
    return [key_of(i) for i in every_item(table(saver), control_pk(thread_name))]


def left_after_delete(saver: Any, thread_name: str) -> list[ItemKey]:
    """A thread's control items other than the tombstones a delete leaves on its heads
    (they stay, so that a run that loaded the thread before cannot write it back)."""
    return [
        key_of(i)
        for i in every_item(table(saver), control_pk(thread_name))
        if head_namespace(i["sk"]) is None
        or not str(i.get(HEAD_ATTR, "")).startswith(TOMBSTONE_MARK)
    ]


# A thread's partition, its namespace's head and its lease, as tests of single records
# name them.
PK, HEAD, LEASE = "p", ItemKey("p!", "head#ns"), ItemKey("p!", "lease")


def checkpoint_record(
    cid: str, body: bytes | None = None, sk: str = "", **fields: Any
) -> CheckpointRecord:
    """A checkpoint record of namespace `ns` in partition `PK`, its blobs placeholders."""
    body = body or b"body-" + cid.encode()
    return CheckpointRecord(PK, sk or f"ns#{cid}", body, b"m", b"t", **fields)
