"""What `verify` checks beyond each blob opening: the thread catalog against the threads
it files, and the heads' tombstones against the records under them.

The catalog. Each entry opens and names a thread that has records and a back-reference
to it; each back-reference has its entry; with the catalog complete, each thread with
records has its entry in the deployment's list. An entry that does not open (altered, a
keys-only item, one moved to another value or thread) is "tampered" or "unopenable" as
`verify` tells any blob; one whose thread has no records, or no back-reference, is an
"orphaned catalog entry" (a search passes over it, and the thread's deletion would not
find it); a back-reference without its entry a "dangling back-reference" (a search by
that value misses the thread); a thread missing from the deployment's list an "unfiled
thread" (`search_threads` misses it).

Tombstones (docs/SECURITY.md, "Tombstones"). A head that is a tombstone with a seal no
delete of this deployment made, or any tombstone without a genuine seal over a namespace
that holds checkpoint records, is a "forged tombstone"; a genuine one over checkpoints
made before it, an "unfinished delete" (the delete stopped before their records went:
new runs are refused as deleted until a repeat finishes it).

Copies. A borrowing its lender's deletion ended before the copy settled is an "unfinished
copy": the copy stopped for good before it showed, and its hidden records may name the
lender's objects, gone with it (not reported as missing); a repeat of the copy clears it.

Over one thread, its control partition is read (one Query) with the entries its
back-references name (one BatchGetItem); over the deployment, what its Scan read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from langgraph.checkpoint.s3dynamo.blobs.steps import GetMany, Steps, every_item
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, SubjectErasedError
from langgraph.checkpoint.s3dynamo.format.catalog_records import entry_from, entry_key, entry_of_ref
from langgraph.checkpoint.s3dynamo.format.layout import (
    TOMBSTONE_MARK,
    catalog_ref_token,
    control_pk,
    head_namespace,
    thread_of,
    tombstone_parts,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    BORROW_COPYING,
    BORROW_ENDING,
    HEAD,
    CheckpointRecord,
    ItemKey,
    Record,
)
from langgraph.checkpoint.s3dynamo.keys.identities import checkpoint_time
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.catalog import EVERY_THREAD, Catalog
from langgraph.checkpoint.s3dynamo.table import Item, key_of


@dataclass(frozen=True)
class Finding:
    """One problem: its kind, the item (`pk sk`), the thread where known, what it is and
    what it does; `error` when it is a blob that did not open (its kind is then the
    error's, as `verify` names any blob's)."""

    kind: str
    key: str
    tid: str | None
    detail: str
    error: Exception | None = None
    # The namespaces an unfinished delete or copy left records in: (thread name,
    # namespace name) each.
    covers: tuple[tuple[str, str], ...] = ()


@dataclass
class Audit:
    """What the checks found, and how many catalog entries they opened of those met."""

    findings: list[Finding] = field(default_factory=list)
    entries: int = 0
    opened: int = 0
    # The checkpoints an unfinished delete or copy left, by (thread name, namespace
    # name): a deleted thread's, or a copy's that never showed, whose objects may be gone
    # already (a copy's shared ones go with their source once the copy's delete has
    # begun, or the source's before the copy settled).
    deleted: dict[tuple[str, str], set[str]] = field(default_factory=dict)


def label(key: ItemKey) -> str:
    return f"{key.pk} {key.sk}"


class Auditor:
    """The checks of one deployment's catalog and tombstones (module docstring)."""

    def __init__(self, catalog: Catalog, namer: Namer) -> None:
        self.catalog = catalog
        self.namer = namer

    def thread(self, tid: str, records: Sequence[Record]) -> Steps[Audit]:
        """The checks over one thread: its control partition, the entries it names."""
        name = self.namer.thread(tid)
        control = yield from every_item(control_pk(name), consistent=True)
        refs = [key_of(i) for i in control if catalog_ref_token(key_of(i).sk) is not None]
        keys = [k for r in refs if (k := entry_of_ref(r)) is not None]
        entries = (yield GetMany(keys, consistent=True)) if keys else []
        return self.check(control, entries, records, {name: tid}, whole=False)

    def check(
        self,
        control: Iterable[Item],
        entries: Iterable[Item],
        records: Sequence[Record],
        threads: Mapping[str, str],
        *,
        whole: bool,
    ) -> Audit:
        """The checks over these items: the threads' control items, catalog entries,
        and records; `threads`: thread name -> id of those whose records opened; `whole`:
        every entry of the deployment is among them (a Scan's)."""
        out = Audit()
        control = list(control)
        refs = {key_of(i) for i in control if catalog_ref_token(key_of(i).sk) is not None}
        heads = {key_of(i): str(i[HEAD]) for i in control if HEAD in i}
        checkpoints: dict[tuple[str, str], list[str]] = {}
        for r in records:
            if isinstance(r, CheckpointRecord):
                checkpoints.setdefault((r.pk, r.ns_name), []).append(r.checkpoint_id)
        with_records = {pk for pk, _ in checkpoints}
        filed = self._entries(entries, refs, with_records, whole, out)
        for ref in sorted(refs):
            entry = entry_of_ref(ref)
            if entry is not None and entry not in filed:
                out.findings.append(
                    Finding(
                        "dangling back-reference",
                        label(ref),
                        threads.get(thread_of(ref.pk)),
                        f"points at catalog entry {label(entry)}, which is not there: a "
                        "search by that value does not find the thread; `s3dynamo catalog "
                        "build` files it again",
                    )
                )
        self._unfiled(filed, threads, out)
        for key, head in sorted(heads.items()):
            self._tombstone(key, head, checkpoints, threads, out)
        for item in control:
            if BORROW_COPYING in item and BORROW_ENDING in item:
                self._cut_copy(key_of(item), checkpoints, threads, out)
        return out

    def _cut_copy(
        self,
        key: ItemKey,
        checkpoints: Mapping[tuple[str, str], list[str]],
        threads: Mapping[str, str],
        out: Audit,
    ) -> None:
        """A copy's borrowing its lender's deletion ended before the copy settled: the
        copy stopped before it showed (it would have cleared itself), and its hidden
        records may name objects gone with the lender."""
        name = thread_of(key.pk)
        held = {where: ids for where, ids in checkpoints.items() if where[0] == name}
        out.deleted.update({where: set(ids) for where, ids in held.items()})
        count = sum(len(ids) for ids in held.values())
        what = f"its {count} checkpoint record(s) stay hidden" if count else "it wrote no record"
        tid = threads.get(name)
        fix = (
            f"delete thread {tid!r} (`s3dynamo delete`), or repeat its copy_thread, which clears it"
            if tid is not None
            # Only a checkpoint record holds the thread id (sealed); the key holds its name.
            else f"no record holds the target's thread id; its name is {name!r}, the key's "
            "start, which copy_thread logs (INFO, `copy_thread <source> -> <target>`, by "
            "name): repeat that copy_thread, which clears it, or delete_thread the target"
        )
        out.findings.append(
            Finding(
                "unfinished copy",
                label(key),
                tid,
                "a copy stopped before it showed, and the thread it shared objects of was "
                f"deleted since ({what}): {fix}",
                covers=tuple(sorted(held)),
            )
        )

    def _entries(
        self,
        entries: Iterable[Item],
        refs: set[ItemKey],
        with_records: set[str],
        whole: bool,
        out: Audit,
    ) -> set[ItemKey]:
        """Each entry opened and checked (module docstring); the keys of those met."""
        met: set[ItemKey] = set()
        for item in entries:
            key = key_of(item)
            met.add(key)
            out.entries += 1
            try:
                entry = entry_from(item)
                tid = self.catalog.opened(entry).tid
            except (IntegrityError, SubjectErasedError) as exc:
                out.findings.append(Finding("", label(key), None, str(exc), exc))
                continue
            out.opened += 1
            why = None
            if whole and entry.thread_name not in with_records:
                why = "names a thread with no records (a delete stopped before it, or it was "
                why += "put back)"
            elif entry.ref not in refs:
                why = "has no back-reference in its thread's control partition, so the "
                why += "thread's deletion leaves it"
            if why:
                out.findings.append(
                    Finding(
                        "orphaned catalog entry",
                        label(key),
                        tid,
                        f"{why}: a search passes over it; delete the item",
                    )
                )
        return met

    def _unfiled(self, filed: set[ItemKey], threads: Mapping[str, str], out: Audit) -> None:
        """With the catalog of every thread complete, each thread with records is in it."""
        if not self.catalog.enabled or not self.catalog.complete(EVERY_THREAD):
            return
        token = self.catalog.token(EVERY_THREAD)
        for name, tid in sorted(threads.items()):
            if entry_key(name, token) not in filed:
                out.findings.append(
                    Finding(
                        "unfiled thread",
                        label(entry_key(name, token)),
                        tid,
                        "the thread has records and no entry in the catalog's list of every "
                        "thread: search_threads does not find it; `s3dynamo catalog build` "
                        "files it",
                    )
                )

    def _tombstone(
        self,
        key: ItemKey,
        head: str,
        checkpoints: Mapping[tuple[str, str], list[str]],
        threads: Mapping[str, str],
        out: Audit,
    ) -> None:
        """A head's tombstone against its namespace's records (module docstring)."""
        at, ns_name = tombstone_time(head), head_namespace(key.sk)
        if at is None or ns_name is None:
            return
        name = thread_of(key.pk)
        under = checkpoints.get((name, ns_name), [])
        tid = threads.get(name)
        if not self.namer.genuine_tombstone(key.pk, key.sk, head):
            if under or tombstone_parts(head)[1] is not None:
                out.findings.append(
                    Finding(
                        "forged tombstone",
                        label(key),
                        tid,
                        f"the head is a tombstone no delete of this deployment set ({head!r}) "
                        f"over {len(under)} checkpoint record(s): the next commit there puts "
                        "it back; someone who can write the table wrote it",
                    )
                )
            return
        at_ms = float(tombstone_parts(head)[0][len(TOMBSTONE_MARK) :])  # a genuine one's
        older = [c for c in under if (checkpoint_time(c) or 0) < at_ms]
        if older:
            out.deleted[(name, ns_name)] = set(older)
            out.findings.append(
                Finding(
                    "unfinished delete",
                    label(key),
                    tid,
                    f"a delete set this tombstone and stopped before {len(older)} checkpoint "
                    "record(s) made before it went: new runs of the thread are refused as "
                    "deleted; delete the thread again (`s3dynamo delete`) to finish it",
                    covers=((name, ns_name),),
                )
            )
