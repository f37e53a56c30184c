"""The records a thread is stored as, in plain typed values. No I/O, no AWS shapes.

A thread's records share one partition key (`pk`, the keyed hash of its id). Sort keys:

    <ns>#<checkpoint_id>            CheckpointRecord: one per checkpoint
    <ns>#<checkpoint_id>#<task>     WritesRecord: the pending writes of one task there

A checkpoint record holds the sealed body (everything but channel values, plus the
parent id), sealed metadata, a sealed (thread id, namespace) reference so `list(None)`
can name every thread, the keyed run id (for `delete_for_runs`), the leaves of the
objects holding its channel values, and small sealed values inline.

A writes record holds every write of one task at one checkpoint: each sealed inline, or
a reference to an object (`<leaf>.<channel tag>`), and optionally one bundle object with
a task's regular writes when there are more than one update may carry.

How these become DynamoDB items is the DynamoDB adapter's business
(`backends/dynamodb.py`); the in-memory index keeps them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from langgraph.checkpoint.s3dynamo.naming import SEPARATOR, parse_sk


class ItemKey(NamedTuple):
    """Primary key of one record in the index."""

    pk: str
    sk: str


@dataclass
class CheckpointRecord:
    pk: str
    sk: str
    body: bytes
    metadata: bytes
    thread_ref: bytes
    run_key: str | None = None
    objects: frozenset[str] = frozenset()
    # channel tag -> sealed value
    inline: dict[str, bytes] = field(default_factory=dict)

    @property
    def key(self) -> ItemKey:
        return ItemKey(self.pk, self.sk)

    @property
    def ns_name(self) -> str:
        return parse_sk(self.sk)[0]

    @property
    def checkpoint_id(self) -> str:
        return parse_sk(self.sk)[1]


@dataclass
class WritesRecord:
    pk: str
    sk: str
    task_ref: bytes
    # idx -> sealed write (bytes) or object reference (str, see `write_ref`)
    writes: dict[int, bytes | str] = field(default_factory=dict)
    bundle: str | None = None

    @property
    def key(self) -> ItemKey:
        return ItemKey(self.pk, self.sk)

    @property
    def checkpoint_id(self) -> str:
        return parse_sk(self.sk)[1]

    @property
    def owner_sk(self) -> str:
        """Sort key of the checkpoint record these writes belong to."""
        return owner_sk(self.sk)


Record = CheckpointRecord | WritesRecord


def owner_sk(sk: str) -> str:
    """Sort key of the checkpoint a record belongs to: itself, or a writes record's owner."""
    return sk.rsplit(SEPARATOR, 1)[0] if sk.count(SEPARATOR) == 2 else sk


def is_writes_key(sk: str) -> bool:
    return sk.count(SEPARATOR) == 2


def write_ref(leaf: str, channel_tag: str) -> str:
    """How a writes record points at a write kept in S3: the object leaf, then the keyed
    channel tag, so a reader can pick a channel's writes without fetching the others."""
    return f"{leaf}.{channel_tag}"


def split_write_ref(ref: str) -> tuple[str, str | None]:
    leaf, _, tag = ref.partition(".")
    return leaf, tag or None


def referenced_leaves(record: Record) -> set[str]:
    """Object leaves a record keeps alive (the mark phase of garbage collection)."""
    if isinstance(record, CheckpointRecord):
        return set(record.objects)
    leaves = {split_write_ref(v)[0] for v in record.writes.values() if isinstance(v, str)}
    if record.bundle is not None:
        leaves.add(record.bundle)
    return leaves


def pack_bundle(writes: dict[int, bytes]) -> bytes:
    """Concatenate sealed writes as `idx | length | blob`; each keeps its own seal."""
    out = bytearray()
    for idx, blob in sorted(writes.items()):
        out += idx.to_bytes(4, "big", signed=True) + len(blob).to_bytes(4, "big") + blob
    return bytes(out)


def unpack_bundle(data: bytes) -> dict[int, bytes]:
    """Inverse of `pack_bundle`; ValueError if the data is cut short."""
    writes: dict[int, bytes] = {}
    pos = 0
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("bundle is truncated")
        idx = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        blob = data[pos + 8 : pos + 8 + size]
        if len(blob) != size:
            raise ValueError("bundle is truncated")
        writes[idx] = blob
        pos += 8 + size
    return writes
