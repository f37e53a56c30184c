"""The index on DynamoDB: records as items, in DynamoDB's low-level attribute-value form.

Checkpoint, writes, mark, head and lease items, attribute by attribute, and how a
checkpoint is committed (one TransactWriteItems with its namespace's head): docs/FORMAT.md,
"Index items".

Everything here is pure (no botocore): `dynamodb.py` sends the requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.layout import (
    TOMBSTONE_MARK,
    idle_key,
    is_mark_key,
    is_writes_key,
    loan_borrower,
)
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    DirectoryEntry,
    Fence,
    HeadMove,
    IndexItem,
    ItemKey,
    Loan,
    Mark,
    MemoryRow,
    Record,
    Stamp,
    UploadIntent,
    WritesRecord,
)
from langgraph.checkpoint.s3dynamo.schema import IDLE_KEY, PARTITION_KEY, RUN_KEY, SORT_KEY

Item = dict[str, Any]

BODY, METADATA, REF, OBJECTS, INLINE, WRITTEN_AT = "c", "m", "t", "o", "iv", "a"
# Version of a control record (deployment record, KMS keyring), checked on replace.
CONTROL_VERSION = "v"
WRITE_PREFIX, BUNDLE = "w", "wb"
HEAD = "h"
MARK_UPTO, MARK_KEEP, MARK_IDS, MARK_AT = "mu", "mk", "mi", "ma"
LEASE_OWNER, LEASE_TOKEN, LEASE_EXPIRES = "o", "k", "x"
# An upload intent: the owner (a thread or a memory partition) and the leaves it names.
INTENT_OWNER, INTENT_LEAVES = "it", "il"
# A loan: the leaves of the lender's objects the borrower shares.
LOAN_LEAVES = "ll"


# ------------------------------------------------------------------ item format


def write_attr(idx: int) -> str:
    return f"{WRITE_PREFIX}{idx}"


def _write_value(value: bytes | str) -> dict[str, Any]:
    return {"S": value} if isinstance(value, str) else {"B": value}


def key_item(key: ItemKey) -> Item:
    return {PARTITION_KEY: {"S": key.pk}, SORT_KEY: {"S": key.sk}}


def mark_item(mark: Mark) -> Item:
    item = key_item(mark.key)
    if mark.upto:
        item[MARK_UPTO] = {"S": mark.upto}
    if mark.keep:
        item[MARK_KEEP] = {"SS": sorted(mark.keep)}
    if mark.ids:
        item[MARK_IDS] = {"SS": sorted(mark.ids)}
    if mark.at is not None:
        item[MARK_AT] = {"N": str(mark.at)}
    return item


def mark_from_item(item: Item) -> Mark:
    at = item.get(MARK_AT)
    return Mark(
        pk=item[PARTITION_KEY]["S"],
        sk=item[SORT_KEY]["S"],
        upto=item.get(MARK_UPTO, {}).get("S", ""),
        keep=frozenset(item.get(MARK_KEEP, {}).get("SS", ())),
        ids=frozenset(item.get(MARK_IDS, {}).get("SS", ())),
        at=None if at is None else int(at["N"]),
    )


def is_mark_item(item: Item) -> bool:
    return is_mark_key(item[SORT_KEY]["S"])


def to_item(record: Record | Mark) -> Item:
    if isinstance(record, Mark):
        return mark_item(record)
    item = key_item(record.key)
    if isinstance(record, WritesRecord):
        item[REF] = {"B": record.task_ref}
        for idx, value in record.writes.items():
            item[write_attr(idx)] = _write_value(value)
        if record.bundle is not None:
            item[BUNDLE] = {"S": record.bundle}
        _stamp(item, record.written_at)
        return item
    item[BODY] = {"B": record.body}
    item[METADATA] = {"B": record.metadata}
    item[REF] = {"B": record.thread_ref}
    if record.run_key:
        item[RUN_KEY] = {"S": record.run_key}
    if record.objects:
        item[OBJECTS] = {"SS": sorted(record.objects)}
    if record.inline:
        item[INLINE] = {"M": {tag: {"B": blob} for tag, blob in sorted(record.inline.items())}}
    _stamp(item, record.written_at)
    return item


def _stamp(item: Item, written_at: int | None) -> None:
    if written_at is not None:
        item[WRITTEN_AT] = {"N": str(written_at)}


def _written_at(item: Item) -> int | None:
    value = item.get(WRITTEN_AT)
    return None if value is None else int(value["N"])


def from_item(item: Item) -> Record:
    """Parse an item; an item missing what its kind requires is an `IntegrityError`."""
    pk, sk = item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]
    try:
        if is_writes_key(sk):
            writes: dict[int, bytes | str] = {}
            for name, value in item.items():
                if name.startswith(WRITE_PREFIX) and name != BUNDLE:
                    writes[int(name[len(WRITE_PREFIX) :])] = (
                        value["S"] if "S" in value else bytes(value["B"])
                    )
            return WritesRecord(
                pk=pk,
                sk=sk,
                task_ref=bytes(item[REF]["B"]),
                writes=writes,
                bundle=item.get(BUNDLE, {}).get("S"),
                written_at=_written_at(item),
            )
        return CheckpointRecord(
            pk=pk,
            sk=sk,
            body=bytes(item[BODY]["B"]),
            metadata=bytes(item[METADATA]["B"]),
            thread_ref=bytes(item[REF]["B"]),
            run_key=item.get(RUN_KEY, {}).get("S"),
            objects=frozenset(item.get(OBJECTS, {}).get("SS", ())),
            inline={k: bytes(v["B"]) for k, v in item.get(INLINE, {}).get("M", {}).items()},
            written_at=_written_at(item),
        )
    except (KeyError, ValueError) as exc:
        raise IntegrityError(
            f"index item with sort key {sk!r} is malformed ({type(exc).__name__}: {exc}); "
            "it was altered or written by something else"
        ) from exc


def intent_item(intent: UploadIntent) -> Item:
    item = key_item(intent.key)
    item[INTENT_OWNER] = {"S": intent.owner}
    item[INTENT_LEAVES] = {"SS": sorted(intent.leaves)}
    return item


def intent_from_item(item: Item) -> UploadIntent:
    try:
        return UploadIntent(
            ItemKey(item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]),
            str(item[INTENT_OWNER]["S"]),
            frozenset(item[INTENT_LEAVES]["SS"]),
        )
    except (KeyError, ValueError) as exc:
        raise IntegrityError(
            f"upload intent {item.get(SORT_KEY)} is malformed ({exc}); it was altered or "
            "written by something else"
        ) from exc


def loan_from_item(item: Item) -> Loan:
    """A loan item; its leaves are gone (an empty set is no attribute) once all are
    taken back."""
    key = ItemKey(item[PARTITION_KEY]["S"], item[SORT_KEY]["S"])
    return Loan(key, loan_borrower(key.sk), frozenset(item.get(LOAN_LEAVES, {}).get("SS", ())))


def stamp_of(item: Item) -> Stamp:
    return Stamp(
        ItemKey(item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]),
        _written_at(item),
        item.get(HEAD, {}).get("S"),
        item.get(IDLE_KEY, {}).get("S"),
    )


def _token(attribute: str) -> str:
    """An attribute name as placeholders may spell it (`w-3` is a special write's)."""
    return attribute.replace("-", "_")


def merge_writes_update(
    record: WritesRecord, last_wins: frozenset[int]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """One UpdateItem that stores a whole `put_writes` call atomically: the first write
    of a regular index wins (`if_not_exists`), one in `last_wins` takes the new value."""
    names = {"#ref": REF}
    values: dict[str, Any] = {":ref": {"B": record.task_ref}}
    clauses = ["#ref = if_not_exists(#ref, :ref)"]
    if record.bundle is not None:
        names["#bundle"], values[":bundle"] = BUNDLE, {"S": record.bundle}
        clauses.append("#bundle = if_not_exists(#bundle, :bundle)")
    if record.written_at is not None:
        names["#at"], values[":at"] = WRITTEN_AT, {"N": str(record.written_at)}
        clauses.append("#at = :at")
    for idx, value in sorted(record.writes.items()):
        name = _token(write_attr(idx))
        names[f"#{name}"] = write_attr(idx)
        values[f":{name}"] = _write_value(value)
        if idx in last_wins:
            clauses.append(f"#{name} = :{name}")
        else:
            clauses.append(f"#{name} = if_not_exists(#{name}, :{name})")
    return "SET " + ", ".join(clauses), names, values


def replace_update(old: Item, new: Item) -> dict[str, Any] | None:
    """UpdateItem arguments setting the attributes that differ between `old` and `new`,
    on condition that each still holds its old value; None if nothing differs."""
    changed = [name for name in new if old.get(name) != new[name]]
    if not changed:
        return None
    # Conditions compare scalars only (dynalite cannot compare maps); a map changes only
    # together with the item's sealed body or task reference, which stand guard for it.
    guarded = [n for n in changed if "M" not in new[n]]
    if len(guarded) < len(changed):
        guard = BODY if BODY in old else REF
        if guard not in guarded:
            guarded.append(guard)
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    sets, conditions = [], []
    for name in changed:
        token = _token(name)
        names[f"#set_{token}"] = name
        values[f":new_{token}"] = new[name]
        sets.append(f"#set_{token} = :new_{token}")
    for name in guarded:
        token = _token(name)
        names[f"#was_{token}"] = name
        if name in old:
            values[f":old_{token}"] = old[name]
            conditions.append(f"#was_{token} = :old_{token}")
        else:
            conditions.append(f"attribute_not_exists(#was_{token})")
    return {
        "Key": {PARTITION_KEY: new[PARTITION_KEY], SORT_KEY: new[SORT_KEY]},
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def batch_idle_keys(puts: Iterable[Record | Mark]) -> dict[ItemKey, str]:
    """The idle-index keys records written whole (copies, imports, rewrites) carry: the
    newest checkpoint of each thread in the batch, so a thread written without a commit
    (which indexes its head) is still found once idle."""
    newest: dict[str, CheckpointRecord] = {}
    for r in puts:
        if not isinstance(r, CheckpointRecord) or r.written_at is None:
            continue
        if r.pk not in newest or r.written_at > (newest[r.pk].written_at or 0):
            newest[r.pk] = r
    return {r.key: idle_key(r.pk, r.written_at or 0) for r in newest.values()}


def head_update(head: HeadMove, idle: str) -> dict[str, Any]:
    """The Update moving a namespace's head, conditional when the commit must find the
    head still at its parent (or absent, or already at this very checkpoint). It also
    sets the head's idle-index key (`idle`); the index is written only when that key
    changes, on the thread's first commit of a day."""
    update: dict[str, Any] = {
        "Key": key_item(head.key),
        "UpdateExpression": "SET #h = :to, #ik = :ik",
        "ExpressionAttributeNames": {"#h": HEAD, "#ik": IDLE_KEY},
        "ExpressionAttributeValues": {":to": {"S": head.to}, ":ik": {"S": idle}},
    }
    if head.expect_parent:
        condition = "attribute_not_exists(#h) OR #h = :to"
        if head.parent is not None:
            condition += " OR #h = :parent"
            update["ExpressionAttributeValues"][":parent"] = {"S": head.parent}
        else:
            # A new thread may start where retention removed one of the same id.
            condition += " OR begins_with(#h, :gone)"
            update["ExpressionAttributeValues"][":gone"] = {"S": TOMBSTONE_MARK}
        update["ConditionExpression"] = condition
    return update


def fence_update(fence: Fence) -> dict[str, Any]:
    """An Update of the lease item that holds only while the lease still carries the
    writer's token (the fencing check, as an UpdateItem action) and sets the lease's
    expiry to the fence's, so the holder's write renews its lease in the same request."""
    if fence.expires_ms is None:
        return {
            "Key": key_item(fence.key),
            "UpdateExpression": "SET #k = :token",
            "ConditionExpression": "#k = :token",
            "ExpressionAttributeNames": {"#k": LEASE_TOKEN},
            "ExpressionAttributeValues": {":token": {"N": str(fence.token)}},
        }
    return {
        "Key": key_item(fence.key),
        "UpdateExpression": "SET #x = :expires",
        "ConditionExpression": "#k = :token",
        "ExpressionAttributeNames": {"#k": LEASE_TOKEN, "#x": LEASE_EXPIRES},
        "ExpressionAttributeValues": {
            ":token": {"N": str(fence.token)},
            ":expires": {"N": str(fence.expires_ms)},
        },
    }


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes a DynamoDB item counts for, by DynamoDB's rule: each attribute's name plus
    its value (strings and binary by length, numbers about 1 byte per 2 digits, sets by
    their members, maps and lists 3 bytes plus 1 per element plus their contents)."""
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def attribute_size(value: Mapping[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "B":
        return len(inner)
    if kind == "N":
        return len(str(inner).lstrip("-").replace(".", "")) // 2 + 1
    if kind in ("SS", "BS"):
        return sum(len(s.encode() if isinstance(s, str) else s) for s in inner)
    if kind == "NS":
        return sum(len(str(n)) // 2 + 1 for n in inner)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + attribute_size(v) for k, v in inner.items())
    if kind == "L":
        return 3 + sum(1 + attribute_size(v) for v in inner)
    return 1  # BOOL, NULL


def record_size(record: Record) -> int:
    """Bytes the record takes as an item (the `item_size` of the ports)."""
    return item_size(to_item(record))


# ------------------------------------------------------------- long-term memory
#
# A Store item or node-cache entry (pk = `<prefix><ns>~<space>!`, sk = `<key>`):
#
#     v   B    sealed payload (key, type, version, value and embeddings), when inline
#     ol  S    else the leaf of the object holding it
#     me  N    expiry, ms since the epoch (absent: never)
#     ml  N    TTL in minutes, to push the expiry out on a read
#     mc  N    created, ms since the epoch (kept by later puts)
#     mu  N    updated, ms since the epoch
#
# (Items of the first layouts carry `mx`, expiry in whole seconds rounded up, instead of
# `me`, and may carry `a`, a write time in seconds that `mu` repeats; a later put or
# refresh removes both.)
#
# A directory entry (pk = `<prefix>~<space>~dir!`, sk = `<ns>`):
#
#     n   B    sealed namespace tuple
#     g   S    generation, replaced by every renewal
#     t   N    last renewed, seconds since the epoch (absent in the first layout: long ago)
#     e   N    1 when a delete found the namespace empty since the last renewal
#     x   N    ms until which an item of the namespace is known to live (absent: unknown)
#
# An index item of a Store namespace (same pk; sk `~f...`, `~i`, `~v...`: `layout.py`):
#
#     v   B    sealed blob (the vector manifest, a vector log entry); absent on a token
#     g   S    the manifest's generation, replaced by every change to it
#     o   SS   the leaves of the segments the manifest names (as a checkpoint record's)

MEMORY_BLOB, MEMORY_LEAF, MEMORY_EXPIRES, MEMORY_TTL = "v", "ol", "me", "ml"
MEMORY_EXPIRES_S = "mx"
MEMORY_CREATED, MEMORY_UPDATED = "mc", "mu"
DIRECTORY_NS, DIRECTORY_GENERATION = "n", "g"
DIRECTORY_RENEWED, DIRECTORY_EMPTIED, DIRECTORY_LIVE = "t", "e", "x"
INDEX_BLOB, INDEX_GENERATION, INDEX_LEAVES = "v", "g", "o"


def memory_update(row: MemoryRow) -> dict[str, Any]:
    """The UpdateItem arguments (less the table) that write `row` whole, keeping the
    creation time of an item already there."""
    names = {
        "#a": WRITTEN_AT,
        "#c": MEMORY_CREATED,
        "#u": MEMORY_UPDATED,
        "#s": MEMORY_EXPIRES_S,
    }
    values: dict[str, Any] = {
        ":c": {"N": str(row.created_ms)},
        ":u": {"N": str(row.updated_ms)},
    }
    sets = ["#c = if_not_exists(#c, :c)", "#u = :u"]
    removes = ["#a", "#s"]  # an older layout's write time and expiry in seconds
    fields: list[tuple[str, str, dict[str, Any] | None]] = [
        ("#v", MEMORY_BLOB, None if row.blob is None else {"B": row.blob}),
        ("#o", MEMORY_LEAF, None if row.leaf is None else {"S": row.leaf}),
        ("#x", MEMORY_EXPIRES, None if row.expires_ms is None else {"N": str(row.expires_ms)}),
        ("#l", MEMORY_TTL, None if row.ttl_minutes is None else {"N": repr(row.ttl_minutes)}),
    ]
    for token, attribute, value in fields:
        names[token] = attribute
        if value is None:
            removes.append(token)
        else:
            sets.append(f"{token} = :{token[1:]}")
            values[f":{token[1:]}"] = value
    expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    return {
        "Key": key_item(row.key),
        "UpdateExpression": expression,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def memory_item(row: MemoryRow) -> Item:
    """The item `memory_update` leaves, as stored (for sizing it as DynamoDB bills it)."""
    item = key_item(row.key)
    item[MEMORY_CREATED] = {"N": str(row.created_ms)}
    item[MEMORY_UPDATED] = {"N": str(row.updated_ms)}
    if row.blob is not None:
        item[MEMORY_BLOB] = {"B": row.blob}
    if row.leaf is not None:
        item[MEMORY_LEAF] = {"S": row.leaf}
    if row.expires_ms is not None:
        item[MEMORY_EXPIRES] = {"N": str(row.expires_ms)}
    if row.ttl_minutes is not None:
        item[MEMORY_TTL] = {"N": repr(row.ttl_minutes)}
    return item


def expired_condition(at_ms: int) -> dict[str, Any]:
    """An item's expiry at or before `at_ms`, whether kept in ms or (older layouts) in
    seconds rounded up."""
    return {
        "ConditionExpression": "#e <= :ms OR (attribute_not_exists(#e) AND #s <= :s)",
        "ExpressionAttributeNames": {"#e": MEMORY_EXPIRES, "#s": MEMORY_EXPIRES_S},
        "ExpressionAttributeValues": {
            ":ms": {"N": str(at_ms)},
            ":s": {"N": str(at_ms // 1000)},
        },
    }


LIVE_FILTER = (
    "(attribute_not_exists(#e) AND attribute_not_exists(#s)) OR #e > :ms "
    "OR (attribute_not_exists(#e) AND #s > :s)"
)


def directory_update(entry: DirectoryEntry) -> dict[str, Any]:
    """Renew an entry: its sealed namespace set if absent, a new generation, renewal
    time and (when the entry brings one) liveness bound, and no longer found empty."""
    names = {
        "#n": DIRECTORY_NS,
        "#g": DIRECTORY_GENERATION,
        "#t": DIRECTORY_RENEWED,
        "#e": DIRECTORY_EMPTIED,
    }
    values: dict[str, Any] = {
        ":n": {"B": entry.blob},
        ":g": {"S": entry.generation},
        ":t": {"N": str(entry.renewed)},
    }
    sets = "SET #n = if_not_exists(#n, :n), #g = :g, #t = :t"
    if entry.live_until_ms is not None:
        names["#x"] = DIRECTORY_LIVE
        values[":x"] = {"N": str(entry.live_until_ms)}
        sets += ", #x = :x"
    return {
        "Key": key_item(entry.key),
        "UpdateExpression": sets + " REMOVE #e",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def index_item(item: IndexItem) -> Item:
    out = key_item(item.key)
    if item.blob is not None:
        out[INDEX_BLOB] = {"B": item.blob}
    if item.generation is not None:
        out[INDEX_GENERATION] = {"S": item.generation}
    if item.leaves:
        out[INDEX_LEAVES] = {"SS": sorted(item.leaves)}
    return out


def index_from_item(item: Item) -> IndexItem:
    blob = item.get(INDEX_BLOB)
    generation = item.get(INDEX_GENERATION)
    return IndexItem(
        ItemKey(item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]),
        None if blob is None else bytes(blob["B"]),
        None if generation is None else str(generation["S"]),
        frozenset(item.get(INDEX_LEAVES, {}).get("SS", ())),
    )


def memory_row(item: Item) -> MemoryRow:
    """Parse a memory item; one missing what it needs is an `IntegrityError`."""
    pk, sk = item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]
    try:
        blob = item.get(MEMORY_BLOB)
        leaf = item.get(MEMORY_LEAF)
        if blob is None and leaf is None:
            raise KeyError(MEMORY_BLOB)
        expires = item.get(MEMORY_EXPIRES)
        seconds = item.get(MEMORY_EXPIRES_S)
        ttl = item.get(MEMORY_TTL)
        return MemoryRow(
            ItemKey(pk, sk),
            None if blob is None else bytes(blob["B"]),
            None if leaf is None else str(leaf["S"]),
            int(expires["N"])
            if expires is not None
            else (None if seconds is None else int(seconds["N"]) * 1000),
            None if ttl is None else float(ttl["N"]),
            int(item.get(MEMORY_CREATED, {"N": "0"})["N"]),
            int(item.get(MEMORY_UPDATED, {"N": "0"})["N"]),
        )
    except (KeyError, ValueError) as exc:
        raise IntegrityError(
            f"memory item with sort key {sk!r} is malformed ({type(exc).__name__}: {exc}); "
            "it was altered or written by something else"
        ) from exc


def directory_entry(item: Item) -> DirectoryEntry:
    try:
        live = item.get(DIRECTORY_LIVE)
        return DirectoryEntry(
            ItemKey(item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]),
            bytes(item[DIRECTORY_NS]["B"]),
            str(item[DIRECTORY_GENERATION]["S"]),
            int(item.get(DIRECTORY_RENEWED, {"N": "0"})["N"]),
            DIRECTORY_EMPTIED in item,
            None if live is None else int(live["N"]),
        )
    except (KeyError, ValueError) as exc:
        raise IntegrityError(
            f"memory directory item {item.get(SORT_KEY)} is malformed ({exc}); it was "
            "altered or written by something else"
        ) from exc
