"""The in-memory table with its reads sized as DynamoDB bills them, for tests and
benchmarks that count read units beside requests: a GetItem or each item of a
BatchGetItem by its own size, rounded up to 4 KB; a Query or Scan page by the items it
read, summed, then rounded up once; half for an eventually consistent read. Exact where
a read returns whole items (no projection, no filter), as the catalog's and the
listings' reads do."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable
from langgraph.checkpoint.s3dynamo.table import Item, ItemKey, Page, item_size

# A run of name characters as long as a name: `load_renamed` looks each up.
NAME = re.compile(r"[A-Za-z0-9_-]{22}")


class SizedTable(MemoryTable):
    """The in-memory table, with each read's read units computed from the items it
    returns (module docstring)."""

    def __init__(self, *, exists: bool = True) -> None:
        super().__init__(exists=exists)
        self.rru = 0.0
        self.read_bytes = 0

    def _read(self, sizes: list[int], per_item: bool, consistent: bool) -> None:
        self.read_bytes += sum(sizes)
        per_4k = 1.0 if consistent else 0.5  # a strongly consistent read costs twice
        if per_item:  # BatchGetItem: each item as a GetItem
            self.rru += sum(max(1, math.ceil(s / 4096)) * per_4k for s in sizes)
        else:  # a Query or Scan: its page's items added up, then rounded once
            self.rru += max(1, math.ceil(sum(sizes) / 4096)) * per_4k

    def get(self, key: ItemKey, *, consistent: bool = True) -> Item | None:
        found = super().get(key, consistent=consistent)
        self._read([item_size(found)] if found is not None else [], True, consistent)
        return found

    def get_many(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> list[Item]:
        found = super().get_many(keys, consistent=consistent)
        self._read([item_size(i) for i in found], True, consistent)
        return found

    def query(self, partition: str, **query: Any) -> Page:
        page = super().query(partition, **query)
        self._read([item_size(i) for i in page.items], False, bool(query.get("consistent")))
        return page

    def scan(self, **scan: Any) -> Page:
        page = super().scan(**scan)
        self._read([item_size(i) for i in page.items], False, False)
        return page

    def snapshot(self) -> tuple[float, int, int]:
        return self.rru, self.read_bytes, sum(self.calls.values())

    def since(self, start: tuple[float, int, int] | None) -> dict[str, float]:
        """Read units, bytes read and requests since a `snapshot`."""
        rru, read, calls = start or (0.0, 0, 0)
        return {
            "units": self.rru - rru,
            "read_bytes": self.read_bytes - read,
            "requests": sum(self.calls.values()) - calls,
        }

    def partition_size(self, pk: str) -> int:
        """How many items one partition holds (no request counted)."""
        with self._lock:
            return len(self._partitions.get(pk, {}))

    def load_renamed(self, items: Sequence[Mapping[str, Any]], renames: Mapping[str, str]) -> None:
        """Store copies of `items` with each name (`naming.py`'s 22 characters: a thread's,
        a token's) that `renames` maps replaced in their keys, no request counted: more
        partitions like these, as other users' would be."""

        def renamed(text: str) -> str:
            return NAME.sub(lambda m: renames.get(m.group(), m.group()), text)

        with self._lock:  # their values are shared, not copied: nothing changes one in place
            for item in items:
                pk, sk = renamed(str(item["pk"])), renamed(str(item["sk"]))
                self._partitions.setdefault(pk, {})[sk] = {**item, "pk": pk, "sk": sk}
