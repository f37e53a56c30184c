"""In-process stand-ins for the table, the bucket and KMS, for the unit tier and as the
template for a new backend: `MemoryTable` (`memory_table.py`) under every port of the
table (`MemoryIndex`, which adds views of what is stored for tests), `MemoryObjects`
(`If-None-Match` on new objects, a missing object as `ObjectNotFoundError`, a fresh tag
per write) and `MemoryKms`. Every request is counted in `calls`, so budgets can be checked
without moto.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.errors import (
    DeploymentMismatchError,
    ObjectNotFoundError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.ports import BucketRegion, ObjectInfo


class MemoryObjects:
    """The `ObjectStore` port in memory. `name` stands for a bucket's: a deployment
    record written through a named store refuses a saver on another name."""

    def __init__(self, *, exists: bool = True, name: str = "") -> None:
        self.exists = exists
        self.name = name
        self.calls: Counter[str] = Counter()
        self.blobs: dict[str, tuple[bytes, datetime]] = {}
        # A fresh tag per write, as S3's ETag changes when sealed bytes do.
        self.tags: dict[str, str] = {}
        # The modification time of a write, as S3's clock gives it; tests replace it.
        self.clock: Callable[[], float] = time.time
        self._lock = threading.Lock()

    def _count(self, name: str) -> None:
        if not self.exists:
            raise StoreMissingError("in-memory object store does not exist")
        self.calls[name] += 1
        telemetry.request("memory-objects", name)

    def put_new(self, key: str, body: bytes) -> bool:
        with self._lock:
            self._count("put")
            if key in self.blobs:
                return False
            self._store(key, body)
            return True

    def overwrite(self, key: str, body: bytes) -> None:
        with self._lock:
            self._count("put")
            self._store(key, body)

    def _store(self, key: str, body: bytes) -> None:
        self.blobs[key] = (bytes(body), datetime.fromtimestamp(self.clock(), timezone.utc))
        self.tags[key] = os.urandom(16).hex()

    def get(self, key: str) -> bytes:
        with self._lock:
            self._count("get")
            found = self.blobs.get(key)
        if found is None:
            raise ObjectNotFoundError(key, "the memory store")
        return found[0]

    def stat(self, key: str) -> ObjectInfo | None:
        with self._lock:
            self._count("stat")
            found, tag = self.blobs.get(key), self.tags.get(key, "")
        return None if found is None else ObjectInfo(key, len(found[0]), found[1], tag)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        with self._lock:
            self._count("list")
            found = sorted((k, v) for k, v in self.blobs.items() if k.startswith(prefix))
            tags = dict(self.tags)
        return iter([ObjectInfo(k, len(body), when, tags[k]) for k, (body, when) in found])

    def probe(self, prefix: str) -> None:
        with self._lock:
            self._count("list")

    def delete(self, keys: Sequence[str]) -> None:
        with self._lock:
            self._count("delete")
            for key in keys:
                self.blobs.pop(key, None)
                self.tags.pop(key, None)

    def delete_unchanged(self, objects: Sequence[ObjectInfo]) -> builtins.list[str]:
        with self._lock:
            self._count("delete")
            deleted = []
            for obj in objects:
                if obj.key in self.blobs and self.tags.get(obj.key) == obj.tag:
                    del self.blobs[obj.key], self.tags[obj.key]
                    deleted.append(obj.key)
            return deleted

    def create_if_missing(self) -> bool:
        created, self.exists = not self.exists, True
        return created

    def bucket_region(self) -> BucketRegion | None:
        """No regions in memory: a HeadBucket that names none (or finds no bucket)."""
        self.calls["head"] += 1
        telemetry.request("memory-objects", "head")
        return None

    def clone(self) -> MemoryObjects:
        """An independent copy of everything stored (tests fork a store this way)."""
        twin = MemoryObjects(exists=self.exists)
        with self._lock:
            twin.blobs, twin.tags = dict(self.blobs), dict(self.tags)
        return twin


class MemoryKms:
    """The `KeyService` port in memory: a master key that never leaves this object, and
    the encryption context bound into every wrapped key, as KMS does."""

    def __init__(self, key_id: str = "memory-key") -> None:
        self.key_id = key_id
        self.calls: Counter[str] = Counter()
        self._master = os.urandom(32)

    def describe(self) -> str:
        return f"in-memory key {self.key_id!r}"

    def _aad(self, context: dict[str, str]) -> bytes:
        return hashlib.sha256(json.dumps(context, sort_keys=True).encode()).digest()

    def generate_data_key(self, context: dict[str, str]) -> tuple[bytes, bytes]:
        self.calls["generate_data_key"] += 1
        plaintext, nonce = os.urandom(32), os.urandom(12)
        return plaintext, nonce + AESGCM(self._master).encrypt(nonce, plaintext, self._aad(context))

    def decrypt(self, wrapped: bytes, context: dict[str, str]) -> bytes:
        self.calls["decrypt"] += 1
        try:
            return AESGCM(self._master).decrypt(wrapped[:12], wrapped[12:], self._aad(context))
        except InvalidTag:
            raise DeploymentMismatchError(
                f"{self.describe()} cannot unwrap this keyring (context {context})"
            ) from None
