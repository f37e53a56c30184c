"""Objects recently written or read, kept in process within a byte budget.

Objects are named by their identity (thread, namespace, channel, version, or a write's
nonce) and never change meaning: a name always holds the same value, sealed under one key
or another. So a cached copy is never stale, and a warm process serving the same thread
need not GET what it just PUT or read. What the cache trusts is its own process: an
object altered in the bucket after this process wrote or read it is not noticed here
(every other process still authenticates it on read).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

# Enough for the working set of a chat thread (its latest full values) in a small
# Lambda; `object_cache_bytes` changes it, 0 turns the cache off.
DEFAULT_CACHE_BYTES = 16 * 1024 * 1024


class ObjectCache:
    """A least-recently-used map of object key to body, bounded in bytes."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            body = self._bodies.get(key)
            if body is not None:
                self._bodies.move_to_end(key)
            return body

    def put(self, key: str, body: bytes) -> None:
        # One object may take a quarter of the budget, so a few large ones cannot
        # flush everything else.
        if len(body) * 4 > self.max_bytes:
            return
        with self._lock:
            old = self._bodies.pop(key, None)
            if old is not None:
                self.size -= len(old)
            self._bodies[key] = body
            self.size += len(body)
            while self.size > self.max_bytes:
                _, evicted = self._bodies.popitem(last=False)
                self.size -= len(evicted)

    def discard(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                old = self._bodies.pop(key, None)
                if old is not None:
                    self.size -= len(old)
