"""In-process twins of the index and the object store, for the unit tier and as the
template for a new backend.

They keep the semantics the thread store relies on, not just the method names: sort-key
order and paging with `limit`, first-write-wins merges with last-wins exceptions, the
conditional replace, the head condition and fencing of a commit (`ConcurrentUpdateError`,
`LeaseLostError`), leases with expiry, `If-None-Match` on new objects, and a missing object as
`ObjectNotFoundError`. Records are copied in and out, so a caller's later mutation never
reaches what is stored. Every call is counted in `calls`, as the request counter counts
AWS requests, so budgets can be checked without moto.
"""

from __future__ import annotations

import builtins
import copy
import hashlib
import json
import os
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import overload

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.backends.dynamodb_items import batch_idle_keys, record_size
from langgraph.checkpoint.s3dynamo.backends.memory_idle import IdleIndexTwin
from langgraph.checkpoint.s3dynamo.backends.memory_items import MemoryItemsTwin
from langgraph.checkpoint.s3dynamo.backends.memory_journal import JournalTwin
from langgraph.checkpoint.s3dynamo.backends.memory_loans import LoansTwin
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    DeploymentMismatchError,
    LeaseLostError,
    ObjectNotFoundError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.layout import control_pk, head_namespace, tombstone_time
from langgraph.checkpoint.s3dynamo.ports import BucketRegion, Cursor, ObjectInfo, Page
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ControlRecord,
    DirectoryEntry,
    Fence,
    HeadMove,
    IndexItem,
    ItemKey,
    Lease,
    Mark,
    MemoryRow,
    Record,
    Stamp,
    UploadIntent,
    WritesRecord,
    head_key,
)


