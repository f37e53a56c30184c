"""The table port in memory: what DynamoDB does with the same requests, for the unit tier
and as the template of another backend. It evaluates the port's conditions and updates
(`table.holds`, `table.applied`), keeps sort-key order and DynamoDB's limits (items of
at most 400 KB, pages of at most 1 MB, 25 items a batch write, 100 keys a batch get, 100
writes and 4 MB a transaction, all or nothing), and counts every request under the name
DynamoDB gives it, so one budget test holds on both. Items are copied in and out: a
caller's later change never reaches what is stored. Reads are always current: it has no
replicas to lag."""

from __future__ import annotations

import copy
import threading
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.errors import ItemTooLargeError, StorageError, StoreMissingError
from langgraph.checkpoint.s3dynamo.format.schema import INDEX_KEYS, PARTITION_KEY, SORT_KEY
from langgraph.checkpoint.s3dynamo.table import (
    BATCH_GET_MAX,
    BATCH_WRITE_MAX,
    ITEM_BYTES,
    PAGE_BYTES,
    TRANSACT_BYTES,
    TRANSACT_MAX,
    Check,
    Item,
    ItemKey,
    Page,
    Put,
    Update,
    Value,
    When,
    Write,
    Written,
    applied,
    holds,
    item_size,
    key_of,
    refused,
)


