"""The `MemoryItems` port in memory: the Store's items and the node cache's entries, their
namespace directories and the Store's search indexes, with DynamoDB's conditions (mixed
into `MemoryIndex`, `backends/memory.py`). Reads are always current: the twin has no
replicas to lag."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Sequence

from langgraph.checkpoint.s3dynamo.layout import DESCENDANTS_SK
from langgraph.checkpoint.s3dynamo.records import DirectoryEntry, IndexItem, ItemKey, MemoryRow

# Items evaluated per page of a liveness check, as on DynamoDB.
LIVE_PAGE = 25


def _expired(row: MemoryRow, at_ms: int) -> bool:
    return row.expires_ms is not None and row.expires_ms <= at_ms


class MemoryItemsTwin:
    """The `MemoryItems` port in memory (mixed into `MemoryIndex`)."""

    _lock: threading.Lock
    _memory: dict[str, dict[str, MemoryRow]]
    _directory: dict[str, dict[str, DirectoryEntry]]
    _descendants: set[str]  # partitions holding the descendants mark
    _indexes: dict[str, dict[str, IndexItem]]  # search indexes, by partition and sort key
    _count: Callable[[str], None]  # the host's request counter

    def memory_put(
        self,
        rows: Sequence[MemoryRow],
        entry: DirectoryEntry | None,
        marks: Sequence[ItemKey] = (),
    ) -> builtins.list[MemoryRow | None]:
        with self._lock:
            if entry is None:
                for _row in rows:
                    self._count("memory_update")
            else:
                self._count("memory_put")
            replaced: builtins.list[MemoryRow | None] = []
            for row in rows:
                partition = self._memory.setdefault(row.key.pk, {})
                old = partition.get(row.key.sk)
                partition[row.key.sk] = row._replace(
                    created_ms=old.created_ms if old else row.created_ms
                )
                replaced.append(old if entry is None else None)
            if entry is not None:
                self._renew(entry, marks)
            return replaced

    def directory_renew(self, entry: DirectoryEntry, marks: Sequence[ItemKey] = ()) -> None:
        with self._lock:
            self._count("directory_renew")
            self._renew(entry, marks)

    def _renew(self, entry: DirectoryEntry, marks: Sequence[ItemKey]) -> None:
        self._descendants.update(k.pk for k in marks)
        entries = self._directory.setdefault(entry.key.pk, {})
        known = entries.get(entry.key.sk)
        bound = entry.live_until_ms
        if bound is None and known is not None:
            bound = known.live_until_ms
        entries[entry.key.sk] = entry._replace(
            blob=known.blob if known else entry.blob, emptied=False, live_until_ms=bound
        )

    def memory_get(
        self, keys: Sequence[ItemKey], consistent: bool = False
    ) -> builtins.list[MemoryRow]:
        with self._lock:
            self._count("memory_get")
            found = (self._memory.get(k.pk, {}).get(k.sk) for k in dict.fromkeys(keys))
            return [row for row in found if row is not None]

    def memory_query(
        self, pk: str, limit: int | None = None, consistent: bool = False
    ) -> builtins.list[MemoryRow]:
        with self._lock:
            self._count("query")
            partition = self._memory.get(pk, {})
            return [partition[sk] for sk in sorted(partition)][:limit]

    def memory_search(
        self, pk: str, consistent: bool = False
    ) -> tuple[builtins.list[MemoryRow], bool]:
        with self._lock:
            self._count("query")
            partition = self._memory.get(pk, {})
            return [partition[sk] for sk in sorted(partition)], pk in self._descendants

    def memory_has_live(self, pk: str, now_ms: int) -> bool:
        with self._lock:
            rows = [r for _, r in sorted(self._memory.get(pk, {}).items())]
            for start in range(0, max(len(rows), 1), LIVE_PAGE):
                self._count("query")
                if any(not _expired(r, now_ms) for r in rows[start : start + LIVE_PAGE]):
                    return True
            return False

    def memory_delete(self, key: ItemKey, expired_at_ms: int | None = None) -> MemoryRow | None:
        with self._lock:
            self._count("memory_delete")
            partition = self._memory.get(key.pk, {})
            row = partition.get(key.sk)
            if row is None or (expired_at_ms is not None and not _expired(row, expired_at_ms)):
                return None
            return partition.pop(key.sk)

    def directory_get(self, key: ItemKey, consistent: bool = True) -> DirectoryEntry | None:
        with self._lock:
            self._count("directory_get")
            return self._directory.get(key.pk, {}).get(key.sk)

    def directory_bound(self, key: ItemKey, live_until_ms: int | None) -> None:
        with self._lock:
            self._count("directory_bound")
            entries = self._directory.get(key.pk, {})
            if key.sk in entries:
                entries[key.sk] = entries[key.sk]._replace(live_until_ms=live_until_ms)

    def memory_touch(self, key: ItemKey, expires_ms: int) -> None:
        with self._lock:
            self._count("memory_touch")
            partition = self._memory.get(key.pk, {})
            if key.sk in partition:
                partition[key.sk] = partition[key.sk]._replace(expires_ms=expires_ms)

    def memory_refresh(
        self, key: ItemKey, expires_ms: int, ttl_minutes: float, now_ms: int
    ) -> tuple[MemoryRow | None, bool]:
        with self._lock:
            self._count("memory_refresh")
            partition = self._memory.get(key.pk, {})
            row = partition.get(key.sk)
            if row is None or row.ttl_minutes != ttl_minutes or (row.expires_ms or 0) <= now_ms:
                return row, False
            partition[key.sk] = row._replace(expires_ms=expires_ms)
            return partition[key.sk], True

    def directory(self, pk: str, consistent: bool = False) -> builtins.list[DirectoryEntry]:
        with self._lock:
            self._count("query")
            entries = self._directory.get(pk, {})
            return [entries[sk] for sk in sorted(entries)]

    def directory_drop(self, entry: DirectoryEntry) -> bool:
        with self._lock:
            self._count("directory_drop")
            entries = self._directory.get(entry.key.pk, {})
            known = entries.get(entry.key.sk)
            if known is None or known.generation != entry.generation:
                return False
            del entries[entry.key.sk]
            return True

    def directory_mark(self, entry: DirectoryEntry, emptied: bool) -> bool:
        with self._lock:
            self._count("directory_mark")
            entries = self._directory.get(entry.key.pk, {})
            known = entries.get(entry.key.sk)
            if known is None or known.generation != entry.generation:
                return False
            entries[entry.key.sk] = known._replace(emptied=emptied)
            return True

    def memory_reseal(self, key: ItemKey, old: bytes, new: bytes) -> bool:
        with self._lock:
            self._count("memory_reseal")
            row = self._memory.get(key.pk, {}).get(key.sk)
            if row is not None and row.blob == old:
                self._memory[key.pk][key.sk] = row._replace(blob=new)
                return True
            entry = self._directory.get(key.pk, {}).get(key.sk)
            if entry is not None and entry.blob == old:
                self._directory[key.pk][key.sk] = entry._replace(blob=new)
                return True
            item = self._indexes.get(key.pk, {}).get(key.sk)
            if item is not None and item.blob == old:
                self._indexes[key.pk][key.sk] = item._replace(blob=new)
                return True
            return False

    # ------------------------------------------------------------ search indexes

    def index_write(self, puts: Sequence[IndexItem] = (), deletes: Sequence[ItemKey] = ()) -> None:
        with self._lock:
            for _ in range(0, len(puts) + len(deletes), 25):
                self._count("index_write")
            for item in puts:
                self._indexes.setdefault(item.key.pk, {})[item.key.sk] = item
            for key in deletes:
                self._indexes.get(key.pk, {}).pop(key.sk, None)

    def index_query(
        self,
        pk: str,
        bounds: tuple[str, str],
        *,
        descending: bool = False,
        limit: int | None = None,
        after: str | None = None,
        consistent: bool = False,
    ) -> builtins.list[IndexItem]:
        with self._lock:
            self._count("query")
            lower, upper = bounds
            found = sorted(
                (sk, item) for sk, item in self._indexes.get(pk, {}).items() if lower <= sk <= upper
            )
            if pk in self._descendants and lower <= DESCENDANTS_SK <= upper:
                found = sorted([*found, (DESCENDANTS_SK, IndexItem(ItemKey(pk, DESCENDANTS_SK)))])
            if descending:
                found.reverse()
            if after is not None:
                found = [(sk, i) for sk, i in found if (sk < after if descending else sk > after)]
            return [item for _, item in found][:limit]

    def manifest_put(self, item: IndexItem, expected: str | None) -> bool:
        with self._lock:
            self._count("manifest_put")
            partition = self._indexes.setdefault(item.key.pk, {})
            known = partition.get(item.key.sk)
            if (known.generation if known else None) != expected:
                return False
            partition[item.key.sk] = item
            return True

    # ------------------------------------------------------------ for tests

    def load_memory(
        self,
        rows: Iterable[MemoryRow],
        entries: Iterable[DirectoryEntry],
        marked: Iterable[str] = (),
        indexes: Iterable[IndexItem] = (),
    ) -> None:
        """Store memory items, directory entries, descendants marks (by partition) and
        index items as they are (`MemoryIndex.clone`)."""
        with self._lock:
            self._descendants.update(marked)
            for row in rows:
                self._memory.setdefault(row.key.pk, {})[row.key.sk] = row
            for entry in entries:
                self._directory.setdefault(entry.key.pk, {})[entry.key.sk] = entry
            for item in indexes:
                self._indexes.setdefault(item.key.pk, {})[item.key.sk] = item

    def memory_rows(self) -> builtins.list[MemoryRow]:
        """Every memory item stored, for tests that inspect raw storage."""
        with self._lock:
            return [row for p in self._memory.values() for row in p.values()]

    def marked_partitions(self) -> builtins.list[str]:
        """The partitions holding the descendants mark, for tests and `clone`."""
        with self._lock:
            return sorted(self._descendants)

    def directory_entries(self) -> builtins.list[DirectoryEntry]:
        """Every directory entry stored, for tests that inspect raw storage."""
        with self._lock:
            return [e for p in self._directory.values() for e in p.values()]

    def index_items(self) -> builtins.list[IndexItem]:
        """Every search-index item stored, for tests that inspect raw storage."""
        with self._lock:
            return [i for p in self._indexes.values() for i in p.values()]