class MemoryIndex(MemoryItemsTwin, IdleIndexTwin, JournalTwin, LoansTwin):
    """The `RecordIndex`, `ControlItems` and `TableScan` ports in memory (an `Index`).
    Items are sized as DynamoDB counts them (`dynamodb_items.py`, pure), so limits and
    budgets match."""

    def __init__(self, *, exists: bool = True) -> None:
        self.exists = exists
        self.calls: Counter[str] = Counter()
        # Records and marks, by partition and sort key.
        self._partitions: dict[str, dict[str, Record | Mark]] = {}
        # Control items: head checkpoint ids, and leases (owner, token, expiry in ms).
        self.heads: dict[ItemKey, str] = {}
        self.leases: dict[ItemKey, tuple[str, int, int]] = {}
        self.idle: dict[ItemKey, str] = {}  # idle-index keys (`IdleIndexTwin`)
        self.intents: dict[ItemKey, UploadIntent] = {}  # the upload journal (JournalTwin)
        # Loans (key -> leaves) and borrowings (`LoansTwin`).
        self.loan_items: dict[ItemKey, set[str]] = {}
        self.borrowings: set[ItemKey] = set()
        # Deployments' own records: partition -> name -> record.
        self.control: dict[str, dict[str, ControlRecord]] = {}
        # Store items and node-cache entries, and their directories (`MemoryItemsTwin`).
        self._memory: dict[str, dict[str, MemoryRow]] = {}
        self._directory: dict[str, dict[str, DirectoryEntry]] = {}
        self._descendants: set[str] = set()
        self._indexes: dict[str, dict[str, IndexItem]] = {}
        self._lock = threading.Lock()

    def _count(self, name: str) -> None:
        if not self.exists:
            raise StoreMissingError("in-memory index does not exist; call create_if_missing()")
        self.calls[name] += 1
        telemetry.request("memory-index", name)

    def _select(
        self,
        pk: str,
        prefix: str | None,
        between: tuple[str, str] | None,
        descending: bool,
        after: str | None = None,
        limit: int | None = None,
    ) -> tuple[list[Record | Mark], str | None]:
        """Copies of the matching items of one page, and where the next page starts."""
        partition = self._partitions.get(pk, {})
        keys = sorted(partition, reverse=descending)
        if prefix is not None:
            keys = [k for k in keys if k.startswith(prefix)]
        elif between is not None:
            keys = [k for k in keys if between[0] <= k <= between[1]]
        if after is not None:
            keys = [k for k in keys if (k < after if descending else k > after)]
        cursor = None
        if limit is not None and len(keys) > limit:
            keys = keys[:limit]
            cursor = keys[-1]
        return [_copy(partition[k]) for k in keys], cursor

    def query(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        between: tuple[str, str] | None = None,
        descending: bool = False,
        limit: int | None = None,
        cursor: Cursor | None = None,
        consistent: bool = False,
    ) -> Page:
        with self._lock:
            self._count("query")
            # The cursor is the last sort key returned; a page resumes strictly after it.
            after = None if cursor is None else str(cursor)
            items, last = self._select(pk, prefix, between, descending, after, limit)
        marks = tuple(i for i in items if isinstance(i, Mark))
        return Page([i for i in items if not isinstance(i, Mark)], last, marks)

    def query_keys(self, pk: str, *, prefix: str | None = None) -> Iterator[ItemKey]:
        with self._lock:
            self._count("query")
            records, _ = self._select(pk, prefix, None, False)
        return iter([r.key for r in records])

    def run_checkpoints(self, run_key: str) -> list[ItemKey]:
        with self._lock:
            self._count("query")
            return [
                r.key
                for partition in self._partitions.values()
                for r in partition.values()
                if isinstance(r, CheckpointRecord) and r.run_key == run_key
            ]

    def _check_fence(self, fence: Fence | None) -> None:
        if fence is not None and self.leases.get(fence.key, ("", 0, 0))[1] != fence.token:
            raise LeaseLostError("the lease was taken over; write refused")

    def _extend(self, fence: Fence | None) -> None:
        """The accepted write's push of the lease's expiry (same lock, same operation)."""
        if fence is not None and fence.expires_ms is not None:
            owner, token, _ = self.leases[fence.key]
            self.leases[fence.key] = (owner, token, fence.expires_ms)

    def put_checkpoint(
        self,
        record: CheckpointRecord,
        head: HeadMove | None,
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        with self._lock:
            self._count("put_checkpoint")
            self._check_fence(fence)
            if head is not None:
                now = self.heads.get(head.key)
                fresh = head.parent is None and tombstone_time(now) is not None
                if head.expect_parent and now not in (None, head.parent, head.to) and not fresh:
                    raise ConcurrentUpdateError(f"the head names {now}, not {head.parent}")
            self._partitions.setdefault(record.pk, {})[record.sk] = _copy(record)
            if head is not None:
                self.heads[head.key] = head.to
            self.index_commit(record, head)
            self._extend(fence)
            self._close(intent)

    def drop_heads(self, thread_name: str, ns_names: Collection[str] | None = None) -> None:
        with self._lock:
            self._count("drop_heads")
            pk = control_pk(thread_name)
            for key in [k for k in self.heads if k.pk == pk]:
                if ns_names is None or head_namespace(key.sk) in ns_names:
                    del self.heads[key]

    def acquire_lease(self, key: ItemKey, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
        with self._lock:
            self._count("acquire_lease")
            _, token, expires = self.leases.get(key, ("", 0, 0))
            if expires >= now_ms:
                return None
            self.leases[key] = (owner, token + 1, now_ms + ttl_ms)
            return Lease(key, owner, token + 1, now_ms + ttl_ms)

    def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        with self._lock:
            self._count("renew_lease")
            self._check_fence(Fence(lease.key, lease.token))
            self.leases[lease.key] = (lease.owner, lease.token, now_ms + ttl_ms)
            return lease._replace(expires_ms=now_ms + ttl_ms)

    def release_lease(self, lease: Lease) -> None:
        with self._lock:
            self._count("release_lease")
            owner, token, _ = self.leases.get(lease.key, ("", 0, 0))
            if token == lease.token:
                self.leases[lease.key] = (owner, token, 0)

    def merge_writes(
        self,
        record: WritesRecord,
        last_wins: frozenset[int],
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        with self._lock:
            self._count("merge_writes")
            self._check_fence(fence)
            self._extend(fence)
            self._close(intent)
            partition = self._partitions.setdefault(record.pk, {})
            old = partition.get(record.sk)
            if not isinstance(old, WritesRecord):
                partition[record.sk] = _copy(record)
                return
            writes = dict(old.writes)
            for idx, value in record.writes.items():
                if idx in last_wins or idx not in writes:
                    writes[idx] = value
            bundle = old.bundle if old.bundle is not None else record.bundle
            written_at = record.written_at if record.written_at is not None else old.written_at
            partition[record.sk] = replace(old, writes=writes, bundle=bundle, written_at=written_at)

    def replace_if_unchanged(self, old: Record, new: Record) -> bool:
        with self._lock:
            self._count("replace_if_unchanged")
            partition = self._partitions.setdefault(new.pk, {})
            if partition.get(new.sk) != old:
                return False
            partition[new.sk] = _copy(new)
            return True

    def write_batch(
        self, puts: Iterable[Record | Mark] = (), deletes: Iterable[ItemKey] = ()
    ) -> None:
        with self._lock:
            self._count("write_batch")
            puts = list(puts)
            for record in puts:  # a Put replaces the whole item, index key included
                self.idle.pop(record.key, None)
            self.idle.update(batch_idle_keys(puts))
            for record in puts:
                self._partitions.setdefault(record.pk, {})[record.sk] = _copy(record)
            for key in deletes:
                self._partitions.get(key.pk, {}).pop(key.sk, None)

    def delete_items(self, keys: Iterable[ItemKey]) -> None:
        with self._lock:
            self._count("write_batch")
            for key in keys:
                self.heads.pop(key, None)
                self.leases.pop(key, None)
                self.intents.pop(key, None)
                self.loan_items.pop(key, None)
                self.borrowings.discard(key)

    def item_size(self, record: Record) -> int:
        return record_size(record)

    def scan_stamps(
        self, segment: int = 0, segments: int = 1, prefix: str = ""
    ) -> Iterator[list[Stamp]]:
        with self._lock:
            self._count("scan")
            stamps = [
                Stamp(r.key, _written_at(r), None, self.idle.get(r.key))
                for p in self._partitions.values()
                for r in p.values()
            ]
            stamps += self._control_stamps(None)
            stamps = [s for s in stamps if s.key.pk.startswith(prefix)]
        # Segments split the items by partition key (retention never relies on it).
        return iter([[s for s in stamps if zlib.crc32(s.key.pk.encode()) % segments == segment]])

    def partition_stamps(self, pk: str) -> list[Stamp]:
        with self._lock:
            self._count("query")
            records = self._partitions.get(pk, {})
            stamps = [
                Stamp(r.key, _written_at(r), None, self.idle.get(r.key))
                for r in (records[sk] for sk in sorted(records))
            ]
            return stamps + self._control_stamps(pk)

    def _control_stamps(self, pk: str | None) -> list[Stamp]:
        heads = [
            Stamp(k, None, h, self.idle.get(k)) for k, h in self.heads.items() if pk in (None, k.pk)
        ]
        others = [*self.leases, *self.loan_items, *self.borrowings]
        return heads + [Stamp(k) for k in others if pk in (None, k.pk)]

    def put_heads(self, thread_name: str, heads: Mapping[str, str]) -> None:
        with self._lock:
            self._count("write_batch")
            for ns, value in heads.items():
                self.heads[head_key(thread_name, ns)] = value
                self.index_head(head_key(thread_name, ns), value)

    def scan(self, prefix: str = "") -> Iterator[Record]:
        with self._lock:
            self._count("scan")
            records = [
                _copy(r)
                for pk, p in self._partitions.items()
                if pk.startswith(prefix)
                for r in p.values()
                if not isinstance(r, Mark)
            ]
        return iter(records)

    def read_control(self, pk: str) -> dict[str, ControlRecord]:
        with self._lock:
            self._count("query")
            return copy.deepcopy(self.control.get(pk, {}))

    def put_control(self, pk: str, record: ControlRecord, expected_version: int | None) -> bool:
        with self._lock:
            self._count("put_control")
            old = self.control.get(pk, {}).get(record.name)
            if (old is None) != (expected_version is None):
                return False
            if old is not None and old.version != expected_version:
                return False
            self.control.setdefault(pk, {})[record.name] = copy.deepcopy(record)
            return True

    def create_if_missing(self) -> bool:
        created, self.exists = not self.exists, True
        return created

    def clone(self) -> MemoryIndex:
        """An independent copy of everything stored (tests fork a store this way)."""
        twin = MemoryIndex()
        twin.write_batch(puts=[*self.records(), *self.marks()])
        with self._lock:
            twin.heads, twin.leases = dict(self.heads), dict(self.leases)
            twin.idle = dict(self.idle)
            twin.intents = dict(self.intents)
            twin.loan_items = {k: set(v) for k, v in self.loan_items.items()}
            twin.borrowings = set(self.borrowings)
            twin.control = copy.deepcopy(self.control)
        twin.load_memory(
            self.memory_rows(),
            self.directory_entries(),
            self.marked_partitions(),
            self.index_items(),
        )
        twin.calls.clear()
        twin.exists = self.exists
        return twin

    def records(self) -> list[Record]:
        """Every record stored, for tests that inspect raw storage."""
        with self._lock:
            return [
                _copy(r)
                for p in self._partitions.values()
                for r in p.values()
                if not isinstance(r, Mark)
            ]

    def marks(self) -> list[Mark]:
        """Every mark stored (frozen, so shared as they are)."""
        with self._lock:
            return [r for p in self._partitions.values() for r in p.values() if isinstance(r, Mark)]


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
        self.tags[key] = uuid.uuid4().hex

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


def _written_at(item: Record | Mark) -> int | None:
    return None if isinstance(item, Mark) else item.written_at


@overload
def _copy(record: Record) -> Record: ...
@overload
def _copy(record: Record | Mark) -> Record | Mark: ...
def _copy(record: Record | Mark) -> Record | Mark:
    """A copy no caller's mutation can reach back through (bytes and frozensets are
    immutable; the dicts are not)."""
    if isinstance(record, Mark):
        return record
    if isinstance(record, CheckpointRecord):
        return replace(record, inline=dict(record.inline))
    return replace(record, writes=dict(record.writes))


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
