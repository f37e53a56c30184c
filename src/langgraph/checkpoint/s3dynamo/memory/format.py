"""Every write of long-term memory's items, and the conditions its reads filter by, in
the table's vocabulary (`table.py`): what each write sets and removes, and which state
of the item it holds on. Pure: the items are `rows.py`'s, their keys `layout.py`'s; an
adapter only sends what these return. Why the directory's steps are conditional on the
generation: docs/RELIABILITY.md, "The Store's namespace directory"."""

from __future__ import annotations

from langgraph.checkpoint.s3dynamo.layout import (
    DESCENDANTS_SK,
    ITEM_SK_RANGE,
    SEARCH_SK_RANGE,
    memory_scope,
)
from langgraph.checkpoint.s3dynamo.memory.rows import (
    ENTRY_EMPTIED,
    ENTRY_GENERATION,
    ENTRY_LIVE,
    ENTRY_NS,
    ENTRY_RENEWED,
    INDEX_GENERATION,
    ROW_BLOB,
    ROW_CREATED,
    ROW_EXPIRES,
    ROW_EXPIRES_S,
    ROW_LEAF,
    ROW_TTL,
    ROW_UPDATED,
    ROW_WRITTEN_S,
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    index_item,
    row_item,
)
from langgraph.checkpoint.s3dynamo.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.table import (
    Between,
    Delete,
    Item,
    ItemKey,
    Put,
    Update,
    Value,
    When,
    both,
    either,
    eq,
    exists,
    gt,
    keyed,
    le,
    missing,
)

# ------------------------------------------------------------------ reads

# A namespace's items, not its descendants mark nor its search indexes (`memory_query`).
ITEMS = Between(SORT_KEY, *ITEM_SK_RANGE)
# Its items and the mark, in one Query, the indexes above left out (`memory_search`).
ITEMS_AND_MARK = Between(SORT_KEY, *SEARCH_SK_RANGE)
# Items a liveness check reads a page: most are live, so one page usually answers.
LIVE_PAGE = 25


def within(bounds: tuple[str, str]) -> When:
    """Sort keys from `bounds[0]` to `bounds[1]`, both included."""
    return Between(SORT_KEY, *bounds)


def start_after(pk: str, sk: str) -> Item:
    """Where a read of partition `pk` resumes to take what comes after sort key `sk`, in
    the order it reads (the item need not exist)."""
    return keyed(ItemKey(pk, sk))


def is_descendants_mark(item: Item) -> bool:
    return item[SORT_KEY] == DESCENDANTS_SK


def live(now_ms: int) -> When:
    """An item unexpired at `now_ms`: one without expiry, or one expiring later."""
    return either(both(missing(ROW_EXPIRES), missing(ROW_EXPIRES_S)), _expires_after(now_ms))


