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

from langgraph.checkpoint.s3dynamo.table import Table as Table


class ObjectInfo(NamedTuple):
    key: str
    size: int
    modified: datetime
    # Changes with every write of the key (S3: the ETag; sealed blobs never repeat
    # bytes). `delete_unchanged` deletes a key only while it still carries this tag.
    tag: str = ""


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
