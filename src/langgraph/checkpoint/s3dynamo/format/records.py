"""The records a thread is stored as, in plain typed values. No I/O, no AWS shapes.

Where each record lives (its keys) is `layout.py`'s business.

A checkpoint record holds the sealed body (everything but channel values, plus the
parent id), sealed metadata, a sealed (thread id, namespace) reference so `list(None)`
can name every thread, the keyed run id (for `delete_for_runs`), the leaves of the
objects holding its channel values, and small sealed values inline.

A writes record holds every write of one task at one checkpoint: each sealed inline, or
a reference to an object (`<leaf>.<channel tag>`), and optionally one bundle object with
a task's regular writes when there are more than one update may carry.

How each becomes a table item, and back, is here too (`record_item`, `record_from`); the
adapters only store items.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.format.layout import (
    LEASE_SK,
    control_pk,
    head_sk,
    intent_sk,
    intent_time,
    is_mark_key,
    is_writes_key,
    journal_pk_of,
    loan_borrower,
    loan_sk,
    mark_operation,
    object_key,
    owner_sk,
    parse_sk,
    split_shared,
    split_write_ref,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.table import Item, Put, Value, eq, key_of, keyed, missing
from langgraph.checkpoint.s3dynamo.table import ItemKey as ItemKey


@dataclass
class ControlRecord:
    """One record of the control partition: named fields (text or bytes) and a version
    that every conditional replace checks and bumps."""

    name: str
    fields: dict[str, str | bytes]
    version: int = 1


# Control items' keys, built here only (`layout.py` has their grammar).
def head_key(thread_name: str, ns_name: str) -> ItemKey:
    """Where a namespace's head (or a tombstone, or a marker) lives."""
    return ItemKey(control_pk(thread_name), head_sk(ns_name))


def lease_key(thread_name: str) -> ItemKey:
    """Where a thread's lease lives."""
    return ItemKey(control_pk(thread_name), LEASE_SK)


class UploadIntent(NamedTuple):
    """What a write is about to upload, written before its first upload and deleted by
    its commit (`layout.journal_pk`): the owner of the objects (a thread's name, a Store
    or cache namespace's partition) and the leaves of its new objects, keyed hashes all,
    so the item reveals only when and how many."""

    key: ItemKey
    owner: str
    leaves: frozenset[str]

    @property
    def at_ms(self) -> int:
        return intent_time(self.key.sk)

    @property
    def object_keys(self) -> list[str]:
        return [object_key(self.owner, leaf) for leaf in sorted(self.leaves)]


def upload_intent(owner: str, leaves: Iterable[str], at_ms: int, nonce: str) -> UploadIntent:
    """The intent of one write of an owner's objects, in its journal shard."""
    key = ItemKey(journal_pk_of(owner), intent_sk(at_ms, nonce))
    return UploadIntent(key, owner, frozenset(leaves))


def orphan_intents(
    owner: str, leaves: Collection[str], at_ms: int, nonce: str
) -> list[UploadIntent]:
    """Intents naming objects of `owner` a change is about to leave unreferenced, for
    incremental collection should it stop before deleting them; as many leaves an intent
    as a loan holds (`LOAN_PART_LEAVES`: half an item's limit)."""
    ordered = sorted(leaves)
    return [
        upload_intent(owner, ordered[at : at + LOAN_PART_LEAVES], at_ms, f"{nonce}{part:x}")
        for part, at in enumerate(range(0, len(ordered), LOAN_PART_LEAVES))
    ]


@dataclass
class CheckpointRecord:
    pk: str
    sk: str
    body: bytes
    metadata: bytes
    thread_ref: bytes
    run_key: str | None = None
    objects: frozenset[str] = frozenset()
    # channel tag -> sealed value
    inline: dict[str, bytes] = field(default_factory=dict)
    # When the record was written (seconds since the epoch; None in records written before
    # the stamp existed): what retention (`retention.py`) calls activity.
    written_at: int | None = None

    @property
    def key(self) -> ItemKey:
        return ItemKey(self.pk, self.sk)

    @property
    def ns_name(self) -> str:
        return parse_sk(self.sk)[0]

    @property
    def checkpoint_id(self) -> str:
        return parse_sk(self.sk)[1]