def _expires_after(now_ms: int) -> When:
    """An expiry after `now_ms`, in ms, or, kept by the first layouts, in whole seconds
    rounded up (so `mx` seconds are past `now_ms` when `mx > now_ms // 1000`)."""
    return either(
        gt(ROW_EXPIRES, now_ms), both(missing(ROW_EXPIRES), gt(ROW_EXPIRES_S, now_ms // 1000))
    )


def expired(at_ms: int) -> When:
    """An item whose expiry is at or before `at_ms`, in ms or in the old seconds."""
    return either(
        le(ROW_EXPIRES, at_ms),
        both(missing(ROW_EXPIRES), le(ROW_EXPIRES_S, at_ms // 1000)),
    )


# ------------------------------------------------------------------ items


def put_row(row: MemoryRow) -> Update:
    """Write a Store item or cache entry whole, unconditionally (the last put wins, as
    LangGraph's stores do), keeping the creation time of one already there; what the row
    lacks is removed, and so is what the first layouts kept (`a`, `mx`)."""
    item = row_item(row)
    written = (ROW_BLOB, ROW_LEAF, ROW_EXPIRES, ROW_TTL, ROW_UPDATED)
    return Update(
        row.key,
        set={name: item[name] for name in written if name in item},
        keep={ROW_CREATED: row.created_ms},
        remove=(ROW_WRITTEN_S, ROW_EXPIRES_S, *(name for name in written if name not in item)),
    )


def delete_row(key: ItemKey, expired_at_ms: int | None = None) -> Delete:
    """Delete an item; with `expired_at_ms`, only while it is still expired then, so a
    put or a read that pushed its expiry out since keeps it."""
    return Delete(key, when=None if expired_at_ms is None else expired(expired_at_ms))


def touch(key: ItemKey, expires_ms: int) -> Update:
    """Set an item's expiry, only if the item is there: one deleted meanwhile stays gone
    (an update would make a husk of it)."""
    return Update(key, set={ROW_EXPIRES: expires_ms}, remove=(ROW_EXPIRES_S,), when=exists())


def refresh(key: ItemKey, expires_ms: int, ttl_minutes: float, now_ms: int) -> Update:
    """Push an item's expiry out on a read: only while its TTL is the one the reader saw
    (a put since with another TTL decides its expiry) and it has not expired by `now_ms`
    (an expired item stays expired, whatever reads it)."""
    return Update(
        key,
        set={ROW_EXPIRES: expires_ms},
        remove=(ROW_EXPIRES_S,),
        when=both(eq(ROW_TTL, ttl_minutes), _expires_after(now_ms)),
    )


# ------------------------------------------------------------------ directory


def renew(entry: DirectoryEntry) -> Update:
    """Renew a directory entry (made if absent): its sealed namespace written only once
    (a renewal under another key would otherwise replace it), a new generation, which
    fences off every step begun on the old one, the renewal time, the liveness bound when
    the entry brings one (else the stored one stays), and no longer found emptied."""
    changed: dict[str, Value] = {
        ENTRY_GENERATION: entry.generation,
        ENTRY_RENEWED: entry.renewed,
    }
    if entry.live_until_ms is not None:
        changed[ENTRY_LIVE] = entry.live_until_ms
    return Update(entry.key, set=changed, keep={ENTRY_NS: entry.blob}, remove=(ENTRY_EMPTIED,))


def descendants_mark(key: ItemKey) -> Put:
    """The descendants mark (`layout.DESCENDANTS_SK`, no attributes) in an ancestor's
    partition: some namespace below it is or was in the directory. Never removed, so
    writing it again changes nothing."""
    return Put(keyed(key))


def bound(key: ItemKey, live_until_ms: int | None) -> Update:
    """Set an entry's liveness bound (None: unknown, removed), only if the entry is
    there: one dropped meanwhile needs none."""
    if live_until_ms is None:
        return Update(key, remove=(ENTRY_LIVE,), when=exists())
    return Update(key, set={ENTRY_LIVE: live_until_ms}, when=exists())


def mark_entry(entry: DirectoryEntry, emptied: bool) -> Update:
    """Set or remove an entry's emptied mark, only while its generation is the one the
    caller read: a renewal since means a writer has come back to the namespace."""
    when = eq(ENTRY_GENERATION, entry.generation)
    if emptied:
        return Update(entry.key, set={ENTRY_EMPTIED: 1}, when=when)
    return Update(entry.key, remove=(ENTRY_EMPTIED,), when=when)


def drop_entry(entry: DirectoryEntry) -> Delete:
    """Delete an entry, only while its generation is the one the caller found empty."""
    return Delete(entry.key, when=eq(ENTRY_GENERATION, entry.generation))


# ------------------------------------------------------------------ both


def reseal(key: ItemKey, old: bytes, new: bytes) -> Update:
    """Replace a sealed blob with its value sealed again under the active key
    (re-encryption), only while it is still `old` (a put since wrote a newer one): a
    directory entry's namespace, or an item's or index item's payload (both `v`)."""
    scope = memory_scope(key.pk)
    attribute = ENTRY_NS if scope is not None and scope[2] is None else ROW_BLOB
    return Update(key, set={attribute: new}, when=eq(attribute, old))


def manifest_put(item: IndexItem, expected: str | None) -> Put:
    """Replace a namespace's vector manifest, only if the stored one has generation
    `expected` (None: there is none yet): two compactions at once, one wins."""
    when = missing() if expected is None else eq(INDEX_GENERATION, expected)
    return Put(index_item(item), when=when)
