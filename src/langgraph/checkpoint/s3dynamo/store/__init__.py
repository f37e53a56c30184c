"""The storage protocol of a thread, behind one API: `ThreadStore`. The saver, leases and
the operations (garbage collection, maintenance, retention: what the command line runs)
call its methods; its parts are private. What becomes stored bytes (sealing, inline or
object, waves, the object cache, the upload journal) is the blob engine's (`blobs/`),
which runs every protocol the parts write as steps (`blobs/steps.py`):

    finder.py     reading records and grouping them into checkpoints (`Entry`)
    holdings.py   what keeps a thread's objects (references, loans); a copy letting go
    walker.py     the one walk over a checkpoint's blobs, and how each opens
    decoder.py    entries into LangGraph's checkpoint tuples; history skeletons
    history.py    get_delta_channel_history from one namespace query
    committer.py  the commit of a checkpoint or a task's writes
    placing.py    where a checkpoint's values go: carried, delta, inline or object
    format.py     every write of a thread's items, with its condition (pure)
    removal.py    the one removal protocol: delete, prune, delete runs, retention
    copying.py    the one copy protocol: copy_thread and imports, behind copy marks
    rewriter.py   a copy's records, sharing its source's blobs
    sealed.py     the one enumeration of a thread's sealed blobs: verify, stats, reseal
    audit.py      what verify checks beyond blobs: the catalog, and tombstones
    catalog.py    the thread catalog: threads filed by declared metadata values
    search.py     threads through the catalog, newest activity first
    activity.py   what a thread's stamps say of its activity (retention, the idle index)
    handoff.py    what the read path hands the write path (stored values, run keys)
    fences.py     which leases this context holds
    scope.py      the deployment's share of a table that tenants share
    policy.py     the settings the parts take, as one value
    upkeep.py     the maintenance half of the API: leases, heads, the idle index

The storage layout is in `format/layout.py`; the commit protocol in `committer.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.checkpoint.base import CheckpointTuple, DeltaChannelHistory

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, Steps
from langgraph.checkpoint.s3dynamo.blobs.sealing import is_subject_key
from langgraph.checkpoint.s3dynamo.blobs.steps import Apply, each
from langgraph.checkpoint.s3dynamo.deployment import Control, Deployment
from langgraph.checkpoint.s3dynamo.errors import SubjectKeyChangedError
from langgraph.checkpoint.s3dynamo.format.records import (
    ItemKey,
    Veil,
)
from langgraph.checkpoint.s3dynamo.keys.codec import Codec
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.catalog import Catalog, Catalogued
from langgraph.checkpoint.s3dynamo.store.committer import Committer, Sealing
from langgraph.checkpoint.s3dynamo.store.decoder import Decoder, Skeleton
from langgraph.checkpoint.s3dynamo.store.fences import Holding, hold, holding, release
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder, Grouped, Skipped, warn_skipped
from langgraph.checkpoint.s3dynamo.store.handoff import Handoff
from langgraph.checkpoint.s3dynamo.store.policy import StorePolicy
from langgraph.checkpoint.s3dynamo.store.scope import EVERY_DEPLOYMENT, Scope
from langgraph.checkpoint.s3dynamo.store.upkeep import Upkeep
from langgraph.checkpoint.s3dynamo.store.walker import StoredValues, Walker
from langgraph.checkpoint.s3dynamo.table import Write

if TYPE_CHECKING:
    from langgraph.checkpoint.s3dynamo.keys.subjects import Subjects
    from langgraph.checkpoint.s3dynamo.store.activity import SeenThread, id_time, stamp_time
    from langgraph.checkpoint.s3dynamo.store.audit import Audit, Finding
    from langgraph.checkpoint.s3dynamo.store.copying import Copier, Present
    from langgraph.checkpoint.s3dynamo.store.removal import (
        LEASE_OWNER,
        LEASE_TTL,
        WHOLE,
        Keep,
        Removed,
        Terms,
    )
    from langgraph.checkpoint.s3dynamo.store.sealed import Sealed, SealedThread
    from langgraph.checkpoint.s3dynamo.store.search import (
        Before,
        ThreadSearch,
        ThreadSummaries,
        ThreadSummary,
    )

# The parts a checkpoint's commit and read never use load when first used (a Lambda cold
# start pays for what its first request needs): the name, and the module that holds it.
_LATER = {
    **dict.fromkeys(("SeenThread", "id_time", "stamp_time"), "activity"),
    **dict.fromkeys(("Audit", "Finding"), "audit"),
    "Present": "copying",
    **dict.fromkeys(("LEASE_OWNER", "LEASE_TTL", "WHOLE", "Keep", "Removed", "Terms"), "removal"),
    **dict.fromkeys(("Sealed", "SealedThread"), "sealed"),
    **dict.fromkeys(("Before", "ThreadSummaries", "ThreadSummary"), "search"),
}


def __getattr__(name: str) -> Any:
    if name in _LATER:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LATER[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EVERY_DEPLOYMENT",
    "LEASE_OWNER",
    "LEASE_TTL",
    "WHOLE",
    "Audit",
    "Before",
    "Catalogued",
    "CheckpointAt",
    "Entry",
    "Finding",
    "Grouped",
    "Holding",
    "Keep",
    "Present",
    "Removed",
    "Sealed",
    "SealedThread",
    "SeenThread",
    "Skeleton",
    "Skipped",
    "StorePolicy",
    "StoredValues",
    "Terms",
    "ThreadStore",
    "ThreadSummaries",
    "ThreadSummary",
    "hold",
    "holding",
    "id_time",
    "release",
    "stamp_time",
    "warn_skipped",
]

_Part = TypeVar("_Part")
_R = TypeVar("_R")


class ThreadStore(Upkeep):
    """A deployment's threads on its blob engine (module docstring). Its ports are built
    on first use, so constructing one makes no request."""

    def __init__(
        self,
        *,
        engine: BlobEngine,
        namer: Namer,
        codec: Codec,
        policy: StorePolicy,
        subjects: Subjects | None = None,
    ) -> None:
        self._engine = engine
        # Whose data a thread is (`keys/subjects.py`); None: nobody's.
        self._subjects = subjects if subjects is not None and subjects.declared else None
        self._namer = namer
        self._codec = codec
        self.prefix = engine.prefix
        self._scope = Scope(self.prefix)
        self._finder = Finder(namer, codec, codec.sealer, self._scope)
        self._walker = Walker(namer, codec, engine.objects)
        # What a read hands the next write on the same checkpoint (handoff.py).
        self._handoff = Handoff(namer, id(self))
        self._decoder = Decoder(self._walker, self._handoff)
        self._catalog = Catalog(self.prefix, namer, codec, self._handoff, policy.catalog_fields)
        self._committer = Committer(
            engine=engine,
            finder=self._finder,
            walker=self._walker,
            handoff=self._handoff,
            catalog=self._catalog,
            policy=policy,
        )
        self._format_gate: Callable[[int], None] = lambda _format: None

    # The parts only copying and searching use (removal's and enumeration's: `Upkeep`):
    # built, and their modules imported, on first use.

    @cached_property
    def _copier(self) -> Copier:
        from langgraph.checkpoint.s3dynamo.store.copying import Copier
        from langgraph.checkpoint.s3dynamo.store.rewriter import Rewriter

        rewriter = Rewriter(self._walker, self._finder, self.now)
        copier = Copier(
            finder=self._finder,
            rewriter=rewriter,
            now=self.now,
            catalog=self._catalog,
            remover=self._remover,
            walker=self._walker,
        )
        copier.format_gate = lambda format: self._format_gate(format)
        copier.transactions = self._committer.detect_concurrent_runs
        return copier

    @cached_property
    def _threads(self) -> ThreadSearch:
        from langgraph.checkpoint.s3dynamo.store.search import ThreadSearch

        return ThreadSearch(self._catalog, self._finder, self._walker)

    def with_codec(self, codec: Codec) -> ThreadStore:
        """This store serializing through another codec (a saver's copy with its own
        serializer, `S3DynamoSaver.__copy__`). Only the parts that hold the codec are new,
        shallow copies: ports, object cache, carried values, kept skeletons, opened bases,
        run records and leases (keyed by the hand-off's `store_id`) stay shared."""
        clone = copy.copy(self)
        finder = _rebound(self._finder, codec=codec)
        walker = _rebound(self._walker, codec=codec)
        catalog = _rebound(self._catalog, codec=codec)
        vars(clone).update(
            _codec=codec,
            _finder=finder,
            _walker=walker,
            _decoder=_rebound(self._decoder, walker=walker),
            _catalog=catalog,
            _committer=_rebound(
                self._committer,
                finder=finder,
                walker=walker,
                catalog=catalog,
                placer=_rebound(self._committer.placer, finder=finder, walker=walker),
            ),
        )
        for lazy in ("_remover", "_lister", "_copier", "_threads"):
            vars(clone).pop(lazy, None)  # built again, from the clone's parts, when used
        return clone

    # ---------------------------------------------------------------- names, time

    @property
    def clock(self) -> Callable[[], float]:
        """What stamps records (`written_at`) and judges idleness; tests replace it."""
        return self._committer.clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self._committer.clock = value

    def now(self) -> int:
        return self._committer.now()

    def name_of(self, tid: str, ns: str | None = None) -> str:
        """A thread's name as stored (its keyed hash: what logs and reports show), or,
        with `ns`, its namespace's."""
        return self._namer.thread(tid) if ns is None else self._namer.namespace(tid, ns)

    def gate_formats(self, gate: Callable[[int], None]) -> None:
        """Called with a storage format before the first write only it describes (the
        saver records it in the deployment record: `Deployment.require_format`)."""
        self._format_gate = gate

    def forget(self) -> None:
        """Drop what is cached about stored records (after anything rewrote them)."""
        self._handoff.clear()
        self._decoder.skeletons.clear()
        self._committer.placer.bases.clear()

    # ---------------------------------------------------------------- reading

    def read(self, tid: str, ns: str, cid: str | None = None) -> Entry | None:
        """A namespace's latest checkpoint, or the one `cid` names: one Query."""
        if cid:
            return self._engine.run(self._finder.read_checkpoint(tid, ns, cid))
        return self._engine.run(self._finder.read_latest(tid, ns))

    def decode(self, entry: Entry) -> CheckpointTuple:
        """One checkpoint decoded for a run that continues from it: its stored values
        and skeleton are kept for the next `commit` on it, and its declared metadata
        values for the catalog (the read-to-write hand-off)."""
        found = next(self._decoder.decode([entry], remember=True))
        self._catalog.seen(entry.tid, found.metadata)
        kid = self._codec.sealer.key_id_of(entry.record.metadata)
        self._handoff.keep_subject_key(entry.tid, kid if is_subject_key(kid) else None)
        return found

    def tuples(
        self, entries: Iterable[Entry], filter: Mapping[str, Any] | None, limit: int | None
    ) -> Iterator[CheckpointTuple]:
        """Entries decoded page by page (`Decoder.tuples`)."""
        return self._decoder.tuples(entries, filter, limit)

    def entries(self, tid: str, before_id: str | None = None) -> list[Entry]:
        """Every checkpoint of a thread no mark hides, every namespace, newest first."""
        return self._engine.run(self._finder.thread_entries(tid, before_id))

    def checkpoints(
        self, tid: str, ns: str | None, cid: str | None, before_id: str | None
    ) -> Iterable[Entry]:
        """`list(config)`'s checkpoints before `before_id`, newest first: the one `cid`
        names, else the namespace's (every one's with `ns` None), read page by page."""
        if cid is not None:
            one = self.read(tid, ns or "", cid)
            return [one] if one and (before_id is None or cid < before_id) else []
        if ns is None:
            return self.entries(tid, before_id)
        return self._engine.stream(self._finder.namespace_entries(tid, ns, before_id))

    def listing(
        self, filter: Mapping[str, Any] | None, before_id: str | None, skipped: list[Skipped]
    ) -> list[Entry]:
        """`list(None, filter=...)`'s checkpoints: through the catalog, else a Scan.
        Threads that do not open with these keys go into `skipped`, with a warning."""
        found = self._engine.run(self._threads.listing(filter, before_id, skipped))
        warn_skipped("list(None)", skipped)
        return found

    def search(
        self, metadata: Mapping[str, Any] | None, limit: int, before: Before
    ) -> ThreadSummaries:
        """`search_threads` (`search.py`)."""
        return self._engine.run(self._threads.search(metadata, limit, before))

    def got(self, tid: str, ns: str, asked: str | None, found: CheckpointTuple | None) -> None:
        """A run read namespace `ns` of `tid` asking for `asked` (None: the latest), and
        got `found` (run detection, `handoff.py`)."""
        self._handoff.got(tid, ns, asked, found.checkpoint["id"] if found else None)

    def listed(self, tid: str, ns: str | None) -> None:
        """A run listed a namespace of `tid` (every one with `ns` None): a load by
        position (run detection, `handoff.py`)."""
        self._handoff.listed(tid, ns)

    def delta_history(
        self, tid: str, ns: str, cid: str | None, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """`get_delta_channel_history` from one namespace query (`history.py`)."""
        from langgraph.checkpoint.s3dynamo.store import history

        parts = history.Parts(self._finder, self._walker, self._decoder, self._engine)
        return history.delta_channel_history(parts, tid, ns, cid, channels)

    # ---------------------------------------------------------------- writing

    def commit(
        self,
        at: CheckpointAt,
        parent_id: str | None,
        checkpoint: Any,
        metadata: Any,
        new_versions: Mapping[str, Any],
        before_write: Callable[[], None] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> str:
        """Store a checkpoint (`committer.py`) under its data subject's key, if it has
        one (`_under_subject`: its metadata's, else its `config`'s); its id."""
        return self._under_subject(
            at.tid,
            lambda sealing: self._committer.commit_checkpoint(
                at.tid, at.ns, parent_id, checkpoint, metadata, new_versions, before_write, sealing
            ),
            metadata=metadata,
            configurable=(config or {}).get("configurable"),
        )

    def commit_writes(
        self,
        at: CheckpointAt,
        task_id: str,
        task_path: str,
        writes: Sequence[tuple[str, Any]],
        configurable: Mapping[str, Any] | None = None,
    ) -> None:
        """Store a task's pending writes (`committer.py`), sealed under the key of the
        thread's data subject (`Subjects.for_thread`)."""
        self._under_subject(
            at.tid,
            lambda sealing: self._committer.commit_writes(
                at.tid, at.ns, at.checkpoint_id, task_id, task_path, writes, sealing
            ),
            configurable=configurable,
        )

    def _under_subject(
        self,
        tid: str,
        commit: Callable[[Sealing | None], Steps[_R]],
        *,
        metadata: Mapping[str, Any] | None = None,
        configurable: Mapping[str, Any] | None = None,
    ) -> _R:
        """Run a commit sealed under the key of thread `tid`'s data subject, if it has one
        (`Subjects.for_thread`: the one rule); found changed since it sealed
        (`SubjectKeyChangedError`), sealed again and run once more."""
        subjects = self._subjects
        if subjects is None:
            return self._engine.run(commit(None))
        from langgraph.checkpoint.s3dynamo.keys.subjects import sealing_key

        for attempt in range(2):
            known = self._handoff.subject_key(tid)
            key, fence = subjects.for_thread(tid, known, metadata, configurable)
            sealing = None if key is None else Sealing(self._codec.under(sealing_key(key)), fence)
            try:
                done = self._engine.run(commit(sealing))
            except SubjectKeyChangedError:
                assert key is not None
                subjects.forget(key.token)
                self._handoff.keep_subject_key(tid, None)
                if attempt:
                    raise
                continue
            if key is not None:
                subjects.committed(key)
                self._handoff.keep_subject_key(tid, key.kid)
            return done
        raise AssertionError("unreachable")

    def metadata_size(self, at: CheckpointAt, metadata: Mapping[str, Any]) -> int:
        """How large a checkpoint's metadata is sealed."""
        return len(self._codec.seal_metadata(at, metadata))

    # ---------------------------------------------------------------- removing

    def delete_thread(self, tid: str) -> Removed:
        """Delete a thread whole (`removal.py`); what it found and removed."""
        from langgraph.checkpoint.s3dynamo.store.removal import WHOLE

        removed = self._engine.run(self._remover.remove(self._namer.thread(tid), WHOLE, tid=tid))
        self.forget()
        return removed

    def prune(self, tid: str, keep_last: int) -> Removed:
        """Keep each namespace's `keep_last` newest checkpoints and what they need
        (`removal.py`); what it found and removed."""
        from langgraph.checkpoint.s3dynamo.store.removal import Keep

        keep = Keep(latest=keep_last)
        return self._engine.run(self._remover.remove(self._namer.thread(tid), keep, tid=tid))

    def expire(self, name: str, keep: Keep, terms: Terms) -> Removed:
        """Retention's removal of the thread named `name` as stored, under its lease."""
        return self._engine.run(self._remover.remove(name, keep, terms=terms))

    def remove_checkpoints(self, checkpoints: Sequence[ItemKey]) -> int:
        """Remove these checkpoints (keys of checkpoint records, of any threads) with
        their writes, each thread's in one removal, the threads at once; how many
        records went."""
        from langgraph.checkpoint.s3dynamo.store.removal import Keep

        by_thread: dict[str, set[ItemKey]] = {}
        for key in checkpoints:
            by_thread.setdefault(key.pk, set()).add(key)
        removals = [
            self._remover.remove(name, Keep(only=frozenset(keys)))
            for name, keys in sorted(by_thread.items())
        ]
        found = self._engine.run(each(removals))
        self.forget()
        return sum(r.records for r in found)

    def kept(self, entries: Sequence[Entry], keep_last: int) -> dict[str, list[Entry]]:
        """What a prune keeping `keep_last` keeps of these entries, by namespace."""
        return self._walker.kept_chains(entries, keep_last)

    # ---------------------------------------------------------------- copying

    def copy(self, src: str, dst: str, keep_last: int | None = None) -> int:
        """Copy a thread (`copying.py`); how many checkpoints it wrote."""
        written = self._engine.run(self._copier.copy(src, dst, keep_last))
        self.forget()
        return written

    def check_copy(self, src: str, dst: str, entries: Sequence[Entry], keep: int | None) -> None:
        """Refuse, before any plan, what a copy of these checkpoints of `src` to `dst` (`keep`:
        keep_last) would refuse: the source itself, a target holding other checkpoints."""
        self._engine.run(self._copier.check_target(src, dst, entries, keep))

    def newest(self, tid: str, keep_last: int) -> list[Entry]:
        """What a copy with `keep_last` copies of a thread, newest first."""
        return self._engine.run(self._copier.newest(tid, keep_last))

    def present(self, tid: str) -> Present:
        """What an import finds of a thread here (one read of its partition)."""
        from langgraph.checkpoint.s3dynamo.store.copying import Present

        records, marks = self._engine.run(self._finder.items(self._namer.thread(tid)))
        veil = Veil(marks)
        return Present(
            tid,
            {(e.ns, e.checkpoint_id) for e in self._finder.group(records, known_tid=tid)},
            any(not veil.hides(r.sk) for r in records),
            frozenset(m.key for m in marks if m.operation == "copy"),
            frozenset(r.sk for r in records),
        )

    def import_hidden(
        self,
        here: Present,
        namespaces: Iterable[str],
        write: Callable[[], None],
        checkpoints: Iterable[tuple[str, str]],
    ) -> None:
        """Run `write` (an import's commits) behind copy marks over these namespaces
        where readers see nothing of the thread yet (a thread they see grows one whole
        checkpoint at a time instead), finishing what an interrupted import left; a run
        that writes the thread meanwhile stops it (`copying.py`, `import_holds`)."""
        from langgraph.checkpoint.s3dynamo.store.copying import held_commits, import_holds

        tid = here.tid
        hidden = set() if here.shown else {self._namer.namespace(tid, ns) for ns in namespaces}
        writing = held_commits(write, import_holds(here, namespaces, self._handoff.run_key))
        latest, claim = self._copier.latest(tid, checkpoints), here.records
        self._engine.run(
            self._copier.hidden(
                tid, hidden, here.copying, writing, latest, reopen_only=True, claim=claim
            )
        )

    # ---------------------------------------------------------------- the catalog

    @property
    def catalog_fields(self) -> tuple[str, ...]:
        """The metadata fields the thread catalog files threads by."""
        return tuple(self._catalog.fields)

    def attach(self, control: Control, deployment: Deployment) -> None:
        """The deployment's own partition, where the catalog's completeness is kept, and
        its record, which holds the fields the catalog files threads by."""
        self._catalog.control = control
        self._catalog.deployment = deployment

    def mark_catalog_complete(self, unfiled: Sequence[Skipped] = ()) -> bool:
        """Record that every thread is filed under every declared field, unless some
        (`unfiled`) were not (`Catalog.mark_complete`); whether it was recorded."""
        return self._catalog.mark_complete(unfiled)

    def catalog_created(self) -> None:
        """The deployment record was just made (`Catalog.created`)."""
        self._catalog.created()

    # ---------------------------------------------------------------- records

    def catalog_answers(self, metadata: Mapping[str, Any] | None) -> bool:
        """Whether the catalog answers a search by this filter (it asks a value of a
        declared field whose catalog is complete)."""
        usable = self._catalog.usable(metadata)
        return usable is not None and self._catalog.complete(usable[0])


def _one(write: Write) -> Steps[None]:
    yield Apply(write)


def _rebound(part: _Part, **attributes: Any) -> _Part:
    """A shallow copy of a store part with some attributes replaced; its caches are the
    same objects as the original's."""
    clone = copy.copy(part)
    vars(clone).update(attributes)
    return clone