@dataclass
class WritesRecord:
    pk: str
    sk: str
    task_ref: bytes
    # idx -> sealed write (bytes) or object reference (str, see `write_ref`)
    writes: dict[int, bytes | str] = field(default_factory=dict)
    bundle: str | None = None
    # When the newest of its writes was stored (seconds since the epoch), as above.
    written_at: int | None = None

    @property
    def key(self) -> ItemKey:
        return ItemKey(self.pk, self.sk)

    @property
    def checkpoint_id(self) -> str:
        return parse_sk(self.sk)[1]

    @property
    def owner_sk(self) -> str:
        """Sort key of the checkpoint record these writes belong to."""
        return owner_sk(self.sk)


Record = CheckpointRecord | WritesRecord


class Mark(NamedTuple):
    """What an operation in progress hides of a namespace's records from readers (a
    delete, a copy or import at its target, a prune): the checkpoints with an id up to
    `upto` (inclusive) except those in `keep`, and those in `ids`, each with its writes.
    It sorts above every checkpoint of its namespace (`layout.mark_sk`), so the reader's
    descending Query meets it first; written before the operation's first change and
    removed after its last (docs/RELIABILITY.md). A named tuple, as `Stamp` is: kinds
    are told apart with `isinstance`, never by comparing."""

    pk: str
    sk: str
    upto: str = ""
    keep: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    # When it was set (seconds since the epoch).
    at: int | None = None

    @property
    def key(self) -> ItemKey:
        return ItemKey(self.pk, self.sk)

    @property
    def ns_name(self) -> str:
        return parse_sk(self.sk)[0]

    @property
    def operation(self) -> str:
        return mark_operation(self.sk)

    def hides(self, checkpoint_id: str) -> bool:
        return checkpoint_id in self.ids or (
            checkpoint_id <= self.upto and checkpoint_id not in self.keep
        )

    def hides_below(self, checkpoint_id: str) -> bool:
        """Whether it hides every checkpoint older than `checkpoint_id` too (a reader
        going newest first may stop there)."""
        return checkpoint_id <= self.upto and all(k >= checkpoint_id for k in self.keep)


class Veil:
    """The marks of one or more namespaces, as a reader applies them: a record is hidden
    if any mark of its namespace hides its checkpoint."""

    def __init__(self, marks: Iterable[Mark] = ()) -> None:
        self.by_ns: dict[str, list[Mark]] = {}
        self.add(marks)

    def add(self, marks: Iterable[Mark]) -> None:
        for m in marks:
            self.by_ns.setdefault(m.ns_name, []).append(m)

    def __bool__(self) -> bool:
        return bool(self.by_ns)

    def hides(self, sk: str) -> bool:
        ns_name, cid, _ = parse_sk(sk)
        return any(m.hides(cid) for m in self.by_ns.get(ns_name, ()))

    def hides_below(self, sk: str) -> bool:
        ns_name, cid, _ = parse_sk(sk)
        return any(m.hides_below(cid) for m in self.by_ns.get(ns_name, ()))


class Stamp(NamedTuple):
    """What retention reads of one item: its key, when it was written (a record's stamp,
    a mark's time; None if unstamped or neither), for a namespace's head the id (or
    tombstone) it names, and its idle-index key."""

    key: ItemKey
    written_at: int | None = None
    head: str | None = None
    # Its key in the idle index (`layout.idle_key`), if it carries one.
    idle: str | None = None


class HeadMove(NamedTuple):
    """How committing a checkpoint moves its namespace's head (the id of the newest
    checkpoint, kept in a control item): to `to`, and, when `expect_parent`, only if the
    head still names `parent` (a new namespace: `parent` None, no head yet, or a
    tombstone left by retention), names an older checkpoint (a commit with detection off
    left it), is absent (threads written before heads existed, or after maintenance
    removed it), or already names `to` (a repeat of this very commit)."""

    key: ItemKey
    to: str
    parent: str | None
    expect_parent: bool


