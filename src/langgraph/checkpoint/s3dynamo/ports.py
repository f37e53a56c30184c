"""The stores everything lives in, as ports: small Protocols of generic requests that a
new backend implements.

    Table          one table of items (`table.py`): the index of threads, the Store's
                   and the cache's items, control items, the upload journal
    ObjectStore    immutable blobs by key; S3 in production
    KeyService     wraps data keys under a master key (AWS KMS)

They speak plain values (items, `ObjectInfo`), never a service's wire shapes, and know
no stored format: what each item holds is the formats' (`records.py`, `store/format.py`,
`memory/rows.py`, `memory/format.py`). Adapters live in `backends/`: `dynamodb.py` and
`s3.py` are the only code that knows botocore; `memory_table.py` and `memory.py` are the
in-process ones, for the unit tier and as the template for another backend. Every method
is one request, or a bounded set of requests of one kind (paging, batch chunks): request
budgets are counted at this boundary.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from langgraph.checkpoint.s3dynamo.memory.rows import DirectoryEntry, IndexItem, MemoryRow
from langgraph.checkpoint.s3dynamo.records import ItemKey
from langgraph.checkpoint.s3dynamo.table import Table as Table


class ObjectInfo(NamedTuple):
    key: str
    size: int
    modified: datetime
    # Changes with every write of the key (S3: the ETag; sealed blobs never repeat
    # bytes). `delete_unchanged` deletes a key only while it still carries this tag.
    tag: str = ""


# Items of one `MemoryItems.memory_put`: DynamoDB's 100 items a transaction, less the
# directory entry (and less the descendants marks it writes).
MEMORY_PUT_MAX = 99


class MemoryItems(Protocol):
    """The Store's items and the node cache's entries, their namespace directories, and
    the Store's search indexes in each namespace's partition (`layout.memory_pk`,
    `memory/`)."""

    def memory_put(
        self,
        rows: Sequence[MemoryRow],
        entry: DirectoryEntry | None,
        marks: Sequence[ItemKey] = (),
    ) -> list[MemoryRow | None]:
        """Write items of one namespace whole, each keeping the `created_ms` of one
        already there. With `entry` (at most `MEMORY_PUT_MAX` items and marks together):
        and renew the namespace's directory entry (`directory_renew`) and write the
        descendants marks `marks` (`layout.DESCENDANTS_SK`), atomically, in one request.
        Without: one request per item, nothing else written. Returns, per row, the item
        it replaced (None: there was none, or, with `entry`, not known)."""
        ...

    def directory_renew(self, entry: DirectoryEntry, marks: Sequence[ItemKey] = ()) -> None:
        """Renew a directory entry alone: its sealed namespace set if absent, its
        generation, renewal time and liveness bound replaced (the bound left as it is
        when `entry` has none), its emptied mark removed; and write the descendants marks
        `marks`, atomically. One request."""
        ...

    def memory_get(self, keys: Sequence[ItemKey], consistent: bool = False) -> list[MemoryRow]:
        """The items found among `keys` (100 keys a request), read eventually
        consistently unless `consistent`."""
        ...

    def memory_query(
        self, pk: str, limit: int | None = None, consistent: bool = False
    ) -> list[MemoryRow]:
        """Every item of a namespace's partition (not its descendants mark, nor its
        indexes), page after page (with `limit`, one page of at most that many), read
        eventually consistently unless `consistent`."""
        ...

    def memory_search(self, pk: str, consistent: bool = False) -> tuple[list[MemoryRow], bool]:
        """Every item of a namespace's partition and whether it holds the descendants
        mark, in one Query (paged), read eventually consistently unless `consistent`."""
        ...

    def memory_has_live(self, pk: str, now_ms: int) -> bool:
        """Whether a namespace's partition holds an item unexpired at `now_ms`, read
        consistently, a page at a time until one is found."""
        ...

    def memory_delete(self, key: ItemKey, expired_at_ms: int | None = None) -> MemoryRow | None:
        """Delete an item; the item as it was, or None if there was none. With
        `expired_at_ms`, only while its expiry is at or before it (a put or a read that
        renewed it since keeps it). One request."""
        ...

    def directory_get(self, key: ItemKey, consistent: bool = True) -> DirectoryEntry | None:
        """One directory entry, read consistently unless told; None if absent."""
        ...

    def directory_bound(self, key: ItemKey, live_until_ms: int | None) -> None:
        """Set an entry's liveness bound (None: unknown), if the entry is there. One
        request."""
        ...

    def memory_touch(self, key: ItemKey, expires_ms: int) -> None:
        """Set an existing item's expiry (nothing if the item is gone). One request."""
        ...

    def memory_refresh(
        self, key: ItemKey, expires_ms: int, ttl_minutes: float, now_ms: int
    ) -> tuple[MemoryRow | None, bool]:
        """Set an item's expiry to `expires_ms` if its TTL is still `ttl_minutes` and it
        has not expired by `now_ms`, and return it as it is then (the current item, a
        strongly consistent read) with True; else the item as found with False, or
        (None, False) when absent (or when the store does not return a refused item).
        One request."""
        ...

    def directory(self, pk: str, consistent: bool = False) -> list[DirectoryEntry]:
        """Every entry of a space's directory, page after page, read eventually
        consistently unless `consistent`."""
        ...

    def directory_drop(self, entry: DirectoryEntry) -> bool:
        """Delete a directory entry if its generation is still `entry.generation`."""
        ...

    def directory_mark(self, entry: DirectoryEntry, emptied: bool) -> bool:
        """Set or remove an entry's emptied mark if its generation is still
        `entry.generation`. One request."""
        ...

    def memory_reseal(self, key: ItemKey, old: bytes, new: bytes) -> bool:
        """Replace an item's inline blob, a directory entry's sealed namespace, or an
        index item's blob with `new` if it is still `old` (re-encryption). One request."""
        ...

    def index_write(self, puts: Sequence[IndexItem] = (), deletes: Sequence[ItemKey] = ()) -> None:
        """Put and delete index items, unconditionally, in full batches of 25 sent in
        parallel (filter tokens, vector log entries)."""
        ...

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
        """The index items of a partition whose sort keys lie within `bounds`
        (inclusive), in sort-key order (`descending`: newest first), strictly after the
        sort key `after` in that order; with `limit`, at most that many in one request,
        else page after page. Eventually consistent unless `consistent`."""
        ...

    def manifest_put(self, item: IndexItem, expected: str | None) -> bool:
        """Write the vector manifest `item` if the one stored has generation `expected`
        (None: there is none); False if another writer's came first. One request."""
        ...


