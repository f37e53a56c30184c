"""Long-term memory's stored format, written once: what each write of its items sets and
removes, and which state of the item it holds on; the conditions its reads filter by;
what each sealed blob is bound to; and the plans the blob engine writes whole
(`blobs.WritePlan`): a put, with or without its namespace's directory entry, a renewal,
a compaction of a vector log, what an item's deletion leaves to clean (its objects, its
filter tokens, tombstones in its namespace's vector log: `gone`; of a namespace's
delete, its search indexes too: `dropped`), and a blob re-sealed under the active key
(`reseal`; which blobs: `sealed.py`).

Pure: each function takes what was read and returns what to write, in the table's
vocabulary (`table.py`); the items are `rows.py`'s, their keys `layout.py`'s. The memory
parts' protocols (`items.py`, `writes.py`, `directory.py`, `vector_index.py`, `tokens.py`)
yield what these return to the engine. Why the directory's steps are
conditional on the generation: docs/RELIABILITY.md, "The Store's namespace directory"."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs import WritePlan
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer, identity
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, ItemReplacedError
from langgraph.checkpoint.s3dynamo.format.layout import (
    DESCENDANTS_SK,
    ITEM_SK_RANGE,
    MANIFEST_SK,
    SEARCH_SK_RANGE,
    TOKEN_MARK,
    is_log_sk,
    log_sk,
    log_time,
    memory_scope,
    object_key,
    token_item_key,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.memory.rows import (
    ENTRY_EMPTIED,
    ENTRY_GENERATION,
    ENTRY_LIVE,
    ENTRY_NS,
    ENTRY_RENEWED,
    INDEX_GENERATION,
    ROW_BLOB,
    ROW_CREATED,
    ROW_CREATED_SEAL,
    ROW_EXPIRES,
    ROW_EXPIRES_S,
    ROW_LEAF,
    ROW_REFRESH_SEAL,
    ROW_TTL,
    ROW_UPDATED,
    ROW_WRITTEN_S,
    Batch,
    DirectoryEntry,
    IndexItem,
    MemoryRow,
    Namespace,
    index_item,
    row_item,
)
from langgraph.checkpoint.s3dynamo.table import (
    Between,
    Delete,
    Item,
    ItemKey,
    Put,
    Update,
    Value,
    When,
    Write,
    both,
    either,
    eq,
    exists,
    gt,
    keyed,
    le,
    missing,
)

# A plan of memory's items: the engine answers with what each write did.
Plan = WritePlan

# ------------------------------------------------------------------ reads

# A namespace's items, not its descendants mark nor its search indexes.
ITEMS = Between(SORT_KEY, *ITEM_SK_RANGE)
# Its items and the mark, in one Query, the indexes above left out.
ITEMS_AND_MARK = Between(SORT_KEY, *SEARCH_SK_RANGE)
# Items a liveness check reads a page: most are live, so one page usually answers.
LIVE_PAGE = 25
# A Store namespace's search indexes an item's deletion may leave entries in: its vector
# manifest and log, and its filter tokens (whose ranges end below U+FFFF).
INDEXES = (MANIFEST_SK, TOKEN_MARK + "\uffff")


def within(bounds: tuple[str, str]) -> When:
    """Sort keys from `bounds[0]` to `bounds[1]`, both included."""
    return Between(SORT_KEY, *bounds)


def start_after(pk: str, sk: str) -> Item:
    """Where a read of partition `pk` resumes to take what comes after sort key `sk`, in
    the order it reads (the item need not exist)."""
    return keyed(ItemKey(pk, sk))


def is_descendants_mark(item: Item) -> bool:
    return item[SORT_KEY] == DESCENDANTS_SK


def is_item(item: Item) -> bool:
    """A Store item or cache entry (not the descendants mark, nor a search index item)."""
    return ITEM_SK_RANGE[0] <= str(item[SORT_KEY]) <= ITEM_SK_RANGE[1]


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


# ------------------------------------------------------------------ sealed blobs


def ns_text(namespace: Namespace) -> str:
    """A namespace as the associated data names it (and a directory entry seals it)."""
    return json.dumps(list(namespace), ensure_ascii=False)


def item_aad(space: str, namespace: Namespace, sk: str) -> bytes:
    """What an item's payload (inline or its object) is bound to: its space, namespace
    and name."""
    return identity("memory", space, ns_text(namespace), sk)


def entry_aad(space: str, sk: str) -> bytes:
    """What a directory entry's sealed namespace is bound to: its space and name."""
    return identity("memory-directory", space, sk)


def vector_aad(space: str, namespace: Namespace, what: str, name: str) -> bytes:
    """What a piece of a namespace's vector index is bound to: `what` it is ("manifest",
    "log", "segment") and its name (sort key or leaf)."""
    return identity("memory-vectors", space, ns_text(namespace), what, name)


