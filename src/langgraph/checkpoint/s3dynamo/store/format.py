"""The thread format: every write of a thread's items, with the condition each carries and
the error a refused one means. Pure: it builds `table.py`'s writes from records
(`records.py` turns those into items) and sends nothing. What each item holds:
docs/FORMAT.md, "Index items"; why each condition: docs/RELIABILITY.md.

A checkpoint commits in one transaction: its record, its namespace's head moved (on
condition, for a run continuing the latest it loaded: the run record,
`store/handoff.py`), under a lease the lease's fencing check (which renews it), and the
upload intent's delete. With none of
those, the record alone is one plain write, which a table without transactions serves.
A thread's first checkpoint, and a put of a declared value its process does not know
the thread has, add the thread's catalog entries (`catalog_records.py`) to that
transaction; beside a plain write they go in one batch before it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    CopyCutError,
    HeadClaimedError,
    LeaseLostError,
    ThreadDeletedError,
)
from langgraph.checkpoint.s3dynamo.format.catalog_records import (
    CatalogEntry,
    entry_items,
    entry_of_ref,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    PRUNING_HEAD,
    TOMBSTONE_MARK,
    borrow_sk,
    control_pk,
    idle_key,
    mark_sk,
    tombstone,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    BODY,
    BORROW_COPYING,
    BORROW_ENDING,
    BORROW_ENDING_LEAVES,
    BUNDLE,
    HEAD,
    IDLE_KEY,
    LEASE_EXPIRES,
    LEASE_OWNER,
    LEASE_TOKEN,
    LOAN_LEAVES,
    LOAN_PART_LEAVES,
    REF,
    WRITTEN_AT,
    CheckpointRecord,
    Fence,
    HeadMove,
    ItemKey,
    Lease,
    Mark,
    Record,
    WritesRecord,
    head_key,
    mark_item,
    record_item,
    write_attr,
)
from langgraph.checkpoint.s3dynamo.table import (
    Check,
    Delete,
    Item,
    Put,
    Update,
    Value,
    When,
    Write,
    begins,
    both,
    either,
    eq,
    exists,
    keyed,
    le,
    lt,
    missing,
)


def commit_checkpoint(
    record: CheckpointRecord,
    head: HeadMove | None,
    fence: Fence | None,
    now: int,
    catalog: Sequence[CatalogEntry] = (),
    subject: Write | None = None,
) -> list[Write]:
    """The writes of one checkpoint's commit (module docstring); `now` dates the idle
    index key, which goes on the head, or on the record when there is none. `catalog`:
    entries (with their back-references) the commit writes too, in a transaction only.
    The engine adds the upload intent's delete. `subject`: the data subject's fence, checked
    (or made, with its first key) after the head, so a deleted thread's refusal is what a
    commit of both says (`subject_records.fence_check`)."""
    idle = idle_key(record.pk, record.written_at or now)
    item = record_item(record)
    if head is None:
        item[IDLE_KEY] = idle
    writes: list[Write] = [Put(item), *catalog_puts(catalog)]
    # The fence before the head: a lease taken over is what a refused head then means.
    if fence is not None:
        writes.append(fenced(fence))
    if head is not None:
        writes.append(move_head(head, idle))
    if subject is not None:
        writes.append(subject)
    return writes


def catalog_puts(entries: Iterable[CatalogEntry]) -> list[Put | Update | Delete]:
    """Catalog entries and their back-references, written whole and unconditionally (a
    repeat writes the same items), in a commit's transaction."""
    return [Put(item) for item in entry_items(entries)]


def catalog_items(entries: Iterable[CatalogEntry]) -> list[Item]:
    """The same, as the items a batch writes before a plain commit, or a copy's."""
    return entry_items(entries)


def catalog_resealed(entry: CatalogEntry) -> Put:
    """An entry sealed again (a key rotation), written only while the entry exists: a
    thread deleted meanwhile is not filed again."""
    [item, _] = entry_items([entry])
    return Put(item, when=exists())


def catalog_deletes(refs: Iterable[ItemKey]) -> tuple[list[ItemKey], list[ItemKey]]:
    """What removing a thread's catalog entries deletes, in two steps: the entries its
    back-references point at, then the back-references (a repeat finds them again)."""
    refs = [r for r in refs if entry_of_ref(r) is not None]
    entries = [e for r in refs if (e := entry_of_ref(r)) is not None]
    return sorted(entries), sorted(refs)


