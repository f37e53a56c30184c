"""The `MemoryItems` port (`ports.py`) once, on the generic table (`table.py`), whatever
stores it: each method builds its items and conditions with `memory/rows.py` and
`memory/format.py` and sends them as the requests the Store's budgets count
(docs/ARCHITECTURE.md, "Request budgets"). A put is one UpdateItem per item in one wave,
or, with the namespace's directory entry, one TransactWriteItems of the items, the entry
and the descendants marks. It stands in for the port's former adapters until their
callers use the formats and the table directly."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.s3dynamo.memory import format
from langgraph.checkpoint.s3dynamo.memory.rows import (
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    entry_from,
    index_from,
    index_item,
    row_from,
)
from langgraph.checkpoint.s3dynamo.table import (
    ItemKey,
    Table,
    Write,
    every_item,
    every_page,
)
from langgraph.checkpoint.s3dynamo.waves import parallel


class MemoryOnTable:
    """The `MemoryItems` port on `table` (set by the class it is part of)."""

    table: Table

    # ------------------------------------------------------------------ writes

    def memory_put(
        self,
        rows: Sequence[MemoryRow],
        entry: DirectoryEntry | None,
        marks: Sequence[ItemKey] = (),
    ) -> list[MemoryRow | None]:
        if entry is None:
            return parallel(self._put_alone, rows)
        self._renew_with([format.put_row(r) for r in rows], entry, marks)
        return [None] * len(rows)

    def _put_alone(self, row: MemoryRow) -> MemoryRow | None:
        # The item it replaced comes back at no cost (DynamoDB bills no ReturnValues).
        old = self.table.write(format.put_row(row), returning="old").item
        return None if old is None else row_from(old)

    def directory_renew(self, entry: DirectoryEntry, marks: Sequence[ItemKey] = ()) -> None:
        if marks:
            self._renew_with([], entry, marks)
        else:
            self.table.write(format.renew(entry))

    def _renew_with(
        self, writes: list[Write], entry: DirectoryEntry, marks: Sequence[ItemKey]
    ) -> None:
        self.table.transact(
            [*writes, format.renew(entry), *(format.descendants_mark(k) for k in marks)]
        )

    def memory_delete(self, key: ItemKey, expired_at_ms: int | None = None) -> MemoryRow | None:
        old = self.table.write(format.delete_row(key, expired_at_ms), returning="old").item
        return None if old is None else row_from(old)

    def memory_touch(self, key: ItemKey, expires_ms: int) -> None:
        # Refused: the item went meanwhile, nothing to push out.
        self.table.write(format.touch(key, expires_ms))

    def memory_refresh(
        self, key: ItemKey, expires_ms: int, ttl_minutes: float, now_ms: int
    ) -> tuple[MemoryRow | None, bool]:
        written = self.table.write(
            format.refresh(key, expires_ms, ttl_minutes, now_ms),
            returning="new",
            found_on_refusal=True,
        )
        return (None if written.item is None else row_from(written.item)), written.applied

    def directory_bound(self, key: ItemKey, live_until_ms: int | None) -> None:
        # Refused: the entry went meanwhile, nothing to bound.
        self.table.write(format.bound(key, live_until_ms))

    def directory_drop(self, entry: DirectoryEntry) -> bool:
        return self.table.write(format.drop_entry(entry)).applied

    def directory_mark(self, entry: DirectoryEntry, emptied: bool) -> bool:
        return self.table.write(format.mark_entry(entry, emptied)).applied

    def memory_reseal(self, key: ItemKey, old: bytes, new: bytes) -> bool:
        return self.table.write(format.reseal(key, old, new)).applied

    def index_write(self, puts: Sequence[IndexItem] = (), deletes: Sequence[ItemKey] = ()) -> None:
        if puts or deletes:
            self.table.batch([index_item(i) for i in puts], deletes)

    def manifest_put(self, item: IndexItem, expected: str | None) -> bool:
        return self.table.write(format.manifest_put(item, expected)).applied

    # ------------------------------------------------------------------ reads

    def memory_get(self, keys: Sequence[ItemKey], consistent: bool = False) -> list[MemoryRow]:
        return [row_from(i) for i in self.table.get_many(keys, consistent=consistent)]

    def memory_query(
        self, pk: str, limit: int | None = None, consistent: bool = False
    ) -> list[MemoryRow]:
        if limit is not None:
            page = self.table.query(pk, where=format.ITEMS, limit=limit, consistent=consistent)
            return [row_from(i) for i in page.items]
        items = every_item(self.table, pk, where=format.ITEMS, consistent=consistent)
        return [row_from(i) for i in items]

    def memory_search(self, pk: str, consistent: bool = False) -> tuple[list[MemoryRow], bool]:
        items = every_item(self.table, pk, where=format.ITEMS_AND_MARK, consistent=consistent)
        marked = any(format.is_descendants_mark(i) for i in items)
        return [row_from(i) for i in items if not format.is_descendants_mark(i)], marked

    def memory_has_live(self, pk: str, now_ms: int) -> bool:
        # Page after page only until one holds a live item.
        pages = every_page(
            self.table,
            pk,
            where=format.ITEMS,
            consistent=True,
            limit=format.LIVE_PAGE,
            filter=format.live(now_ms),
        )
        return any(pages)

    def directory_get(self, key: ItemKey, consistent: bool = True) -> DirectoryEntry | None:
        item = self.table.get(key, consistent=consistent)
        return None if item is None else entry_from(item)

    def directory(self, pk: str, consistent: bool = False) -> list[DirectoryEntry]:
        return [entry_from(i) for i in every_item(self.table, pk, consistent=consistent)]

    def index_query(
        self,
        pk: str,
        bounds: tuple[str, str],
        *,
        descending: bool = False,
        limit: int | None = None,
        after: str | None = None,
        consistent: bool = False,
    ) -> list[IndexItem]:
        where = format.within(bounds)
        cursor = None if after is None else format.start_after(pk, after)
        if limit is not None:
            page = self.table.query(
                pk,
                where=where,
                descending=descending,
                limit=limit,
                cursor=cursor,
                consistent=consistent,
            )
            return [index_from(i) for i in page.items]
        items = every_item(
            self.table,
            pk,
            where=where,
            descending=descending,
            cursor=cursor,
            consistent=consistent,
        )
        return [index_from(i) for i in items]
