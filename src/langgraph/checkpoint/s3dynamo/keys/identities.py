"""What a stored blob or name stands for, as small values: a checkpoint, a channel value,
a pending write. The codec binds a blob to one (its associated data, `codec.py`) and the
namer derives names from one (`naming.py`), so callers pass one value instead of four
to six strings in an order each signature must repeat.

Named tuples: they are built for every value of every put, and a tuple is the cheapest
object Python makes. Their fields are in the order the sealed and hashed formats list
them (docs/FORMAT.md), which `codec.py` and `naming.py` rely on.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from langgraph.checkpoint.s3dynamo.config.runnable_config import describe

# 100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch.
_UUID_EPOCH = 0x01B21DD213814000


def checkpoint_time(checkpoint_id: str) -> float | None:
    """When a checkpoint was made, in seconds since the epoch (to 100 ns), as its id says
    (a UUIDv6, as LangGraph makes them, or a v1); None for an id of another form."""
    try:
        u = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if u.version == 6:
        ticks = ((u.int >> 80) << 12) | ((u.int >> 64) & 0x0FFF)
    elif u.version == 1:
        ticks = u.time
    else:
        return None
    return (ticks - _UUID_EPOCH) / 10_000_000


class CheckpointAt(NamedTuple):
    """A checkpoint by identity: thread id, namespace, checkpoint id."""

    tid: str
    ns: str
    checkpoint_id: str

    @property
    def what(self) -> str:
        return describe(self.tid, self.ns, self.checkpoint_id)

    def write(self, task_id: str, idx: int) -> WriteAt:
        """The pending write `idx` of task `task_id` at this checkpoint."""
        return WriteAt(self.tid, self.ns, self.checkpoint_id, task_id, idx)


class ValueAt(NamedTuple):
    """A channel value by identity: thread id, namespace, channel, version. No checkpoint:
    a value is stored once per version, and every checkpoint holding it shares it."""

    tid: str
    ns: str
    channel: str
    version: str


class WriteAt(NamedTuple):
    """A pending write by identity: its checkpoint's (thread id, namespace, checkpoint id),
    then the task id and the write's index within the task."""

    tid: str
    ns: str
    checkpoint_id: str
    task_id: str
    idx: int