def commit_writes(
    record: WritesRecord,
    last_wins: frozenset[int],
    fence: Fence | None,
    guard: DeletedSince | None = None,
    subject: Write | None = None,
) -> list[Write]:
    """A task's writes added to its record in one update: the first write of a regular
    index wins (kept where present), one in `last_wins` takes the new value."""
    first: dict[str, Value] = {REF: record.task_ref}
    last: dict[str, Value] = {}
    if record.bundle is not None:
        first[BUNDLE] = record.bundle
    if record.written_at is not None:
        last[WRITTEN_AT] = record.written_at
    for idx, value in sorted(record.writes.items()):
        (last if idx in last_wins else first)[write_attr(idx)] = value
    writes: list[Write] = [Update(record.key, set=last, keep=first)]
    if fence is not None:
        writes.append(fenced(fence))
    if guard is not None:
        writes.append(not_deleted(guard))
    if subject is not None:
        writes.append(subject)
    return writes


def move_head(head: HeadMove, idle: str) -> Update:
    """Move a namespace's head, on condition when the commit must find it still at its
    parent (or absent, or already at this very checkpoint; a new thread may also start
    where retention left a tombstone). A head behind the parent (naming an older
    checkpoint) is no conflict either: a commit without detection wrote the parent and
    left the head where it was, and any commit made since the run loaded its parent
    names a newer checkpoint (ids sort as they were made; tombstones above every id).
    It sets the head's idle-index key too: the index is written only when that key
    changes, on the thread's first commit of a day."""
    when = None
    if head.expect_parent:
        parent = le(HEAD, head.parent) if head.parent is not None else begins(HEAD, TOMBSTONE_MARK)
        when = either(missing(HEAD), eq(HEAD, head.to), parent)
    elif head.parent is not None:
        # A fork, a replay: any head but a tombstone. A checkpoint with a parent continues
        # a history, and a deleted thread's stays deleted; one without starts afresh.
        when = alive()

    def moved(found: Item | None) -> ConcurrentUpdateError:
        now = found.get(HEAD) if found else None
        if not isinstance(now, str):  # a table that does not say what it found
            return ConcurrentUpdateError("the namespace's head moved")
        if now.startswith(TOMBSTONE_MARK):
            return ThreadDeletedError(f"its head is a tombstone, {now}", tombstone=now)
        return ConcurrentUpdateError(f"the head names {now}, not {head.parent}")

    return Update(head.key, set={HEAD: head.to, IDLE_KEY: idle}, when=when, refusal=moved)


def alive() -> When:
    """A namespace head that is no tombstone (absent: a thread from before heads, or
    written with detection off). Checkpoint ids sort below `~`."""
    return either(missing(HEAD), lt(HEAD, TOMBSTONE_MARK))


class DeletedSince(NamedTuple):
    """The head of a checkpoint's namespace, and when the checkpoint was made (seconds,
    from its id; None for an id that does not say)."""

    head: ItemKey
    made: float | None


def not_deleted(guard: DeletedSince) -> Check:
    """A task's writes to a checkpoint this process did not commit (a run resumed from
    what it loaded) land only while its namespace was not deleted after the checkpoint
    was made: a head that is no tombstone, or a tombstone older than the checkpoint (the
    thread was started afresh since). A head naming a checkpoint sorts below every
    tombstone, and tombstones sort as their times (`layout.tombstone`)."""
    when = alive()
    if guard.made is not None:
        when = either(missing(HEAD), lt(HEAD, tombstone(guard.made)))

    def deleted(found: Item | None) -> ConcurrentUpdateError:
        now = (found or {}).get(HEAD)
        tomb = now if isinstance(now, str) else None
        return ThreadDeletedError(f"its head is a tombstone, {now!s}", tombstone=tomb)

    return Check(guard.head, when, refusal=deleted)


def unforge(key: ItemKey, forged: str, latest: str) -> Update:
    """A head holding a forged tombstone (`Namer.genuine_tombstone` says no) set back to
    the id of its namespace's latest checkpoint, only while it still holds that forged
    text: a delete that set a real one meanwhile is kept."""
    return Update(key, set={HEAD: latest}, when=eq(HEAD, forged))


