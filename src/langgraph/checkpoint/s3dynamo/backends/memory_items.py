"""The `MemoryItems` port in memory: the Store's items and the node cache's entries and
their namespace directories, with DynamoDB's conditions (mixed into `MemoryIndex`,
`backends/memory.py`). Reads are always current: the twin has no replicas to lag."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Sequence

from langgraph.checkpoint.s3dynamo.records import DirectoryEntry, ItemKey, MemoryRow


class MemoryItemsTwin:
    """The `MemoryItems` port in memory (mixed into `MemoryIndex`)."""

    _lock: threading.Lock
    _memory: dict[str, dict[str, MemoryRow]]
    _directory: dict[str, dict[str, DirectoryEntry]]
    _descendants: set[str]  # partitions holding the descendants mark
    _count: Callable[[str], None]  # the host's request counter

    def memory_put(
        self,
        rows: Sequence[MemoryRow],
        entry: DirectoryEntry | None,
        marks: Sequence[ItemKey] = (),
    ) -> None:
        with self._lock:
            if entry is None:
                for _row in rows:
                    self._count("memory_update")
            else:
                self._count("memory_put")
            for row in rows:
                partition = self._memory.setdefault(row.key.pk, {})
                old = partition.get(row.key.sk)
                partition[row.key.sk] = row._replace(
                    created_ms=old.created_ms if old else row.created_ms
                )
            if entry is not None:
                self._renew(entry, marks)

    def directory_renew(self, entry: DirectoryEntry, marks: Sequence[ItemKey] = ()) -> None:
        with self._lock:
            self._count("directory_renew")
            self._renew(entry, marks)

    def _renew(self, entry: DirectoryEntry, marks: Sequence[ItemKey]) -> None:
        self._descendants.update(k.pk for k in marks)
        entries = self._directory.setdefault(entry.key.pk, {})
        known = entries.get(entry.key.sk)
        entries[entry.key.sk] = entry._replace(
            blob=known.blob if known else entry.blob, emptied=False
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

    def memory_delete(self, key: ItemKey, expired_at: int | None = None) -> MemoryRow | None:
        with self._lock:
            self._count("memory_delete")
            partition = self._memory.get(key.pk, {})
            row = partition.get(key.sk)
            if row is None or (
                expired_at is not None and (row.expires is None or row.expires > expired_at)
            ):
                return None
            return partition.pop(key.sk)

    def directory_get(self, key: ItemKey) -> DirectoryEntry | None:
        with self._lock:
            self._count("directory_get")
            return self._directory.get(key.pk, {}).get(key.sk)

    def memory_touch(self, key: ItemKey, expires: int) -> None:
        with self._lock:
            self._count("memory_touch")
            partition = self._memory.get(key.pk, {})
            if key.sk in partition:
                partition[key.sk] = partition[key.sk]._replace(expires=expires)

    def memory_refresh(
        self, key: ItemKey, expires: int, ttl_minutes: float, now: int
    ) -> tuple[MemoryRow | None, bool]:
        with self._lock:
            self._count("memory_refresh")
            partition = self._memory.get(key.pk, {})
            row = partition.get(key.sk)
            if row is None or row.ttl_minutes != ttl_minutes or (row.expires or 0) <= now:
                return row, False
            partition[key.sk] = row._replace(expires=expires)
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
            return False

    def load_memory(
        self,
        rows: Iterable[MemoryRow],
        entries: Iterable[DirectoryEntry],
        marked: Iterable[str] = (),
    ) -> None:
        """Store memory items, directory entries and descendants marks (by partition) as
        they are (`MemoryIndex.clone`)."""
        with self._lock:
            self._descendants.update(marked)
            for row in rows:
                self._memory.setdefault(row.key.pk, {})[row.key.sk] = row
            for entry in entries:
                self._directory.setdefault(entry.key.pk, {})[entry.key.sk] = entry

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
