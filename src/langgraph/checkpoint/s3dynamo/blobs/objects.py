"""Object I/O: reading and writing objects in parallel waves, through one byte-bounded
cache of what this process wrote or read lately. Every object belongs to an owner, the
partition whose items reference it (a thread, a Store or cache namespace), and is named
`<owner>/<leaf>` (`layout.object_key`).

Objects are named by their identity (a thread's value by (thread, namespace, channel,
version), a write or a Store value by a nonce) and never change meaning, so a cached copy
is never stale and a warm process need not GET what it just PUT or read. What the cache
trusts is its own process: an object altered in the bucket after this process wrote or
read it is not noticed here (every other process still authenticates it on read).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.blobs.lazy_ports import LazyPorts
from langgraph.checkpoint.s3dynamo.errors import ObjectNotFoundError
from langgraph.checkpoint.s3dynamo.format.layout import object_key, owner_prefix
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo, ObjectStore
from langgraph.checkpoint.s3dynamo.waves import parallel

log = logging.getLogger(__name__)


class ObjectIO:
    """A deployment's objects: their keys, and waves of reads and writes."""

    def __init__(self, ports: LazyPorts, cache_bytes: int) -> None:
        self._ports = ports
        # One object may take a quarter of the budget, so a few large ones cannot flush
        # everything else; 0 turns the cache off.
        self.cache: Lru[str, bytes] = Lru(cache_bytes, weigh=len, largest=cache_bytes // 4)

    @property
    def port(self) -> ObjectStore:
        return self._ports.objects

    @staticmethod
    def key(owner: str, leaf: str) -> str:
        return object_key(owner, leaf)

    @staticmethod
    def owner_prefix(owner: str) -> str:
        """Key prefix shared by every object of one owner."""
        return owner_prefix(owner)

    def list_owner(self, owner: str) -> list[ObjectInfo]:
        return list(self.port.list(owner_prefix(owner)))

    def stat(self, keys: Sequence[str]) -> list[ObjectInfo | None]:
        """Size, modification time and tag of each key (None: absent), in one wave."""
        return parallel(self.port.stat, keys)

    def cached(self, key: str) -> bytes | None:
        """An object's body if this process holds it, without a request."""
        return self.cache.get(key)

    def fetch(self, needed: Mapping[str, str], *, cached: bool = True) -> dict[str, bytes]:
        """Read objects in one parallel wave; `needed` maps each key to what needs it,
        named in the error if the object is gone. Objects this process wrote or read
        lately come from the cache unless `cached` is False."""
        found: dict[str, bytes] = {}
        if cached:
            for key in needed:
                if (body := self.cache.get(key)) is not None:
                    found[key] = body
            telemetry.add("cache.hits", len(found))
        keys = [k for k in needed if k not in found]
        log.debug("object read wave: %d objects (%d cached)", len(keys), len(found))
        try:
            bodies = parallel(self.port.get, keys)
        except ObjectNotFoundError as exc:
            exc.referenced_by(needed.get(exc.key, "a checkpoint"))
            raise
        for key, body in zip(keys, bodies, strict=True):
            self.cache.put(key, body)
            found[key] = body
        return found

    def upload(self, objects: Sequence[tuple[str, bytes]]) -> None:
        """Write new objects in one parallel wave (If-None-Match). An object already
        there holds the same value (names are identities) but may be an orphan that
        garbage collection is about to delete: it is written again (a second request,
        only in that case), which restarts its grace period and changes its ETag, so a
        collection that listed it before can no longer delete it (see `ops/gc.py`)."""
        log.debug("object write wave: %d objects, %d bytes", len(objects), _size(objects))

        def put(key: str, body: bytes) -> None:
            if not self.port.put_new(key, body):
                self.port.overwrite(key, body)

        parallel(lambda kb: put(*kb), objects)
        for key, body in objects:
            self.cache.put(key, body)

    def overwrite(self, objects: Sequence[tuple[str, bytes]]) -> None:
        """Replace objects in place, in one wave: the same value sealed anew (rotation)."""
        parallel(lambda kb: self.port.overwrite(*kb), objects)
        for key, body in objects:
            self.cache.put(key, body)

    def delete(self, keys: Sequence[str]) -> None:
        if keys:
            self.port.delete(keys)
            self.cache.discard(keys)

    def delete_unchanged(self, objects: Sequence[ObjectInfo]) -> list[str]:
        """Delete each object only while it still carries the listed tag (see the port)."""
        if not objects:
            return []
        deleted = self.port.delete_unchanged(objects)
        self.cache.discard(deleted)
        return deleted


def _size(objects: Sequence[tuple[str, bytes]]) -> int:
    return sum(len(body) for _, body in objects)
