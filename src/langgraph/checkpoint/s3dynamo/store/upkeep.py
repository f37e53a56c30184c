"""The maintenance side of the thread store's facade: setting up and probing the
ports, scans of the deployment, records written or replaced whole, deleting under marks,
objects by listing, copies and rotations handed to the blob engine as plans, the upload
journal, and control items (heads, tombstones, markers, leases), whose keys are built
here only. `ThreadStore` inherits it; garbage collection,
retention, copies, re-encryption, `check` and leases call these methods, never the ports.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine, WritePlan
from langgraph.checkpoint.s3dynamo.blobs.lazy_ports import LazyPorts
from langgraph.checkpoint.s3dynamo.catalog_records import CatalogEntry
from langgraph.checkpoint.s3dynamo.errors import (
    LeaseLostError,
    StorageConfigError,
    StorageError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.layout import (
    HEAD_PREFIX,
    control_pk,
    deployment_pk,
    object_key,
    scope_of,
)
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.records import (
    STAMP_ATTRIBUTES,
    ControlRecord,
    ItemKey,
    Lease,
    Record,
    Stamp,
    control_from,
    head_key,
    is_mark,
    lease_key,
    put_control,
    record_from,
    record_item,
    referenced_leaves,
    stamp_from,
)
from langgraph.checkpoint.s3dynamo.schema import IDLE_INDEX, PARTITION_KEY, RUN_INDEX, SORT_KEY
from langgraph.checkpoint.s3dynamo.store.deleter import Deleter
from langgraph.checkpoint.s3dynamo.store.finder import Finder, leftover_writes
from langgraph.checkpoint.s3dynamo.store.format import (
    batch_items,
    catalog_items,
    delete_if_unchanged,
    head_items,
    lease_expiry,
    lease_taken,
    replace_if_unchanged,
    set_idle,
    take_lease,
)
from langgraph.checkpoint.s3dynamo.store.rewriter import Rewrite
from langgraph.checkpoint.s3dynamo.store.scope import Scope
from langgraph.checkpoint.s3dynamo.table import Table, begins, every_item, every_page, key_of


def idle_pages(table: Table, partition: str, prefix: str) -> Iterator[list[ItemKey]]:
    """Keys of the items of one partition of the idle index under a partition-key
    prefix, a page at a time; the fix named where the table lacks the index."""
    where = begins(PARTITION_KEY, prefix) if prefix else None
    try:
        for items in every_page(table, partition, index=IDLE_INDEX, where=where):
            yield [key_of(i) for i in items]
    except (StorageError, StoreMissingError) as exc:
        # DynamoDB: ValidationException naming the index; moto: ResourceNotFound.
        if isinstance(exc, StorageError) and "index" not in str(exc):
            raise
        raise StorageConfigError(
            f"{getattr(table, 'resource', 'the table')} has no global secondary index "
            f"{IDLE_INDEX!r}, which retention Queries for idle threads ({exc}). Add it: "
            "apply this version's terraform/ (aws_dynamodb_table.this declares it), or run "
            "setup() on a new table; meanwhile sweep with the full Scan (`s3dynamo expire "
            "--full`)"
        ) from exc


class Upkeep:
    """Maintenance methods over the parts a `ThreadStore` builds (module docstring)."""

    engine: BlobEngine
    ports: LazyPorts
    namer: Namer
    prefix: str
    scope: Scope
    deleter: Deleter
    finder: Finder

    def create_if_missing(self) -> tuple[bool, bool]:
        """Create the table and the bucket if missing (development and tests); whether
        each was made."""
        return self.ports.table.create_if_missing(), self.ports.objects.create_if_missing()

    def prime(self) -> None:
        """Build every port now (an init phase), still without a request."""
        for name in ("table", "objects"):
            getattr(self.ports, name)

    def index_resource(self) -> str:
        """What the index is, as `check` names it."""
        return str(getattr(self.ports.table, "resource", "index"))

    def probe_objects(self) -> str:
        """List the deployment's objects once; what answered (`check`)."""
        self.ports.objects.probe(self.prefix)
        return str(getattr(self.ports.objects, "resource", "object store"))

    def other_deployments(self, *, reset: bool = False) -> list[str]:
        """Prefixes of the other deployments scans passed so far; `reset` forgets them."""
        if reset:
            self.scope.others.clear()
            return []
        return self.scope.other_prefixes()

    def partition_stamps(self, thread_name: str) -> list[Stamp]:
        """Key and write time of every item of a thread, read consistently."""
        items = every_item(
            self.ports.table, thread_name, consistent=True, attributes=STAMP_ATTRIBUTES
        )
        return [stamp_from(i) for i in items]

    def idle_items(self, partition: str, every: bool = False) -> Iterator[list[ItemKey]]:
        """Keys of this deployment's items (`every`: all deployments') in one partition of
        the idle index, a page at a time; other deployments' are noted (`note_passed`)."""
        for page in idle_pages(self.ports.table, partition, "" if every else self.prefix):
            kept = []
            for key in page:
                scope = scope_of(key.pk)
                if scope == self.prefix or (every and scope is not None):
                    kept.append(key)
                else:
                    self.scope.note(scope)
            yield kept

    def set_idle(self, key: ItemKey, to: str, was: str | None) -> bool:
        """Move an item's idle-index key to `to` while it is still `was` (None: any)."""
        return self.engine.apply(set_idle(key, to, was)).applied

    def sweep_cursor(self, name: str) -> ControlRecord | None:
        """The retention sweep's cursor record in the deployment's partition, if any."""
        page = self.ports.table.query(deployment_pk(self.prefix), consistent=True)
        found = [control_from(i) for i in page.items if i[SORT_KEY] == name]
        return found[0] if found else None

    def put_sweep_cursor(self, record: ControlRecord, expected_version: int | None) -> bool:
        """Replace the cursor record while it still has `expected_version` (None: new)."""
        return self.engine.apply(
            put_control(deployment_pk(self.prefix), record, expected_version)
        ).applied

    def run_checkpoints(self, run_key: str) -> list[ItemKey]:
        """Checkpoints a run created, through the run index."""
        return [key_of(i) for i in every_item(self.ports.table, run_key, index=RUN_INDEX)]

    def checkpoint_records(self, checkpoint: ItemKey) -> list[Record]:
        """A checkpoint's record and every record sorted under it, read whole (paged)."""
        items = every_item(self.ports.table, checkpoint.pk, where=begins(SORT_KEY, checkpoint.sk))
        return [record_from(i) for i in items if not is_mark(i)]

    def item_size(self, record: Record) -> int:
        """The size DynamoDB bills for a record's item."""
        return self.ports.table.item_size(record_item(record))

    def replace_if_unchanged(self, old: Record, new: Record) -> bool:
        """Replace a record only while it is still `old`."""
        update = replace_if_unchanged(old, new)
        return update is None or self.engine.apply(update).applied

    # ------------------------------------------------- deleting: marks first

    # ------------------------------------------------- objects

    def deployment_objects(self) -> Iterator[ObjectInfo]:
        """Every object of this deployment."""
        return self.ports.objects.list(self.prefix)

    def write_copy(
        self, dst: str, rewrite: Rewrite | None, filed: Sequence[CatalogEntry] = ()
    ) -> None:
        """What `rewrite` built for `dst` (a copy), as the engine writes every plan: its
        objects in one wave, journaled, then its records and catalog entries `filed` in
        full batches (entries alone when a repeat finds every record there)."""
        records = [new for _, new in rewrite.records] if rewrite else []
        items = [*batch_items(records), *catalog_items(filed)]
        if not items:
            return
        owner = self.namer.thread(dst)
        objects = rewrite.objects if rewrite else ()
        self.engine.write(WritePlan(owner, uploads=objects, batched=items))

    def write_rotation(self, tid: str, rewrite: Rewrite) -> bool:
        """What `rewrite` re-sealed in place (a rotation): objects overwritten (same
        name, same value), then each changed record replaced only while unchanged since
        read. False if a concurrent writer changed one (read the thread again)."""
        updates = [replace_if_unchanged(old, new) for old, new in rewrite.records if old != new]
        plan = WritePlan(
            self.namer.thread(tid),
            overwrites=rewrite.objects,
            writes=[u for u in updates if u is not None],
            each=True,
        )
        return all(written.applied for written in self.engine.write(plan))

    def clear_leftovers(self, thread_name: str, planned: Collection[ItemKey], before_s: int) -> int:
        """Delete those of `planned` that are still leftover writes records of a thread
        (`finder.leftover_writes`, on its items read again, consistently), each only
        while unchanged since (`delete_if_unchanged`), after an intent naming the objects
        they reference, for incremental collection. How many were deleted."""
        found, marks = self.finder.partition_items(thread_name, consistent=True)
        records = {r.key: r for r in found}
        stamped = [*records.values(), *marks]
        doomed = [records[k] for k in leftover_writes(stamped, before_s) if k in planned]
        leaves = sorted({leaf for r in doomed for leaf in referenced_leaves(r)})
        plan = WritePlan(
            thread_name,
            orphans=[object_key(thread_name, leaf) for leaf in leaves],
            writes=[delete_if_unchanged(r) for r in doomed],
            each=True,
        )
        return sum(w.applied for w in self.engine.write(plan)) if doomed else 0

    # ------------------------------------------------- the upload journal

    def name_orphans(self, thread_name: str, leaves: Iterable[str]) -> None:
        """Write an intent naming objects of a thread that an operation is about to leave
        unreferenced, so incremental collection checks them after the grace period."""
        self.engine.name_orphans(thread_name, [object_key(thread_name, leaf) for leaf in leaves])

    # ------------------------------------------------- control items

    def acquire_lease(self, thread_name: str, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
        """The thread's lease, or None while another holds it."""
        key = lease_key(thread_name)
        taken = self.engine.apply(take_lease(key, owner, now_ms, ttl_ms), returning="new")
        if not taken.applied or taken.item is None:
            return None
        return lease_taken(key, owner, taken.item, now_ms + ttl_ms)

    def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        if not self.engine.apply(lease_expiry(lease, now_ms + ttl_ms)).applied:
            raise LeaseLostError("the lease was taken over; it cannot be renewed")
        return lease._replace(expires_ms=now_ms + ttl_ms)

    def release_lease(self, lease: Lease) -> None:
        self.engine.apply(lease_expiry(lease, 0))

    def put_heads(self, thread_name: str, heads: Mapping[str, str]) -> None:
        self.engine.batch(head_items(thread_name, heads))

    def drop_heads(self, thread_name: str, ns_names: Collection[str] | None = None) -> None:
        if ns_names is None:
            keys = self.finder.keys(control_pk(thread_name), prefix=HEAD_PREFIX)
        else:
            keys = [head_key(thread_name, name) for name in sorted(ns_names)]
        self.engine.batch(deletes=keys)