class MemoryTable:
    """The table port in memory (module docstring). `calls` counts requests by
    DynamoDB's operation names (`Query`, `TransactWriteItems`, ...)."""

    def __init__(self, *, exists: bool = True) -> None:
        self.exists = exists
        self.calls: Counter[str] = Counter()
        self._partitions: dict[str, dict[str, Item]] = {}
        self._lock = threading.Lock()

    def _count(self, operation: str, n: int = 1) -> None:
        if not self.exists:
            raise StoreMissingError("in-memory table does not exist; call create_if_missing()")
        self.calls[operation] += n
        for _ in range(n):
            telemetry.request("memory-index", operation)

    def _find(self, key: ItemKey) -> Item | None:
        return self._partitions.get(key.pk, {}).get(key.sk)

    def _store(self, key: ItemKey, item: Item | None) -> None:
        if item is None:
            partition = self._partitions.get(key.pk, {})
            partition.pop(key.sk, None)
            if not partition:
                self._partitions.pop(key.pk, None)
        else:
            self._partitions.setdefault(key.pk, {})[key.sk] = copy.deepcopy(item)

    # ------------------------------------------------------------------ reads

    def get(self, key: ItemKey, *, consistent: bool = True) -> Item | None:
        with self._lock:
            self._count("GetItem")
            return copy.deepcopy(self._find(key))

    def get_many(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> list[Item]:
        unique = list(dict.fromkeys(keys))
        with self._lock:
            self._count("BatchGetItem", -(-len(unique) // BATCH_GET_MAX))
            found = [self._find(k) for k in unique]
            return [copy.deepcopy(i) for i in found if i is not None]

    def query(
        self,
        partition: str,
        *,
        where: When | None = None,
        index: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        cursor: Item | None = None,
        consistent: bool = False,
        filter: When | None = None,
        attributes: Sequence[str] | None = None,
    ) -> Page:
        hash_key, range_key = INDEX_KEYS[index]
        with self._lock:
            self._count("Query")
            if index is None:
                candidates = list(self._partitions.get(partition, {}).values())
            else:
                candidates = [i for i in self._every() if i.get(hash_key) == partition]
            chosen = [i for i in candidates if range_key in i]
            if where is not None:
                chosen = [i for i in chosen if holds(where, i)]
            return self._paged(chosen, range_key, descending, limit, cursor, filter, attributes)

    def scan(
        self,
        *,
        segment: int = 0,
        segments: int = 1,
        cursor: Item | None = None,
        filter: When | None = None,
        attributes: Sequence[str] | None = None,
    ) -> Page:
        with self._lock:
            self._count("Scan")
            # Segments split the items by partition key, in no order a reader relies on.
            chosen = [
                i
                for i in self._every()
                if zlib.crc32(str(i[PARTITION_KEY]).encode()) % segments == segment
            ]
            return self._paged(chosen, PARTITION_KEY, False, None, cursor, filter, attributes)

    def _every(self) -> Iterator[Item]:
        for partition in self._partitions.values():
            yield from partition.values()

    def _paged(
        self,
        items: list[Item],
        range_key: str,
        descending: bool,
        limit: int | None,
        cursor: Item | None,
        filter: When | None,
        attributes: Sequence[str] | None,
    ) -> Page:
        def position(item: Mapping[str, Value]) -> tuple[str, str, str]:
            return (str(item[range_key]), str(item[PARTITION_KEY]), str(item[SORT_KEY]))

        ordered = sorted(items, key=position, reverse=descending)
        if cursor is not None:
            after = position(cursor)
            ordered = [
                i for i in ordered if (position(i) < after if descending else position(i) > after)
            ]
        page: list[Item] = []
        size = 0
        for item in ordered:
            if (limit is not None and len(page) == limit) or size >= PAGE_BYTES:
                break
            page.append(item)
            size += item_size(item)
        more = len(page) < len(ordered)
        last = page[-1] if page and more else None
        kept = [i for i in page if filter is None or holds(filter, i)]
        if attributes is not None:
            wanted = {PARTITION_KEY, SORT_KEY, range_key, *attributes}
            kept = [{k: v for k, v in i.items() if k in wanted} for i in kept]
        next_cursor = None
        if last is not None:
            next_cursor = {k: last[k] for k in (PARTITION_KEY, SORT_KEY, range_key) if k in last}
        return Page(copy.deepcopy(kept), next_cursor)

    # ----------------------------------------------------------------- writes

    def write(
        self,
        write: Write,
        *,
        returning: Literal["old", "new"] | None = None,
        found_on_refusal: bool = False,
    ) -> Written:
        if isinstance(write, Check):
            raise ValueError("a condition check goes in a transaction, beside what it guards")
        name = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}
        with self._lock:
            self._count(name[type(write).__name__])
            _valid(write)
            old = self._find(write.key)
            if write.when is not None and not holds(write.when, old):
                if write.refusal is not None:
                    raise refused(write, copy.deepcopy(old))
                return Written(False, copy.deepcopy(old) if found_on_refusal else None)
            new = applied(write, old)
            _fits(name[type(write).__name__], [new])
            self._store(write.key, new)
            answer = old if returning == "old" else new if returning == "new" else None
            return Written(True, copy.deepcopy(answer))

    def transact(self, writes: Sequence[Write]) -> None:
        keys = [w.key for w in writes]
        if len(writes) > TRANSACT_MAX or len(set(keys)) < len(keys):
            raise ValueError(
                f"a transaction takes at most {TRANSACT_MAX} writes on distinct items; "
                f"got {len(writes)} on {len(set(keys))}"
            )
        with self._lock:
            self._count("TransactWriteItems")
            for write in writes:
                _valid(write)
            for write in writes:
                found = self._find(write.key)
                if write.when is not None and not holds(write.when, found):
                    raise refused(write, copy.deepcopy(found))
            after = [applied(write, self._find(write.key)) for write in writes]
            _fits("TransactWriteItems", after)
            total = sum(item_size(i) for i in after if i is not None)
            if total > TRANSACT_BYTES:
                raise StorageError(
                    "TransactWriteItems on the in-memory table failed: ValidationException: "
                    f"the items of a transaction exceed 4 MB ({total:,} bytes)"
                )
            for write, new in zip(writes, after, strict=True):
                self._store(write.key, new)

    def batch(self, puts: Sequence[Item] = (), deletes: Sequence[ItemKey] = ()) -> None:
        requests = len(puts) + len(deletes)
        with self._lock:
            self._count("BatchWriteItem", -(-requests // BATCH_WRITE_MAX))
            _fits("BatchWriteItem", puts)
            for item in puts:
                self._store(key_of(item), applied(Put(dict(item)), None))
            for key in deletes:
                self._store(key, None)

    # ---------------------------------------------------------------- the table

    def item_size(self, item: Mapping[str, Value]) -> int:
        return item_size(item)

    def create_if_missing(self) -> bool:
        created, self.exists = not self.exists, True
        return created

    # ------------------------------------------------------ for tests, no request

    def items(self) -> list[Item]:
        """Every item stored, in key order."""
        with self._lock:
            return copy.deepcopy(
                [
                    self._partitions[pk][sk]
                    for pk in sorted(self._partitions)
                    for sk in sorted(self._partitions[pk])
                ]
            )

    def clone(self) -> MemoryTable:
        """An independent copy of everything stored (tests fork a store this way)."""
        twin = type(self)(exists=self.exists)
        twin.load(self.items())
        return twin

    def load(self, items: Sequence[Item]) -> None:
        """Store these items as they are, no request counted."""
        with self._lock:
            for item in items:
                self._store(key_of(item), item)


def _valid(write: Write) -> None:
    """Refuse what DynamoDB refuses before it looks at the item: one attribute named by
    two parts of an update."""
    if not isinstance(write, Update):
        return
    names = [*write.set, *write.keep, *write.remove, *write.add, *write.take]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise StorageError(
            f"UpdateItem on the in-memory table failed: ValidationException: two document "
            f"paths overlap ({', '.join(twice)}); change each attribute once per update"
        )


def _fits(operation: str, items: Sequence[Item | None]) -> None:
    """Refuse, before anything is stored, an item over DynamoDB's 400 KB, as it does."""
    sizes = [item_size(i) for i in items if i is not None]
    if sizes and max(sizes) > ITEM_BYTES:
        raise ItemTooLargeError(
            f"{operation} on the in-memory table: DynamoDB would refuse an item over its "
            f"400 KB limit ({max(sizes):,} bytes, the limit {ITEM_BYTES:,}), which retrying "
            "does not fix"
        )
