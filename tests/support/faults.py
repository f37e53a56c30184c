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
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable
from langgraph.checkpoint.s3dynamo.format.layout import (
    BORROW_PREFIX,
    JOURNAL_MARK,
    LOAN_PREFIX,
    is_deployment_pk,
)
from langgraph.checkpoint.s3dynamo.ports import BucketRegion, ObjectInfo
from langgraph.checkpoint.s3dynamo.table import Item, ItemKey, Page, Write, Written
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
        # Each request takes its number under the lock, so of requests sent in parallel
        # exactly one is request `at` (reading the count before taking a number could
        # let two parallel requests pass it by).
        with self._lock:
            self.count += 1
            number = self.count
            self.kinds.append(kind if writes else "read")
            self.modes.append(
                ("before", "after", "partial")
                if partial is not None
                else ("before", "after")
                if writes
                else ("before",)
            )
        self.before(number)
        if number != self.at:
            return apply()
        self.fired = True
        if self.mode == "after":
            apply()
        elif self.mode == "partial" and partial is not None:
            partial()
        raise Crash(f"injected fault at request {self.at} ({self.mode})")

    def before(self, number: int) -> None:
        """Called before request `number` is sent."""


class Race(Faults):
    """Counts requests as `Faults` does, failing none, and runs `act` once, just before
    request `at`: another process's operation, whole, at that point of this one."""

    def __init__(self, at: int, act: Any) -> None:
        super().__init__()
        self.race_at, self.act = at, act

    def before(self, number: int) -> None:
        if number == self.race_at:
            self.fired = True
            self.act()


class Paused(Faults):
    """Counts requests as `Faults` does and holds request `at` back, not yet sent, until
    `resume()`: a process stopped halfway through an operation (a frozen Lambda sandbox,
    a long pause) while another process goes on. With `dies`, that request then fails
    (`Crash`): the process never came back."""

    def __init__(self, at: int, dies: bool = False) -> None:
        super().__init__()
        self.pause_at, self.dies = at, dies
        self.reached, self._go = threading.Event(), threading.Event()

    def before(self, number: int) -> None:
        if number == self.pause_at:
            self.reached.set()
            if not self._go.wait(60):
                raise AssertionError(f"request {self.pause_at} was never let go")
            if self.dies:
                raise Crash(f"stopped for good before request {self.pause_at}")

    def resume(self) -> None:
        self._go.set()


# What the halted operations did, in this process: docs/RELIABILITY.md's counts
# (`tests/conftest.py` prints them at the end of a run without -n).
HALFWAY: Counter[str] = Counter()


class Halfway:
    """Another process's operation (`run`, given the requests' counter), started at one
    point of this one and stopped before its own request `at`; `finish()` lets it go on
    to its end (with `dies`, fail there instead) and raises what else it raised."""

    def __init__(
        self, run: Callable[[Faults], None], at: int, dies: bool = False, of: int = 0
    ) -> None:
        self.gate = Paused(at, dies)
        self.of = of  # how many requests the operation sends, run alone
        self.error: BaseException | None = None

        def body() -> None:
            try:
                run(self.gate)
            except BaseException as exc:  # re-raised by finish(), in the test's thread
                self.error = exc

        self.thread = threading.Thread(target=body, daemon=True)

    @classmethod
    def turn(cls, run: Callable[[Faults], None], turn: int, requests: int) -> Halfway:
        """The `turn`-th (from 0) halted operation of a sweep over the first's requests:
        its stop moves one request on with each turn, wrapping round its `requests`, and
        every other one dies there."""
        return cls(run, turn % requests + 1, turn % 2 == 1, requests)

    @property
    def dies(self) -> bool:
        return self.gate.dies

    def race(self, at: int) -> Race:
        """The race that starts it just before request `at` of the first operation."""
        return Race(at, self.start)

    def __str__(self) -> str:
        then = "for good" if self.dies else "then went on"
        return f"stopped before its request {self.gate.pause_at}/{self.of} ({then})"

    def start(self) -> None:
        """Run it until it stops at its request `at`, or ends before it."""
        self.thread.start()
        while not self.gate.reached.wait(0.005) and self.thread.is_alive():
            pass

    @property
    def stopped(self) -> bool:
        """Whether it stopped halfway (False: it ended before its request `at`)."""
        return self.gate.reached.is_set()

    def finish(self) -> None:
        HALFWAY["runs"] += 1
        HALFWAY["stopped halfway"] += self.stopped
        HALFWAY["for good"] += self.stopped and self.dies
        if not self.thread.is_alive() and self.thread.ident is None:
            self.thread.start()
        self.gate.resume()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the stopped operation never ended"
        if self.error is not None and not (self.gate.dies and isinstance(self.error, Crash)):
            raise self.error


class FaultyTable:
    """The table port with faults injected: each request counted, and told apart by what
    it writes (an upload intent, a loan or borrowing, or a thread's records and control
    items). The deployment's own partition passes through, but for the retention sweep's
    cursor, which is written around the thread operations faults target."""

    def __init__(self, inner: MemoryTable, faults: Faults) -> None:
        self.inner, self.faults = inner, faults

    @staticmethod
    def _passes(key: ItemKey) -> bool:
        return is_deployment_pk(key.pk) and not key.sk.startswith("sweep")

    @staticmethod
    def _kind(key: ItemKey) -> str:
        if JOURNAL_MARK in key.pk:
            return "intent"
        if key.sk.startswith((LOAN_PREFIX, BORROW_PREFIX)):
            return "loan"
        return "record"

    def get(self, key: ItemKey, *, consistent: bool = True) -> Item | None:
        if self._passes(key):
            return self.inner.get(key, consistent=consistent)
        return self.faults.request(lambda: self.inner.get(key, consistent=consistent), writes=False)

    def get_many(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> list[Item]:
        return self.faults.request(
            lambda: self.inner.get_many(keys, consistent=consistent), writes=False
        )

    def query(self, partition: str, **query: Any) -> Page:
        if is_deployment_pk(partition):
            return self.inner.query(partition, **query)
        return self.faults.request(lambda: self.inner.query(partition, **query), writes=False)

    def scan(self, **scan: Any) -> Page:
        return self.faults.request(lambda: self.inner.scan(**scan), writes=False)

    def write(self, write: Write, **options: Any) -> Written:
        if self._passes(write.key):
            return self.inner.write(write, **options)
        return self.faults.request(
            lambda: self.inner.write(write, **options), kind=self._kind(write.key)
        )

    def transact(self, writes: Sequence[Write]) -> None:
        self.faults.request(lambda: self.inner.transact(writes))

    def batch(self, puts: Sequence[Item] = (), deletes: Sequence[ItemKey] = ()) -> None:
        items: list[tuple[str, Any]] = [("put", i) for i in puts]
        items += [("delete", k) for k in deletes]
        for i in range(0, len(items), BATCH):
            chunk = items[i : i + BATCH]
            self.faults.request(lambda c=chunk: self._apply(c), lambda c=chunk: self._apply(c[::2]))

    def _apply(self, chunk: list[tuple[str, Any]]) -> None:
        self.inner.batch(
            [i for op, i in chunk if op == "put"], [k for op, k in chunk if op == "delete"]
        )

    def item_size(self, item: Mapping[str, Any]) -> int:
        return self.inner.item_size(item)  # no request

    def create_if_missing(self) -> bool:
        return self.inner.create_if_missing()


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
