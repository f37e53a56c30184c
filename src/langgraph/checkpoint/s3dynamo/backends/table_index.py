"""The threads' ports (`RecordIndex`, `ControlItems`, `TableScan`) on the table port, the
format written once (`records.py`, `store/format.py`) for every table adapter.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Iterator, Mapping

from langgraph.checkpoint.s3dynamo.errors import (
    LeaseLostError,
    StorageConfigError,
    StorageError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.layout import (
    HEAD_PREFIX,
    borrow_sk,
    control_pk,
    is_control_pk,
    is_deployment_pk,
    is_memory_pk,
    loans_prefix,
)
from langgraph.checkpoint.s3dynamo.ports import Cursor, Page
from langgraph.checkpoint.s3dynamo.records import (
    CONTROL_VERSION,
    STAMP_ATTRIBUTES,
    CheckpointRecord,
    ControlRecord,
    Fence,
    HeadMove,
    ItemKey,
    Lease,
    Loan,
    Mark,
    Record,
    Stamp,
    UploadIntent,
    WritesRecord,
    control_from,
    control_item,
    head_key,
    intent_from,
    intent_item,
    is_mark,
    loan_from,
    loan_parts,
    mark_from,
    record_from,
    record_item,
    stamp_from,
)
from langgraph.checkpoint.s3dynamo.schema import IDLE_INDEX, PARTITION_KEY, RUN_INDEX
from langgraph.checkpoint.s3dynamo.store import format
from langgraph.checkpoint.s3dynamo.table import (
    Between,
    Put,
    Table,
    Write,
    begins,
    eq,
    every_item,
    every_page,
    key_of,
    keyed,
    lt,
    missing,
    scan_pages,
)


class ThreadsOnTable:
    """The threads' ports on one `Table`."""

    table: Table

    def _commit(self, writes: list[Write]) -> None:
        if len(writes) == 1:
            self.table.write(writes[0])
        else:
            self.table.transact(writes)

    # ---------------------------------------------------------------- records

    def query(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        between: tuple[str, str] | None = None,
        descending: bool = False,
        limit: int | None = None,
        cursor: Cursor | None = None,
        consistent: bool = False,
    ) -> Page:
        where = (
            begins("sk", prefix)
            if prefix is not None
            else Between("sk", *between)
            if between is not None
            else None
        )
        page = self.table.query(
            pk,
            where=where,
            descending=descending,
            limit=limit,
            cursor=cursor,  # type: ignore[arg-type]
            consistent=consistent,
        )
        marks = tuple(mark_from(i) for i in page.items if is_mark(i))
        return Page([record_from(i) for i in page.items if not is_mark(i)], page.cursor, marks)

    def query_keys(self, pk: str, *, prefix: str | None = None) -> Iterator[ItemKey]:
        where = begins("sk", prefix) if prefix is not None else None
        for items in every_page(self.table, pk, where=where, attributes=()):
            yield from (key_of(i) for i in items)

    def run_checkpoints(self, run_key: str) -> list[ItemKey]:
        return [key_of(i) for i in every_item(self.table, run_key, index=RUN_INDEX)]

    def put_checkpoint(
        self,
        record: CheckpointRecord,
        head: HeadMove | None,
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        self._commit(format.commit_checkpoint(record, head, fence, intent, int(time.time())))

    def merge_writes(
        self,
        record: WritesRecord,
        last_wins: frozenset[int],
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        self._commit(format.commit_writes(record, last_wins, fence, intent))

    def replace_if_unchanged(self, old: Record, new: Record) -> bool:
        update = format.replace_if_unchanged(old, new)
        return update is None or self.table.write(update).applied

    def write_batch(
        self, puts: Iterable[Record | Mark] = (), deletes: Iterable[ItemKey] = ()
    ) -> None:
        self.table.batch(format.batch_items(puts), list(deletes))

    def item_size(self, record: Record) -> int:
        return self.table.item_size(record_item(record))

    def create_if_missing(self) -> bool:
        return self.table.create_if_missing()

    # ---------------------------------------------------------- control items

    def drop_heads(self, thread_name: str, ns_names: Collection[str] | None = None) -> None:
        if ns_names is None:
            keys = list(self.query_keys(control_pk(thread_name), prefix=HEAD_PREFIX))
        else:
            keys = [head_key(thread_name, name) for name in sorted(ns_names)]
        self.delete_items(keys)

    def put_heads(self, thread_name: str, heads: Mapping[str, str]) -> None:
        self.table.batch(format.head_items(thread_name, heads))

    def delete_items(self, keys: Iterable[ItemKey]) -> None:
        self.table.batch(deletes=list(keys))

    def acquire_lease(self, key: ItemKey, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
        out = self.table.write(format.take_lease(key, owner, now_ms, ttl_ms), returning="new")
        if not out.applied or out.item is None:
            return None
        return format.lease_taken(key, owner, out.item, now_ms + ttl_ms)

    def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        if not self.table.write(format.lease_expiry(lease, now_ms + ttl_ms)).applied:
            raise LeaseLostError("the lease was taken over; it cannot be renewed")
        return lease._replace(expires_ms=now_ms + ttl_ms)

    def release_lease(self, lease: Lease) -> None:
        self.table.write(format.lease_expiry(lease, 0))

    def set_idle(self, key: ItemKey, to: str, was: str | None) -> bool:
        return self.table.write(format.set_idle(key, to, was)).applied

    def put_intent(self, intent: UploadIntent) -> None:
        self.table.write(Put(intent_item(intent)))

    def intents_before(self, pk: str, upper_sk: str) -> list[UploadIntent]:
        return [intent_from(i) for i in every_item(self.table, pk, where=lt("sk", upper_sk))]

    def lend(self, lender: str, borrower: str, leaves: Collection[str]) -> None:
        for key, part in loan_parts(lender, borrower, leaves):
            self.table.write(format.lend(key, part))

    def unlend(self, loan: Loan, leaves: Collection[str]) -> None:
        taken = sorted(set(leaves) & loan.leaves)
        if taken:
            self.table.write(format.unlend(loan.key, taken))

    def loans(self, lender: str, borrower: str | None = None) -> list[Loan]:
        where = begins("sk", loans_prefix(borrower))
        items = every_item(self.table, control_pk(lender), where=where, consistent=True)
        return [loan_from(i) for i in items]

    def control_keys(self, thread_name: str) -> list[ItemKey]:
        items = every_item(self.table, control_pk(thread_name), consistent=True, attributes=())
        return [key_of(i) for i in items]

    def put_borrowing(self, borrower: str, lender: str) -> None:
        self.table.write(Put(keyed(ItemKey(control_pk(borrower), borrow_sk(lender)))))

    def read_control(self, pk: str) -> dict[str, ControlRecord]:
        page = self.table.query(pk, consistent=True)
        return {r.name: r for r in map(control_from, page.items)}

    def put_control(self, pk: str, record: ControlRecord, expected_version: int | None) -> bool:
        when = missing() if expected_version is None else eq(CONTROL_VERSION, expected_version)
        return self.table.write(Put(control_item(pk, record), when=when)).applied

    # ------------------------------------------------------------------ scans

    def scan(self, prefix: str = "") -> Iterator[Record]:
        kept = begins(PARTITION_KEY, prefix) if prefix else None
        for items in scan_pages(self.table, filter=kept):
            # Control items (heads, leases; the deployments' keyrings) and marks are not
            # records.
            yield from (
                record_from(i)
                for i in items
                if not is_control_pk(pk := str(i[PARTITION_KEY]))
                and not is_deployment_pk(pk)
                and not is_memory_pk(pk)
                and not is_mark(i)
            )

    def scan_stamps(
        self, segment: int = 0, segments: int = 1, prefix: str = ""
    ) -> Iterator[list[Stamp]]:
        kept = begins(PARTITION_KEY, prefix) if prefix else None
        pages = scan_pages(
            self.table,
            segment=segment,
            segments=segments,
            filter=kept,
            attributes=STAMP_ATTRIBUTES,
        )
        for items in pages:
            yield [stamp_from(i) for i in items if not is_deployment_pk(str(i[PARTITION_KEY]))]

    def partition_stamps(self, pk: str) -> list[Stamp]:
        items = every_item(self.table, pk, consistent=True, attributes=STAMP_ATTRIBUTES)
        return [stamp_from(i) for i in items]

    def idle_query(self, partition: str, prefix: str = "") -> Iterator[list[ItemKey]]:
        where = begins(PARTITION_KEY, prefix) if prefix else None
        try:
            for items in every_page(self.table, partition, index=IDLE_INDEX, where=where):
                yield [key_of(i) for i in items]
        except (StorageError, StoreMissingError) as exc:
            # DynamoDB: ValidationException naming the index; moto: ResourceNotFound.
            if isinstance(exc, StorageError) and "index" not in str(exc):
                raise
            raise StorageConfigError(
                f"{getattr(self.table, 'resource', 'the table')} has no global secondary "
                f"index {IDLE_INDEX!r}, which retention Queries for idle threads ({exc}). "
                "Add it: apply this version's terraform/ (aws_dynamodb_table.this declares "
                "it), or run setup() on a new table; meanwhile sweep with the full Scan "
                "(`s3dynamo expire --full`)"
            ) from exc


class TableIndex(ThreadsOnTable):
    """Every port of the table (`ports.Index`) on one `Table`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    @property
    def resource(self) -> str:
        """What the table is, for messages."""
        return str(getattr(self.table, "resource", "index"))
