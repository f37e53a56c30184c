"""The maintenance half of the thread store's API: setting up and probing the storage,
the catalog's build, scans of the deployment and what `verify` checks beyond blobs
(`audit.py`), objects by owner, the marks of garbage collection, the upload journal,
control items (leases, heads, the sweep's cursor, the idle index), whose keys are built
here only, and records as stored with their sealed blobs, opened or sealed again (what
verify, stats and re-encryption fold over: `sealed.py`). `ThreadStore` inherits it;
garbage collection, retention, `check` and leases call these methods, never the engine
or the ports.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.s3dynamo.backoff import CONFLICT_ATTEMPTS, tries
from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, WritePlan
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer, SealingKey
from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Apply,
    Batch,
    NameOrphans,
    Query,
    each,
    every_item,
    one,
)
from langgraph.checkpoint.s3dynamo.errors import (
    LeaseLostError,
    ObjectNotFoundError,
    StorageConfigError,
    StorageError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.format.catalog_records import CatalogEntry, entry_items
from langgraph.checkpoint.s3dynamo.format.layout import (
    deployment_pk,
    is_catalog_pk,
    object_key,
    scope_of,
    split_object_key,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    STAMP_ATTRIBUTES,
    CheckpointRecord,
    ControlRecord,
    ItemKey,
    Lease,
    Loan,
    Mark,
    Record,
    Stamp,
    control_from,
    held_blobs,
    lease_key,
    put_control,
    record_item,
    stamp_from,
)
from langgraph.checkpoint.s3dynamo.format.schema import (
    IDLE_INDEX,
    PARTITION_KEY,
    RUN_INDEX,
    SORT_KEY,
)
from langgraph.checkpoint.s3dynamo.keys.codec import Codec
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.store.catalog import Catalog
from langgraph.checkpoint.s3dynamo.store.finder import (
    Entry,
    Finder,
    Grouped,
    Skipped,
    leftover_writes,
)
from langgraph.checkpoint.s3dynamo.store.format import (
    catalog_resealed,
    lease_expiry,
    lease_taken,
    replace_if_unchanged,
    set_idle,
    take_lease,
)
from langgraph.checkpoint.s3dynamo.store.scope import Scope
from langgraph.checkpoint.s3dynamo.store.walker import Walker
from langgraph.checkpoint.s3dynamo.table import Item, begins, key_of

if TYPE_CHECKING:  # maintenance's own parts load when maintenance runs
    from langgraph.checkpoint.s3dynamo.blobs.collect import Collector
    from langgraph.checkpoint.s3dynamo.store.audit import Audit
    from langgraph.checkpoint.s3dynamo.store.committer import Committer
    from langgraph.checkpoint.s3dynamo.store.removal import Removed, Remover
    from langgraph.checkpoint.s3dynamo.store.sealed import Lister, Sealed, SealedThread


class Upkeep:
    """Maintenance methods over the parts a `ThreadStore` builds (module docstring)."""

    _engine: BlobEngine
    _namer: Namer
    _scope: Scope
    _finder: Finder
    _codec: Codec
    _walker: Walker
    _catalog: Catalog
    _committer: Committer
    prefix: str
    # The store's: drop what is cached about stored records; what stamps records.
    forget: Callable[[], None]
    clock: Callable[[], float]

    # Removal and the blobs' listing load on first use: a Lambda's first request needs neither.
    @cached_property
    def _remover(self) -> Remover:
        from langgraph.checkpoint.s3dynamo.store.removal import Remover

        remover = Remover(self._finder, self._walker, self._namer, lambda: self.clock())
        remover.catalog_enabled = lambda: self._catalog.enabled
        remover.heads_current = self._committer.detect_concurrent_runs
        return remover

    @cached_property
    def _lister(self) -> Lister:
        from langgraph.checkpoint.s3dynamo.store.sealed import Lister

        return Lister(self._finder, self._walker)

    # ------------------------------------------------------------ the catalog's build

    def catalog_entries(
        self, skipped: list[Skipped], progress: Callable[[int, int | None], None]
    ) -> tuple[int, list[CatalogEntry]]:
        """Every thread's catalog entries, from one Scan of the deployment's records
        (threads that do not open are listed in `skipped`): (threads, entries).
        `progress` hears of the threads found (no total yet), then of those read."""
        self._catalog.require_fields()
        records = [r for r in self.records() if isinstance(r, CheckpointRecord)]
        threads = sorted({r.pk for r in records})
        for done, _ in enumerate(threads, 1):
            progress(done, None)
        found = self._finder.group(records, skipped=skipped)
        return self._catalog.entries_of_all(found, self._walker.open_metadata, progress)

    def file(self, entries: Sequence[CatalogEntry]) -> None:
        """Write catalog entries and their back-references, in full batches."""
        self._engine.do(Batch(puts=entry_items(entries)))

    # ------------------------------------------------------------ scans, audit

    def records(self, tid: str | None = None, control: list[Item] | None = None) -> list[Record]:
        """Every record of a thread, hidden or not; of the deployment (a Scan) without,
        the control and catalog items it read added to `control` if given."""
        if tid is None:
            return self._engine.run(self._scope.records(control))
        return self._engine.run(self._finder.items(self._namer.thread(tid)))[0]

    def audit(
        self,
        tid: str | None,
        records: Sequence[Record],
        entries: Sequence[Entry],
        control: Sequence[Item] = (),
    ) -> Audit:
        """What `verify` checks beyond blobs (`audit.py`): the catalog and the tombstones
        of one thread (read here: one Query, one BatchGetItem), or of the deployment,
        from the `control` items and `records` its Scan read; `entries`, the
        checkpoints that opened."""
        from langgraph.checkpoint.s3dynamo.store.audit import Auditor

        auditor = Auditor(self._catalog, self._namer)
        if tid is not None:
            return self._engine.run(auditor.thread(tid, records))
        threads = {e.record.pk: e.tid for e in entries}
        catalog = [i for i in control if is_catalog_pk(str(i["pk"]))]
        own = [i for i in control if not is_catalog_pk(str(i["pk"]))]
        return auditor.check(own, catalog, records, threads, whole=True)

    # ------------------------------------------------------------ the storage

    def create_if_missing(self) -> tuple[bool, bool]:
        """Create the table and the bucket if missing (development and tests); whether
        each was made."""
        return self._engine.create_if_missing()

    def prime(self, objects: bool = True) -> None:
        """Build the ports now (an init phase; the object store's only with `objects`),
        still without a request."""
        self._engine.prime(objects)

    def index_resource(self) -> str:
        """What the index is, as `check` names it."""
        return self._engine.resources()[0]

    def probe_objects(self) -> str:
        """List the deployment's objects once; what answered (`check`)."""
        self._engine.probe_objects()
        return self._engine.resources()[1]

    def other_deployments(self, *, reset: bool = False) -> list[str]:
        """Prefixes of the other deployments scans passed so far; `reset` forgets them."""
        if reset:
            self._scope.others.clear()
            return []
        return self._scope.other_prefixes()

    def note_scope(self, scope: str | None) -> None:
        """An object of the deployment with this prefix was passed (a listing)."""
        self._scope.note(scope)

    # ------------------------------------------------------------ scans, stamps

    def stamps(
        self, segment: int = 0, segments: int = 1, every: bool = False
    ) -> Iterator[list[Stamp]]:
        """One segment of a Scan of this deployment's items as retention reads them, a
        page at a time; with `every`, every deployment's (`Scope.stamps`)."""
        return self._engine.stream(self._scope.stamps(segment, segments, every))

    def partition_stamps(self, thread_name: str) -> list[Stamp]:
        """Key and write time of every item of a thread, read consistently."""
        items = self._engine.run(
            every_item(thread_name, consistent=True, attributes=STAMP_ATTRIBUTES)
        )
        return [stamp_from(i) for i in items]

    def idle_items(self, partition: str, every: bool = False) -> Iterator[list[ItemKey]]:
        """Keys of this deployment's items (`every`: all deployments') in one partition of
        the idle index, a page at a time; other deployments' are noted."""
        prefix = "" if every else self.prefix
        where = begins(PARTITION_KEY, prefix) if prefix else None
        cursor: Item | None = None
        while True:
            try:
                page = self._engine.do(
                    Query(partition, where=where, index_name=IDLE_INDEX, cursor=cursor)
                )
            except (StorageError, StoreMissingError) as exc:
                # DynamoDB: ValidationException naming the index; moto: ResourceNotFound.
                if isinstance(exc, StorageError) and "index" not in str(exc):
                    raise
                raise StorageConfigError(
                    f"{self.index_resource()} has no global secondary index {IDLE_INDEX!r}, "
                    f"which retention Queries for idle threads ({exc}). Add it: apply this "
                    "version's terraform/ (aws_dynamodb_table.this declares it), or run "
                    "setup() on a new table; meanwhile sweep with the full Scan (`s3dynamo "
                    "expire --full`)"
                ) from exc
            kept = []
            for key in (key_of(i) for i in page.items):
                scope = scope_of(key.pk)
                if scope == self.prefix or (every and scope is not None):
                    kept.append(key)
                else:
                    self._scope.note(scope)
            yield kept
            if page.cursor is None:
                return
            cursor = page.cursor

    def set_idle(self, key: ItemKey, to: str, was: str | None) -> bool:
        """Move an item's idle-index key to `to` while it is still `was` (None: any)."""
        return bool(self._engine.do(Apply(set_idle(key, to, was))).applied)

    def sweep_cursor(self, name: str) -> ControlRecord | None:
        """The retention sweep's cursor record in the deployment's partition, if any."""
        page = self._engine.do(Query(deployment_pk(self.prefix), consistent=True))
        found = [control_from(i) for i in page.items if i[SORT_KEY] == name]
        return found[0] if found else None

    def put_sweep_cursor(self, record: ControlRecord, expected_version: int | None) -> bool:
        """Replace the cursor record while it still has `expected_version` (None: new)."""
        write = put_control(deployment_pk(self.prefix), record, expected_version)
        return bool(self._engine.do(Apply(write)).applied)

    def run_checkpoints(self, run_ids: Sequence[str]) -> list[ItemKey]:
        """Checkpoints these runs created, through the run index."""
        names = [self._namer.run(str(r)) for r in dict.fromkeys(run_ids)]
        found = self._engine.run(each([every_item(n, index_name=RUN_INDEX) for n in names]))
        return [key_of(i) for items in found for i in items]

    def item_size(self, record: Record) -> int:
        """The size DynamoDB bills for a record's item."""
        return self._engine.item_size(record_item(record))

    # ------------------------------------------------------------ objects

    def object_owner(self, key: str) -> tuple[str, str] | None:
        """(thread name, leaf) of an object key this deployment could have written, else
        None (another deployment's, or not an object of a thread)."""
        return split_object_key(self.prefix, key)

    def deployment_objects(self) -> Iterator[ObjectInfo]:
        """Every object of this deployment."""
        return self._engine.deployment_objects()

    def objects_of(self, owner: str) -> list[ObjectInfo]:
        """Every object of one owner (a thread's name as stored)."""
        return self._engine.objects.list_owner(owner)

    def fetch(self, needed: Mapping[str, str], *, cached: bool = True) -> dict[str, bytes]:
        """Object bodies in one wave (`needed`: key -> what needs it)."""
        return self._engine.objects.fetch(needed, cached=cached) if needed else {}

    def live_leaves(
        self, thread_name: str, skipped: list[Skipped] | None = None
    ) -> set[str] | None:
        """The mark of garbage collection: every leaf of a thread's objects its records
        reference or a loan lends (`Holdings.live_leaves`); None without either."""
        return self._engine.run(self._remover.holdings.live_leaves(thread_name, skipped))

    def lent_leaves(self, thread_name: str) -> set[str]:
        """Leaves of a thread's objects its (backed) loans name."""
        return self._engine.run(self._remover.holdings.lent_leaves(thread_name))

    def unbacked_loans(self, thread_name: str) -> list[Loan]:
        """A thread's loans that no borrowing backs (written by someone else)."""
        return self._engine.run(self._remover.holdings.unbacked_loans(thread_name))

    def leftover_writes(self, names: Sequence[str] | None, before_s: int) -> list[ItemKey]:
        """Writes records written before `before_s` whose checkpoint record is not there,
        outside namespaces under a mark (`finder.leftover_writes`): of these threads (by
        name; one Query each), or of the deployment (a keys-and-stamps Scan)."""
        if names is None:
            stamped: list[Record | Stamp | Mark] = [*self._engine.run(self._scope.thread_stamps())]
        else:
            found = self._engine.run(each([self._finder.items(n) for n in names]))
            stamped = [one for records, marks in found for one in (*records, *marks)]
        return leftover_writes(stamped, before_s)

    def clear_leftovers(self, thread_name: str, planned: Collection[ItemKey], before_s: int) -> int:
        """Delete those of `planned` still leftover writes records of a thread, each only
        while unchanged, after an intent naming their objects (`Remover.leftovers`); how
        many."""
        return self._engine.run(self._remover.leftovers(thread_name, planned, before_s))

    def collector(self) -> Collector:
        """The engine's garbage collection of this deployment's objects."""
        return self._engine.collector

    def name_orphans(self, thread_name: str, leaves: Sequence[str]) -> None:
        """Write an intent naming objects of a thread that an operation is about to leave
        unreferenced, so incremental collection checks them after the grace period."""
        keys = [object_key(thread_name, leaf) for leaf in leaves]
        self._engine.do(NameOrphans(thread_name, keys))

    # ------------------------------------------------------------ control items

    def lease_key(self, tid: str) -> ItemKey:
        return lease_key(self._namer.thread(tid))

    def acquire_lease(self, thread_name: str, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
        """The thread's lease, or None while another holds it."""
        key = lease_key(thread_name)
        taken = self._engine.do(Apply(take_lease(key, owner, now_ms, ttl_ms), returning="new"))
        if not taken.applied or taken.item is None:
            return None
        return lease_taken(key, owner, taken.item, now_ms + ttl_ms)

    def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        if not self._engine.do(Apply(lease_expiry(lease, now_ms + ttl_ms))).applied:
            raise LeaseLostError("the lease was taken over; it cannot be renewed")
        return lease._replace(expires_ms=now_ms + ttl_ms)

    def release_lease(self, lease: Lease) -> None:
        self._engine.do(Apply(lease_expiry(lease, 0)))

    def threads_of(self, field: str, values: Sequence[str]) -> list[str]:
        """The names (as stored) of every thread filed under these values (canonical
        texts) of a declared field, none opened (one Query of each value's catalog
        partition): what an erasure removes, even once the entries no longer open."""
        self._catalog.require_complete(field)
        listed = [self._catalog.listed(self._catalog.token(field, v)) for v in values]
        return sorted({e.thread_name for found in self._engine.run(each(listed)) for e in found})

    def subject_threads(self, field: str, values: Sequence[str], erased: list[str]) -> list[str]:
        """The ids of every thread filed under these values of a declared field, each
        entry opened (`threads_of`, whose ids an export needs); the names of those an
        erasure made unreadable (a backup restored after it) go into `erased`."""
        self._catalog.require_complete(field)
        listed = [self._catalog.listed(self._catalog.token(field, v)) for v in values]
        found = [e for entries in self._engine.run(each(listed)) for e in entries]
        return sorted({c.tid for c in self._catalog.opened_all(found, erased)})

    def remove_threads(self, names: Sequence[str]) -> list[Removed]:
        """Remove these threads whole, by their names as stored (`removal.py`: nothing
        opened), in one wave; what each removal found and removed."""
        from langgraph.checkpoint.s3dynamo.store.removal import WHOLE

        removed = self._engine.run(each([self._remover.remove(name, WHOLE) for name in names]))
        self.forget()
        return removed

    # ------------------------------------------------------------ records, sealed

    def group(self, records: Iterable[Record], skipped: list[Skipped] | None = None) -> list[Entry]:
        """Checkpoint records with their writes (`Finder.group`)."""
        return self._finder.group(records, skipped=skipped)

    def pair(self, records: Iterable[Record]) -> Grouped:
        """Every record accounted for (`Finder.pair`)."""
        return self._finder.pair(records)

    def referenced(self, entries: Sequence[Entry]) -> dict[str, str]:
        """Object key -> the checkpoint that references it (no blob opened)."""
        return self._finder.referenced_keys(entries)

    def key_ids(self, records: Iterable[Record]) -> dict[str, int]:
        """How many blobs these records hold, by the key id they are sealed under."""
        by_key: dict[str, int] = {}
        for r in records:
            for b in held_blobs(r):
                kid = self._codec.sealer.key_id_of(b) or "(none)"
                by_key[kid] = by_key.get(kid, 0) + 1
        return by_key

    def sealed(self, tid: str | None, entries: Sequence[Entry]) -> SealedThread:
        """Every sealed blob of these checkpoints of one thread (`sealed.py`), and, with
        `tid`, of its catalog entries: what verify and stats fold over."""
        return self._engine.run(self._lister.thread(entries, tid))

    def reseal(self, tid: str, key: SealingKey | None = None) -> int:
        """Seal again under the active key (with `key`, under that key: a data subject's)
        every blob of a thread another key sealed (`sealed.py`): objects overwritten in
        place (same name, same value), records replaced only while unchanged since read
        (a thread a writer changed meanwhile is read again), then its catalog entries,
        each while it exists. How many."""
        sealer = self._codec.sealer.under(key)
        read: frozenset[ItemKey] | None = None
        for _ in tries(CONFLICT_ATTEMPTS):
            entries = self._engine.run(self._finder.thread_entries(tid))
            try:
                count = self._reseal_once(tid, sealer, entries)
            except ObjectNotFoundError:
                # A removal of the thread deletes its records, then their objects: read
                # again. The same records naming a missing object is that object's loss.
                keys = frozenset(e.record.key for e in entries)
                if keys == read:
                    raise
                read = keys
                continue
            if count is not None:
                return count
        raise StorageError(
            f"reencrypt of thread {tid!r}: records kept changing under concurrent writes "
            f"for {CONFLICT_ATTEMPTS} attempts; run it again when the thread is quieter"
        )

    def _reseal_once(self, tid: str, sealer: Sealer, entries: Sequence[Entry]) -> int | None:
        """One attempt of `reseal` over these checkpoints: how many blobs, or None where
        a record changed since it was read."""
        from langgraph.checkpoint.s3dynamo.store.sealed import reseal

        thread = self.sealed(tid, entries)
        records, objects, catalog, count = reseal(sealer, thread, lambda s: sealer.stale(s.blob))
        updates = [u for old, new in records if (u := replace_if_unchanged(old, new))]
        # A removal racing the rewrite may delete an object before it is written again:
        # an intent per owner (a copy's shared objects are its lender's) has collection
        # check each once the rewrite is done.
        name = self._namer.thread(tid)
        owners: dict[str, list[str]] = {}
        for key, _ in objects:
            owners.setdefault((self.object_owner(key) or (name,))[0], []).append(key)
        own = owners.pop(name, [])
        self._engine.run(each([one(NameOrphans(o, k)) for o, k in sorted(owners.items())]))
        plan = WritePlan(name, overwrites=objects, writes=updates, each=True, orphans=own)
        if not all(w.applied for w in self._engine.do(plan)):
            return None
        self._engine.run(each([one(Apply(catalog_resealed(e))) for e in catalog]))
        return count

    def newest_metadata(self, skipped: list[Skipped]) -> dict[str, Mapping[str, Any]]:
        """Each thread's newest checkpoint's metadata, opened, from one Scan of the
        deployment's records (threads that do not open are listed in `skipped`)."""
        newest: dict[str, Entry] = {}
        for e in self._finder.group(self._engine.run(self._scope.records()), skipped=skipped):
            if e.tid not in newest or e.checkpoint_id > newest[e.tid].checkpoint_id:
                newest[e.tid] = e
        return {tid: self._walker.open_metadata(e) or {} for tid, e in sorted(newest.items())}

    def open(self, s: Sealed, bases: dict[str, tuple[str, bytes]]) -> tuple[str, bytes]:
        """One sealed blob opened (`sealed.open_sealed`)."""
        from langgraph.checkpoint.s3dynamo.store.sealed import open_sealed

        return open_sealed(self._codec.sealer, s, bases)

    def opened(self, entry: Entry) -> tuple[Any, dict[str, Any]]:
        """A checkpoint's metadata and body, opened."""
        return self._walker.open_metadata(entry) or {}, self._walker.open_body(entry)

    def active_key(self) -> str | None:
        keyring = self._codec.sealer.keyring
        return keyring.active if keyring else None

    def key_id_of(self, blob: bytes) -> str | None:
        return self._codec.sealer.key_id_of(blob)
