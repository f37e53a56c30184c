"""The one cache type of the store: a least-recently-used map, bounded by the number of
entries or by their total size, safe to share between threads.

What the store caches never goes stale, because every key names something immutable:
objects are named by their identity (a name always holds the same value, sealed under
one key or another), and a checkpoint's record, parent and writes never change once it
has a child. Only an operation that rewrites records (`forget`) clears them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most `limit` entries (or, with `weigh`, at most `limit` in total weight); an
    entry heavier than `largest` (default: `limit`) is not kept at all."""

    def __init__(
        self, limit: int, *, weigh: Callable[[V], int] | None = None, largest: int | None = None
    ) -> None:
        self.limit = limit
        self.largest = limit if largest is None else largest
        self.size = 0
        self._weigh = weigh or (lambda _: 1)
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value)
        if weight > self.largest:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.size -= self._weigh(old)
            self._entries[key] = value
            self.size += weight
            while self.size > self.limit and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self.size -= self._weigh(evicted)

    def discard(self, keys: Iterable[K]) -> None:
        with self._lock:
            for key in keys:
                old = self._entries.pop(key, None)
                if old is not None:
                    self.size -= self._weigh(old)

    def items(self) -> list[tuple[K, V]]:
        """A snapshot of the entries, least recently used first."""
        with self._lock:
            return list(self._entries.items())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.size = 0

    def __len__(self) -> int:
        return len(self._entries)