def stamp_aad(space: str, namespace: Namespace, sk: str, what: str) -> bytes:
    """What an item's sealed stamp is bound to: `what` it is ("created", "refreshed"),
    its space, namespace and name."""
    return identity("memory-stamp", space, ns_text(namespace), sk, what)


def tombstone_aad(space: str, pk: str, sk: str) -> bytes:
    """What a vector log tombstone is bound to: its partition and sort key (the time and
    the item deleted), which the expiry sweep knows without opening the namespace."""
    return identity("memory-tombstone", space, pk, sk)


# A stamp's and a tombstone's payload type.
STAMP_TYPE = "json"


def seal_stamp(
    sealer: Sealer, space: str, namespace: Namespace, sk: str, what: str, fields: dict[str, Any]
) -> bytes:
    """An item's creation stamp (`what` "created": {"c": ms}) or refresh stamp
    ("refreshed": {"v": version, "e": ms}), sealed and bound to the item."""
    aad = stamp_aad(space, namespace, sk, what)
    return sealer.seal(STAMP_TYPE, json.dumps(fields, separators=(",", ":")).encode(), aad)


def open_stamp(
    sealer: Sealer, blob: bytes, space: str, namespace: Namespace, sk: str, what: str
) -> dict[str, Any]:
    """A stamp opened (`seal_stamp`); one altered or moved is an `IntegrityError`."""
    label = f"{what} stamp of {sk!r} in {namespace!r}"
    _typ, data = sealer.open(blob, stamp_aad(space, namespace, sk, what), label)
    try:
        fields = json.loads(data)
        if not isinstance(fields, dict):
            raise ValueError(f"expected an object, got {type(fields).__name__}")
        return fields
    except ValueError as exc:
        raise IntegrityError(f"{label}: does not parse ({exc})") from exc


# ------------------------------------------------------------------ items


def put_row(row: MemoryRow) -> Update:
    """Write a Store item or cache entry whole, unconditionally (the last put wins, as
    LangGraph's stores do), keeping the creation time of one already there, and its
    sealed creation stamp; what the row lacks is removed (a refresh stamp, which stood
    for the version replaced), and so is what the first layouts kept (`a`, `mx`)."""
    item = row_item(row)
    written = (ROW_BLOB, ROW_LEAF, ROW_EXPIRES, ROW_TTL, ROW_UPDATED, ROW_REFRESH_SEAL)
    keep: dict[str, Value] = {ROW_CREATED: row.created_ms}
    if row.created_seal is not None:
        keep[ROW_CREATED_SEAL] = row.created_seal
    return Update(
        row.key,
        set={name: item[name] for name in written if name in item},
        keep=keep,
        remove=(ROW_WRITTEN_S, ROW_EXPIRES_S, *(name for name in written if name not in item)),
    )


def put_expecting(row: MemoryRow, leaf: str | None) -> Update:
    """`put_row`, only while the item holds the object `leaf` (None: no object); else
    refused with the item as found (`ItemReplacedError`)."""
    when = missing(ROW_LEAF) if leaf is None else eq(ROW_LEAF, leaf)
    return put_row(row)._replace(when=when, refusal=lambda found: ItemReplacedError(row.key, found))


def delete_row(key: ItemKey, expired_at_ms: int | None = None) -> Delete:
    """Delete an item; with `expired_at_ms`, only while it is still expired then, so a
    put or a read that pushed its expiry out since keeps it."""
    return Delete(key, when=None if expired_at_ms is None else expired(expired_at_ms))


def touch(key: ItemKey, expires_ms: int, stamp: bytes) -> Update:
    """Set an item's expiry, in clear and as its sealed refresh `stamp`, only if the item
    is there: one deleted meanwhile stays gone (an update would make a husk of it)."""
    return Update(
        key,
        set={ROW_EXPIRES: expires_ms, ROW_REFRESH_SEAL: stamp},
        remove=(ROW_EXPIRES_S,),
        when=exists(),
    )