def fenced(fence: Fence) -> Update:
    """The lease's fencing check as a write: it holds only while the lease carries the
    writer's token, and pushes the lease's expiry out (the write renews the lease)."""
    changes: dict[str, Value] = (
        {LEASE_TOKEN: fence.token}
        if fence.expires_ms is None
        else {LEASE_EXPIRES: fence.expires_ms}
    )
    return Update(
        fence.key,
        set=changes,
        when=eq(LEASE_TOKEN, fence.token),
        refusal=LeaseLostError("the lease was taken over; write refused"),
    )


def delete_if_unchanged(record: Record) -> Delete:
    """Delete a record only while it carries the write time it was read with (a writes
    record's merge stamps it anew)."""
    stamp = record.written_at
    return Delete(record.key, when=missing(WRITTEN_AT) if stamp is None else eq(WRITTEN_AT, stamp))


def replace_if_unchanged(old: Record, new: Record) -> Update | None:
    """An update setting what differs between `old` and `new` while each attribute
    still holds its old value; None if nothing differs. A map (inline values) changes
    only with the sealed body or task reference, which stand guard for it."""
    before, after = record_item(old), record_item(new)
    changed = [name for name in after if before.get(name) != after[name]]
    if not changed:
        return None
    guarded = [n for n in changed if not isinstance(after[n], Mapping)]
    if len(guarded) < len(changed):
        guard = BODY if BODY in before else REF
        if guard not in guarded:
            guarded.append(guard)
    conditions: list[When] = [
        eq(n, before[n]) if n in before else missing(n)  # type: ignore[arg-type]
        for n in guarded
    ]
    return Update(new.key, set={n: after[n] for n in changed}, when=both(*conditions))


def batch_items(puts: Iterable[Record | Mark]) -> list[Item]:
    """Records written whole (copies, imports, rewrites) as items; the newest checkpoint
    of each thread among them carries the idle-index key, so a thread written without a
    commit (which indexes its head) is still found once idle."""
    puts = list(puts)
    newest: dict[str, CheckpointRecord] = {}
    for r in puts:
        if not isinstance(r, CheckpointRecord) or r.written_at is None:
            continue
        if r.pk not in newest or r.written_at > (newest[r.pk].written_at or 0):
            newest[r.pk] = r
    idle = {r.key: idle_key(r.pk, r.written_at or 0) for r in newest.values()}
    items = []
    for r in puts:
        item = record_item(r)
        if r.key in idle:
            item[IDLE_KEY] = idle[r.key]
        items.append(item)
    return items


def fence_items(
    thread_name: str, tombstones: Mapping[str, str], named: Mapping[str, str], at: int
) -> list[Item]:
    """A removal's fence: tombstone heads, and a delete mark over each namespace up to the
    checkpoint its head `named` (readers see the thread deleted from here on; the records'
    own marks replace these)."""
    live = {ns: head for ns, head in named.items() if ns != PRUNING_HEAD}
    marks = [
        Mark(thread_name, mark_sk(ns, "delete"), upto=head, at=at)
        for ns, head in sorted(live.items())
        if tombstone_time(head) is None
    ]
    return [*head_items(thread_name, tombstones), *map(mark_item, marks)]


def head_items(thread_name: str, heads: Mapping[str, str]) -> list[Item]:
    """Heads set without condition; a tombstone stays in the idle index under its own
    day, so it is found once it expires."""
    items: list[Item] = []
    for ns, value in sorted(heads.items()):
        item: Item = {"pk": head_key(thread_name, ns).pk, "sk": head_key(thread_name, ns).sk}
        item[HEAD] = value
        if (at := tombstone_time(value)) is not None:
            item[IDLE_KEY] = idle_key(thread_name, at)
        items.append(item)
    return items


def claimed_heads(thread_name: str, heads: Mapping[str, str]) -> list[Put]:
    """A copy's or an import's heads, each set only where none names a checkpoint: absent,
    a tombstone, or already this one (a repeat). A run that committed first refuses the
    claim (`HeadClaimedError`); one that comes after finds the head and is refused."""
    return [
        Put(
            item,
            when=either(missing(HEAD), begins(HEAD, TOMBSTONE_MARK), eq(HEAD, str(item[HEAD]))),
            refusal=lambda _found: HeadClaimedError("a namespace's head names a checkpoint"),
        )
        for item in head_items(thread_name, heads)
    ]