class Fence(NamedTuple):
    """A write made under a thread's lease: refused unless the lease still carries
    `token` (nobody took it over); accepted, it also sets the lease's expiry to
    `expires_ms` when given (the holder's writes keep its lease alive)."""

    key: ItemKey
    token: int
    expires_ms: int | None = None


class Lease(NamedTuple):
    """A held lease: who holds it, its fencing token, and when it lapses (ms since the
    epoch, the holder's clock)."""

    key: ItemKey
    owner: str
    token: int
    expires_ms: int


def named_leaves(record: Record) -> set[str]:
    """Every object a record names: own leaves, and shared ones (`layout.shared_leaf`)."""
    if isinstance(record, CheckpointRecord):
        return set(record.objects)
    leaves = {split_write_ref(v)[0] for v in record.writes.values() if isinstance(v, str)}
    if record.bundle is not None:
        leaves.add(record.bundle)
    return leaves


def referenced_leaves(record: Record) -> set[str]:
    """Leaves of its own thread's objects a record keeps alive (the mark phase of garbage
    collection); what it shares of another thread's the loan keeps (`Loan`)."""
    return {leaf for leaf in named_leaves(record) if "/" not in leaf}


def shared_leaves(records: Iterable[Record]) -> dict[str, set[str]]:
    """Lender (a thread name) -> leaves of its objects these records share."""
    out: dict[str, set[str]] = {}
    for record in records:
        for leaf in named_leaves(record):
            shared = split_shared(leaf)
            if shared is not None:
                out.setdefault(shared[0], set()).add(shared[1])
    return out


# Leaves per loan item: 8,000 of 22 characters are about 200 KB, half an item's limit,
# which leaves room for a repeated copy that adds a few.
LOAN_PART_LEAVES = 8000


class Loan(NamedTuple):
    """Leaves of a thread's objects (the lender's, `key.pk` its control partition) that a
    copy (the borrower) shares; while it stands, nothing deletes them. One loan may take
    several items (`layout.loan_sk`)."""

    key: ItemKey
    borrower: str
    leaves: frozenset[str]


def held_blobs(record: Record) -> list[bytes]:
    """Sealed blobs a record holds itself (not the objects it references): a checkpoint's
    body, metadata, reference and inline values; a task's reference and inline writes."""
    if isinstance(record, CheckpointRecord):
        return [record.body, record.metadata, record.thread_ref, *record.inline.values()]
    return [record.task_ref, *(v for v in record.writes.values() if isinstance(v, bytes))]


def pack_bundle(writes: dict[int, bytes]) -> bytes:
    """Concatenate sealed writes as `idx | length | blob`; each keeps its own seal."""
    out = bytearray()
    for idx, blob in sorted(writes.items()):
        out += idx.to_bytes(4, "big", signed=True) + len(blob).to_bytes(4, "big") + blob
    return bytes(out)


def unpack_bundle(data: bytes) -> dict[int, bytes]:
    """Inverse of `pack_bundle`; ValueError if the data is cut short."""
    writes: dict[int, bytes] = {}
    pos = 0
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("bundle is truncated")
        idx = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        blob = data[pos + 8 : pos + 8 + size]
        if len(blob) != size:
            raise ValueError("bundle is truncated")
        writes[idx] = blob
        pos += 8 + size
    return writes


def loan_parts(
    lender: str, borrower: str, leaves: Iterable[str]
) -> list[tuple[ItemKey, list[str]]]:
    """The items a loan of these leaves takes, and the leaves of each (sorted, in parts
    of `LOAN_PART_LEAVES`)."""
    ordered = sorted(set(leaves))
    return [
        (
            ItemKey(control_pk(lender), loan_sk(borrower, n)),
            ordered[start : start + LOAN_PART_LEAVES],
        )
        for n, start in enumerate(range(0, len(ordered), LOAN_PART_LEAVES))
    ]


