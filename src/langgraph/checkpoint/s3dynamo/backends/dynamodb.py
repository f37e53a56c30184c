"""The index on DynamoDB: the `RecordIndex`, `ControlItems` and `TableScan` ports on one
table. The item format (attribute names, expressions) is pure and lives in
`dynamodb_items.py`; this module only sends requests, and every botocore error leaves
through `aws_errors`.

A checkpoint is committed with one TransactWriteItems: the Put of its item and the
Update of its namespace's head (conditional for a run that continues the latest
checkpoint, see `runs.py`), plus, under a lease, an Update of the lease item conditional
on the token that also pushes the lease's expiry out (the write renews the lease).
DynamoDB bills a transaction twice the write units of the same writes done plainly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from langgraph.checkpoint.s3dynamo.backends.aws_clients import guard_moto, observe
from langgraph.checkpoint.s3dynamo.backends.aws_errors import (
    Outcome,
    attempt,
    error_code,
    located,
    translate,
    translate_errors,
)
from langgraph.checkpoint.s3dynamo.backends.dynamodb_idle import DynamoIdleIndex
from langgraph.checkpoint.s3dynamo.backends.dynamodb_items import (
    CONTROL_VERSION,
    HEAD,
    WRITTEN_AT,
    Item,
    batch_idle_keys,
    fence_update,
    from_item,
    head_update,
    is_mark_item,
    key_item,
    mark_from_item,
    merge_writes_update,
    record_size,
    replace_update,
    stamp_of,
    to_item,
)
from langgraph.checkpoint.s3dynamo.backends.dynamodb_journal import DynamoJournal
from langgraph.checkpoint.s3dynamo.backends.dynamodb_lease import DynamoLeases
from langgraph.checkpoint.s3dynamo.backends.dynamodb_loans import DynamoLoans
from langgraph.checkpoint.s3dynamo.backoff import (
    CONFLICT_ATTEMPTS,
    UNPROCESSED_ATTEMPTS,
    tries,
)
from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    LeaseLostError,
    StorageError,
)
from langgraph.checkpoint.s3dynamo.layout import (
    HEAD_PREFIX,
    control_pk,
    idle_key,
    is_control_pk,
    is_deployment_pk,
    is_memory_pk,
    tombstone_time,
)
from langgraph.checkpoint.s3dynamo.ports import Cursor, Page
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ControlRecord,
    Fence,
    HeadMove,
    ItemKey,
    Mark,
    Record,
    Stamp,
    WritesRecord,
    head_key,
)
from langgraph.checkpoint.s3dynamo.schema import (
    IDLE_KEY,
    PARTITION_KEY,
    RUN_INDEX,
    RUN_KEY,
    SORT_KEY,
    table_definition,
)
from langgraph.checkpoint.s3dynamo.waves import parallel

log = logging.getLogger(__name__)

CHECK_FAILED = "ConditionalCheckFailed"
# Why a transaction can be cancelled and still be sent again: a conflict with another one
# in flight, or throttling of its items (botocore retries a throttled request, not a
# cancelled one).
TRANSIENT_CANCELLATIONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)
# DynamoDB's hard limit on one BatchWriteItem.
BATCH_WRITE_MAX = 25


def cancellation_codes(exc: ClientError) -> list[str]:
    """Per-item reasons of a cancelled transaction ("None" where an item was fine)."""
    reasons = exc.response.get("CancellationReasons")
    if reasons:
        return [str(r.get("Code") or "None") for r in reasons]
    # Some implementations give them only in the message: "... [None, ConditionalCheckFailed]".
    message = str(exc.response.get("Error", {}).get("Message", ""))
    inside = message[message.rfind("[") + 1 : message.rfind("]")] if "[" in message else ""
    return [part.strip() for part in inside.split(",")]


class DynamoTable:
    """One DynamoDB table (see `schema.py`): the client, and the paged reads and batch
    writes the three ports below share."""

    def __init__(self, client: Any, table: str) -> None:
        guard_moto()
        observe(client)
        self.client = client
        self.table = table
        self.resource = located(f"DynamoDB table {table!r}", client)

    def _conditional(self, call: Callable[..., Any], key: ItemKey, **request: Any) -> Outcome:
        """One conditional write on one item (`call`: update_item, put_item or
        delete_item); a refused condition is an answer (`Outcome.refused`), not an error."""
        return attempt(
            self.resource,
            call,
            tolerate=(CHECK_FAILED + "Exception",),
            TableName=self.table,
            Key=key_item(key),
            **request,
        )

    def _page(
        self, operation: str, request: dict[str, Any], start: Cursor | None = None
    ) -> tuple[list[Item], Cursor | None]:
        """One page of a Query or Scan, from `start`, and where the next one starts."""
        with translate_errors(self.resource):
            out = getattr(self.client, operation)(
                **request, **({"ExclusiveStartKey": start} if start else {})
            )
        return out.get("Items", []), out.get("LastEvaluatedKey")

    def _pages(self, operation: str, request: dict[str, Any]) -> Iterator[list[Item]]:
        """The items of a Query or Scan, page after page, until DynamoDB says no more."""
        items, start = self._page(operation, request)
        yield items
        while start is not None:
            items, start = self._page(operation, request, start)
            yield items

    def _query(
        self, pk: str, *, start: Cursor | None = None, **args: Any
    ) -> tuple[list[Item], Cursor | None]:
        """One page of a Query (see `_query_args`)."""
        return self._page("query", self._query_args(pk, **args), start)

    def _query_args(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        between: tuple[str, str] | None = None,
        descending: bool = False,
        limit: int | None = None,
        keys_only: bool = False,
        consistent: bool = False,
    ) -> dict[str, Any]:
        names = {"#pk": PARTITION_KEY}
        values: dict[str, Any] = {":pk": {"S": pk}}
        condition = "#pk = :pk"
        if prefix is not None:
            condition += " AND begins_with(#sk, :prefix)"
            values[":prefix"] = {"S": prefix}
        elif between is not None:
            condition += " AND #sk BETWEEN :lower AND :upper"
            values[":lower"], values[":upper"] = {"S": between[0]}, {"S": between[1]}
        if prefix is not None or between is not None or keys_only:
            names["#sk"] = SORT_KEY  # DynamoDB rejects names an expression does not use
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": not descending,
        }
        if keys_only:
            kwargs["ProjectionExpression"] = "#pk, #sk"
        if consistent:
            kwargs["ConsistentRead"] = True
        if limit is not None:
            kwargs["Limit"] = limit
        return kwargs

    def query_keys(self, pk: str, *, prefix: str | None = None) -> Iterator[ItemKey]:
        for items in self._pages("query", self._query_args(pk, prefix=prefix, keys_only=True)):
            yield from (ItemKey(i[PARTITION_KEY]["S"], i[SORT_KEY]["S"]) for i in items)

    def _write_chunk(self, chunk: list[Item]) -> None:
        pending = chunk
        for _ in tries(UNPROCESSED_ATTEMPTS):
            with translate_errors(self.resource):
                out = self.client.batch_write_item(RequestItems={self.table: pending})
            pending = out.get("UnprocessedItems", {}).get(self.table, [])
            if not pending:
                return
            log.warning(
                "BatchWriteItem on %s: %d items unprocessed (throttled), retrying",
                self.resource,
                len(pending),
            )
        raise StorageError(
            f"BatchWriteItem on {self.resource}: {len(pending)} items still unprocessed "
            f"after {UNPROCESSED_ATTEMPTS} attempts (throttled); retry the operation"
        )

    def _batch(self, requests: list[Item]) -> None:
        """Write requests in parallel batches of 25, retrying unprocessed ones."""
        chunks = [
            requests[i : i + BATCH_WRITE_MAX] for i in range(0, len(requests), BATCH_WRITE_MAX)
        ]
        parallel(self._write_chunk, chunks)

    def create_if_missing(self) -> bool:
        """Create the table (and wait for it); False if it already existed."""
        found = attempt(
            self.resource,
            self.client.describe_table,
            tolerate=("ResourceNotFoundException",),
            TableName=self.table,
        )
        if found.refused is None:
            return False
        attempt(
            self.resource,
            self.client.create_table,
            tolerate=("ResourceInUseException",),
            **table_definition(self.table),
        )
        with translate_errors(self.resource):
            self.client.get_waiter("table_exists").wait(
                TableName=self.table, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
            )
        return True


class DynamoRecords(DynamoTable):
    """The `RecordIndex` port: checkpoint and writes records, and their commits."""

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
        items, last = self._query(
            pk,
            prefix=prefix,
            between=between,
            descending=descending,
            limit=limit,
            start=cursor,
            consistent=consistent,
        )
        marks = tuple(mark_from_item(i) for i in items if is_mark_item(i))
        return Page([from_item(i) for i in items if not is_mark_item(i)], last, marks)

    def run_checkpoints(self, run_key: str) -> list[ItemKey]:
        request = {
            "TableName": self.table,
            "IndexName": RUN_INDEX,
            "KeyConditionExpression": "#rk = :rk",
            "ExpressionAttributeNames": {"#rk": RUN_KEY},
            "ExpressionAttributeValues": {":rk": {"S": run_key}},
        }
        return [
            ItemKey(i[PARTITION_KEY]["S"], i[SORT_KEY]["S"])
            for items in self._pages("query", request)
            for i in items
        ]

    def put_checkpoint(
        self,
        record: CheckpointRecord,
        head: HeadMove | None,
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        # The idle-index key goes on the head, or on the record when there is none.
        idle = idle_key(record.pk, record.written_at or int(time.time()))
        item = to_item(record) | ({} if head is not None else {IDLE_KEY: {"S": idle}})
        if head is None and fence is None and intent is None:
            with translate_errors(self.resource):
                self.client.put_item(TableName=self.table, Item=item)
            return
        items: list[dict[str, Any]] = [{"Put": {"TableName": self.table, "Item": item}}]
        if head is not None:
            items.append({"Update": {"TableName": self.table, **head_update(head, idle)}})
        if fence is not None:
            items.append({"Update": {"TableName": self.table, **fence_update(fence)}})
        fence_at = len(items) - 1 if fence is not None else None
        items += self._closing(intent)
        self._transact(items, head_at=1 if head is not None else None, fence_at=fence_at)

    def _closing(self, intent: ItemKey | None) -> list[dict[str, Any]]:
        """The Delete of a commit's upload intent, unconditional: a repeat of a commit
        that went through finds it gone and must still succeed."""
        if intent is None:
            return []
        return [{"Delete": {"TableName": self.table, "Key": key_item(intent)}}]

    def merge_writes(
        self,
        record: WritesRecord,
        last_wins: frozenset[int],
        fence: Fence | None = None,
        intent: ItemKey | None = None,
    ) -> None:
        expression, names, values = merge_writes_update(record, last_wins)
        update = {
            "TableName": self.table,
            "Key": key_item(record.key),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if fence is None and intent is None:
            with translate_errors(self.resource):
                self.client.update_item(**update)
            return
        items: list[dict[str, Any]] = [{"Update": update}]
        if fence is not None:
            items.append({"Update": {"TableName": self.table, **fence_update(fence)}})
        fence_at = 1 if fence is not None else None
        self._transact(items + self._closing(intent), head_at=None, fence_at=fence_at)

    def _transact(
        self,
        items: list[dict[str, Any]],
        *,
        head_at: int | None,
        fence_at: int | None,
        subject: str = "the same thread's items",
    ) -> None:
        """One TransactWriteItems; a refused condition becomes the error that names it.

        A transaction cancelled only for a conflict (another transaction on the same item
        in flight: parallel tasks' fenced writes all touch the lease item) or for
        throttling of its items was not applied, so it is sent again, a few times with
        backoff; botocore does not retry cancellations."""
        for sent in tries(CONFLICT_ATTEMPTS):
            try:
                self.client.transact_write_items(TransactItems=items)
                return
            except ClientError as exc:
                if error_code(exc) != "TransactionCanceledException":
                    raise translate(exc, self.resource) from exc
                codes = cancellation_codes(exc)

                def failed(at: int | None, codes: list[str] = codes) -> bool:
                    return at is not None and at < len(codes) and codes[at] == CHECK_FAILED

                if failed(fence_at):
                    raise LeaseLostError("the lease was taken over; write refused") from exc
                if failed(head_at):
                    raise ConcurrentUpdateError("the namespace's head moved") from exc
                failures = {c for c in codes if c not in ("None", "")}
                if not failures or not failures <= TRANSIENT_CANCELLATIONS:
                    raise translate(exc, self.resource) from exc
                if sent == CONFLICT_ATTEMPTS:
                    if "TransactionConflict" in failures:
                        raise ConcurrentUpdateError(
                            f"other requests kept changing {subject} at the same moment "
                            f"({CONFLICT_ATTEMPTS} attempts); retry the operation"
                        ) from exc
                    raise translate(exc, self.resource) from exc
                log.warning(
                    "TransactWriteItems on %s: cancelled (%s), retrying",
                    self.resource,
                    ", ".join(sorted(failures)),
                )
            except BotoCoreError as exc:
                raise translate(exc, self.resource) from exc

    def replace_if_unchanged(self, old: Record, new: Record) -> bool:
        update = replace_update(to_item(old), to_item(new))
        if update is None:
            return True
        out = attempt(
            self.resource,
            self.client.update_item,
            tolerate=("ConditionalCheckFailedException",),
            TableName=self.table,
            **update,
        )
        return out.refused is None

    def write_batch(
        self, puts: Iterable[Record | Mark] = (), deletes: Iterable[ItemKey] = ()
    ) -> None:
        idle = batch_idle_keys(puts := list(puts))
        items = [
            to_item(r) | ({IDLE_KEY: {"S": idle[r.key]}} if r.key in idle else {}) for r in puts
        ]
        requests = [{"PutRequest": {"Item": i}} for i in items]
        requests += [{"DeleteRequest": {"Key": key_item(k)}} for k in deletes]
        self._batch(requests)

    def item_size(self, record: Record) -> int:
        return record_size(record)


class DynamoControl(DynamoTable, DynamoJournal, DynamoIdleIndex, DynamoLeases, DynamoLoans):
    """The `ControlItems` port: heads, leases, loans and the deployment's control records."""

    def drop_heads(self, thread_name: str, ns_names: Collection[str] | None = None) -> None:
        pk = control_pk(thread_name)
        if ns_names is None:
            keys = [k for k in self.query_keys(pk, prefix=HEAD_PREFIX)]
        else:
            keys = [head_key(thread_name, name) for name in sorted(ns_names)]
        self.delete_items(keys)

    def put_heads(self, thread_name: str, heads: Mapping[str, str]) -> None:
        items = [{**key_item(head_key(thread_name, ns)), HEAD: {"S": v}} for ns, v in heads.items()]
        for item in items:
            # A tombstone stays in the idle index under its own day (found once it expires).
            if (at := tombstone_time(item[HEAD]["S"])) is not None:
                item[IDLE_KEY] = {"S": idle_key(thread_name, at)}
        self._batch([{"PutRequest": {"Item": i}} for i in sorted(items, key=str)])

    def delete_items(self, keys: Iterable[ItemKey]) -> None:
        self._batch([{"DeleteRequest": {"Key": key_item(k)}} for k in keys])

    def read_control(self, pk: str) -> dict[str, ControlRecord]:
        items, _ = self._query(pk, consistent=True)
        out = {}
        for item in items:
            fields: dict[str, str | bytes] = {
                name: value["S"] if "S" in value else bytes(value["B"])
                for name, value in item.items()
                if name not in (PARTITION_KEY, SORT_KEY, CONTROL_VERSION)
            }
            name = item[SORT_KEY]["S"]
            out[name] = ControlRecord(name, fields, int(item[CONTROL_VERSION]["N"]))
        return out

    def put_control(self, pk: str, record: ControlRecord, expected_version: int | None) -> bool:
        item: Item = {
            PARTITION_KEY: {"S": pk},
            SORT_KEY: {"S": record.name},
            CONTROL_VERSION: {"N": str(record.version)},
        }
        for name, value in record.fields.items():
            item[name] = {"S": value} if isinstance(value, str) else {"B": value}
        condition: dict[str, Any] = (
            {
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
            }
            if expected_version is None
            else {
                "ConditionExpression": "#v = :v",
                "ExpressionAttributeNames": {"#v": CONTROL_VERSION},
                "ExpressionAttributeValues": {":v": {"N": str(expected_version)}},
            }
        )
        out = attempt(
            self.resource,
            self.client.put_item,
            tolerate=("ConditionalCheckFailedException",),
            TableName=self.table,
            Item=item,
            **condition,
        )
        return out.refused is None


class DynamoScans(DynamoTable):
    """The `TableScan` port: every item of the table, for admin operations and retention."""

    # Retention reads keys, stamps and heads only: a small reply, though DynamoDB bills
    # a Scan or Query by the size of the whole items it reads.

    STAMP_NAMES = {"#pk": PARTITION_KEY, "#sk": SORT_KEY, "#a": WRITTEN_AT}
    STAMP_NAMES |= {"#h": HEAD, "#ik": IDLE_KEY}

    def scan_stamps(
        self, segment: int = 0, segments: int = 1, prefix: str = ""
    ) -> Iterator[list[Stamp]]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "ProjectionExpression": "#pk, #sk, #a, #h, #ik",
            "ExpressionAttributeNames": dict(self.STAMP_NAMES),
        }
        if segments > 1:
            request |= {"Segment": segment, "TotalSegments": segments}
        request |= _starting_with(prefix)
        for items in self._pages("scan", request):
            yield [stamp_of(i) for i in items if not is_deployment_pk(i[PARTITION_KEY]["S"])]

    def partition_stamps(self, pk: str) -> list[Stamp]:
        request = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "ProjectionExpression": "#pk, #sk, #a, #h, #ik",
            "ExpressionAttributeNames": self.STAMP_NAMES,
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ConsistentRead": True,
        }
        return [stamp_of(i) for items in self._pages("query", request) for i in items]

    def scan(self, prefix: str = "") -> Iterator[Record]:
        request: dict[str, Any] = {"TableName": self.table}
        if prefix:
            request |= _starting_with(prefix)
            request["ExpressionAttributeNames"] = {"#pk": PARTITION_KEY}
        for items in self._pages("scan", request):
            # Control items (heads, leases; the deployments' keyrings) and marks are not
            # records.
            yield from (
                from_item(i)
                for i in items
                if not is_control_pk(i[PARTITION_KEY]["S"])
                and not is_deployment_pk(i[PARTITION_KEY]["S"])
                and not is_memory_pk(i[PARTITION_KEY]["S"])
                and not is_mark_item(i)
            )


def _starting_with(prefix: str) -> dict[str, Any]:
    """A Scan's filter to partitions under a prefix (it still reads, and is billed for,
    the whole table: a filter only trims the reply)."""
    if not prefix:
        return {}
    return {
        "FilterExpression": "begins_with(#pk, :prefix)",
        "ExpressionAttributeValues": {":prefix": {"S": prefix}},
    }


class DynamoIndex(DynamoRecords, DynamoControl, DynamoScans):
    """All three ports on one table: what the saver builds."""