def take_lease(key: ItemKey, owner: str, now_ms: int, ttl_ms: int) -> Update:
    """Take a lease nobody holds or whose holder's expiry has passed, with a fencing
    token one above the last (asked back with the item)."""
    return Update(
        key,
        set={LEASE_OWNER: owner, LEASE_EXPIRES: now_ms + ttl_ms},
        add={LEASE_TOKEN: 1},
        when=either(missing(LEASE_EXPIRES), lt(LEASE_EXPIRES, now_ms)),
    )


def lease_taken(key: ItemKey, owner: str, item: Mapping[str, Value], expires_ms: int) -> Lease:
    return Lease(key, owner, int(item[LEASE_TOKEN]), expires_ms)  # type: ignore[arg-type]


def lease_expiry(lease: Lease, expires_ms: int) -> Update:
    """Set a held lease's expiry while it still carries the holder's token (0: let go)."""
    return Update(lease.key, set={LEASE_EXPIRES: expires_ms}, when=eq(LEASE_TOKEN, lease.token))


def set_idle(key: ItemKey, to: str, was: str | None) -> Update:
    """An existing item's idle-index key set to `to` if it is still `was` (None: if the
    item exists)."""
    return Update(key, set={IDLE_KEY: to}, when=eq(IDLE_KEY, was) if was else exists())


def lend(key: ItemKey, leaves: Sequence[str]) -> Update:
    """Leaves added to one part of a loan (a repeat adds nothing)."""
    return Update(key, add={LOAN_LEAVES: frozenset(leaves)})


def unlend(key: ItemKey, leaves: Sequence[str]) -> Update:
    """Leaves taken out of one part of a loan; a loan its borrower's removal deleted
    meanwhile stays deleted (an update would make it again, lending nothing)."""
    return Update(key, take={LOAN_LEAVES: frozenset(leaves)}, when=exists())


def borrowing(borrower: str, lender: str) -> Put:
    """That `borrower`, a copy not showing its records yet, shares objects of `lender`:
    its deletion then ends the loan, and so may the lender's until the copy settles."""
    return Put(keyed(ItemKey(control_pk(borrower), borrow_sk(lender)), **{BORROW_COPYING: 1}))


def settling(borrower: str, lender: str) -> Update:
    """The copy's borrowing, about to show its records, no longer ending with its lender:
    `CopyCutError` where the lender's deletion ended it first, or it is gone."""
    return Update(
        ItemKey(control_pk(borrower), borrow_sk(lender)),
        remove=(BORROW_COPYING,),
        when=both(exists(), missing(BORROW_ENDING)),
        refusal=lambda _found: CopyCutError(
            "a deletion of a thread this copy shares objects of ended its borrowing first"
        ),
    )


def cutting(borrower: str, lender: str) -> Update:
    """The lender's deletion ending the borrowing of a copy that has not settled: from
    then on its loan keeps nothing, and the copy never shows (refused where it settled)."""
    return Update(
        ItemKey(control_pk(borrower), borrow_sk(lender)),
        set={BORROW_ENDING: 1},
        when=both(exists(BORROW_COPYING), missing(BORROW_ENDING)),
    )


def ending_borrowing(borrower: str, lender: str) -> Item:
    """The borrowing again, saying that the borrower's records are going: from then on
    its loan keeps nothing of the lender's (docs/RELIABILITY.md, "Copies share objects")."""
    return keyed(ItemKey(control_pk(borrower), borrow_sk(lender)), **{BORROW_ENDING: 1})


def letting_go(borrower: str, lender: str, leaves: Collection[str]) -> Update:
    """The borrowing, where it still stands, naming the leaves the borrower's pruned
    records shared: from then on its loan keeps the rest only. Of many, the first
    `LOAN_PART_LEAVES` are named, as a loan's item holds them; the rest stay kept, for
    garbage collection."""
    going = frozenset(sorted(leaves)[:LOAN_PART_LEAVES])
    key = ItemKey(control_pk(borrower), borrow_sk(lender))
    return Update(key, set={BORROW_ENDING_LEAVES: going}, when=exists())
