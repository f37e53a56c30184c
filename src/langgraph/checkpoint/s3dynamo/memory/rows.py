"""Long-term memory's items as plain values, and each as the item of the table that holds
it (`table.py`): a Store item or node-cache entry (`MemoryRow`) and what its sealed
payload says besides its value (`Header`), an entry of a space's namespace directory
(`DirectoryEntry`), and an item of a Store namespace's search indexes (`IndexItem`); and
the items of one put, sealed and placed (`Batch`), and an item read back and opened
(`Found`). Pure: no I/O.
Where each lives is `layout.py`'s business; the writes and their conditions are
`format.py`'s. Attributes: docs/ARCHITECTURE.md, "Long-term memory", and docs/FORMAT.md,
which also says what the earlier layouts stored."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.table import Item, ItemKey, Value, key_of, keyed

# A Store item or cache entry (pk `<prefix><ns>~<space>!`, sk `<key>`): the sealed payload
# inline (v) or the leaf of the object holding it (ol); expiry in ms (me; absent: never),
# TTL in minutes (ml), created (mc, kept by later puts) and updated (mu), ms. These four
# are clear copies, for the expiry sweep's conditions and DynamoDB's queries: what a
# reader honours is sealed, in the payload's header (the put's time, expiry and TTL), in
# the creation stamp (mk, sealed, kept by later puts) and in the refresh stamp (mr,
# sealed: the expiry a read pushed out, for the version it read; removed by a put).
ROW_BLOB, ROW_LEAF, ROW_EXPIRES, ROW_TTL = "v", "ol", "me", "ml"
ROW_CREATED, ROW_UPDATED = "mc", "mu"
ROW_CREATED_SEAL, ROW_REFRESH_SEAL = "mk", "mr"
# What the first layouts kept, and a put or refresh removes: the expiry in whole seconds,
# rounded up (mx), and a write time in seconds that `mu` repeats (a).
ROW_EXPIRES_S, ROW_WRITTEN_S = "mx", "a"
# A directory entry (pk `<prefix>~<space>~dir!`, sk `<ns>`): the sealed namespace (n), a
# generation every renewal replaces (g), when renewed (t, seconds; absent in the first
# layout: long ago), found emptied since (e), and ms until which an item lives (x).
ENTRY_NS, ENTRY_GENERATION, ENTRY_RENEWED, ENTRY_EMPTIED, ENTRY_LIVE = "n", "g", "t", "e", "x"
# A search-index item (same pk as the namespace's items, sk above the descendants mark):
# a sealed blob (v; absent on a filter token), the manifest's generation (g) and the
# leaves of the segments it names (o), which garbage collection reads without keys.
INDEX_BLOB, INDEX_GENERATION, INDEX_LEAVES = "v", "g", "o"


# A namespace of the Store or the node cache, as LangGraph gives it.
Namespace = tuple[str, ...]


class MemoryRow(NamedTuple):
    """One Store item or node-cache entry (`layout.memory_pk`)."""

    key: ItemKey
    # The sealed payload inline, or (None and) the leaf of the object holding it.
    blob: bytes | None
    leaf: str | None
    # Expiry, ms since the epoch (items of the first layouts kept seconds, rounded up,
    # which read back as their ms); None: never.
    expires_ms: int | None = None
    # The item's TTL in minutes, kept so a read can push the expiry out again.
    ttl_minutes: float | None = None
    # When first and last written, ms since the epoch (the first is kept by later puts).
    created_ms: int = 0
    updated_ms: int = 0
    # The sealed creation stamp (kept by later puts) and refresh stamp (`format.py`).
    created_seal: bytes | None = None
    refresh_seal: bytes | None = None


# A directory entry's bound meaning "an item of the namespace never expires".
NEVER_MS = 2**62


class DirectoryEntry(NamedTuple):
    """A namespace in a memory space's directory: its sealed tuple, a generation that
    every renewal replaces, when it was last renewed (seconds since the epoch), whether
    a delete found the namespace empty since, and a time until which some item of it is
    known to live (ms; `NEVER_MS`: one never expires; None: unknown), which lets a
    listing skip the namespace's own Query (docs/RELIABILITY.md, "The Store's namespace
    directory")."""

    key: ItemKey
    blob: bytes
    generation: str
    renewed: int = 0
    emptied: bool = False
    live_until_ms: int | None = None