class KeyService(Protocol):
    """Wraps data keys under a master key that never leaves the service (AWS KMS)."""

    def generate_data_key(self, context: dict[str, str]) -> tuple[bytes, bytes]:
        """A fresh 32-byte key: (plaintext, the same wrapped under the master key, bound
        to `context`)."""
        ...

    def decrypt(self, wrapped: bytes, context: dict[str, str]) -> bytes:
        """Unwrap a key `generate_data_key` made under the same `context`."""
        ...

    def describe(self) -> str:
        """The master key and where it is asked for, for messages."""
        ...


class BucketRegion(NamedTuple):
    """Where a bucket lives, as the service says, and the region the client of this store
    sends to: S3 bucket names are global, so a bucket found in another region is the
    deployment's, and the saver's region setting is what is wrong."""

    bucket: str
    lives_in: str
    configured: str


class ObjectStore(Protocol):
    """Immutable blobs by key. An implementation may carry a `name` (its bucket's): the
    deployment record keeps it and refuses a saver on another name (`deployment.py`)."""

    def put_new(self, key: str, body: bytes) -> bool:
        """Write unless the key exists (If-None-Match); False if it already did."""
        ...

    def overwrite(self, key: str, body: bytes) -> None:
        """Replace a blob in place, or write it if absent (key rotation re-seals the same
        value; a writer refreshes an object it found already there). Gives the key a new
        modification time and a new `tag`."""
        ...

    def get(self, key: str) -> bytes:
        """The blob; `ObjectNotFoundError` if there is none."""
        ...

    def stat(self, key: str) -> ObjectInfo | None:
        """One blob's size, modification time and tag, or None if there is none (one
        request, no body)."""
        ...

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every blob under a key prefix, with size and last modification time."""
        ...

    def probe(self, prefix: str) -> None:
        """One cheap request proving the container exists and may be listed under
        `prefix`; raises the error that says what to fix."""
        ...

    def delete(self, keys: Sequence[str]) -> None:
        """Delete blobs; absent keys are not an error."""
        ...

    def delete_unchanged(self, objects: Sequence[ObjectInfo]) -> builtins.list[str]:
        """Delete each listed blob only if it still carries the listed `tag` (nothing
        wrote the key since it was listed); returns the keys deleted. A blob written
        since, or already gone, is skipped, not an error."""
        ...

    def create_if_missing(self) -> bool:
        """Create the container if absent; True if it was created."""
        ...

    def bucket_region(self) -> BucketRegion | None:
        """One request (S3: HeadBucket): where the container lives, as the service says;
        None if it does not exist or the service names no region (the in-memory twin,
        servers that do not say)."""
        ...
