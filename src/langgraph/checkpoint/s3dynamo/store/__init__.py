"""The storage protocol of a thread, in parts: how checkpoints and writes are found,
walked, decoded, committed and deleted. The saver, history, garbage collection,
maintenance, retention and the command line all build on a `ThreadStore`; only it
decides where a value lives.

    finder.py     finding records and grouping them into checkpoints (`Entry`)
    walker.py     the one walk over a checkpoint's blobs, and how each opens
    decoder.py    entries into LangGraph's checkpoint tuples; history skeletons
    committer.py  placing, sealing and committing checkpoints and writes
    deleter.py    deleting records and objects: marks first, full batches, marks last
    objects.py    object reads and writes in waves, through one cache
    cache.py      the one cache type (least recently used)
    fences.py     which leases this context holds
    ports.py      the ports, built on first use
    scope.py      the deployment's share of a table that tenants share

The storage layout is in `layout.py`; the commit protocol in `committer.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

from langgraph.checkpoint.s3dynamo import runs
from langgraph.checkpoint.s3dynamo.codec import Codec
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.ports import ControlItems, ObjectStore, RecordIndex, TableScan
from langgraph.checkpoint.s3dynamo.sealing import Sealer
from langgraph.checkpoint.s3dynamo.store.cache import Lru
from langgraph.checkpoint.s3dynamo.store.committer import Committer
from langgraph.checkpoint.s3dynamo.store.decoder import Decoder, Skeleton
from langgraph.checkpoint.s3dynamo.store.deleter import Deleter
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder, Skipped, warn_skipped
from langgraph.checkpoint.s3dynamo.store.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.store.ports import Ports
from langgraph.checkpoint.s3dynamo.store.scope import Scope
from langgraph.checkpoint.s3dynamo.store.walker import StoredValues, Walker

__all__ = ["Entry", "Skeleton", "Skipped", "ThreadStore", "warn_skipped"]

# Checkpoints whose stored values are kept for the next put on them.
CARRY_CACHE_SIZE = 256

_Part = TypeVar("_Part")


class ThreadStore:
    """A deployment's threads on its ports, in parts (module docstring). The ports are
    built on first use, so constructing one makes no request."""

    def __init__(
        self,
        *,
        records: Callable[[], RecordIndex],
        control: Callable[[], ControlItems],
        scans: Callable[[], TableScan],
        objects: Callable[[], ObjectStore],
        namer: Namer,
        codec: Codec,
        sealer: Sealer,
        prefix: str,
        inline_max: int,
        delta_max: int,
        cache_bytes: int,
        detect_concurrent_runs: bool = True,
    ) -> None:
        self.ports = Ports(records=records, control=control, scans=scans, objects=objects)
        self.namer = namer
        self.codec = codec
        self.sealer = sealer
        self.prefix = prefix
        self.scope = Scope(self.ports, prefix)
        self.objects = ObjectIO(self.ports, namer, cache_bytes)
        self.finder = Finder(self.ports, namer, codec, sealer, self.scope)
        self.walker = Walker(namer, codec, self.objects)
        carry: Lru[tuple[str, str, str], StoredValues] = Lru(CARRY_CACHE_SIZE)
        self.decoder = Decoder(self.walker, codec, self.objects, carry)
        self.committer = Committer(
            ports=self.ports,
            finder=self.finder,
            walker=self.walker,
            objects=self.objects,
            namer=namer,
            codec=codec,
            sealer=sealer,
            inline_max=inline_max,
            delta_max=delta_max,
            detect_concurrent_runs=detect_concurrent_runs,
            carry=carry,
            store_id=id(self),
        )
        self.deleter = Deleter(self.ports, self.finder, self.objects, namer, self.now)

    def with_codec(self, codec: Codec) -> ThreadStore:
        """This store serializing through another codec (a saver's copy with its own
        serializer, `S3DynamoSaver.__copy__`). Only the parts that hold the codec are new,
        shallow copies: ports, object cache, carried values, kept skeletons, opened bases,
        run records and leases (keyed by the committer's `store_id`) stay shared."""
        clone = copy.copy(self)
        clone.codec = codec
        clone.finder = _rebound(self.finder, codec=codec)
        clone.walker = _rebound(self.walker, codec=codec)
        clone.decoder = _rebound(self.decoder, walker=clone.walker, codec=codec)
        clone.committer = _rebound(
            self.committer, finder=clone.finder, walker=clone.walker, codec=codec
        )
        clone.deleter = _rebound(self.deleter, finder=clone.finder)
        return clone

    @property
    def records(self) -> RecordIndex:
        return self.ports.records

    @property
    def control(self) -> ControlItems:
        return self.ports.control

    @property
    def scans(self) -> TableScan:
        return self.ports.scans

    @property
    def clock(self) -> Callable[[], float]:
        """What stamps records (`written_at`) and judges idleness; tests replace it."""
        return self.committer.clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self.committer.clock = value

    def now(self) -> int:
        return self.committer.now()

    def thread_name(self, tid: str) -> str:
        return self.namer.thread(tid)

    def forget(self) -> None:
        """Drop what is cached about stored records (after anything rewrote them)."""
        self.decoder.carry.clear()
        self.decoder.skeletons.clear()
        self.committer.bases.clear()

    def delete_thread(self, tid: str) -> int:
        """Delete a thread whole (`Deleter.delete_thread`); how many records and objects."""
        found = self.deleter.delete_thread(tid)
        self.forget()
        return found

    # ------------------------------------------------- what a run continues

    def loaded(self, tid: str, ns: str, latest_id: str | None) -> None:
        """This context's run loaded the namespace: as the latest, getting `latest_id`
        (`runs.EMPTY` if it was empty), or (None) by id or by position. Call it in the
        caller's context, not in a worker thread's copy (see `runs.py`)."""
        runs.loaded(self.committer.run_key(tid, ns), latest_id)

    def loaded_thread(self, tid: str) -> None:
        """This context's run listed every namespace of the thread."""
        runs.loaded_thread(self.committer.store_id, self.namer.thread(tid))


def _rebound(part: _Part, **attributes: Any) -> _Part:
    """A shallow copy of a store part with some attributes replaced; its caches are the
    same objects as the original's."""
    clone = copy.copy(part)
    vars(clone).update(attributes)
    return clone
