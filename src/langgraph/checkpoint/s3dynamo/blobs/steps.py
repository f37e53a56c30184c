"""The steps a protocol yields and the blob engine runs.

A protocol (a thread's removal, a copy, a re-seal, the Store's put) is a generator: it
yields one step at a time (a read, a batch, a conditional write, a plan, a wave of
object requests) and gets each step's answer back, or the error the step raised, thrown
in where it yielded. It never touches the engine, the ports or a client, so the order
of its requests is written once, in one function, and its caller only asks for it with
its parameters (`BlobEngine.run`). A step that yields `Emit` hands a value out to the
caller while the protocol goes on (`BlobEngine.stream`: a listing read page by page).

Every step is one request or one bounded wave of requests of one kind, so request
budgets are counted at this boundary as at the ports'.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeAlias, TypeVar

from langgraph.checkpoint.s3dynamo.errors import ObjectNotFoundError
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.table import Item, ItemKey, When, Write, key_of

_R = TypeVar("_R")
_T = TypeVar("_T")
Steps: TypeAlias = Generator[Any, Any, _R]

# Steps are named tuples, as the table's conditions and writes are (`table.py`): the
# engine tells them apart with isinstance.


class Query(NamedTuple):
    """One page of a partition (or of an index's: `index_name`), as `Table.query` reads
    it."""

    partition: str
    where: When | None = None
    index_name: str | None = None
    descending: bool = False
    limit: int | None = None
    cursor: Item | None = None
    consistent: bool = False
    attributes: Sequence[str] | None = None
    # Kept of what `limit` read, by the table (a page may come back empty with a cursor).
    filter: When | None = None


class Get(NamedTuple):
    """One item by key, or None (one GetItem)."""

    key: ItemKey
    consistent: bool = True


class Scan(NamedTuple):
    """One page of one segment of a Scan."""

    segment: int = 0
    segments: int = 1
    cursor: Item | None = None
    filter: When | None = None
    attributes: Sequence[str] | None = None


class GetMany(NamedTuple):
    """The items found among `keys` (one BatchGetItem per 100)."""

    keys: Sequence[ItemKey]
    consistent: bool = False


class Batch(NamedTuple):
    """Items written whole and deleted, unconditionally, in full batches."""

    puts: Sequence[Item] = ()
    deletes: Sequence[ItemKey] = ()


class Apply(NamedTuple):
    """One write that references no new object: a `Written`, or its refusal raised."""

    write: Write
    returning: Literal["old", "new"] | None = None
    found_on_refusal: bool = False


class ListObjects(NamedTuple):
    """Every object of one owner (a thread's name, a memory partition)."""

    owner: str


class DeleteObjects(NamedTuple):
    """Objects deleted (a wave of DeleteObjects); with `unchanged`, each only while it
    still carries the tag it was listed with, answering the keys deleted."""

    keys: Sequence[str] = ()
    unchanged: Sequence[ObjectInfo] = ()


class Fetch(NamedTuple):
    """Object bodies by key (`needed`: key -> what needs it), one parallel wave."""

    needed: Mapping[str, str]
    cached: bool = True


class NameOrphans(NamedTuple):
    """An upload intent naming objects of `owner` a change leaves unreferenced."""

    owner: str
    keys: Sequence[str]


class Together(NamedTuple):
    """Protocols run at once on the wave pool; the answer is their results, in order."""

    protocols: Sequence[Steps[Any]]


class Emit(NamedTuple):
    """A value handed out to the caller of `BlobEngine.stream`; answers None."""

    value: Any


def every_item(partition: str, **query: Any) -> Steps[list[Item]]:
    """Every item of a Query, page after page."""
    return (yield from each_item(partition, lambda item: item, **query))


def each_item(partition: str, each: Callable[[Item], _T], **query: Any) -> Steps[list[_T]]:
    """What `each` makes of every item of a Query, page after page: of the items
    themselves, one page at a time is held."""
    out: list[_T] = []
    cursor: Item | None = None
    while True:
        page = yield Query(partition, cursor=cursor, **query)
        out += map(each, page.items)
        if page.cursor is None:
            return out
        cursor = page.cursor


def scan_items(**scan: Any) -> Steps[list[list[Item]]]:
    """Every page of a Scan (or of one segment of it)."""
    pages: list[list[Item]] = []
    cursor: Item | None = None
    while True:
        page = yield Scan(cursor=cursor, **scan)
        pages.append(page.items)
        if page.cursor is None:
            return pages
        cursor = page.cursor


def keys_of(partition: str, **query: Any) -> Steps[list[ItemKey]]:
    """Keys of every item of a Query (nothing else read)."""
    return (yield from each_item(partition, key_of, attributes=(), **query))


def present(needed: Mapping[str, str]) -> Steps[dict[str, bytes]]:
    """Objects as stored (not what this process kept), in one wave; if one is gone
    meanwhile, one by one, leaving it out."""
    try:
        found: dict[str, bytes] = yield Fetch(needed, cached=False)
        return found
    except ObjectNotFoundError:
        out: dict[str, bytes] = {}
        for key, what in needed.items():
            try:
                out.update((yield Fetch({key: what}, cached=False)))
            except ObjectNotFoundError:
                continue
        return out


def one(step: object) -> Steps[Any]:
    """A protocol of one step, answering what the step answers (one request of a wave
    that `each` sends)."""
    return (yield step)


def each(protocols: Sequence[Steps[_R]]) -> Steps[list[_R]]:
    """Several protocols at once (none: no step)."""
    if not protocols:
        return []
    if len(protocols) == 1:
        return [(yield from protocols[0])]
    found: list[_R] = yield Together(protocols)
    return found


def mapped(protocol: Steps[_R], each: Callable[[Any], Iterable[Any]]) -> Steps[_R]:
    """A protocol that hands values out (`Emit`), each value handed on as the values
    `each` makes of it (none, one or several)."""
    answer: Any = None
    while True:
        try:
            step = protocol.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if isinstance(step, Emit):
            for value in each(step.value):
                yield Emit(value)
            answer = None
        else:
            answer = yield step
