"""The table port: one table of neutral items, a few generic requests, and the small
vocabulary of conditions and updates every stored format is written in.

An item is a plain dict of attribute name to value: `str`, `bytes`, `int` or `float` (a
number), a `frozenset` of `str` (a string set, never empty), or a dict of such values (a
map). Every item holds its keys, `pk` and `sk`. The formats (`records.py`, `memory/rows.py`)
build and parse items; the adapters (`backends/dynamodb.py`, `backends/memory_table.py`) only
store them, so a new kind of item touches no adapter.

A write is a `Put`, an `Update` or a `Delete`, each with an optional condition (`When`)
and the error a refused condition means (`refusal`). One write is one request
(`Table.write`); several are one atomic request (`Table.transact`), or, unconditional,
full batches (`Table.batch`). Every method is one request, or a bounded set of requests
of one kind (batches of 25 or 100): request budgets are counted at this boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias

from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError
from langgraph.checkpoint.s3dynamo.format.schema import PARTITION_KEY, SORT_KEY

Scalar: TypeAlias = str | bytes | int | float
Value: TypeAlias = Scalar | frozenset[str] | Mapping[str, "Value"]
Item: TypeAlias = dict[str, Value]


class ItemKey(NamedTuple):
    """Primary key of one item."""

    pk: str
    sk: str


def key_of(item: Mapping[str, Value]) -> ItemKey:
    return ItemKey(str(item[PARTITION_KEY]), str(item[SORT_KEY]))


def keyed(key: ItemKey, **attributes: Value) -> Item:
    """An item with these keys and attributes."""
    return {PARTITION_KEY: key.pk, SORT_KEY: key.sk, **attributes}


# ------------------------------------------------------------------ conditions
# Conditions and writes are named tuples, cheap to create at import (a dataclass's
# methods are compiled class by class): two of different kinds with the same fields
# compare equal, so tell kinds apart with isinstance, never with ==.


class Exists(NamedTuple):
    attribute: str


class Missing(NamedTuple):
    attribute: str


class Compare(NamedTuple):
    """`attribute <op> value`; false where the attribute is absent."""

    attribute: str
    op: Literal["=", "<", "<=", ">", ">="]
    value: Scalar


class Between(NamedTuple):
    """`low <= attribute <= high`."""

    attribute: str
    low: Scalar
    high: Scalar


class BeginsWith(NamedTuple):
    attribute: str
    prefix: str


class All(NamedTuple):
    parts: tuple[When, ...]


class AnyOf(NamedTuple):
    parts: tuple[When, ...]


When: TypeAlias = Exists | Missing | Compare | Between | BeginsWith | All | AnyOf


def exists(attribute: str = PARTITION_KEY) -> When:
    """The attribute is there (of the key: the item is)."""
    return Exists(attribute)


def missing(attribute: str = PARTITION_KEY) -> When:
    """The attribute is absent (of the key: no such item yet)."""
    return Missing(attribute)


def eq(attribute: str, value: Scalar) -> When:
    return Compare(attribute, "=", value)


def lt(attribute: str, value: Scalar) -> When:
    return Compare(attribute, "<", value)


def le(attribute: str, value: Scalar) -> When:
    return Compare(attribute, "<=", value)


def gt(attribute: str, value: Scalar) -> When:
    return Compare(attribute, ">", value)


def begins(attribute: str, prefix: str) -> When:
    return BeginsWith(attribute, prefix)


def both(*parts: When) -> When:
    return parts[0] if len(parts) == 1 else All(parts)


def either(*parts: When) -> When:
    return parts[0] if len(parts) == 1 else AnyOf(parts)


def holds(when: When, item: Mapping[str, Value] | None) -> bool:
    """Whether `item` (None: absent) meets the condition, as DynamoDB judges it."""
    found: Mapping[str, Value] = item or {}
    if isinstance(when, Exists):
        return when.attribute in found
    if isinstance(when, Missing):
        return when.attribute not in found
    if isinstance(when, All):
        return all(holds(p, item) for p in when.parts)
    if isinstance(when, AnyOf):
        return any(holds(p, item) for p in when.parts)
    value = found.get(when.attribute)
    if isinstance(when, BeginsWith):
        return isinstance(value, str) and value.startswith(when.prefix)
    if isinstance(when, Between):
        return _comparable(value, when.low) and when.low <= value <= when.high  # type: ignore[operator]
    if not _comparable(value, when.value):
        return False
    left, right = value, when.value
    if when.op == "=":
        return left == right
    if when.op == "<":
        return left < right  # type: ignore[operator]
    if when.op == "<=":
        return left <= right  # type: ignore[operator]
    if when.op == ">":
        return left > right  # type: ignore[operator]
    return left >= right  # type: ignore[operator]


def _comparable(value: object, other: Scalar) -> bool:
    """Values of one kind compare (numbers with numbers); anything else never holds."""
    if isinstance(other, bool) or isinstance(value, bool):
        return False
    if isinstance(other, (int, float)):
        return isinstance(value, (int, float))
    return type(value) is type(other)


# ---------------------------------------------------------------------- writes

# What a refused condition means: an error, or one made from the item as found (None:
# absent), which the adapter then asks the service for at no extra request.
Refusal: TypeAlias = Exception | Callable[["Item | None"], Exception]


class Put(NamedTuple):
    """Write a whole item, replacing any of its key."""

    item: Item
    when: When | None = None
    refusal: Refusal | None = None

    @property
    def key(self) -> ItemKey:
        return key_of(self.item)


# The default of an Update's mappings: one shared, so read-only.
NO_ATTRIBUTES: Mapping[str, Any] = MappingProxyType({})


class Update(NamedTuple):
    """Change some attributes of an item (made if absent): `set` them, `keep` each value
    only where the attribute is absent, `remove` attributes, `add` to a number (from 0)
    or to a string set, `take` members out of a string set (an emptied set is gone)."""

    key: ItemKey
    set: Mapping[str, Value] = NO_ATTRIBUTES
    keep: Mapping[str, Value] = NO_ATTRIBUTES
    remove: tuple[str, ...] = ()
    add: Mapping[str, int | frozenset[str]] = NO_ATTRIBUTES
    take: Mapping[str, frozenset[str]] = NO_ATTRIBUTES
    when: When | None = None
    refusal: Refusal | None = None


class Delete(NamedTuple):
    key: ItemKey
    when: When | None = None
    refusal: Refusal | None = None


class Check(NamedTuple):
    """No change: a transaction holds only while `when` holds for the item (a write
    elsewhere that must not land once, say, its thread is deleted)."""

    key: ItemKey
    when: When
    refusal: Refusal | None = None


Write: TypeAlias = Put | Update | Delete | Check


def applied(write: Write, item: Item | None) -> Item | None:
    """The item `write` leaves where `item` was (None: none), its condition aside: what
    every adapter must store."""
    if isinstance(write, Delete):
        return None
    if isinstance(write, Check):
        return item
    if isinstance(write, Put):
        return dict(write.item)
    out: Item = dict(item) if item is not None else keyed(write.key)
    out.update(write.set)
    for name, value in write.keep.items():
        out.setdefault(name, value)
    for name in write.remove:
        out.pop(name, None)
    for name, amount in write.add.items():
        current = out.get(name)
        if isinstance(amount, frozenset):
            out[name] = (current if isinstance(current, frozenset) else frozenset()) | amount
        else:
            out[name] = (current if isinstance(current, (int, float)) else 0) + amount
    for name, members in write.take.items():
        current = out.get(name)
        left = (current if isinstance(current, frozenset) else frozenset()) - members
        if left:
            out[name] = left
        else:
            out.pop(name, None)
    return out


def refused(write: Write, found: Item | None = None) -> Exception:
    """What a refused condition of `write` means: its `refusal` (made from the item as
    found where it asks for it), or, where it names none, a concurrent update."""
    if isinstance(write.refusal, Exception):
        return write.refusal
    if write.refusal is not None:
        return write.refusal(found)
    return ConcurrentUpdateError(
        f"another writer changed the item {tuple(write.key)} first; retry the operation"
    )


class Written(NamedTuple):
    """What one write did: whether its condition held, and the item asked for with
    `returning` (the old or the new one; when refused, the item as found)."""

    applied: bool
    item: Item | None = None


# ---------------------------------------------------------------------- reading


class Page(NamedTuple):
    items: list[Item]
    # Where the next page starts (the keys of the last item read); None: no more.
    cursor: Item | None


class Table(Protocol):
    """One table of items keyed (`pk`, `sk`), ordered by `sk` within a partition, with the
    secondary indexes `schema.py` declares."""

    def get(self, key: ItemKey, *, consistent: bool = True) -> Item | None:
        """One item, or None. One request (GetItem)."""
        ...

    def get_many(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> list[Item]:
        """The items found among `keys`, in no set order: one request per 100 keys
        (BatchGetItem), sent in parallel; keys the service leaves unprocessed are asked
        for again."""
        ...

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
        """One page of a partition (of `index`, by its partition key), its items whose
        sort key meets `where` (a `Compare`, `Between` or `BeginsWith` on that key), in
        sort-key order, from `cursor`; `limit` caps the items read (before `filter`
        drops some); `attributes` narrows what comes back (the keys always do)."""
        ...

    def scan(
        self,
        *,
        segment: int = 0,
        segments: int = 1,
        cursor: Item | None = None,
        filter: When | None = None,
        attributes: Sequence[str] | None = None,
    ) -> Page:
        """One page of segment `segment` of a Scan split into `segments` (together they
        hold every item once), eventually consistent."""
        ...

    def write(
        self,
        write: Write,
        *,
        returning: Literal["old", "new"] | None = None,
        found_on_refusal: bool = False,
    ) -> Written:
        """One write, one request. A refused condition raises the write's `refusal`, or,
        without one, is an answer (`Written.applied` False, with the item as found when
        `found_on_refusal`)."""
        ...

    def transact(self, writes: Sequence[Write]) -> None:
        """All the writes or none, in one request (at most 100, each on another item);
        a refused condition raises that write's `refusal` (`ConcurrentUpdateError` where
        it names none), and nothing is written."""
        ...

    def batch(self, puts: Sequence[Item] = (), deletes: Sequence[ItemKey] = ()) -> None:
        """Unconditional puts and deletes, in full batches of 25 sent in parallel, in no
        set order and not atomically as a whole; what the service leaves unprocessed is
        sent again."""
        ...

    def item_size(self, item: Mapping[str, Value]) -> int:
        """Bytes the item takes as the service bills and limits it (no request)."""
        ...

    def create_if_missing(self) -> bool:
        """Create the table (as `schema.table_definition` says) if absent; whether it
        was created."""
        ...


def every_page(table: Table, partition: str, **query: object) -> Iterator[list[Item]]:
    """The pages of a Query, until the table says there are no more."""
    page = table.query(partition, **query)  # type: ignore[arg-type]
    yield page.items
    while page.cursor is not None:
        page = table.query(partition, **{**query, "cursor": page.cursor})  # type: ignore[arg-type]
        yield page.items


def every_item(table: Table, partition: str, **query: object) -> list[Item]:
    """Every item of a Query, page after page."""
    return [item for page in every_page(table, partition, **query) for item in page]


def scan_pages(table: Table, **scan: object) -> Iterator[list[Item]]:
    """The pages of a Scan (or one segment of it)."""
    page = table.scan(**scan)  # type: ignore[arg-type]
    yield page.items
    while page.cursor is not None:
        page = table.scan(**{**scan, "cursor": page.cursor})  # type: ignore[arg-type]
        yield page.items


# DynamoDB's limits, which the in-memory table keeps too.
BATCH_WRITE_MAX = 25
BATCH_GET_MAX = 100
TRANSACT_MAX = 100
PAGE_BYTES = 1 << 20
# An item, its attribute names included (`item_size`); the items of one transaction.
ITEM_BYTES = 400 * 1024
TRANSACT_BYTES = 4 << 20


def item_size(item: Mapping[str, Value]) -> int:
    """Bytes an item counts for, by DynamoDB's rule: each attribute's name plus its value
    (strings and binary by length, numbers about 1 byte per 2 digits, sets by their
    members, maps 3 bytes plus 1 per entry plus their contents)."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def value_size(value: Value) -> int:
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, (int, float)):
        return len(number_text(value).lstrip("-").replace(".", "")) // 2 + 1
    if isinstance(value, frozenset):
        return sum(len(s.encode()) for s in value)
    return 3 + sum(len(k.encode()) + 1 + value_size(v) for k, v in value.items())


def number_text(value: int | float) -> str:
    """A number as DynamoDB carries it (a float keeps `repr`'s digits)."""
    return str(value) if isinstance(value, int) else repr(value)


def number_of(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)