# ------------------------------------------------------------------ as items
#
# How each record is one item of the table (`table.py`): its attributes, and what an item
# missing what its kind requires means. docs/FORMAT.md, "Index items", lists them.

BODY, METADATA, REF, OBJECTS, INLINE, WRITTEN_AT = "c", "m", "t", "o", "iv", "a"
WRITE_PREFIX, BUNDLE = "w", "wb"
# The run id's keyed hash and the idle-index key: the secondary indexes' keys (schema.py).
RUN_KEY, IDLE_KEY = "rk", "ik"
HEAD = "h"
MARK_UPTO, MARK_KEEP, MARK_IDS, MARK_AT = "mu", "mk", "mi", "ma"
LEASE_OWNER, LEASE_TOKEN, LEASE_EXPIRES = "o", "k", "x"
# The leaves of a lender's objects a borrower shares.
LOAN_LEAVES = "ll"
# On a borrowing: the borrower's records are going (`store/removal.py`, `Remover._whole`),
# or those that name these leaves of the lender's objects (`Remover._history`); the
# borrower is a copy that has not shown its records yet (`store/copying.py`), which the
# lender's deletion may end (then `end` is set, and the copy never shows).
BORROW_ENDING, BORROW_ENDING_LEAVES, BORROW_COPYING = "end", "el", "cp"


def write_attr(idx: int) -> str:
    return f"{WRITE_PREFIX}{idx}"


def record_item(record: Record | Mark) -> Item:
    """A record or mark as the item it is stored as."""
    if isinstance(record, Mark):
        return mark_item(record)
    item = keyed(record.key)
    if isinstance(record, WritesRecord):
        item[REF] = record.task_ref
        item.update({write_attr(idx): value for idx, value in record.writes.items()})
        if record.bundle is not None:
            item[BUNDLE] = record.bundle
    else:
        item[BODY], item[METADATA], item[REF] = record.body, record.metadata, record.thread_ref
        if record.run_key:
            item[RUN_KEY] = record.run_key
        if record.objects:
            item[OBJECTS] = record.objects
        if record.inline:
            item[INLINE] = dict(sorted(record.inline.items()))
    if record.written_at is not None:
        item[WRITTEN_AT] = record.written_at
    return item


def record_from(item: Mapping[str, Value]) -> Record:
    """The record an item holds; one missing what its kind requires is an
    `IntegrityError`."""
    key = key_of(item)
    try:
        written_at = item.get(WRITTEN_AT)
        stamp = None if written_at is None else int(written_at)  # type: ignore[arg-type]
        if is_writes_key(key.sk):
            writes: dict[int, bytes | str] = {
                int(name[len(WRITE_PREFIX) :]): _blob_or_ref(value)
                for name, value in item.items()
                if name.startswith(WRITE_PREFIX) and name != BUNDLE
            }
            bundle = item.get(BUNDLE)
            return WritesRecord(
                key.pk, key.sk, _bytes(item[REF]), writes,
                None if bundle is None else str(bundle), stamp,
            )  # fmt: skip
        inline = item.get(INLINE, {})
        run_key = item.get(RUN_KEY)
        return CheckpointRecord(
            pk=key.pk,
            sk=key.sk,
            body=_bytes(item[BODY]),
            metadata=_bytes(item[METADATA]),
            thread_ref=_bytes(item[REF]),
            run_key=None if run_key is None else str(run_key),
            objects=frozenset(item.get(OBJECTS, frozenset())),  # type: ignore[arg-type]
            inline={str(k): _bytes(v) for k, v in inline.items()},  # type: ignore[union-attr]
            written_at=stamp,
        )
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise IntegrityError(
            f"index item with sort key {key.sk!r} is malformed ({type(exc).__name__}: {exc}); "
            "it was altered or written by something else"
        ) from exc


def _bytes(value: Value) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError(f"expected bytes, found {type(value).__name__}")
    return value


