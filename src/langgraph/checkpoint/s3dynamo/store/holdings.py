"""What keeps a thread's objects: the leaves its records reference, and those its loans
lend to copies that hold a borrowing of them. The mark of garbage collection and of every
removal (`removal.py`), read strongly consistent, loans after records; and how a copy
lets go of what it borrowed (`release`), when its records go or stop sharing. A read of
checkpoints never needs it, so it loads when first used. Why a referenced object is never
deleted: docs/RELIABILITY.md, "Garbage collection: why a referenced object is never
deleted" and "Copies share objects"."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Apply,
    Batch,
    DeleteObjects,
    GetMany,
    Steps,
    every_item,
)
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.format.layout import (
    borrow_sk,
    control_pk,
    is_record_key,
    loans_prefix,
    object_key,
    thread_of,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    BORROW_COPYING,
    BORROW_ENDING,
    BORROW_ENDING_LEAVES,
    CheckpointRecord,
    ItemKey,
    Loan,
    Record,
    loan_from,
    record_from,
    referenced_leaves,
    shared_leaves,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.store.finder import Finder, Skipped
from langgraph.checkpoint.s3dynamo.store.format import cutting, letting_go, unlend
from langgraph.checkpoint.s3dynamo.table import Item, begins, key_of


def item_leaves(item: Item) -> set[str]:
    """Leaves of its thread's objects a record item names (none from another item, or
    one that does not parse)."""
    if not is_record_key(str(item[SORT_KEY])):
        return set()
    try:
        return referenced_leaves(record_from(item))
    except IntegrityError:
        return set()


class Holdings:
    """The leaves a thread's records and loans hold, read through `finder`, and a copy
    letting go of them (module docstring). Each method is a protocol (`Steps`)."""

    def __init__(self, finder: Finder) -> None:
        self.finder = finder

    def loans(
        self, lender: str, borrower: str | None = None, *, backed: bool = False, cut: bool = False
    ) -> Steps[list[Loan]]:
        """A lender's loans (to one borrower, or all), read strongly consistent; with
        `backed`, only those `backed` keeps (`cut`: see there)."""
        where = begins(SORT_KEY, loans_prefix(borrower))
        items = yield from every_item(control_pk(lender), where=where, consistent=True)
        loans = [loan_from(i) for i in items]
        return (yield from self.backed(lender, loans, cut=cut)) if backed else loans

    def backed(
        self, lender: str, loans: Sequence[Loan], *, ending: bool = False, cut: bool = False
    ) -> Steps[list[Loan]]:
        """The loans whose borrower holds its borrowing of `lender`, read strongly
        consistent after them (one BatchGetItem for every borrower). A copy writes its
        borrowing before its loans and deletes it after them, so a loan without one was
        written by someone else (who can write the table) and keeps nothing: its objects
        are collected as if it were not there (docs/SECURITY.md). A borrowing that says
        it is ending (its borrower's records are going) keeps nothing either, and one
        that names leaves going keeps the rest of its loan, unless `ending`. With `cut`
        (the lender's whole deletion, after its marks), the borrowing of a copy that has
        not settled is ended first, one conditional write each: that copy never shows,
        and what it borrowed goes with the lender (docs/RELIABILITY.md, "Copies share
        objects")."""
        if not loans:
            return []
        keys = sorted({ItemKey(control_pk(loan.borrower), borrow_sk(lender)) for loan in loans})
        found = yield GetMany(keys, consistent=True)
        if cut:
            found = yield from self._cut(lender, found)
        held = {key_of(i).pk: i for i in found if ending or BORROW_ENDING not in i}
        backed = []
        for loan in loans:
            if (borrowing := held.get(control_pk(loan.borrower))) is None:
                continue
            going = () if ending else borrowing.get(BORROW_ENDING_LEAVES, ())
            backed.append(loan._replace(leaves=loan.leaves - going) if going else loan)
        return backed

    def _cut(self, lender: str, borrowings: Sequence[Item]) -> Steps[list[Item]]:
        """These borrowings of `lender`, each of a copy that has not settled ended first
        (`cutting`); one that settled meanwhile as found (read again, strongly
        consistent, where the refusal does not carry the item: dynalite's does not)."""
        out = []
        for item in borrowings:
            if BORROW_COPYING in item and BORROW_ENDING not in item:
                cut = cutting(thread_of(key_of(item).pk), lender)
                done = yield Apply(cut, returning="new", found_on_refusal=True)
                found = [done.item] if done.item is not None else []
                if not done.applied and not found:
                    found = yield GetMany([key_of(item)], consistent=True)
                if not found:
                    continue
                item = found[0]
            out.append(item)
        return out

    def live_leaves(
        self,
        thread_name: str,
        skipped: list[Skipped] | None = None,
        *,
        but: str | None = None,
        cut: bool = False,
    ) -> Steps[set[str] | None]:
        """Every leaf of a thread's objects that its records reference or a loan lends
        to a copy (the mark of garbage collection and of every deletion), read strongly
        consistent, loans after records (and only loans a borrowing backs: `backed`);
        None if the thread has neither here. `but`: leave out the loan to this borrower
        (it is ending). With `skipped`, a thread whose first checkpoint record does not
        open is reported there (the caller leaves it alone); `cut`: as `backed`'s."""
        live = yield from self.own_leaves(thread_name, skipped)
        others = [loan for loan in (yield from self.loans(thread_name)) if loan.borrower != but]
        loans = yield from self.backed(thread_name, others, cut=cut)
        if live is None and not loans:
            return None
        live = live or set()
        for loan in loans:
            live |= loan.leaves
        return live

    def unbacked_loans(self, thread_name: str) -> Steps[list[Loan]]:
        """A thread's loans that no borrowing backs: written by someone else, they keep
        nothing (`backed`)."""
        loans = yield from self.loans(thread_name)
        kept = set((yield from self.backed(thread_name, loans, ending=True)))
        return [loan for loan in loans if loan not in kept]

    def lent_leaves(self, thread_name: str, *, cut: bool = False) -> Steps[set[str]]:
        """Leaves of a thread's objects its loans name (those a borrowing backs), read
        strongly consistent; `cut`: as `backed`'s."""
        loans = yield from self.loans(thread_name, backed=True, cut=cut)
        return {leaf for loan in loans for leaf in loan.leaves}

    def own_leaves(
        self, thread_name: str, skipped: list[Skipped] | None = None
    ) -> Steps[set[str] | None]:
        """The leaves a thread's records reference (`live_leaves` without loans)."""
        live: set[str] = set()
        found = tried = False
        cursor: Item | None = None
        while True:
            page = yield from self.finder.page(thread_name, cursor=cursor, consistent=True)
            for rec in page.records:
                found = True
                live |= referenced_leaves(rec)
                if skipped is not None and not tried and isinstance(rec, CheckpointRecord):
                    tried = True
                    try:
                        self.finder.open_thread_ref(rec)
                    except IntegrityError as exc:
                        key_id = self.finder.sealer.key_id_of(rec.thread_ref)
                        skipped.append(Skipped.of(rec.pk, key_id, exc))
            if page.cursor is None:
                return live if found else None
            cursor = page.cursor

    # ------------------------------------------------------------ letting go

    def release(self, borrower: str, lender: str, keep: Collection[str]) -> Steps[int]:
        """End what `borrower` shares of `lender`'s objects but the leaves in `keep`
        (those its remaining records still share): the objects it alone kept go (no
        record of the lender references them, no other loan lends them: read after the
        borrower's own records stopped naming them), then the loan gives them up; with
        nothing kept, the loan and the borrowing go too. A repeat finishes it. How many
        objects it deleted."""
        loans = yield from self.loans(lender, borrower)
        released = {leaf for loan in loans for leaf in loan.leaves} - set(keep)
        doomed: list[str] = []
        if released:
            live = (yield from self.live_leaves(lender, but=borrower)) or set()
            doomed = sorted(object_key(lender, leaf) for leaf in released - live)
            yield DeleteObjects(doomed)
            if keep:
                for loan in loans:
                    if taken := sorted(released & loan.leaves):
                        yield Apply(unlend(loan.key, taken))
        if not keep:
            gone = [loan.key for loan in loans]
            yield Batch(deletes=[*gone, ItemKey(control_pk(borrower), borrow_sk(lender))])
        return len(doomed)

    def release_unshared(
        self, name: str, records: Sequence[Record], kept: Sequence[Record]
    ) -> Steps[int]:
        """After a copy's marks hid some records (`records` as they were, `kept` the rest):
        its loans from each lender keep only what `kept` names (no copy: no request), its
        borrowing naming the leaves going first, so that a lender removed at the same time
        keeps none of them (as `_whole`'s ending borrowings do all)."""
        after = shared_leaves(kept)
        deleted = 0
        for lender, leaves in sorted(shared_leaves(records).items()):
            if going := leaves - after.get(lender, set()):
                yield Apply(letting_go(name, lender, going))
            deleted += yield from self.release(name, lender, after.get(lender, set()))
        return deleted
