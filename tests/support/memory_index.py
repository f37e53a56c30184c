"""The in-memory table with views of what it holds, for tests that inspect raw storage:
records, marks, heads, leases, intents, loans, the thread catalog, the deployment's records
and the Store's items, each parsed by its format (no request counted); a watch that sees
each request before it is applied (`Backend.before_request`); and another process on the
same items (`Process`)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable
from langgraph.checkpoint.s3dynamo.format.layout import (
    CATALOG_REF,
    DESCENDANTS_SK,
    HEAD_PREFIX,
    JOURNAL_MARK,
    LEASE_SK,
    LOAN_PREFIX,
    is_catalog_pk,
    is_control_pk,
    is_deployment_pk,
    is_mark_key,
    memory_scope,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    HEAD,
    LEASE_EXPIRES,
    LEASE_OWNER,
    LEASE_TOKEN,
    ControlRecord,
    ItemKey,
    Mark,
    Record,
    UploadIntent,
    control_from,
    intent_from,
    loan_from,
    mark_from,
    record_from,
)
from langgraph.checkpoint.s3dynamo.memory.rows import (
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    entry_from,
    index_from,
    row_from,
)
from langgraph.checkpoint.s3dynamo.table import Item, Page, Write, Written, key_of


class MemoryIndex(MemoryTable):
    """The in-memory table, with views of what is stored for tests that inspect raw
    storage (no request counted). `watch`, when set, is called before each call of the
    table port with the keys it writes (none for a read; a batch's, all of them)."""

    watch: Callable[[builtins.list[ItemKey]], None] | None = None

    def _seen(self, keys: builtins.list[ItemKey]) -> None:
        if self.watch is not None:
            self.watch(keys)

    def get(self, key: ItemKey, *, consistent: bool = True) -> Item | None:
        self._seen([])
        return super().get(key, consistent=consistent)

    def get_many(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> builtins.list[Item]:
        self._seen([])
        return super().get_many(keys, consistent=consistent)

    def query(self, partition: str, **query: Any) -> Page:
        self._seen([])
        return super().query(partition, **query)

    def scan(self, **scan: Any) -> Page:
        self._seen([])
        return super().scan(**scan)

    def write(self, write: Write, **options: Any) -> Written:
        self._seen([write.key])
        return super().write(write, **options)

    def transact(self, writes: Sequence[Write]) -> None:
        self._seen([w.key for w in writes])
        super().transact(writes)

    def batch(self, puts: Sequence[Item] = (), deletes: Sequence[ItemKey] = ()) -> None:
        self._seen([key_of(i) for i in puts] + builtins.list(deletes))
        super().batch(puts, deletes)

    def clone(self) -> MemoryIndex:
        """An independent copy of everything stored (tests fork a store this way)."""
        twin = MemoryIndex(exists=self.exists)
        twin.load(self.items())
        return twin

    def _kinds(self) -> dict[str, list[Item]]:
        kinds: dict[str, list[Item]] = {}
        for item in self.items():
            kinds.setdefault(_kind(item), []).append(item)
        return kinds

    def records(self) -> builtins.list[Record]:
        return [record_from(i) for i in self._kinds().get("record", [])]

    def marks(self) -> builtins.list[Mark]:
        return [mark_from(i) for i in self._kinds().get("mark", [])]

    @property
    def heads(self) -> dict[ItemKey, str]:
        return {key_of(i): str(i[HEAD]) for i in self._kinds().get("head", [])}

    @property
    def leases(self) -> dict[ItemKey, tuple[str, int, int]]:
        """Lease key -> (holder, fencing token, expiry in ms)."""
        out = {}
        for item in self._kinds().get("lease", []):
            token, expires = item.get(LEASE_TOKEN, 0), item.get(LEASE_EXPIRES, 0)
            assert isinstance(token, int) and isinstance(expires, int)
            out[key_of(item)] = (str(item.get(LEASE_OWNER, "")), token, expires)
        return out

    @property
    def intents(self) -> dict[ItemKey, UploadIntent]:
        return {key_of(i): intent_from(i) for i in self._kinds().get("intent", [])}

    @property
    def loan_items(self) -> dict[ItemKey, set[str]]:
        return {key_of(i): set(loan_from(i).leaves) for i in self._kinds().get("loan", [])}

    @property
    def borrowings(self) -> set[ItemKey]:
        return {key_of(i) for i in self._kinds().get("borrowing", [])}

    @property
    def control(self) -> dict[str, dict[str, ControlRecord]]:
        out: dict[str, dict[str, ControlRecord]] = {}
        for item in self._kinds().get("control", []):
            record = control_from(item)
            out.setdefault(str(item["pk"]), {})[record.name] = record
        return out

    def memory_rows(self) -> builtins.list[MemoryRow]:
        return [row_from(i) for i in self._kinds().get("memory", [])]

    def directory_entries(self) -> builtins.list[DirectoryEntry]:
        return [entry_from(i) for i in self._kinds().get("directory", [])]

    def index_items(self) -> builtins.list[IndexItem]:
        return [index_from(i) for i in self._kinds().get("search", [])]

    def catalog_keys(self) -> builtins.list[ItemKey]:
        """Keys of the thread catalog's entries and of their back-references."""
        return [key_of(i) for i in self._kinds().get("catalog", [])]

    def marked_partitions(self) -> builtins.list[str]:
        return sorted(str(i["pk"]) for i in self._kinds().get("descendants", []))


def _kind(item: Item) -> str:
    """What an item of the table is, by its keys."""
    pk, sk = str(item["pk"]), str(item["sk"])
    scope = memory_scope(pk)
    if scope is not None:
        if scope[2] is None:
            return "directory"
        if sk == DESCENDANTS_SK:
            return "descendants"
        return "search" if sk.startswith(DESCENDANTS_SK) else "memory"
    if is_deployment_pk(pk):
        return "control"
    if JOURNAL_MARK in pk:
        return "intent"
    if is_catalog_pk(pk) or sk.startswith(CATALOG_REF):
        return "catalog"
    if is_control_pk(pk):
        if sk.startswith(HEAD_PREFIX):
            return "head"
        if sk == LEASE_SK:
            return "lease"
        return "loan" if sk.startswith(LOAN_PREFIX) else "borrowing"
    return "mark" if is_mark_key(sk) else "record"


class Process:
    """Another process on the same storage: its own table adapter object, hence its own
    leases and memory of its writes, over the same items. `before(match, action)` runs
    `action` once, before the first write (alone or in a transaction) that `match`
    accepts."""

    def __init__(self, inner: MemoryIndex) -> None:
        self.table = inner
        self._hooks: list[tuple[Callable[[Write], bool], Callable[[], None]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)

    def before(self, match: Callable[[Write], bool], action: Callable[[], None]) -> None:
        self._hooks.append((match, action))

    def _fire(self, writes: Sequence[Write]) -> None:
        for hook in list(self._hooks):
            if any(hook[0](w) for w in writes):
                self._hooks.remove(hook)
                hook[1]()

    def write(self, write: Write, **options: Any) -> Written:
        self._fire([write])
        return self.table.write(write, **options)

    def transact(self, writes: Sequence[Write]) -> None:
        self._fire(writes)
        self.table.transact(writes)
