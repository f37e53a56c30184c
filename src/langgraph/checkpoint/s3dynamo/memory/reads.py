"""What long-term memory reads of the table, and nothing else: items by key, a namespace's
partition (its items, its descendants mark, its search indexes), whether an item of it
is live, and a space's directory. Each read is a protocol (`blobs/steps.py`) of one
request, or of requests of one kind (pages, batches of keys), counted by the Store's
budgets (docs/ARCHITECTURE.md, "Request budgets"); what to read is `format.py`'s
(ranges, conditions), how to parse it `rows.py`'s. Eventually consistent unless
`consistent` says otherwise, as DynamoDB reads are.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.s3dynamo.blobs.steps import Get, GetMany, Query, Steps, every_item
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.rows import (
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    entry_from,
    index_from,
    row_from,
)
from langgraph.checkpoint.s3dynamo.table import Item, ItemKey, key_of


def items_at(keys: Sequence[ItemKey], *, consistent: bool = False) -> Steps[list[MemoryRow]]:
    """The items found among `keys`: one BatchGetItem per 100, in one wave."""
    found: list[Item] = yield GetMany(keys, consistent=consistent)
    return [row_from(i) for i in found]


def items(pk: str, *, limit: int | None = None, consistent: bool = False) -> Steps[list[MemoryRow]]:
    """The items of a namespace's partition (neither its descendants mark nor its search
    indexes), page after page; with `limit`, one page of at most that many."""
    if limit is None:
        found = yield from every_item(pk, where=format.ITEMS, consistent=consistent)
    else:
        found = (yield Query(pk, where=format.ITEMS, limit=limit, consistent=consistent)).items
    return [row_from(i) for i in found]


def items_and_mark(pk: str, *, consistent: bool = False) -> Steps[tuple[list[MemoryRow], bool]]:
    """The items of a namespace's partition and whether it holds the descendants mark,
    in one Query (paged)."""
    found = yield from every_item(pk, where=format.ITEMS_AND_MARK, consistent=consistent)
    rows = [row_from(i) for i in found if not format.is_descendants_mark(i)]
    return rows, len(rows) < len(found)


def partition(
    pk: str, *, consistent: bool = False
) -> Steps[tuple[list[MemoryRow], bool, list[IndexItem]]]:
    """Everything a namespace's partition holds, in one Query (paged): its items, whether
    it holds the descendants mark, and its search index items."""
    found = yield from every_item(pk, consistent=consistent)
    rows = [row_from(i) for i in found if format.is_item(i)]
    marked = any(format.is_descendants_mark(i) for i in found)
    indexes = [
        index_from(i) for i in found if not format.is_item(i) and not format.is_descendants_mark(i)
    ]
    return rows, marked, indexes


def has_live(pk: str, now_ms: int) -> Steps[bool]:
    """Whether a namespace's partition holds an item unexpired at `now_ms`, read
    consistently, a page at a time until one is found."""
    cursor: Item | None = None
    while True:
        page = yield Query(
            pk,
            where=format.ITEMS,
            consistent=True,
            limit=format.LIVE_PAGE,
            filter=format.live(now_ms),
            cursor=cursor,
        )
        if page.items or page.cursor is None:
            return bool(page.items)
        cursor = page.cursor


def index_items(
    pk: str,
    bounds: tuple[str, str],
    *,
    descending: bool = False,
    limit: int | None = None,
    after: str | None = None,
    consistent: bool = False,
) -> Steps[list[IndexItem]]:
    """The search index items of a partition whose sort keys lie within `bounds` (both
    included), in sort-key order (`descending`: the other way), strictly after the sort
    key `after` in that order; with `limit`, at most that many in one request, else
    page after page."""
    where, cursor = format.within(bounds), None if after is None else format.start_after(pk, after)
    found: list[Item] = []
    while True:
        page = yield Query(
            pk,
            where=where,
            descending=descending,
            limit=limit,
            cursor=cursor,
            consistent=consistent,
        )
        found += page.items
        if limit is not None or page.cursor is None:
            break
        cursor = page.cursor
    return [index_from(i) for i in found]


def entry(key: ItemKey, *, consistent: bool = True) -> Steps[DirectoryEntry | None]:
    """One directory entry, or None: one GetItem."""
    item: Item | None = yield Get(key, consistent=consistent)
    return None if item is None else entry_from(item)


def entry_and_items(
    key: ItemKey, items: Sequence[ItemKey]
) -> Steps[tuple[DirectoryEntry | None, dict[ItemKey, MemoryRow]]]:
    """One directory entry (or None) and those of `items` found, read consistently: one
    BatchGetItem per 100 keys, in one wave."""
    found: list[Item] = yield GetMany([key, *items], consistent=True)
    entry = next((entry_from(i) for i in found if key_of(i) == key), None)
    return entry, {r.key: r for r in (row_from(i) for i in found if key_of(i) != key)}


def entries(pk: str, *, consistent: bool = False) -> Steps[list[DirectoryEntry]]:
    """Every entry of a space's directory (partition `pk`), page after page."""
    found = yield from every_item(pk, consistent=consistent)
    return [entry_from(i) for i in found]