class IndexItem(NamedTuple):
    """An item of a Store namespace's search indexes (`layout.TOKEN_MARK`, `MANIFEST_SK`,
    `LOG_MARK`): a filter token (key only), the vector manifest (a sealed blob, a
    generation, and the leaves of the segments it names) or a vector log entry (a sealed
    blob). The descendants mark reads back as one with nothing but its key."""

    key: ItemKey
    blob: bytes | None = None
    generation: str | None = None
    leaves: frozenset[str] = frozenset()


@dataclass
class Batch:
    """Items of one namespace sealed and placed for a put (`items.Items.prepare`): the rows,
    the objects they reference (object key, sealed body), and each item's key and version,
    which the search indexes name; `at_ms` stamps them."""

    namespace: Namespace
    pk: str
    rows: list[MemoryRow] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    uploads: list[tuple[str, bytes]] = field(default_factory=list)
    at_ms: int = 0


@dataclass(frozen=True)
class Found:
    """An item read back and opened; `version` is "" for an item of the first layouts.
    Its times are what a reader honours: sealed (its payload's header and stamps), or,
    for an item whose payload predates sealed times, the clear copies (docs/FORMAT.md)."""

    namespace: Namespace
    key: str
    typed: tuple[str, bytes]
    row: MemoryRow
    version: str = ""
    created_ms: int = 0
    updated_ms: int = 0
    expires_ms: int | None = None
    ttl_minutes: float | None = None

    def live(self, now_ms: int) -> bool:
        """Not expired at `now_ms`, by its sealed expiry."""
        return self.expires_ms is None or self.expires_ms > now_ms


# ------------------------------------------------------------------ as items


def row_item(row: MemoryRow) -> Item:
    """The item a Store item or cache entry is stored as (a put also keeps the `mc` of
    one already there: `format.put_row`)."""
    item = keyed(row.key)
    item[ROW_CREATED], item[ROW_UPDATED] = row.created_ms, row.updated_ms
    if row.blob is not None:
        item[ROW_BLOB] = row.blob
    if row.leaf is not None:
        item[ROW_LEAF] = row.leaf
    if row.expires_ms is not None:
        item[ROW_EXPIRES] = row.expires_ms
    if row.ttl_minutes is not None:
        item[ROW_TTL] = row.ttl_minutes
    if row.created_seal is not None:
        item[ROW_CREATED_SEAL] = row.created_seal
    if row.refresh_seal is not None:
        item[ROW_REFRESH_SEAL] = row.refresh_seal
    return item


def row_from(item: Mapping[str, Value]) -> MemoryRow:
    """A Store item or cache entry; one with neither payload nor leaf, or an attribute of
    the wrong kind, is an `IntegrityError`."""
    key = key_of(item)
    try:
        blob, leaf = _bytes(item, ROW_BLOB), _text(item, ROW_LEAF)
        if blob is None and leaf is None:
            raise KeyError(ROW_BLOB)
        expires = _whole(item, ROW_EXPIRES)
        if expires is None:
            seconds = _whole(item, ROW_EXPIRES_S)
            expires = None if seconds is None else seconds * 1000
        ttl = _number(item, ROW_TTL)
        return MemoryRow(
            key,
            blob,
            leaf,
            expires,
            None if ttl is None else float(ttl),
            _whole(item, ROW_CREATED) or 0,
            _whole(item, ROW_UPDATED) or 0,
            _bytes(item, ROW_CREATED_SEAL),
            _bytes(item, ROW_REFRESH_SEAL),
        )
    except (KeyError, ValueError) as exc:
        raise IntegrityError(
            f"memory item with sort key {key.sk!r} is malformed ({type(exc).__name__}: {exc}); "
            "it was altered or written by something else"
        ) from exc


def entry_from(item: Mapping[str, Value]) -> DirectoryEntry:
    """A directory entry; one without its sealed namespace or generation is an
    `IntegrityError`."""
    key = key_of(item)
    try:
        blob, generation = _bytes(item, ENTRY_NS), _text(item, ENTRY_GENERATION)
        if blob is None or generation is None:
            raise KeyError(ENTRY_NS if blob is None else ENTRY_GENERATION)
        return DirectoryEntry(
            key,
            blob,
            generation,
            _whole(item, ENTRY_RENEWED) or 0,
            ENTRY_EMPTIED in item,
            _whole(item, ENTRY_LIVE),
        )
    except (KeyError, ValueError) as exc:
        raise IntegrityError(
            f"memory directory item {key.sk!r} is malformed ({type(exc).__name__}: {exc}); "
            "it was altered or written by something else"
        ) from exc


