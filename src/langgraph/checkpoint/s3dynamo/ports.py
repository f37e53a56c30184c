"""The stores a thread lives in, as ports: what the thread store needs of each, split by
concern so that a new backend implements one small Protocol at a time.

    RecordIndex    checkpoint and writes records, keyed (pk, sk), and their commit
    ControlItems   a thread's heads and lease, and the deployment's control records
    TableScan      every item of the table (admin operations, retention)
    ObjectStore    immutable blobs by key; S3 in production
    KeyService     wraps data keys under a master key (AWS KMS)

On DynamoDB the first three are one table (`Index` names an adapter that is all three).

Both speak plain typed values (`records.py`, `ObjectInfo`, `Page`), never a service's
wire shapes. Adapters live in `backends/`: `dynamodb.py` and `s3.py` are the only code
that knows botocore; `memory.py` holds in-process twins that honour the same conditions
(conditional replace, If-None-Match, paging), for the unit tier and as the template for
another backend (an S3-only index, another key-value store).

Every method is one request, or a bounded loop of requests of one kind (paging, batch
chunks): request budgets are counted at this boundary.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ControlRecord,
    Fence,
    HeadMove,
    ItemKey,
    Lease,
    Loan,
    Mark,
    Record,
    Stamp,
    UploadIntent,
    WritesRecord,
)

# Where a paged query resumes; opaque to everyone but the adapter that made it.
Cursor = object


class Page(NamedTuple):
    records: list[Record]
    cursor: Cursor | None
    # The marks among the page's items (`records.Mark`), apart from the records.
    marks: tuple[Mark, ...] = ()


class ObjectInfo(NamedTuple):
    key: str
    size: int
    modified: datetime
    # Changes with every write of the key (S3: the ETag; sealed blobs never repeat
    # bytes). `delete_unchanged` deletes a key only while it still carries this tag.
    tag: str = ""


class RecordIndex(Protocol):
    """Records of every thread, ordered by sort key within a partition."""

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
        """One page of a partition's records whose sort key starts with `prefix` or lies
        in `between` (inclusive), in sort-key order; `limit` caps the page (marks count
        towards it, and come in `Page.marks`). `consistent` asks for a strongly
        consistent read (every write acknowledged before it shows)."""
        ...

    def query_keys(self, pk: str, *, prefix: str | None = None) -> Iterator[ItemKey]:
        """Keys of every record and mark of a partition (optionally under a sort-key
        prefix)."""
        ...

    def run_checkpoints(self, run_key: str) -> list[ItemKey]:
        """Keys of every checkpoint record carrying this run key, across partitions."""
        ...

    def put_checkpoint(
        self,
        record: CheckpointRecord,
        head: HeadMove | None,
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        """Write a checkpoint record whole and move its namespace's head, atomically, in
        one request (the commit point of `put`). `ConcurrentUpdateError` if the head's
        condition fails, `LeaseLostError` if `fence` does; then nothing is written.
        Without `head` (detection turned off) the record is written alone. `intent`, the
        put's upload intent, is deleted in the same request (present or not)."""
        ...

    def merge_writes(
        self,
        record: WritesRecord,
        last_wins: frozenset[int],
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        """Add writes to a task's record atomically: an index already present keeps its
        first value, except those in `last_wins`, which take the new one. With `fence`,
        `LeaseLostError` (nothing written) unless the lease still carries its token.
        `intent` is deleted in the same request, as in `put_checkpoint`."""
        ...

    def replace_if_unchanged(self, old: Record, new: Record) -> bool:
        """Replace `old` by `new` (same key) if the stored record still equals `old`;
        False if a concurrent writer changed it first."""
        ...

    def write_batch(
        self, puts: Iterable[Record | Mark] = (), deletes: Iterable[ItemKey] = ()
    ) -> None:
        """Write and delete many records and marks, in full batches sent in parallel
        (BatchWriteItem: 25 items a request), each item whole, in no set order, and
        not atomically as a whole; items the store leaves unprocessed are sent again."""
        ...

    def item_size(self, record: Record) -> int:
        """Bytes the record takes as one item, as the store bills and limits it (no
        request): what refuses an oversized checkpoint, and what `stats` reports."""
        ...

    def create_if_missing(self) -> bool:
        """Create the index if absent; True if it was created."""
        ...


class ControlItems(Protocol):
    """A thread's control items (namespace heads, the lease) and the deployment's
    control records, kept apart from the records a thread query reads."""

    def drop_heads(self, thread_name: str, ns_names: Collection[str] | None = None) -> None:
        """Delete the heads of these namespaces of a thread (all of them when None), so
        the next commit there is not held to a checkpoint maintenance removed."""
        ...

    def put_heads(self, thread_name: str, heads: Mapping[str, str]) -> None:
        """Set namespace heads (namespace name -> value) without condition."""
        ...

    def delete_items(self, keys: Iterable[ItemKey]) -> None:
        """Delete control items (heads, leases, upload intents) by key; absent ones are
        not an error."""
        ...

    def acquire_lease(self, key: ItemKey, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
        """Take the lease if nobody holds it or its holder's expiry has passed, with a
        fencing token one above the last; None if someone holds it. One request."""
        ...

    def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        """Push a held lease's expiry out; `LeaseLostError` if it was taken over."""
        ...

    def release_lease(self, lease: Lease) -> None:
        """Let the lease go now if this holder still has it (the token survives, so
        tokens only grow); nothing if it was taken over."""
        ...

    def set_idle(self, key: ItemKey, to: str, was: str | None) -> bool:
        """Set an existing item's idle-index key to `to` if it is still `was` (None: if the
        item exists); False otherwise. One request."""
        ...

    def put_intent(self, intent: UploadIntent) -> None:
        """Write an upload intent (`records.UploadIntent`). One request."""
        ...

    def intents_before(self, pk: str, upper_sk: str) -> list[UploadIntent]:
        """The intents of one journal partition whose sort key is below `upper_sk`, page
        after page (`delete_items` removes them)."""
        ...

    def lend(self, lender: str, borrower: str, leaves: Collection[str]) -> None:
        """Add leaves of the lender's objects to its loan to `borrower` (thread names);
        a repeat adds nothing. One request per part of the loan."""
        ...

    def unlend(self, loan: Loan, leaves: Collection[str]) -> None:
        """Take leaves out of one part of a loan (the others stay as they are). One
        request, none if the part holds none of them."""
        ...

    def loans(self, lender: str, borrower: str | None = None) -> list[Loan]:
        """A lender's loans (to one borrower, or all), read strongly consistent."""
        ...

    def control_keys(self, thread_name: str) -> list[ItemKey]:
        """Keys of every control item of a thread (heads, lease, loans, borrowings),
        read strongly consistent: one request."""
        ...

    def put_borrowing(self, borrower: str, lender: str) -> None:
        """Record that `borrower` shares objects of `lender` (its deletion then ends the
        loan). One request."""
        ...

    def read_control(self, pk: str) -> dict[str, ControlRecord]:
        """Every record of a deployment's own partition (`layout.deployment_pk`) by name
        (one request)."""
        ...

    def put_control(self, pk: str, record: ControlRecord, expected_version: int | None) -> bool:
        """Write a record of a deployment's own partition if none of its name exists
        (`expected_version` None) or if the stored one still has `expected_version`;
        False if another writer came first."""
        ...


class TableScan(Protocol):
    """Every item of the table: admin operations and retention only. `prefix` narrows a
    scan to partitions whose key starts with it (a shared table's tenant); the caller
    keeps exactly its own (`store/scope.py`). Deployments' own partitions are never
    returned."""

    def scan(self, prefix: str = "") -> Iterator[Record]:
        """Every record of every thread (admin operations only), no control items and
        no marks."""
        ...

    def scan_stamps(
        self, segment: int = 0, segments: int = 1, prefix: str = ""
    ) -> Iterator[list[Stamp]]:
        """Segment `segment` of a Scan split into `segments` (DynamoDB's parallel Scan;
        the segments together hold every item once): every item in it, thread records,
        marks and control items alike, reduced to what retention reads (`Stamp`), a page at a
        time; eventually consistent."""
        ...

    def partition_stamps(self, pk: str) -> list[Stamp]:
        """The same for one partition (records, or a thread's control items), read
        consistently."""
        ...

    def idle_query(self, partition: str, prefix: str = "") -> Iterator[list[ItemKey]]:
        """Keys of the items in one partition of the idle index (`layout.idle_partition`)
        whose partition key starts with `prefix`, a page at a time; eventually
        consistent. `StorageConfigError` naming the fix when the table lacks the index."""
        ...


class Index(RecordIndex, ControlItems, TableScan, Protocol):
    """An adapter that is all three (one DynamoDB table, the in-memory twin)."""


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
