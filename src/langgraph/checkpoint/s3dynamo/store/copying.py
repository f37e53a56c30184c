"""Copying into a thread: one protocol for `copy_thread` and for imports from another
checkpointer, both written behind copy marks (`hidden`).

A copy shares its source's objects (`rewriter.py`), so before its records exist the
source lends them: a borrowing in the target's control partition and the loans in the
source's, in one transaction; then the source is read again, and a removal of it that
began before the loans were there is seen (the copy stops, its loans ended,
`ConcurrentUpdateError`). Whoever removes a shared object writes its marks before it
reads the loans, so either it sees the loan or the copy sees its marks.

What is written goes behind a copy mark over each namespace of the target, written in
one batch with the target's heads (each naming the newest checkpoint copied there, so a
run that loaded a deleted thread of that id stays refused and runs continue the copy);
then the records in full batches, then the marks, the root namespace's last. Readers see
nothing of the target until every record is there; a repeat finishes it. An import
writes through the commit protocol instead, one checkpoint after another, behind the
same marks when the target shows nothing yet.

`keep_last` copies each namespace's newest checkpoints and the ancestors DeltaChannel
reconstruction of them needs, read newest first: the cost grows with what is copied,
not with the source's history. The argument: docs/RELIABILITY.md, "Copies share
objects" and "Deleting, copying, pruning".
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs import WritePlan
from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Apply,
    Batch,
    Emit,
    GetMany,
    Steps,
    every_item,
)
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    CopyCutError,
    HeadClaimedError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.format.catalog_records import CatalogEntry
from langgraph.checkpoint.s3dynamo.format.layout import (
    BORROW_PREFIX,
    MARK_OPERATIONS,
    SHARING_FORMAT,
    TOP,
    control_pk,
    mark_sk,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    ItemKey,
    Mark,
    Record,
    Veil,
    WritesRecord,
    head_key,
    is_mark,
    loan_parts,
    mark_from,
    mark_item,
    shared_leaves,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.store.catalog import Catalog
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder, newest_first
from langgraph.checkpoint.s3dynamo.store.format import (
    batch_items,
    borrowing,
    catalog_items,
    claimed_heads,
    head_items,
    lend,
    settling,
)
from langgraph.checkpoint.s3dynamo.store.handoff import EMPTY, RunKey, continuing
from langgraph.checkpoint.s3dynamo.store.removal import Remover, hide, unhide
from langgraph.checkpoint.s3dynamo.store.rewriter import Rewriter
from langgraph.checkpoint.s3dynamo.store.walker import Walker
from langgraph.checkpoint.s3dynamo.table import (
    TRANSACT_MAX,
    Delete,
    Put,
    Update,
    Write,
    begins,
    key_of,
)

# Items a copy of the newest checkpoints reads of a namespace per Query: a checkpoint's
# record and its writes records are a few items, so a few pages serve most copies.
NEWEST_PAGE = 50


@dataclass(frozen=True)
class Present:
    """What a thread holds as an import finds it: its checkpoints (namespace, id),
    whether readers see any record of it, and the copy marks an interrupted import left."""

    tid: str
    checkpoints: set[tuple[str, str]]
    shown: bool
    copying: frozenset[ItemKey]
    # The sort keys of its records, shown or hidden: a record not among them when the
    # import hides the thread was written meanwhile (a run).
    records: frozenset[str] = frozenset()


class Copier:
    """The copy protocol of one thread store (module docstring)."""

    def __init__(
        self,
        *,
        finder: Finder,
        rewriter: Rewriter,
        catalog: Catalog,
        remover: Remover,
        walker: Walker,
        now: Callable[[], int],
    ) -> None:
        self.finder = finder
        self.walker = walker
        self.namer = walker.namer
        self.rewriter = rewriter
        self.catalog = catalog
        self.remover = remover
        self.now = now
        # Called before the first write that shares objects (the deployment's format).
        self.format_gate: Callable[[int], None] = lambda _format: None
        # Whether the table takes transactions (concurrent-run detection is on).
        self.transactions = True

    def copy(self, src: str, dst: str, keep_last: int | None = None) -> Steps[int]:
        """Copy `src` (what its readers see; with `keep_last`, each namespace's newest)
        to `dst`, sharing its objects; how many checkpoints it wrote. A target holding
        anything but an unfinished copy of `src` is `ThreadExistsError`; a source with
        no checkpoints `ThreadNotFoundError`, once the marks an unfinished copy from it
        left are cleared."""
        if keep_last is None:
            entries = yield from self.finder.thread_entries(src)
        else:
            entries = yield from self.newest(src, keep_last)
        name = self.namer.thread(dst)
        if not entries:
            cleared = yield from self._clear_unshown(name)
            raise ThreadNotFoundError(
                f"copy_thread source {src!r} has no checkpoints in this deployment, so there "
                "is nothing to copy"
                + (
                    " (the unfinished copy the target held, which never showed, is cleared)"
                    if cleared
                    else ""
                )
                + "; check the thread id (`s3dynamo threads` lists them)"
            )
        records, wanted, marks = yield from self.check_target(src, dst, entries, keep_last)
        present = {r.sk for r in records}
        todo = [e for e in entries if not wanted[(e.ns, e.checkpoint_id)] <= present]
        copying = {m.key for m in marks if m.operation == "copy"}
        if not todo and not copying:
            return 0
        rewrite = self.rewriter.share(src, dst, todo) if todo else None
        written = [new for _, new in rewrite.records] if rewrite else []
        yield from self._lend(src, name, written, todo, keep_last is None)
        # Filed under each declared value copied, with its records (a repeat: again).
        filed = self.catalog.entries_of(
            dst, (self.rewriter.walker.open_metadata(e) for e in entries)
        )
        lenders = sorted(shared_leaves([*records, *written]))
        try:
            yield from self.hidden(
                dst,
                {self.namer.namespace(dst, e.ns) for e in todo},
                copying,
                _write_copy(name, written, filed),
                self.latest(dst, [(e.ns, e.checkpoint_id) for e in entries]),
                reopen_only=False,
                settle=[settling(name, lender) for lender in lenders],
                claim=present,
            )
        except ThreadExistsError:  # a run wrote the target: of the copy, only loans, ended
            yield from self._unlend(name, shared_leaves(written))
            raise
        except CopyCutError:
            # A lender's deletion ended the borrowing first: what it shared may be gone.
            yield from self.remover.remove(name)
            raise ConcurrentUpdateError(
                f"copy_thread of {src!r}: the source (or a thread it shares objects of) was "
                "deleted while the copy was written; the copy never showed and is cleared. "
                "Run the copy again if the source still has checkpoints"
            ) from None
        return sum(1 for r in written if isinstance(r, CheckpointRecord))

    def _clear_unshown(self, name: str) -> Steps[bool]:
        """Remove what the thread holds if it is an unfinished copy or import only: copy
        marks hide every record of it, or it has no record nor mark but a borrowing (a
        copy that stopped after lending). No reader sees any of it, and a copy whose
        source is gone leaves nothing behind (what it borrowed goes with its loans).
        Whether it removed anything."""
        records, marks = yield from self.finder.items(name, consistent=True)
        copying = [m for m in marks if m.operation == "copy"]
        veil = Veil(copying)
        if copying:
            if any(not veil.hides(r.sk) for r in records):
                return False
        elif records or marks:
            return False
        else:
            where = begins(SORT_KEY, BORROW_PREFIX)
            if not (yield from every_item(control_pk(name), where=where, consistent=True)):
                return False
        yield from self.remover.remove(name)
        return True

    def check_target(
        self, src: str, dst: str, entries: Sequence[Entry], keep_last: int | None = None
    ) -> Steps[tuple[list[Record], dict[tuple[str, str], set[str]], list[Mark]]]:
        """`ThreadExistsError` if `dst` is the source itself or holds a record no copy of
        these checkpoints (`keep_last`: a copy of the newest) writes (an empty target, or
        an unfinished copy, passes); else its records, what the copy writes per
        checkpoint (sort keys), and its marks."""
        if src == dst and entries:
            raise ThreadExistsError(f"copy_thread source and target are the same thread {src!r}")
        name = self.namer.thread(dst)
        records, marks = (yield from self.finder.items(name)) if src != dst else ([], [])
        wanted = {(e.ns, e.checkpoint_id): self.rewriter.target_keys(dst, e) for e in entries}
        foreign = _standing(records).difference(*wanted.values())
        if foreign:
            # Refused. Whether all it holds beside the newest are the source's other
            # checkpoints (an earlier copy wrote them) tells why: one more read, then.
            every = (yield from self.finder.thread_entries(src)) if keep_last else []
            more = [self.rewriter.target_keys(dst, e) for e in every]
            raise _refusal(src, dst, marks, keep_last if foreign <= set().union(*more) else None)
        return records, wanted, marks

    def newest(self, tid: str, keep_last: int) -> Steps[list[Entry]]:
        """Each namespace's `keep_last` newest checkpoints that no mark hides, with the
        ancestors DeltaChannel reconstruction of them needs: the namespaces from the
        thread's heads, each read newest first only as far as that."""
        name = self.namer.thread(tid)
        heads = yield from self.finder.thread_heads(name)
        # A namespace is read unless a delete of this deployment left its head a
        # tombstone: one forged (or an earlier release's) is read, and copied if it
        # shows checkpoints, so a forged delete hides nothing from a copy.
        live = sorted(
            ns
            for ns, head in heads.items()
            if not self.namer.genuine_tombstone(*head_key(name, ns), head)
        )
        if not live:  # no heads (detection off): read the thread whole
            entries = yield from self.finder.thread_entries(tid)
            chains = self.walker.kept_chains(entries, keep_last)
            return newest_first([e for chain in chains.values() for e in chain], None)
        out: list[Entry] = []
        for ns_name in live:
            out += yield from self._newest_of(tid, ns_name, keep_last)
        return newest_first(out, None)

    def _newest_of(self, tid: str, ns_name: str, keep_last: int) -> Steps[list[Entry]]:
        """One namespace's share of `newest`: read newest first until its `keep_last`
        newest and the ancestors they need are all there."""
        read: dict[str, Entry] = {}
        wanted: str | None = None  # the oldest id still to reach before checking again
        entries = self.finder.named_entries(tid, ns_name, page=NEWEST_PAGE)
        answer: Any = None
        while True:
            try:
                step = entries.send(answer)
            except StopIteration:
                break
            answer = None
            if not isinstance(step, Emit):
                answer = yield step
                continue
            entry: Entry = step.value
            read[entry.checkpoint_id] = entry
            if len(read) >= keep_last and (wanted is None or entry.checkpoint_id <= wanted):
                wanted = self.walker.missing_ancestor(read, keep_last)
                if wanted is None:
                    entries.close()
                    break
        chains = self.walker.kept_chains(list(read.values()), keep_last)
        return [e for chain in chains.values() for e in chain]

    def latest(self, tid: str, checkpoints: Iterable[tuple[str, str]]) -> dict[str, str]:
        """The newest of these (namespace, checkpoint id) pairs in each namespace of
        `tid`, by namespace name."""
        latest: dict[str, str] = {}
        for ns, cid in checkpoints:
            name = self.namer.namespace(tid, ns)
            latest[name] = max(latest.get(name, cid), cid)
        return latest

    def _lend(
        self,
        src: str,
        borrower: str,
        records: Sequence[Record],
        copied: Sequence[Entry],
        whole: bool,
    ) -> Steps[None]:
        """Lend `borrower` what these records of it share (its borrowings and the loans,
        in one transaction), then check that the source still holds every checkpoint
        copied, none hidden by a mark (module docstring)."""
        lenders = shared_leaves(records)
        if not lenders:
            return
        yield from self._loan(borrower, lenders)
        gone = yield from self._gone(src, copied, whole)
        if not gone:
            return
        yield from self._unlend(borrower, lenders)
        raise ConcurrentUpdateError(
            f"copy_thread of {src!r}: {len(gone)} of the records being copied were deleted "
            "or hidden meanwhile (a delete, prune or delete_for_runs of the source is "
            "running); nothing more was copied. Run the copy again: it copies what the "
            "source holds then"
        )

    def _unlend(self, borrower: str, lenders: Mapping[str, set[str]]) -> Steps[None]:
        """End the loans of a copy that stops before showing, but for what the records
        `borrower` holds still share."""
        if not lenders:
            return
        kept = shared_leaves((yield from self.finder.items(borrower, consistent=True))[0])
        for lender in sorted(lenders):
            yield from self.remover.holdings.release(borrower, lender, kept.get(lender, set()))

    def _gone(self, src: str, copied: Sequence[Entry], whole: bool) -> Steps[list[str]]:
        """Sort keys of the copied records the source no longer shows, read strongly
        consistent: a whole copy reads the source again (a Query a page), a copy of the
        newest checkpoints those records and its namespaces' marks by key (a
        BatchGetItem per 100), at the cost of what it copies."""
        keys = [k for e in copied for k in (e.record.key, *(w.key for w in e.writes))]
        name = self.namer.thread(src)
        if whole:
            now, marks = yield from self.finder.items(name, consistent=True)
            present = {r.sk for r in now}
        else:
            namespaces = sorted({e.record.ns_name for e in copied})
            heads = [ItemKey(name, mark_sk(ns, op)) for ns in namespaces for op in MARK_OPERATIONS]
            items = yield GetMany([*keys, *heads], consistent=True)
            marks = [mark_from(i) for i in items if is_mark(i)]
            present = {key_of(i).sk for i in items if not is_mark(i)}
        veil = Veil(marks)
        return [k.sk for k in keys if k.sk not in present or veil.hides(k.sk)]

    def _loan(self, borrower: str, lenders: Mapping[str, set[str]]) -> Steps[None]:
        """The borrowings and the loans, in one transaction (a larger one in several,
        borrowings first: a deletion of the borrower finds the loans through them).
        Without transactions (concurrent-run detection off, for a store that has none):
        each borrowing, then the loans at once."""
        self.format_gate(SHARING_FORMAT)
        borrowings: list[Write] = [borrowing(borrower, lender) for lender in sorted(lenders)]
        loans: list[Write] = [
            lend(key, part)
            for lender in sorted(lenders)
            for key, part in loan_parts(lender, borrower, lenders[lender])
        ]
        if not self.transactions:
            for write in borrowings:
                yield WritePlan(borrower, writes=[write])
            if loans:
                yield WritePlan(borrower, writes=loans, each=True)
            return
        writes = borrowings + loans
        for start in range(0, len(writes), TRANSACT_MAX):
            yield WritePlan(borrower, writes=writes[start : start + TRANSACT_MAX])

    def hidden(
        self,
        tid: str,
        ns_names: Collection[str],
        earlier: Collection[ItemKey],
        write: Steps[None],
        latest: Mapping[str, str],
        *,
        reopen_only: bool,
        settle: Sequence[Update] = (),
        claim: Collection[str] | None = None,
    ) -> Steps[None]:
        """Run `write` (a copy's or an import's records) behind a copy mark over each of
        these namespaces of `tid`, written in one batch with the heads `latest` names (by
        namespace name); then remove those marks and the `earlier` ones an interrupted
        run left, the root namespace's last. With `reopen_only` (an import may add to a
        thread whose heads are live), only heads a delete left a tombstone are set,
        read after the marks: a forged one (no seal, or an earlier release's) is left
        for the namespace's next commit, which sets it back to the namespace's latest
        checkpoint (`Committer._unforged`), where the import's may not be the latest.
        `settle`: a copy's borrowings, each settled with the marks' removal, in one
        transaction where the table takes them (else just before): a lender's deletion
        that ended one first refuses it (`CopyCutError`), and no mark is removed.
        `claim`: the sort keys of the records `tid` held when read; given, the first marks
        go in one transaction with the heads, each set only where absent, a tombstone or
        already the same (`_claim`), so that a run and the copy never both write it."""
        name = self.namer.thread(tid)
        at = self.now()
        hiding = [Mark(name, mark_sk(ns, "copy"), upto=TOP, at=at) for ns in sorted(ns_names)]
        marks = [mark_item(m) for m in hiding]
        claimed = False
        if claim is not None and marks and not earlier and self.transactions:
            claimed = yield from self._claim(tid, marks, latest, claim)
        if claimed:
            marks, latest = [], {}
        elif reopen_only:
            yield from hide(hiding)
            found = yield from self.finder.thread_heads(name)
            marks, latest = (
                [],
                {
                    ns: c
                    for ns, c in latest.items()
                    if self.namer.genuine_tombstone(*head_key(name, ns), found.get(ns))
                },
            )
        if marks or latest:
            yield Batch(puts=[*marks, *head_items(name, latest)])
        yield from write
        shown = {*earlier, *(m.key for m in hiding)}
        if settle and self.transactions and len(settle) + len(shown) <= TRANSACT_MAX:
            yield WritePlan(name, writes=[*settle, *(Delete(k) for k in sorted(shown))])
            return
        for update in settle:
            yield Apply(update)
        yield from unhide(shown, last=self.namer.namespace(tid, ""))

    def _claim(
        self, tid: str, marks: Sequence[Any], latest: Mapping[str, str], read: Collection[str]
    ) -> Steps[bool]:
        """Write a copy's (or an import's) first marks with its heads in one transaction,
        each head only where it is absent, a tombstone, or already the checkpoint it is
        set to: a run's first put on the thread expects no head, so either the run
        committed first and the claim is refused, or the claim did and the run is
        refused until the copy shows. Refused, the thread is read again: a record that
        was not there when it was read first (`read`) is a run's, and the copy stops
        (`ThreadExistsError`, nothing written); else the head was left by something
        gone (a removal of the checkpoints it named), and False says to set it anyway.
        More than a transaction takes (over 50 namespaces): False, unclaimed."""
        name = self.namer.thread(tid)
        claims = claimed_heads(name, latest)
        if len(marks) + len(claims) > TRANSACT_MAX:
            return False
        try:
            yield WritePlan(name, writes=[*(Put(m) for m in marks), *claims])
            return True
        except HeadClaimedError:
            pass
        records, _ = yield from self.finder.items(name, consistent=True)
        if _standing(records).difference(read):
            raise ThreadExistsError(
                f"thread {tid!r} was written (a run) while it was being "
                "copied or imported to; nothing was copied, and the thread is as the run left "
                "it. Delete it first (delete_thread) to copy onto it, or copy to a new thread id"
            )
        return False


def import_holds(
    here: Present, namespaces: Iterable[str], run_key: Callable[[str, str], RunKey]
) -> dict[RunKey, str]:
    """What an import's commits continue, held to the head (`handoff.continuing`): on a
    thread readers see, each namespace's newest checkpoint here (`EMPTY` for a namespace
    new here), so that a run that committed since `here` was read refuses the import's
    commit that continues it (and the ones after, each continuing the one before), and
    the thread stays the run's. A thread new here is claimed by the import's marks
    instead (`Copier._claim`), and its commits hold nothing."""
    if not here.shown:
        return {}
    return {
        run_key(here.tid, ns): max((c for n, c in here.checkpoints if n == ns), default=EMPTY)
        for ns in set(namespaces)
    }


def held_commits(write: Callable[[], None], held: Mapping[RunKey, str]) -> Steps[None]:
    """An import's commits (`write`, each a protocol of its own) as a step of `hidden`,
    holding what `import_holds` says they continue."""
    continuing(held, write)
    yield from ()


def _standing(records: Iterable[Record]) -> set[str]:
    """Sort keys of the checkpoint records and of the writes records of those: not the
    writes a refused run left on a checkpoint it never committed, which no reader sees
    and garbage collection removes."""
    records = list(records)
    checkpoints = {r.sk for r in records if isinstance(r, CheckpointRecord)}
    return checkpoints | {
        r.sk for r in records if isinstance(r, WritesRecord) and r.owner_sk in checkpoints
    }


def _write_copy(
    owner: str, records: Sequence[Record], filed: Sequence[CatalogEntry]
) -> Steps[None]:
    """A copy's records and catalog entries, in full batches (entries alone when a
    repeat finds every record there)."""
    items = [*batch_items(records), *catalog_items(filed)]
    if items:
        yield WritePlan(owner, batched=items)


def _refusal(src: str, dst: str, marks: Sequence[Mark], keep_last: int | None) -> Exception:
    """`ThreadExistsError` for a target holding records a copy of `src` does not write:
    with `keep_last`, all of them the source's own other checkpoints (an earlier copy
    wrote them); else some no copy of `src` writes."""
    if keep_last is not None:
        return ThreadExistsError(
            f"copy_thread target {dst!r} holds more of {src!r} than a copy with "
            f"keep_last={keep_last} writes: checkpoints of {src!r} besides each namespace's "
            f"{keep_last} newest (and the ancestors they need), written there before; a "
            "copy never removes what the target holds. Copy without "
            "keep_last to bring the target up to date, or delete it first (delete_thread) "
            "to copy only the newest"
        )
    unfinished = sorted({m.operation for m in marks if m.operation != "copy"})
    return ThreadExistsError(
        f"copy_thread target {dst!r} already has checkpoints that are not part of a "
        f"copy of {src!r}"
        + (f" (hidden by an unfinished {' and '.join(unfinished)})" if unfinished else "")
        + f"; expected an empty thread (or an unfinished copy of {src!r}, which a repeat "
        "completes). Delete it first (delete_thread) or copy to a new thread id"
    )