def refresh(key: ItemKey, expires_ms: int, ttl_minutes: float, now_ms: int, stamp: bytes) -> Update:
    """Push an item's expiry out on a read (`touch`): only while its TTL is the one the
    reader saw (a put since with another TTL decides its expiry) and it has not expired
    by `now_ms` (an expired item stays expired, whatever reads it)."""
    return Update(
        key,
        set={ROW_EXPIRES: expires_ms, ROW_REFRESH_SEAL: stamp},
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


# ------------------------------------------------------------------ puts

# Items of one put's transaction: DynamoDB's 100 items a transaction, less the directory
# entry (and less the descendants marks it writes).
MEMORY_PUT_MAX = 99


def put(
    batch: Batch,
    *,
    entry: DirectoryEntry | None = None,
    marks: Sequence[ItemKey] = (),
    indexes: Sequence[IndexItem] = (),
    also: Sequence[Write] = (),
    expect: Mapping[ItemKey, str | None] | None = None,
) -> list[Plan]:
    """The plans of a put of one namespace's items, each item whole (`put_row`), after
    `indexes` (the search entries that must exist before the items do).

    Without `entry` (the writer holds a lease on it): one plan, each item its own request,
    answering with the item it replaced. With it: the items with the entry renewed
    (`renew`) and the descendants `marks`, one transaction per `MEMORY_PUT_MAX` items (the
    first carries the marks, and `indexes`); each plan uploads the objects its own items
    reference, so none is left unnamed by a crash between them. `also` goes in every
    transaction (a data subject's fence, checked, and the item naming the namespace its
    own): with it, the items go in transactions even without `entry`. With `expect`, each
    item goes only while it holds the object `expect` names (`put_expecting`), which is how
    a transaction (it returns no old item) learns what it replaces, named before it commits."""
    search = [index_item(i) for i in indexes]
    if entry is None and not also:
        return [
            WritePlan(
                batch.pk,
                uploads=batch.uploads,
                at_ms=batch.at_ms,
                batched=search,
                writes=[put_row(r) for r in batch.rows],
                each=True,
                returning="old",
            )
        ]
    plans: list[Plan] = []
    start = 0
    while start < len(batch.rows):
        end = start + MEMORY_PUT_MAX - len(marks) - len(also)
        rows = batch.rows[start:end]
        referenced = {object_key(r.key.pk, r.leaf) for r in rows if r.leaf}
        plans.append(
            WritePlan(
                batch.pk,
                uploads=[u for u in batch.uploads if u[0] in referenced],
                at_ms=batch.at_ms,
                orphans=replaced_objects(rows, expect or {}),
                batched=search,
                writes=[
                    *(
                        put_row(r) if expect is None else put_expecting(r, expect.get(r.key))
                        for r in rows
                    ),
                    *([renew(entry)] if entry is not None else []),
                    *map(descendants_mark, marks),
                    *also,
                ],
            )
        )
        start, marks, search = end, (), []
    return plans


def replaced_objects(rows: Sequence[MemoryRow], expect: Mapping[ItemKey, str | None]) -> list[str]:
    """The objects that writing `rows` lets go, where each replaces the leaf `expect`
    names for it (an item put again with the same object lets go of none)."""
    old = ((r, expect.get(r.key)) for r in rows)
    return [object_key(r.key.pk, leaf) for r, leaf in old if leaf and leaf != r.leaf]


def renewal(entry: DirectoryEntry, marks: Sequence[ItemKey] = ()) -> Plan:
    """A directory entry renewed alone (`renew`), with the descendants `marks` in the
    same request."""
    return WritePlan(entry.key.pk, writes=[renew(entry), *map(descendants_mark, marks)])


# ------------------------------------------------------------------ search indexes

# A log entry's nonce that is a deleted item's sort key, after this (no hex digit).
TOMBSTONE = "k"


def tombstones(keys: Sequence[ItemKey], at_ms: int, sealer: Sealer, space: str) -> list[IndexItem]:
    """The vector log entries saying these items were deleted at `at_ms`: the time and
    the item's sort key in the entry's sort key, sealed (an empty payload bound to that
    sort key and the partition, which the expiry sweep knows without opening anything),
    so that no one without the keys can make a search pass over a live item."""
    out = []
    for k in keys:
        key = ItemKey(k.pk, log_sk(at_ms, TOMBSTONE + k.sk))
        out.append(IndexItem(key, sealer.seal(STAMP_TYPE, b"", tombstone_aad(space, *key))))
    return out


def tombstone_of(item: IndexItem) -> tuple[str, int] | None:
    """(item sort key, when deleted) of a vector log tombstone; None for another item."""
    if not is_log_sk(item.key.sk):
        return None
    at, nonce = log_time(item.key.sk)
    return (nonce[len(TOMBSTONE) :], at) if nonce.startswith(TOMBSTONE) else None


def verified_tombstone(item: IndexItem, sealer: Sealer, space: str) -> bool:
    """Whether a tombstone is sealed, and opens (one altered or moved is an
    `IntegrityError`). One without a seal (written before tombstones were sealed, or by
    someone without the keys) is only a hint: it hides nothing, and a compaction reads
    its item back."""
    if item.blob is None:
        return False
    what = f"vector log tombstone {item.key.sk!r}"
    sealer.open(item.blob, tombstone_aad(space, *item.key), what)
    return True


def manifest_put(item: IndexItem, expected: str | None) -> Put:
    """Replace a namespace's vector manifest, only if the stored one has generation
    `expected` (None: there is none yet): two compactions at once, one wins."""
    when = missing() if expected is None else eq(INDEX_GENERATION, expected)
    return Put(index_item(item), when=when)


def compaction(
    pk: str,
    segment: Sequence[tuple[str, bytes]],
    manifest: IndexItem,
    expected: str | None,
    replaced: Sequence[str],
) -> Plan:
    """A vector log folded into a new segment (none when there was nothing to fold): the
    segment uploaded, then the manifest naming it replaced on its generation (`expected`);
    the segments it no longer names (`replaced`, leaves) are named for incremental
    collection before it. The log entries folded are deleted once it is committed."""
    return WritePlan(
        pk,
        uploads=segment,
        orphans=[object_key(pk, leaf) for leaf in replaced],
        writes=[manifest_put(manifest, expected)],
    )


# ------------------------------------------------------------------ an item is gone


@dataclass(frozen=True)
class Gone:
    """What deleted items leave to clean: the objects of their large values, and, per
    partition, the search entries to write (tombstones) and to delete (tokens)."""

    objects: list[str] = field(default_factory=list)
    indexes: dict[str, tuple[list[Item], list[ItemKey]]] = field(default_factory=dict)


def gone(
    deleted: Sequence[MemoryRow],
    tokens: Sequence[ItemKey] = (),
    *,
    indexed: Collection[str] = (),
    at_ms: int = 0,
    sealer: Sealer | None = None,
    space: str = "m",
) -> Gone:
    """What the deletion of `deleted` (the items as they were) leaves to clean: their
    objects, the filter `tokens` found naming them, and, in the partitions `indexed` (a
    namespace with a vector index), a tombstone each in the vector log, stamped `at_ms`
    and sealed by `sealer` (needed when `indexed` names any)."""
    out = Gone([object_key(r.key.pk, r.leaf) for r in deleted if r.leaf])
    keys = [r.key for r in deleted if r.key.pk in indexed]
    if keys and sealer is None:
        raise ValueError("tombstones are sealed: gone() needs the sealer")
    for tomb in tombstones(keys, at_ms, sealer, space) if sealer is not None else []:
        out.indexes.setdefault(tomb.key.pk, ([], []))[0].append(index_item(tomb))
    for key in tokens:
        out.indexes.setdefault(key.pk, ([], []))[1].append(key)
    return out


def dropped(
    pk: str,
    read: Sequence[MemoryRow],
    deleted: Sequence[MemoryRow],
    indexes: Sequence[IndexItem],
    settled_ms: int,
) -> Gone:
    """What a namespace's delete (`Writes.delete_namespace`) removes once its items are
    deleted, of what it read (`read`, its items; `indexes`, its search index items) and
    what the deletes answered (`deleted`, the items as they were): its search indexes,
    then the objects of those items and the segments the manifest named.

    The indexes: the vector manifest (the namespace becomes one never searched by query,
    which a search ranks from its items), the vector log, every completeness item, and a
    filter token if it names a version read or deleted, or was written before
    `settled_ms` (when any put that wrote it has landed: its item was read). A younger
    token naming an item not read may be a put's whose item lands after the delete: it
    stays (a token carries its item's key and write time, `layout.token_sk`)."""
    versions = {(r.key.sk, r.updated_ms) for r in [*read, *deleted]}
    objects = {object_key(r.key.pk, r.leaf) for r in [*read, *deleted] if r.leaf}
    segments = [leaf for i in indexes if i.key.sk == MANIFEST_SK for leaf in i.leaves]
    objects |= {object_key(pk, leaf) for leaf in segments}
    keys = [i.key for i in indexes if _dropped(i.key.sk, versions, settled_ms)]
    return Gone(sorted(objects), {pk: ([], keys)} if keys else {})


def _dropped(sk: str, versions: Collection[tuple[str, int]], settled_ms: int) -> bool:
    if sk == MANIFEST_SK or is_log_sk(sk):
        return True
    if not sk.startswith(TOKEN_MARK):
        return False
    if sk.endswith("!"):
        return True  # a field's completeness item
    at_ms, key = token_item_key(sk)
    return (key, at_ms) in versions or at_ms < settled_ms


# ------------------------------------------------------------------ re-sealing


def reseal(key: ItemKey, old: bytes, new: bytes, attribute: str | None = None) -> Update:
    """Replace a sealed blob with its value sealed again under the active key
    (re-encryption), only while it is still `old` (a put since wrote a newer one): a
    directory entry's namespace, an item's or index item's payload (both `v`), or an
    item's stamp (`attribute`)."""
    if attribute is None:
        scope = memory_scope(key.pk)
        attribute = ENTRY_NS if scope is not None and scope[2] is None else ROW_BLOB
    return Update(key, set={attribute: new}, when=eq(attribute, old))