def index_item(index: IndexItem) -> Item:
    """The item a search-index item is stored as (a token is its keys alone)."""
    item = keyed(index.key)
    if index.blob is not None:
        item[INDEX_BLOB] = index.blob
    if index.generation is not None:
        item[INDEX_GENERATION] = index.generation
    if index.leaves:
        item[INDEX_LEAVES] = index.leaves
    return item


def index_from(item: Mapping[str, Value]) -> IndexItem:
    """A search-index item (or the descendants mark, keys only); an attribute of the
    wrong kind is an `IntegrityError`."""
    key = key_of(item)
    try:
        leaves = item.get(INDEX_LEAVES, frozenset())
        if not isinstance(leaves, frozenset):
            raise ValueError(f"{INDEX_LEAVES!r} holds {type(leaves).__name__}, not a string set")
        return IndexItem(key, _bytes(item, INDEX_BLOB), _text(item, INDEX_GENERATION), leaves)
    except ValueError as exc:
        raise IntegrityError(
            f"memory index item {key.sk!r} is malformed ({exc}); it was altered or "
            "written by something else"
        ) from exc


# ------------------------------------------------------------------ an item's payload


class Header(NamedTuple):
    """What an item's sealed payload says besides its value: its key, the serializer's
    type, its version (a nonce each put draws; "" in the first layouts), and the put's
    time, expiry and TTL, which a reader honours (`at_ms` None: a header of the layouts
    before they were sealed, whose reader falls back to the item's clear copies)."""

    key: str
    typ: str
    version: str = ""
    at_ms: int | None = None
    expires_ms: int | None = None
    ttl_minutes: float | None = None


def payload(header: Header, data: bytes) -> bytes:
    """An item's payload: its header as JSON, a newline, the serialized value. The times
    are `{"u": put's time, "e": expiry, "t": TTL}`, those without a value left out."""
    times = {"u": header.at_ms, "e": header.expires_ms, "t": header.ttl_minutes}
    kept = {k: v for k, v in times.items() if v is not None}
    fields = [header.key, header.typ, header.version, kept]
    return json.dumps(fields, separators=(",", ":")).encode() + b"\n" + data


def parse_payload(raw: bytes, namespace: Namespace, what: str) -> tuple[Header, bytes]:
    """(header, serialized value) of an opened payload. Headers of earlier layouts read
    too: `[key, type, version]`, `[key, type]`, and `[namespace, key, type]`, whose
    namespace must be the one the associated data bound."""
    head, _, data = raw.partition(b"\n")
    try:
        fields = json.loads(head)
        if isinstance(fields[0], list):
            ns_list, key, typ = fields
            if tuple(ns_list) != namespace:
                raise IntegrityError(
                    f"{what}: the payload names namespace {tuple(ns_list)!r}, not the one it "
                    "is stored in; it was moved or altered"
                )
            return Header(str(key), str(typ)), data
        if len(fields) == 4:
            key, typ, version, times = fields
            at, ttl = _ms(times["u"]), times.get("t")
            if at is None:
                raise ValueError("no write time")
            return Header(
                str(key),
                str(typ),
                str(version),
                at,
                _ms(times.get("e")),
                None if ttl is None else float(ttl),
            ), data
        if len(fields) == 3:
            return Header(str(fields[0]), str(fields[1]), str(fields[2])), data
        key, typ = fields
        return Header(str(key), str(typ)), data
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise IntegrityError(f"{what}: the payload's header does not parse ({exc})") from exc


def _ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r} is not a time in ms")
    return value


# Each reader takes an attribute of the kind it expects, or None when absent; another
# kind is a ValueError the parsers above report as a malformed item.


def _bytes(item: Mapping[str, Value], name: str) -> bytes | None:
    value = item.get(name)
    if value is None or isinstance(value, bytes):
        return value
    raise ValueError(f"{name!r} holds {type(value).__name__}, not bytes")


def _text(item: Mapping[str, Value], name: str) -> str | None:
    value = item.get(name)
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{name!r} holds {type(value).__name__}, not a string")


def _number(item: Mapping[str, Value], name: str) -> int | float | None:
    value = item.get(name)
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    raise ValueError(f"{name!r} holds {type(value).__name__}, not a number")


def _whole(item: Mapping[str, Value], name: str) -> int | None:
    value = _number(item, name)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{name!r} holds {value!r}, not a whole number")
        return int(value)
    return value
