"""Deleting a thread's records and objects so that a reader sees the thread whole or
deleted, never half-deleted, in full batches.

Order (`delete_thread`; retention's delete and prune follow it too):

1. Each namespace's head becomes a tombstone, and stays one: a run that loaded the
   thread before is refused from here (`ThreadDeletedError`); a new history (a put
   with no parent) may start. Then the records are read, strongly consistent.
2. A mark over every namespace (`records.Mark`, one batch): from here the reads that
   start at a namespace's top (latest, listings, history) show nothing of the records
   it hides, at no request more (`finder.py`).
3. The records, in full batches of 25 sent in parallel, in any order within each of two
   steps: the checkpoint records, then the writes records (so a read by checkpoint id,
   which does not meet the mark, finds a checkpoint whole or not at all).
4. Objects no record references any more and no loan lends to a copy (none of the
   thread's, unless a new history started meanwhile or a copy shares them): the index
   no longer points at them.
5. What the thread shared of other threads' objects (it was a copy): each loan ends
   (`release`), and the objects it kept that nothing else keeps go.
6. The marks; its catalog entries (found through their back-references in its control
   partition); then the back-references: removed last.

Interrupted anywhere, a repeat reads the keys again and finishes. The argument, and
what each reader sees meanwhile: docs/RELIABILITY.md, "Deleting, copying, pruning".
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine
from langgraph.checkpoint.s3dynamo.layout import (
    CATALOG_REF,
    TOP,
    borrow_lender,
    borrow_sk,
    control_pk,
    head_namespace,
    is_mark_key,
    is_writes_key,
    mark_sk,
    object_key,
    parse_sk,
    tombstone,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.records import ItemKey, Mark, mark_item
from langgraph.checkpoint.s3dynamo.store.finder import Finder
from langgraph.checkpoint.s3dynamo.store.format import catalog_deletes, head_items, unlend


@dataclass(frozen=True)
class Deleted:
    """What deleting a thread removed: its checkpoint records, its records in all
    (checkpoints and writes), and the objects deleted (its own and, for a copy, those
    of its source nothing else keeps any more)."""

    checkpoints: int
    items: int
    objects: int

    @property
    def found(self) -> int:
        """Records and objects: 0 for a thread with none (or under another secret)."""
        return self.items + self.objects


class Deleter:
    def __init__(
        self,
        engine: BlobEngine,
        finder: Finder,
        namer: Namer,
        now: Callable[[], int],
        clock: Callable[[], float],
    ) -> None:
        self.engine = engine
        self.finder = finder
        self.objects = engine.objects
        self.namer = namer
        self.now = now
        self.clock = clock

    def delete_thread(self, tid: str) -> Deleted:
        """Delete every record and object of a thread (all namespaces) in the order of
        the module docstring. Interrupted, the thread reads as deleted (or, before the
        marks are written, unchanged) until the call is repeated; a repeat finishes it.
        Returns what it deleted."""
        thread_name = self.namer.thread(tid)
        # First a tombstone on every namespace head: from here a run that loaded the
        # thread before is refused (`ThreadDeletedError`) and writes nothing, and the
        # tombstones stay, so it never writes the thread back; a run starting it afresh
        # may. The records are read after them, so a commit that landed before is seen
        # and deleted too; a namespace found with records and no head (written with
        # detection off) gets its tombstone then (docs/RELIABILITY.md, "Deletes stay
        # deleted").
        control = self.finder.keys(control_pk(thread_name), consistent=True)
        heads = {ns for k in control if (ns := head_namespace(k.sk)) is not None}
        at = tombstone(self.clock())
        self.engine.batch(head_items(thread_name, dict.fromkeys(sorted(heads), at)))
        keys = self.finder.thread_keys(tid, consistent=True)
        records = [k for k in keys if not is_mark_key(k.sk)]
        headless = {parse_sk(k.sk)[0] for k in records} - heads
        if headless:
            self.engine.batch(head_items(thread_name, dict.fromkeys(sorted(headless), at)))
        marks: list[Mark] = []
        if records:
            marks = self.delete_marks(thread_name, records)
            self.hide(marks)
            self.delete_records(records)
        deleted = self.delete_unreferenced_objects(thread_name)
        for key in control:
            lender = borrow_lender(key.sk)
            if lender is not None:
                deleted += self.release(thread_name, lender, set())
        # Every mark goes: a copy's or a prune's left by an interrupted run included.
        self.unhide({*(m.key for m in marks), *(k for k in keys if is_mark_key(k.sk))})
        self.engine.batch(deletes=self.uncatalog(control))
        checkpoints = sum(1 for k in records if not is_writes_key(k.sk))
        return Deleted(checkpoints, len(records), deleted)

    def uncatalog(self, control: Iterable[ItemKey]) -> list[ItemKey]:
        """Delete the catalog entries the back-references among these control keys of a
        thread point at (one batch, only if there are any); the back-references, which
        the caller deletes after them, so an interrupted removal is found again."""
        entries, refs = catalog_deletes(control)
        self.engine.batch(deletes=entries)
        return refs

    def drop_catalog(self, thread_name: str) -> None:
        """Remove a thread's catalog entries, then their back-references: what deleting
        it does to the catalog, for an operation that removes a thread another way (one
        Query of its control partition; nothing more without entries)."""
        refs = self.uncatalog(self.finder.keys(control_pk(thread_name), prefix=CATALOG_REF))
        self.engine.batch(deletes=refs)

    def drop_catalog_if_empty(self, thread_name: str) -> None:
        """`drop_catalog`, if the thread has no record left (a strongly consistent Query
        of one item first)."""
        if not self.finder.has_records(thread_name):
            self.drop_catalog(thread_name)

    def delete_marks(
        self, thread_name: str, records: Iterable[ItemKey], keep: Iterable[ItemKey] = ()
    ) -> list[Mark]:
        """Marks hiding every one of these records (keys of one thread's records) but
        those of the checkpoints in `keep`: one per namespace, hiding up to its newest
        checkpoint. A checkpoint committed later has a newer id and stays visible: a
        new history may start on a thread being deleted."""
        newest: dict[str, str] = {}
        for key in records:
            ns_name, cid, _ = parse_sk(key.sk)
            if cid > newest.get(ns_name, ""):
                newest[ns_name] = cid
        kept: dict[str, set[str]] = {}
        for key in keep:
            ns_name, cid, _ = parse_sk(key.sk)
            kept.setdefault(ns_name, set()).add(cid)
        at = self.now()
        operation = "prune" if kept else "delete"
        return [
            Mark(
                thread_name,
                mark_sk(ns_name, operation),
                upto=upto,
                keep=frozenset(kept.get(ns_name, ())),
                at=at,
            )
            for ns_name, upto in sorted(newest.items())
        ]

    def written_hidden(
        self,
        tid: str,
        ns_names: Collection[str],
        earlier: Collection[ItemKey],
        write: Callable[[], None],
        latest: Mapping[str, str],
    ) -> None:
        """Run `write` (a copy's or an import's records) behind a copy mark over each of
        these namespaces of `tid`, then remove those marks and the `earlier` ones an
        interrupted run left, the root namespace's last: readers see nothing of the
        records until every one is there, and a repeat finishes it. A head a delete left
        a tombstone names the newest checkpoint written in its namespace (`latest`, by
        namespace name) before any record is written: runs continue the new history,
        and a run that loaded the deleted one stays refused (docs/RELIABILITY.md,
        "Deletes stay deleted")."""
        name = self.namer.thread(tid)
        hiding = [
            Mark(name, mark_sk(ns_name, "copy"), upto=TOP, at=self.now())
            for ns_name in sorted(ns_names)
        ]
        self.hide(hiding)
        heads = self.finder.thread_heads(name)
        reopened = {ns: cid for ns, cid in latest.items() if tombstone_time(heads.get(ns))}
        if reopened:
            self.engine.batch(head_items(name, reopened))
        write()
        self.unhide({*earlier, *(m.key for m in hiding)}, last=self.namer.namespace(tid, ""))

    def hide(self, marks: Sequence[Mark]) -> None:
        """Write marks (one batch per 25); nothing a mark hides is changed before."""
        self.engine.batch(puts=[mark_item(m) for m in marks])

    def unhide(self, keys: Collection[ItemKey], last: str | None = None) -> None:
        """Remove marks, the one over namespace `last` (a thread's root namespace, whose
        checkpoints lead a reader to the others) in a request after the rest."""
        first = [k for k in keys if last is None or parse_sk(k.sk)[0] != last]
        final = [k for k in keys if k not in first]
        for batch in (first, final):
            self.engine.batch(deletes=sorted(batch))

    def delete_records(self, keys: Iterable[ItemKey]) -> None:
        """Delete records in full batches sent in parallel: the checkpoint records, then
        the writes records, so a checkpoint read by id is found whole or not at all.
        Callers hide the records with a mark first (readers of the latest state and
        listings then see none of this)."""
        keys = list(keys)
        checkpoints = [k for k in keys if not is_writes_key(k.sk)]
        writes = [k for k in keys if is_writes_key(k.sk)]
        for batch in (checkpoints, writes):
            self.engine.batch(deletes=batch)

    def release(self, borrower: str, lender: str, keep: set[str]) -> int:
        """End what `borrower` shares of `lender`'s objects but the leaves in `keep`
        (those its remaining records still share): the objects it alone kept go (no
        record of the lender references them, no other loan lends them: read after
        the borrower's own records stopped naming them), then the loan gives them up;
        with nothing kept, the loan and the borrowing go too. A repeat finishes it.
        How many objects it deleted."""
        loans = self.finder.loans(lender, borrower)
        released = {leaf for loan in loans for leaf in loan.leaves} - keep
        doomed: list[str] = []
        if released:
            live = self.finder.live_leaves(lender, but=borrower) or set()
            doomed = sorted(object_key(lender, leaf) for leaf in released - live)
            self.objects.delete(doomed)
            if keep:
                for loan in loans:
                    if taken := sorted(released & loan.leaves):
                        self.engine.apply(unlend(loan.key, taken))
        if not keep:
            gone = [loan.key for loan in loans]
            self.engine.batch(deletes=[*gone, ItemKey(control_pk(borrower), borrow_sk(lender))])
        return len(doomed)

    def delete_unreferenced_objects(self, thread_name: str) -> int:
        """Delete the thread's objects that no record references (read consistently,
        after the listing); how many. With no record left, that is all of them."""
        listed = self.objects.list_owner(thread_name)
        if not listed:
            return 0
        live = self.finder.live_leaves(thread_name) or set()
        prefix = self.objects.owner_prefix(thread_name)
        doomed = [o.key for o in listed if o.key[len(prefix) :] not in live]
        self.objects.delete(doomed)
        return len(doomed)
