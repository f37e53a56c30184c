"""Fault injection: the two ports wrapped so that request N of an operation fails, before
or after it is applied, and the checks that follow every injected fault.

`Faults` numbers every request the wrapped ports receive. At request `at` it raises
`Crash`: in mode "before" nothing of that request happens, in "after" it is applied first
(the answer is lost, as when a process dies or a connection drops after the service
acted), in "partial" (batches only) half of its items are applied. A batch is split into
requests of 25 items as DynamoDB's BatchWriteItem does.

After a fault the thread is read through a clean saver on the same stores: every
checkpoint in `get_state_history` must decode (every referenced object opens,
DeltaChannel history rebuilds), and what it shows must be a state the operation names
(see `Expect`). Then the operation is repeated without faults and must finish.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.ports import BucketRegion, Cursor, ObjectInfo, Page
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ControlRecord,
    Fence,
    HeadMove,
    ItemKey,
    Lease,
    Loan,
    Record,
    Stamp,
    UploadIntent,
    WritesRecord,
)
from tests.support.scenarios import snapshot_view

R = TypeVar("R")
BATCH = 25


class Crash(Exception):
    """The injected fault."""


class Faults:
    def __init__(self, at: int | None = None, mode: str = "before") -> None:
        self.at, self.mode, self.count = at, mode, 0
        self.fired = False
        # The modes that differ at each request: a read fails the same way before or
        # after; only a batch can be applied halfway.
        self.modes: list[tuple[str, ...]] = []
        self.kinds: list[str] = []
        self._lock = threading.Lock()

    def request(
        self,
        apply: Callable[[], R],
        partial: Callable[[], object] | None = None,
        *,
        writes: bool = True,
        kind: str = "record",
    ) -> R:
        with self._lock:
            self.count += 1
            hit = self.count == self.at
            self.kinds.append(kind if writes else "read")
            self.modes.append(
                ("before", "after", "partial")
                if partial is not None
                else ("before", "after")
                if writes
                else ("before",)
            )
        if not hit:
            return apply()
        self.fired = True
        if self.mode == "after":
            apply()
        elif self.mode == "partial" and partial is not None:
            partial()
        raise Crash(f"injected fault at request {self.at} ({self.mode})")


class FaultyIndex:
    """The `Index` port with faults injected."""

    def __init__(self, inner: MemoryIndex, faults: Faults) -> None:
        self.inner, self.faults = inner, faults

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
        return self.faults.request(
            lambda: self.inner.query(
                pk,
                prefix=prefix,
                between=between,
                descending=descending,
                limit=limit,
                cursor=cursor,
                consistent=consistent,
            ),
            writes=False,
        )

    def query_keys(self, pk: str, *, prefix: str | None = None) -> Iterator[ItemKey]:
        return self.faults.request(lambda: self.inner.query_keys(pk, prefix=prefix), writes=False)

    def run_checkpoints(self, run_key: str) -> list[ItemKey]:
        return self.faults.request(lambda: self.inner.run_checkpoints(run_key), writes=False)

    def put_checkpoint(
        self,
        record: CheckpointRecord,
        head: HeadMove | None,
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        self.faults.request(lambda: self.inner.put_checkpoint(record, head, fence, intent))

    def merge_writes(
        self,
        record: WritesRecord,
        last_wins: frozenset[int],
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        self.faults.request(lambda: self.inner.merge_writes(record, last_wins, fence, intent))

    def put_intent(self, intent: UploadIntent) -> None:
        self.faults.request(lambda: self.inner.put_intent(intent), kind="intent")

    def intents_before(self, pk: str, upper_sk: str) -> list[UploadIntent]:
        return self.faults.request(lambda: self.inner.intents_before(pk, upper_sk), writes=False)

    def lend(self, lender: str, borrower: str, leaves: Collection[str]) -> None:
        # One request per part, as DynamoDB takes them (tests stay far below a part).
        self.faults.request(lambda: self.inner.lend(lender, borrower, leaves), kind="loan")

    def unlend(self, loan: Loan, leaves: Collection[str]) -> None:
        if set(leaves) & loan.leaves:
            self.faults.request(lambda: self.inner.unlend(loan, leaves), kind="loan")

    def loans(self, lender: str, borrower: str | None = None) -> list[Loan]:
        return self.faults.request(lambda: self.inner.loans(lender, borrower), writes=False)

    def control_keys(self, thread_name: str) -> list[ItemKey]:
        return self.faults.request(lambda: self.inner.control_keys(thread_name), writes=False)

    def put_borrowing(self, borrower: str, lender: str) -> None:
        self.faults.request(lambda: self.inner.put_borrowing(borrower, lender), kind="loan")

    def drop_heads(self, thread_name: str, ns_names: Collection[str] | None = None) -> None:
        self.faults.request(lambda: self.inner.drop_heads(thread_name, ns_names))

    def acquire_lease(self, key: ItemKey, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
        return self.faults.request(lambda: self.inner.acquire_lease(key, owner, now_ms, ttl_ms))

    def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        return self.faults.request(lambda: self.inner.renew_lease(lease, now_ms, ttl_ms))

    def release_lease(self, lease: Lease) -> None:
        self.faults.request(lambda: self.inner.release_lease(lease))

    def replace_if_unchanged(self, old: Record, new: Record) -> bool:
        return self.faults.request(lambda: self.inner.replace_if_unchanged(old, new))

    def delete_items(self, keys: Iterable[ItemKey]) -> None:
        keys = list(keys)
        self.faults.request(lambda: self.inner.delete_items(keys))

    def item_size(self, record: Record) -> int:
        return self.inner.item_size(record)  # no request

    def write_batch(self, puts: Iterable[Record] = (), deletes: Iterable[ItemKey] = ()) -> None:
        items: list[tuple[str, Any]] = [("put", r) for r in puts]
        items += [("delete", k) for k in deletes]
        for i in range(0, len(items), BATCH):
            chunk = items[i : i + BATCH]
            self.faults.request(lambda c=chunk: self._apply(c), lambda c=chunk: self._apply(c[::2]))

    def _apply(self, chunk: list[tuple[str, Any]]) -> None:
        self.inner.write_batch(
            puts=[r for op, r in chunk if op == "put"],
            deletes=[k for op, k in chunk if op == "delete"],
        )

    def scan(self, prefix: str = "") -> Iterator[Record]:
        return self.faults.request(lambda: self.inner.scan(prefix), writes=False)

    def scan_stamps(
        self, segment: int = 0, segments: int = 1, prefix: str = ""
    ) -> Iterator[list[Stamp]]:
        return self.faults.request(
            lambda: self.inner.scan_stamps(segment, segments, prefix), writes=False
        )

    def partition_stamps(self, pk: str) -> list[Stamp]:
        return self.faults.request(lambda: self.inner.partition_stamps(pk), writes=False)

    def put_heads(self, thread_name: str, heads: Mapping[str, str]) -> None:
        self.faults.request(lambda: self.inner.put_heads(thread_name, heads))

    def idle_query(self, partition: str, prefix: str = "") -> Iterator[list[ItemKey]]:
        return self.faults.request(lambda: self.inner.idle_query(partition, prefix), writes=False)

    def set_idle(self, key: ItemKey, to: str, was: str | None) -> bool:
        return self.faults.request(lambda: self.inner.set_idle(key, to, was))

    # The control partition (deployment record) passes through: faults target threads,
    # and the retention sweep's cursor, which is written around them.
    def read_control(self, pk: str) -> dict[str, ControlRecord]:
        return self.inner.read_control(pk)

    def put_control(self, pk: str, record: ControlRecord, expected_version: int | None) -> bool:
        if record.name.startswith("sweep"):
            return self.faults.request(lambda: self.inner.put_control(pk, record, expected_version))
        return self.inner.put_control(pk, record, expected_version)

    def create_if_missing(self) -> bool:
        return self.inner.create_if_missing()

    def bucket_region(self) -> BucketRegion | None:
        return self.inner.bucket_region()


class FaultyObjects:
    """The `ObjectStore` port with faults injected."""

    def __init__(self, inner: MemoryObjects, faults: Faults) -> None:
        self.inner, self.faults = inner, faults

    def put_new(self, key: str, body: bytes) -> bool:
        return self.faults.request(lambda: self.inner.put_new(key, body), kind="object")

    def overwrite(self, key: str, body: bytes) -> None:
        self.faults.request(lambda: self.inner.overwrite(key, body), kind="object")

    def get(self, key: str) -> bytes:
        return self.faults.request(lambda: self.inner.get(key), writes=False)

    def stat(self, key: str) -> ObjectInfo | None:
        return self.faults.request(lambda: self.inner.stat(key), writes=False)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self.faults.request(lambda: self.inner.list(prefix), writes=False)

    def delete(self, keys: Sequence[str]) -> None:
        self.faults.request(
            lambda: self.inner.delete(keys), lambda: self.inner.delete(list(keys)[::2])
        )

    def delete_unchanged(self, objects: Sequence[ObjectInfo]) -> builtins.list[str]:
        return self.faults.request(
            lambda: self.inner.delete_unchanged(objects),
            lambda: self.inner.delete_unchanged(list(objects)[::2]),
        )

    def probe(self, prefix: str) -> None:
        self.inner.probe(prefix)

    def create_if_missing(self) -> bool:
        return self.inner.create_if_missing()

    def bucket_region(self) -> BucketRegion | None:
        return self.inner.bucket_region()


# ------------------------------------------------------------------ what a reader sees

# (checkpoint id, what a user reads there), newest first.
History = list[tuple[str, dict[str, Any]]]


def read_history(graph: Any, tid: str) -> History:
    """Every checkpoint of a thread as a user reads it; raises if any fails to open."""
    config = {"configurable": {"thread_id": tid}}
    out: History = []
    for s in graph.get_state_history(config):
        view = snapshot_view(s)
        out.append((s.config["configurable"]["checkpoint_id"], view))
    # The latest state opens too (LangGraph applies its finished tasks' pending writes
    # here, so it may differ from the history's first entry).
    graph.get_state(config)
    return out


# The methods of the table (`table.Table`) and of the object store that send requests:
# what `CrashingPort` counts around either for the Store's operations.
REQUESTS = frozenset(
    {
        "get",
        "get_many",
        "query",
        "scan",
        "write",
        "transact",
        "batch",
        "put_new",
        "overwrite",
        "delete",
    }
)


def is_request(name: str) -> bool:
    return name in REQUESTS


class CrashingPort:
    """Any port, wrapped so that call number `at` of the methods `counted` picks (shared
    by every port with the same `counter`) raises `Crash`, before the call or after it
    is applied: for the Store's multi-request operations, around the table (`is_request`)
    and the object store."""

    def __init__(
        self,
        inner: Any,
        counter: list[int],
        at: int,
        after: bool,
        counted: Callable[[str], bool],
    ) -> None:
        self._inner, self._counter, self._at, self._after = inner, counter, at, after
        self._counted = counted

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target) or not self._counted(name):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self._counter[0] += 1
            if self._counter[0] == self._at and not self._after:
                raise Crash(name)
            out = target(*args, **kwargs)
            if self._counter[0] == self._at:
                raise Crash(name)
            return out

        return call
