"""The idle-period index of the in-memory twin (`MemoryIndex` inherits it): what the
DynamoDB table's sparse `idle` index holds (schema.py), kept as a map from an item's key
to its index key, so the unit tier runs retention's index Query as on DynamoDB. An item
deleted leaves the index with it: a Query returns only keys whose item still exists."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from langgraph.checkpoint.s3dynamo.layout import idle_key, tombstone_time
from langgraph.checkpoint.s3dynamo.records import CheckpointRecord, HeadMove, ItemKey


class IdleIndexTwin:
    """Writes and Queries of the idle index on the twin's items (module docstring)."""

    idle: dict[ItemKey, str]
    heads: dict[ItemKey, str]
    _partitions: dict[str, dict[str, Any]]
    _lock: threading.Lock
    calls: Counter[str]
    _count: Callable[[str], None]  # the host's request counter

    def index_commit(self, record: CheckpointRecord, head: HeadMove | None) -> None:
        """A commit's index key: on its head, or on the record when it moves none."""
        key = head.key if head is not None else record.key
        self.idle[key] = idle_key(record.pk, record.written_at or int(time.time()))

    def index_head(self, key: ItemKey, value: str) -> None:
        """A head put whole: a tombstone is indexed under its own day, another head not."""
        at = tombstone_time(value)
        if at is None:
            self.idle.pop(key, None)
        else:
            self.idle[key] = idle_key(key.pk, at)

    def _exists(self, key: ItemKey) -> bool:
        return key in self.heads or key.sk in self._partitions.get(key.pk, {})

    def set_idle(self, key: ItemKey, to: str, was: str | None) -> bool:
        with self._lock:
            self._count("set_idle")
            if not self._exists(key) or (was is not None and self.idle.get(key) != was):
                return False
            self.idle[key] = to
            return True

    def idle_query(self, partition: str, prefix: str = "") -> Iterator[list[ItemKey]]:
        with self._lock:
            self._count("idle_query")
            keys = sorted(
                k
                for k, v in self.idle.items()
                if v == partition and k.pk.startswith(prefix) and self._exists(k)
            )
        return iter([keys])
