"""What long-term memory reads of the table, and nothing else: items by key, a namespace's
partition (its items, its descendants mark, its search indexes), whether an item of it
is live, and a space's directory. Each read is one request, or requests of one kind
(pages, batches of keys), counted by the Store's budgets (docs/ARCHITECTURE.md, "Request
budgets"); what to read is `format.py`'s (ranges, conditions), how to parse it
`rows.py`'s. Every write goes through the blob engine instead, as `format.py` builds it.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.s3dynamo.blobs import LazyPorts
from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.rows import (
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    entry_from,
    index_from,
    row_from,
)
from langgraph.checkpoint.s3dynamo.table import ItemKey, Table, every_item, every_page


class Reads:
    """The reads of memory's items, on the table of `ports` (built on first use).
    Eventually consistent unless `consistent` says otherwise, as DynamoDB reads are."""

    def __init__(self, ports: LazyPorts) -> None:
        self._ports = ports

    @property
    def table(self) -> Table:
        return self._ports.table

    def items_at(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> list[MemoryRow]:
        """The items found among `keys`: one BatchGetItem per 100, in one wave."""
        return [row_from(i) for i in self.table.get_many(keys, consistent=consistent)]

    def items(
        self, pk: str, *, limit: int | None = None, consistent: bool = False
    ) -> list[MemoryRow]:
        """The items of a namespace's partition (neither its descendants mark nor its
        search indexes), page after page; with `limit`, one page of at most that many."""
        if limit is None:
            found = every_item(self.table, pk, where=format.ITEMS, consistent=consistent)
        else:
            query = self.table.query(pk, where=format.ITEMS, limit=limit, consistent=consistent)
            found = query.items
        return [row_from(i) for i in found]

    def items_and_mark(self, pk: str, *, consistent: bool = False) -> tuple[list[MemoryRow], bool]:
        """The items of a namespace's partition and whether it holds the descendants
        mark, in one Query (paged)."""
        found = every_item(self.table, pk, where=format.ITEMS_AND_MARK, consistent=consistent)
        rows = [row_from(i) for i in found if not format.is_descendants_mark(i)]
        return rows, len(rows) < len(found)

    def has_live(self, pk: str, now_ms: int) -> bool:
        """Whether a namespace's partition holds an item unexpired at `now_ms`, read
        consistently, a page at a time until one is found."""
        pages = every_page(
            self.table,
            pk,
            where=format.ITEMS,
            consistent=True,
            limit=format.LIVE_PAGE,
            filter=format.live(now_ms),
        )
        return any(pages)

    def index_items(
        self,
        pk: str,
        bounds: tuple[str, str],
        *,
        descending: bool = False,
        limit: int | None = None,
        after: str | None = None,
        consistent: bool = False,
    ) -> list[IndexItem]:
        """The search index items of a partition whose sort keys lie within `bounds`
        (both included), in sort-key order (`descending`: the other way), strictly after
        the sort key `after` in that order; with `limit`, at most that many in one
        request, else page after page."""
        where = format.within(bounds)
        cursor = None if after is None else format.start_after(pk, after)
        if limit is None:
            found = every_item(
                self.table,
                pk,
                where=where,
                descending=descending,
                cursor=cursor,
                consistent=consistent,
            )
        else:
            query = self.table.query(
                pk,
                where=where,
                descending=descending,
                limit=limit,
                cursor=cursor,
                consistent=consistent,
            )
            found = query.items
        return [index_from(i) for i in found]

    def entry(self, key: ItemKey, *, consistent: bool = True) -> DirectoryEntry | None:
        """One directory entry, or None: one GetItem."""
        item = self.table.get(key, consistent=consistent)
        return None if item is None else entry_from(item)

    def entries(self, pk: str, *, consistent: bool = False) -> list[DirectoryEntry]:
        """Every entry of a space's directory (partition `pk`), page after page."""
        return [entry_from(i) for i in every_item(self.table, pk, consistent=consistent)]