def _blob_or_ref(value: Value) -> bytes | str:
    if not isinstance(value, (bytes, str)):
        raise TypeError(f"expected bytes or a reference, found {type(value).__name__}")
    return value


def mark_item(mark: Mark) -> Item:
    item = keyed(mark.key)
    if mark.upto:
        item[MARK_UPTO] = mark.upto
    if mark.keep:
        item[MARK_KEEP] = mark.keep
    if mark.ids:
        item[MARK_IDS] = mark.ids
    if mark.at is not None:
        item[MARK_AT] = mark.at
    return item


def mark_from(item: Mapping[str, Value]) -> Mark:
    key = key_of(item)
    at = item.get(MARK_AT)
    return Mark(
        pk=key.pk,
        sk=key.sk,
        upto=str(item.get(MARK_UPTO, "")),
        keep=frozenset(item.get(MARK_KEEP, frozenset())),  # type: ignore[arg-type]
        ids=frozenset(item.get(MARK_IDS, frozenset())),  # type: ignore[arg-type]
        at=None if at is None else int(at),  # type: ignore[arg-type]
    )


def is_mark(item: Mapping[str, Value]) -> bool:
    return is_mark_key(str(item[SORT_KEY]))


def loan_from(item: Mapping[str, Value]) -> Loan:
    """A loan item; its leaves are gone (an empty set is no attribute) once all are
    taken back."""
    key = key_of(item)
    leaves = item.get(LOAN_LEAVES, frozenset())
    return Loan(key, loan_borrower(key.sk), frozenset(leaves))  # type: ignore[arg-type]


def stamp_from(item: Mapping[str, Value]) -> Stamp:
    written_at = item.get(WRITTEN_AT, item.get(MARK_AT))
    head, idle = item.get(HEAD), item.get(IDLE_KEY)
    return Stamp(
        key_of(item),
        None if written_at is None else int(written_at),  # type: ignore[arg-type]
        None if head is None else str(head),
        None if idle is None else str(idle),
    )


# What retention reads of an item (`Stamp`): a small reply, though a Scan or Query is
# billed by the size of the whole items it reads.
STAMP_ATTRIBUTES = (WRITTEN_AT, MARK_AT, HEAD, IDLE_KEY)


# An upload intent: the owner (a thread or a memory partition) and the leaves it names.
INTENT_OWNER, INTENT_LEAVES = "it", "il"


def intent_item(intent: UploadIntent) -> Item:
    item = keyed(intent.key)
    item[INTENT_OWNER], item[INTENT_LEAVES] = intent.owner, frozenset(intent.leaves)
    return item


def intent_from(item: Mapping[str, Value]) -> UploadIntent:
    try:
        leaves = item[INTENT_LEAVES]
        if not isinstance(leaves, frozenset):
            raise TypeError("its leaves are no set")
        return UploadIntent(key_of(item), str(item[INTENT_OWNER]), leaves)
    except (KeyError, TypeError) as exc:
        raise IntegrityError(
            f"upload intent {item.get(SORT_KEY)!r} is malformed ({exc}); it was altered or "
            "written by something else"
        ) from exc


# A control record's version, checked on every replace.
CONTROL_VERSION = "v"


def control_item(pk: str, record: ControlRecord) -> Item:
    item = keyed(ItemKey(pk, record.name), **record.fields)
    item[CONTROL_VERSION] = record.version
    return item


def control_from(item: Mapping[str, Value]) -> ControlRecord:
    key = key_of(item)
    fields = {
        name: value
        for name, value in item.items()
        if name not in ("pk", "sk", CONTROL_VERSION) and isinstance(value, (str, bytes))
    }
    return ControlRecord(key.sk, fields, int(item[CONTROL_VERSION]))  # type: ignore[arg-type]


def put_control(pk: str, record: ControlRecord, expected_version: int | None) -> Put:
    """A record of a deployment's own partition, written if none of its name exists
    (`expected_version` None) or while the stored one still has `expected_version`."""
    when = missing() if expected_version is None else eq(CONTROL_VERSION, expected_version)
    return Put(control_item(pk, record), when=when)
