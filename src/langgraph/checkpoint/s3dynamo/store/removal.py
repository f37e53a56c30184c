"""Removing a thread's records and objects: one protocol for every caller.

`delete_thread` keeps nothing, `prune` keeps each namespace's latest checkpoints and what
DeltaChannel reconstruction of them needs, `delete_for_runs` keeps all but the runs'
checkpoints, and retention does the first two under the thread's lease and a cutoff.
Each asks `Remover.remove` with its `Keep` (and `Terms`), which yields its steps in one
order:

1. Under terms (retention): the thread's lease; held by another, nothing is done.
2. The fence. Removing the whole thread turns each namespace's head into a tombstone,
   kept afterwards, and a delete marks what it named: a run that loaded the thread
   before is refused from here (`ThreadDeletedError`), readers see it deleted and a new
   history may start. A retention prune sets its marker head; removing runs drops the
   heads of the namespaces it changes and keeps the thread in the idle index.
3. The records, read after the fence, strongly consistent: a commit that landed before
   is seen and removed too. Under terms, one written at or after the cutoff revives the
   thread (the fence is undone, the lease let go).
4. A mark over each namespace hiding what goes (one batch): readers see the removal
   whole from here. The records in full batches: checkpoint records, then writes.
5. Objects no record references and no loan lends, a prune's named first in an intent
   that goes with its marks (under terms, those written before the cutoff or named by the
   records removed, each while unchanged); removing runs names them for collection instead.
6. What a copy shared of other threads' objects: each loan ends, or keeps only what the
   remaining records share (the borrowing names what goes); what nothing keeps goes.
7. The marks, an interrupted removal's too; a whole thread's catalog entries, then their
   back-references; under terms, the lease (and tombstones older than the cutoff).

Interrupted anywhere, a repeat reads again and finishes: docs/RELIABILITY.md, "Deleting,
copying, pruning".
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs import WritePlan
from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Apply,
    Batch,
    DeleteObjects,
    ListObjects,
    NameOrphans,
    Steps,
    each,
    each_item,
    every_item,
)
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.format.layout import (
    PRUNING_HEAD,
    control_pk,
    is_mark_key,
    is_record_key,
    is_writes_key,
    mark_sk,
    object_key,
    owner_prefix,
    owner_sk,
    parse_sk,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    STAMP_ATTRIBUTES,
    CheckpointRecord,
    ItemKey,
    Lease,
    Mark,
    Record,
    Stamp,
    head_key,
    intent_item,
    is_mark,
    lease_key,
    mark_item,
    orphan_intents,
    record_from,
    referenced_leaves,
    stamp_from,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.activity import SeenThread, index_write, stamp_time
from langgraph.checkpoint.s3dynamo.store.catalog import drop_catalog, uncatalog
from langgraph.checkpoint.s3dynamo.store.finder import Finder, Skipped, leftover_writes
from langgraph.checkpoint.s3dynamo.store.format import (
    delete_if_unchanged,
    ending_borrowing,
    fence_items,
    head_items,
    lease_expiry,
    lease_taken,
    take_lease,
)
from langgraph.checkpoint.s3dynamo.store.holdings import Holdings, item_leaves
from langgraph.checkpoint.s3dynamo.store.walker import Walker
from langgraph.checkpoint.s3dynamo.table import Item, begins

log = logging.getLogger(__name__)

# Who holds a thread's lease while retention removes it, and for how long: far longer
# than removing one thread takes, short enough that a sweep killed midway does not hold
# the thread for long.
LEASE_OWNER = "retention"
LEASE_TTL = timedelta(minutes=15)
# Checkpoints a removal of runs hides with one mark per namespace at most (a mark names
# each id: 8,000 ids of 36 characters stay far below an item's 400 KB).
RUNS_ROUND = 8000


@dataclass(frozen=True)
class Keep:
    """What a removal leaves of a thread: nothing (`Keep()`), each namespace's `latest`
    newest checkpoints with the ancestors DeltaChannel reconstruction of them needs, or
    everything but the checkpoints `only` names (their keys: a removal of runs)."""

    latest: int = 0
    only: frozenset[ItemKey] | None = None


WHOLE = Keep()


@dataclass(frozen=True)
class Terms:
    """A removal under the thread's lease, judged against `cutoff` (seconds since the
    epoch): what retention removes. `seen` is what its Scan saw of the thread."""

    cutoff: int
    seen: SeenThread


@dataclass
class Removed:
    """What one removal did: `outcome` is "removed", "busy" (another holds the lease),
    "revived" (written since the cutoff) or "skipped" (its records do not open with
    these keys, `skipped` says why); `found` the records read, `records` and `objects`
    what went."""

    outcome: str = "removed"
    found: int = 0
    records: int = 0
    checkpoints: int = 0
    objects: int = 0
    skipped: Skipped | None = None


class Remover:
    """The removal protocol of one thread store (module docstring)."""

    def __init__(self, finder: Finder, walker: Walker, namer: Namer, clock: Any) -> None:
        self.finder = finder
        # What keeps the thread's objects: records' references, loans (the mark).
        self.holdings = Holdings(finder)
        self.walker = walker
        self.namer = namer
        # Called for the time (`ThreadStore.clock`, which tests replace).
        self.clock = clock
        # Whether the thread catalog is kept (asked when a removal empties a thread).
        self.catalog_enabled: Callable[[], bool] = lambda: False
        # Whether commits move heads (detection on): else a mark up to one cuts history.
        self.heads_current = True

    def remove(
        self, name: str, keep: Keep = WHOLE, *, terms: Terms | None = None, tid: str | None = None
    ) -> Steps[Removed]:
        """Remove what `keep` does not keep of the thread named `name` as stored (`tid`,
        where known, checks the records claim it)."""
        held: Lease | None = None
        if terms is not None:
            now_ms, ttl_ms = int(self.clock() * 1000), int(LEASE_TTL.total_seconds() * 1000)
            key = lease_key(name)
            taken = yield Apply(take_lease(key, LEASE_OWNER, now_ms, ttl_ms), returning="new")
            if not taken.applied or taken.item is None:
                return Removed("busy")
            held = lease_taken(key, LEASE_OWNER, taken.item, now_ms + ttl_ms)
        if keep.only is not None:
            return (yield from self._runs(name, sorted(keep.only)))
        if keep.latest:
            return (yield from self._history(name, keep.latest, terms, held, tid))
        return (yield from self._whole(name, terms, held))

    # ------------------------------------------------------------ the whole thread

    def _whole(self, name: str, terms: Terms | None, held: Lease | None) -> Steps[Removed]:
        seen = terms.seen if terms else (yield from self._control(name))
        # Retention finishing a removal (no records when it scanned) sets no tombstones.
        fenced = terms is None or seen.records > 0
        heads = dict(seen.heads)
        if fenced:
            heads = self._tombstones(name, seen.namespaces | set(heads))
            # Not retention's marks: a thread written since its Scan revives.
            last = seen.heads if self.heads_current and not terms else {}
            yield Batch(fence_items(name, heads, last, int(self.clock())))
        stamps, named = yield from self._stamps(name, whole=terms is not None)
        records = [s for s in stamps if not is_mark_key(s.key.sk)]
        if junk := [s.key for s in records if not is_record_key(s.key.sk)]:
            log.warning("removing thread %s: items s3dynamo never writes there: %s", name, junk)
        if terms is not None and (
            (records and not fenced) or _written_since(records, terms.cutoff)
        ):
            yield Batch(deletes=[head_key(name, ns) for ns in heads] if fenced else ())
            return (yield from _let_go(held, "revived"))
        namespaces = {parse_sk(s.key.sk)[0] for s in records if is_record_key(s.key.sk)}
        if fenced and (headless := namespaces - set(heads)):
            yield Batch(head_items(name, self._tombstones(name, headless)))
        keys = [s.key for s in records]
        hiding = self.marks(name, keys)
        # With the marks, each borrowing says it is ending, before its lender is read: a
        # lender removed at the same time then keeps nothing for this thread, or has
        # gone before that read, which then deletes what it shared (docs/RELIABILITY.md,
        # "Copies share objects").
        ending = [ending_borrowing(name, lender) for lender in sorted(seen.borrowed)]
        yield from hide(hiding, ending)
        yield from delete_records(keys)
        deleted = yield from self._objects(name, terms, named)
        for lender in sorted(seen.borrowed):
            deleted += yield from self.holdings.release(name, lender, set())
        left = {s.key for s in stamps if is_mark_key(s.key.sk)}  # an interrupted removal's
        yield from unhide({*(m.key for m in hiding), *left})
        refs = yield from uncatalog(seen.catalogued)
        cutoff = terms.cutoff if terms else None
        old = [ns for ns, head in heads.items() if cutoff and (tombstone_time(head) or 0) <= cutoff]
        yield Batch(
            deletes=[*(head_key(name, ns) for ns in old), *([held.key] if held else []), *refs]
        )
        checkpoints = sum(1 for k in keys if not is_writes_key(k.sk))
        return Removed("removed", len(keys), len(keys), checkpoints, deleted)

    def _tombstones(self, name: str, namespaces: Iterable[str]) -> dict[str, str]:
        """A sealed tombstone for each of these namespaces' heads, set now
        (`Namer.tombstone`: a table writer cannot make one)."""
        at = self.clock()
        return {ns: self.namer.tombstone(*head_key(name, ns), at) for ns in sorted(set(namespaces))}

    def _control(self, name: str) -> Steps[SeenThread]:
        """What the thread's control partition holds (heads, borrowings, catalog
        back-references), read strongly consistent."""
        seen = SeenThread()
        items = yield from every_item(
            control_pk(name), consistent=True, attributes=STAMP_ATTRIBUTES
        )
        for item in items:
            seen.see(stamp_from(item))
        return seen

    def _stamps(self, name: str, whole: bool = False) -> Steps[tuple[list[Stamp], set[str]]]:
        """Key and write time of every item of a thread, read strongly consistent; with
        `whole`, read whole (billed the same, a page held at a time), the leaves of its
        objects its records name."""

        def read(item: Item) -> tuple[Stamp, set[str]]:
            return stamp_from(item), item_leaves(item) if whole else set()

        attributes = None if whole else STAMP_ATTRIBUTES
        read_items = yield from each_item(name, read, consistent=True, attributes=attributes)
        return [s for s, _ in read_items], {leaf for _, leaves in read_items for leaf in leaves}

    def _objects(self, name: str, terms: Terms | None, named: Collection[str] = ()) -> Steps[int]:
        """The thread's objects no record references and no loan lends; under terms,
        those written before the cutoff or `named` by the records removed (a key rotation
        rewrites objects in place), each only while unchanged (what else is newer belongs
        to a history started since)."""
        listed = yield ListObjects(name)
        prefix = owner_prefix(name)
        if terms is None:
            if not listed:
                return 0
            live = (yield from self.holdings.live_leaves(name, cut=True)) or set()
            doomed = [o.key for o in listed if o.key[len(prefix) :] not in live]
            yield DeleteObjects(doomed)
            return len(doomed)
        cutoff = datetime.fromtimestamp(terms.cutoff, timezone.utc)
        old = [o for o in listed if o.modified < cutoff or o.key[len(prefix) :] in named]
        if old:
            lent = yield from self.holdings.lent_leaves(name, cut=True)
            old = [o for o in old if o.key[len(prefix) :] not in lent]
        deleted = yield DeleteObjects(unchanged=old)
        return len(deleted)

    # --------------------------------------------------- all but the latest checkpoints

    def _history(
        self, name: str, keep_last: int, terms: Terms | None, held: Lease | None, tid: str | None
    ) -> Steps[Removed]:
        marker = head_key(name, PRUNING_HEAD)
        if terms is not None:
            yield Batch(head_items(name, {PRUNING_HEAD: str(int(self.clock()))}))
        # Under terms, one consistent read serves both the revival check and the work.
        records, marks = yield from self.finder.items(name, consistent=terms is not None, slim=True)
        if terms is not None:
            stamps = [Stamp(r.key, r.written_at) for r in records]
            if _written_since(stamps, terms.cutoff):
                yield Batch(deletes=[marker])
                return (yield from _let_go(held, "revived"))
        try:
            entries = self.finder.group(records, known_tid=tid)
        except IntegrityError as exc:
            if terms is None:
                raise
            yield Batch(deletes=[marker])
            refs = [r.thread_ref for r in records if isinstance(r, CheckpointRecord)]
            key_id = self.finder.sealer.key_id_of(refs[0]) if refs else None
            removed = yield from _let_go(held, "skipped")
            removed.skipped = Skipped.of(name, key_id, exc)
            return removed
        chains = self.walker.kept_chains(entries, keep_last)
        kept_sks = {e.record.sk for chain in chains.values() for e in chain}
        kept = [r for r in records if owner_sk(r.sk) in kept_sks]
        doomed = [r for r in records if owner_sk(r.sk) not in kept_sks]
        hiding = self.marks(
            name, [r.key for r in doomed], keep=[r.key for r in kept if r.sk in kept_sks]
        )
        orphaned = {leaf for r in doomed for leaf in referenced_leaves(r)}
        orphaned -= {leaf for r in kept for leaf in referenced_leaves(r)}
        # Named with the marks, closed with them: a prune that stops between its records
        # and their objects leaves them to incremental collection, which no repeat could.
        intents = orphan_intents(name, orphaned, int(self.clock() * 1000), os.urandom(8).hex())
        yield from hide(hiding, also=[intent_item(i) for i in intents])
        yield from delete_records([r.key for r in doomed])
        deleted = yield from self._pruned_objects(name, orphaned, terms)
        yield from self.holdings.release_unshared(name, records, kept)
        left = {m.key for m in marks if m.operation == "prune"}  # an interrupted prune's
        yield from unhide({*(m.key for m in hiding), *left, *(i.key for i in intents)})
        if terms is not None:
            yield Batch(deletes=[marker, *([held.key] if held else [])])
        checkpoints = sum(1 for r in doomed if isinstance(r, CheckpointRecord))
        return Removed("removed", len(records), len(doomed), checkpoints, deleted)

    def _pruned_objects(self, name: str, orphaned: set[str], terms: Terms | None) -> Steps[int]:
        """What only the removed records referenced (`orphaned`; the loans read after the
        marks: a copy lending them now has seen them, or is seen here); under terms, with
        the thread's objects written before the cutoff, each only while unchanged, of
        those that nothing references or lends any more (`_objects`)."""
        if terms is None:
            lent = (yield from self.holdings.lent_leaves(name)) if orphaned else set()
            unlent = sorted(orphaned - lent)
            yield DeleteObjects([object_key(name, leaf) for leaf in unlent])
            return len(unlent)
        cutoff = datetime.fromtimestamp(terms.cutoff, timezone.utc)
        prefix = owner_prefix(name)
        listed = yield ListObjects(name)
        old = [o for o in listed if o.modified < cutoff or o.key[len(prefix) :] in orphaned]
        live = ((yield from self.holdings.live_leaves(name)) or set()) if old else set()
        deleted = yield DeleteObjects(
            unchanged=[o for o in old if o.key[len(prefix) :] not in live]
        )
        return len(deleted)

    # ------------------------------------------------------------- leftover writes

    def leftovers(self, name: str, planned: Collection[ItemKey], before_s: int) -> Steps[int]:
        """Delete those of `planned` that are still leftover writes records of the thread
        (`finder.leftover_writes`, its items read again consistently), each only while
        unchanged since (`delete_if_unchanged`), after an intent naming the objects they
        reference, for incremental collection; how many went (docs/RELIABILITY.md,
        "Garbage collection: leftover writes records")."""
        found, marks = yield from self.finder.items(name, consistent=True)
        records = {r.key: r for r in found}
        doomed = [records[k] for k in leftover_writes([*found, *marks], before_s) if k in planned]
        if not doomed:
            return 0
        leaves = sorted({leaf for r in doomed for leaf in referenced_leaves(r)})
        orphans = [object_key(name, leaf) for leaf in leaves]
        writes = [delete_if_unchanged(r) for r in doomed]
        written = yield WritePlan(name, orphans=orphans, writes=writes, each=True)
        return sum(1 for w in written if w.applied)

    # ------------------------------------------------------------------- runs

    def _runs(self, name: str, checkpoints: Sequence[ItemKey]) -> Steps[Removed]:
        """The checkpoints (keys of checkpoint records of this thread) with their writes,
        a round of `RUNS_ROUND` at a time: their objects named for collection, the
        heads of their namespaces dropped (the thread kept in the idle index), a runs
        mark per namespace naming them, the records, the marks; a thread left without
        records leaves the catalog."""
        out = Removed()
        for start in range(0, len(checkpoints), RUNS_ROUND):
            round_ = checkpoints[start : start + RUNS_ROUND]
            done = yield from self._runs_round(name, round_)
            out.found += done
            out.records += done
            out.checkpoints += len(round_) if done else 0
        return out

    def _runs_round(self, name: str, checkpoints: Sequence[ItemKey]) -> Steps[int]:
        owned = yield from each([self._records_of(c) for c in checkpoints])
        records = [r for rs in owned for r in rs]
        if leaves := {leaf for r in records for leaf in referenced_leaves(r)}:
            yield NameOrphans(name, [object_key(name, leaf) for leaf in sorted(leaves)])
        touched: dict[str, set[str]] = {}
        for key in checkpoints:
            ns_name, cid, _ = parse_sk(key.sk)
            touched.setdefault(ns_name, set()).add(cid)
        # Heads first: one may name a checkpoint about to go, and would then hold every
        # later commit there to it. Without a head the next commit is not held.
        yield Batch(deletes=[head_key(name, ns) for ns in sorted(touched)])
        doomed = [r.key for r in records]
        stamps, _ = yield from self._stamps(name)
        if write := index_write(name, stamps, set(doomed)):
            yield Apply(write)
        if not doomed:
            return 0
        at = int(self.clock())
        hiding = [
            Mark(name, mark_sk(ns, "runs"), ids=frozenset(ids), at=at)
            for ns, ids in sorted(touched.items())
        ]
        yield from hide(hiding)
        yield from delete_records(doomed)
        yield from unhide({m.key for m in hiding})
        if self.catalog_enabled() and not (yield from self.finder.has_records(name)):
            yield from drop_catalog(name)
        return len(doomed)

    def _records_of(self, checkpoint: ItemKey) -> Steps[list[Record]]:
        """A checkpoint's record and its writes records, read whole (paged)."""
        items = yield from every_item(checkpoint.pk, where=begins(SORT_KEY, checkpoint.sk))
        found = [record_from(i) for i in items if not is_mark(i)]
        return [r for r in found if owner_sk(r.sk) == checkpoint.sk]

    # ------------------------------------------------------------ shared parts

    def marks(
        self, thread_name: str, records: Iterable[ItemKey], keep: Iterable[ItemKey] = ()
    ) -> list[Mark]:
        """Marks hiding every one of these records (keys of one thread's records) but
        those of the checkpoints in `keep`: one per namespace, hiding up to its newest
        checkpoint. A checkpoint committed later has a newer id and stays visible: a
        new history may start on a thread being removed."""
        newest: dict[str, str] = {}
        for key in (k for k in records if is_record_key(k.sk)):
            ns_name, cid, _ = parse_sk(key.sk)
            if cid > newest.get(ns_name, ""):
                newest[ns_name] = cid
        kept: dict[str, set[str]] = {}
        for key in keep:
            ns_name, cid, _ = parse_sk(key.sk)
            kept.setdefault(ns_name, set()).add(cid)
        at = int(self.clock())
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


# ------------------------------------------------------ steps several protocols take


def hide(marks: Sequence[Mark], also: Sequence[Item] = ()) -> Steps[None]:
    """Write marks (one batch per 25), with `also` in the same batch; nothing a mark
    hides is changed before."""
    if marks or also:
        yield Batch(puts=[*(mark_item(m) for m in marks), *also])


def unhide(keys: Collection[ItemKey], last: str | None = None) -> Steps[None]:
    """Remove marks, the one over namespace `last` (a thread's root namespace, whose
    checkpoints lead a reader to the others) in a request after the rest."""
    first = [k for k in keys if last is None or parse_sk(k.sk)[0] != last]
    final = [k for k in keys if k not in first]
    for batch in (first, final):
        if batch:
            yield Batch(deletes=sorted(batch))


def delete_records(keys: Iterable[ItemKey]) -> Steps[None]:
    """Delete records in full batches sent in parallel: the checkpoint records, then
    the writes records, so a checkpoint read by id is found whole or not at all.
    Callers hide the records with a mark first."""
    keys = list(keys)
    for batch in (
        [k for k in keys if not is_writes_key(k.sk)],
        [k for k in keys if is_writes_key(k.sk)],
    ):
        if batch:
            yield Batch(deletes=batch)


def _written_since(stamps: Iterable[Stamp], cutoff: int) -> bool:
    return any(t >= cutoff for t in (stamp_time(s) for s in stamps) if t is not None)


def _let_go(held: Lease | None, outcome: str) -> Steps[Removed]:
    """The lease let go, and a removal that removed nothing."""
    if held is not None:
        yield Apply(lease_expiry(held, 0))
    return Removed(outcome)
