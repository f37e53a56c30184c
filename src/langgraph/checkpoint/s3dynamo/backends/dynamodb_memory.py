"""The `MemoryItems` port on DynamoDB: the Store's items and the node cache's entries,
and their namespace directories, in the saver's table (`layout.memory_pk`). The item
format is pure and lives in `dynamodb_items.py`; errors leave through `aws_errors`.

A put is one UpdateItem per item, or, when the writer holds no lease on its namespace's
directory entry, one TransactWriteItems of the items, the entry and the descendants marks
of the namespace's ancestors this process has not written yet (`memory/core.py`; the
argument is in docs/RELIABILITY.md). Reads are eventually consistent unless asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from langgraph.checkpoint.s3dynamo.backends.aws_errors import (
    attempt,
    error_code,
    translate,
    translate_errors,
)
from langgraph.checkpoint.s3dynamo.backends.dynamodb import (
    CHECK_FAILED,
    DynamoIndex,
    DynamoRecords,
)
from langgraph.checkpoint.s3dynamo.backends.dynamodb_items import (
    DIRECTORY_LIVE,
    DIRECTORY_NS,
    INDEX_GENERATION,
    LIVE_FILTER,
    MEMORY_BLOB,
    MEMORY_EXPIRES,
    MEMORY_EXPIRES_S,
    MEMORY_TTL,
    directory_entry,
    directory_update,
    expired_condition,
    index_from_item,
    index_item,
    key_item,
    memory_row,
    memory_update,
)
from langgraph.checkpoint.s3dynamo.backoff import UNPROCESSED_ATTEMPTS, tries
from langgraph.checkpoint.s3dynamo.errors import StorageError
from langgraph.checkpoint.s3dynamo.layout import (
    DESCENDANTS_SK,
    ITEM_SK_RANGE,
    SEARCH_SK_RANGE,
    memory_scope,
)
from langgraph.checkpoint.s3dynamo.records import DirectoryEntry, IndexItem, ItemKey, MemoryRow
from langgraph.checkpoint.s3dynamo.schema import PARTITION_KEY, SORT_KEY
from langgraph.checkpoint.s3dynamo.waves import parallel

# DynamoDB's limit on one BatchGetItem.
BATCH_GET_MAX = 100
# Items a liveness check evaluates per Query page (most are live: one page will do).
LIVE_PAGE = 25


def is_directory_pk(pk: str) -> bool:
    scope = memory_scope(pk)
    return scope is not None and scope[2] is None


class DynamoMemory(DynamoRecords):
    """The `MemoryItems` port: the Store's items and the node cache's entries."""

    def memory_put(
        self,
        rows: Sequence[MemoryRow],
        entry: DirectoryEntry | None,
        marks: Sequence[ItemKey] = (),
    ) -> list[MemoryRow | None]:
        if entry is None:
            return parallel(self._memory_update, rows)
        self._renew_with(
            [{"Update": {"TableName": self.table, **memory_update(r)}} for r in rows],
            entry,
            marks,
        )
        return [None] * len(rows)

    def _memory_update(self, row: MemoryRow) -> MemoryRow | None:
        # The item it replaced comes back at no cost (ReturnValues is not billed).
        with translate_errors(self.resource):
            out = self.client.update_item(
                TableName=self.table, ReturnValues="ALL_OLD", **memory_update(row)
            )
        old = out.get("Attributes")
        return memory_row(old) if old else None

    def directory_renew(self, entry: DirectoryEntry, marks: Sequence[ItemKey] = ()) -> None:
        if not marks:
            with translate_errors(self.resource):
                self.client.update_item(TableName=self.table, **directory_update(entry))
            return
        self._renew_with([], entry, marks)

    def _renew_with(
        self, writes: list[dict[str, Any]], entry: DirectoryEntry, marks: Sequence[ItemKey]
    ) -> None:
        # The same transaction sender as a checkpoint's commit (retried on conflicts).
        self._transact(
            [
                *writes,
                {"Update": {"TableName": self.table, **directory_update(entry)}},
                *({"Put": {"TableName": self.table, "Item": key_item(k)}} for k in marks),
            ],
            head_at=None,
            fence_at=None,
            subject="store items or cache entries of one namespace",
        )

    def _get_chunk(self, keys: Sequence[ItemKey], consistent: bool) -> list[MemoryRow]:
        pending: dict[str, Any] = {
            self.table: {"Keys": [key_item(k) for k in keys], "ConsistentRead": consistent}
        }
        rows: list[MemoryRow] = []
        for _ in tries(UNPROCESSED_ATTEMPTS):
            with translate_errors(self.resource):
                out = self.client.batch_get_item(RequestItems=pending)
            rows += [memory_row(i) for i in out.get("Responses", {}).get(self.table, [])]
            pending = out.get("UnprocessedKeys") or {}
            if not pending:
                return rows
        raise StorageError(
            f"BatchGetItem on {self.resource}: keys still unprocessed after "
            f"{UNPROCESSED_ATTEMPTS} attempts (throttled); retry the operation"
        )

    def memory_get(self, keys: Sequence[ItemKey], consistent: bool = False) -> list[MemoryRow]:
        unique = list(dict.fromkeys(keys))
        chunks = [unique[i : i + BATCH_GET_MAX] for i in range(0, len(unique), BATCH_GET_MAX)]
        found = parallel(lambda chunk: self._get_chunk(chunk, consistent), chunks)
        return [row for rows in found for row in rows]

    def memory_query(
        self, pk: str, limit: int | None = None, consistent: bool = False
    ) -> list[MemoryRow]:
        request = self._query_args(pk, between=ITEM_SK_RANGE, consistent=consistent, limit=limit)
        if limit is not None:
            return [memory_row(i) for i in self._page("query", request)[0]]
        return [memory_row(i) for items in self._pages("query", request) for i in items]

    def memory_search(self, pk: str, consistent: bool = False) -> tuple[list[MemoryRow], bool]:
        request = self._query_args(pk, between=SEARCH_SK_RANGE, consistent=consistent)
        items = [i for page in self._pages("query", request) for i in page]
        marked = any(i[SORT_KEY]["S"] == DESCENDANTS_SK for i in items)
        rows = [memory_row(i) for i in items if i[SORT_KEY]["S"] != DESCENDANTS_SK]
        return rows, marked

    def memory_has_live(self, pk: str, now_ms: int) -> bool:
        request = self._query_args(pk, between=ITEM_SK_RANGE, consistent=True, limit=LIVE_PAGE)
        request["FilterExpression"] = LIVE_FILTER
        request["ExpressionAttributeNames"].update({"#e": MEMORY_EXPIRES, "#s": MEMORY_EXPIRES_S})
        request["ExpressionAttributeValues"].update(
            {":ms": {"N": str(now_ms)}, ":s": {"N": str(now_ms // 1000)}}
        )
        return any(page for page in self._pages("query", request))

    def memory_delete(self, key: ItemKey, expired_at_ms: int | None = None) -> MemoryRow | None:
        condition = {} if expired_at_ms is None else expired_condition(expired_at_ms)
        out = self._conditional(self.client.delete_item, key, ReturnValues="ALL_OLD", **condition)
        old = (out.value or {}).get("Attributes")
        return memory_row(old) if old else None

    def directory_get(self, key: ItemKey, consistent: bool = True) -> DirectoryEntry | None:
        with translate_errors(self.resource):
            out = self.client.get_item(
                TableName=self.table, Key=key_item(key), ConsistentRead=consistent
            )
        item = out.get("Item")
        return directory_entry(item) if item else None

    def directory_bound(self, key: ItemKey, live_until_ms: int | None) -> None:
        names = {"#x": DIRECTORY_LIVE, "#pk": PARTITION_KEY}
        if live_until_ms is None:
            update: dict[str, Any] = {"UpdateExpression": "REMOVE #x"}
        else:
            update = {
                "UpdateExpression": "SET #x = :x",
                "ExpressionAttributeValues": {":x": {"N": str(live_until_ms)}},
            }
        # A refused condition: the entry went meanwhile; nothing to bound.
        self._conditional(
            self.client.update_item,
            key,
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames=names,
            **update,
        )

    def memory_touch(self, key: ItemKey, expires_ms: int) -> None:
        # A refused condition: the item went meanwhile, nothing to refresh.
        self._conditional(
            self.client.update_item,
            key,
            UpdateExpression="SET #e = :e REMOVE #s",
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames={
                "#e": MEMORY_EXPIRES,
                "#s": MEMORY_EXPIRES_S,
                "#pk": PARTITION_KEY,
            },
            ExpressionAttributeValues={":e": {"N": str(expires_ms)}},
        )

    def memory_refresh(
        self, key: ItemKey, expires_ms: int, ttl_minutes: float, now_ms: int
    ) -> tuple[MemoryRow | None, bool]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "Key": key_item(key),
            "UpdateExpression": "SET #e = :e REMOVE #s",
            "ConditionExpression": (
                "#l = :l AND (#e > :ms OR (attribute_not_exists(#e) AND #s > :s))"
            ),
            "ExpressionAttributeNames": {
                "#e": MEMORY_EXPIRES,
                "#s": MEMORY_EXPIRES_S,
                "#l": MEMORY_TTL,
            },
            "ExpressionAttributeValues": {
                ":e": {"N": str(expires_ms)},
                ":l": {"N": repr(ttl_minutes)},
                ":ms": {"N": str(now_ms)},
                ":s": {"N": str(now_ms // 1000)},
            },
            "ReturnValues": "ALL_NEW",
            # A refused condition answers with the item as it is: still one request.
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            out = self.client.update_item(**request)
        except ClientError as exc:
            if error_code(exc) != CHECK_FAILED + "Exception":
                raise translate(exc, self.resource) from exc
            found = exc.response.get("Item")
            return (memory_row(found) if found else None), False
        except BotoCoreError as exc:
            raise translate(exc, self.resource) from exc
        return memory_row(out["Attributes"]), True

    def directory(self, pk: str, consistent: bool = False) -> list[DirectoryEntry]:
        request = self._query_args(pk, consistent=consistent)
        return [directory_entry(i) for items in self._pages("query", request) for i in items]

    def directory_drop(self, entry: DirectoryEntry) -> bool:
        found = self._conditional(
            self.client.delete_item,
            entry.key,
            ConditionExpression="#g = :g",
            ExpressionAttributeNames={"#g": "g"},
            ExpressionAttributeValues={":g": {"S": entry.generation}},
        )
        return found.refused is None

    def directory_mark(self, entry: DirectoryEntry, emptied: bool) -> bool:
        action = "SET #e = :one" if emptied else "REMOVE #e"
        values: dict[str, Any] = {":g": {"S": entry.generation}}
        if emptied:
            values[":one"] = {"N": "1"}
        found = self._conditional(
            self.client.update_item,
            entry.key,
            UpdateExpression=action,
            ConditionExpression="#g = :g",
            ExpressionAttributeNames={"#g": "g", "#e": "e"},
            ExpressionAttributeValues=values,
        )
        return found.refused is None

    def memory_reseal(self, key: ItemKey, old: bytes, new: bytes) -> bool:
        attribute = DIRECTORY_NS if is_directory_pk(key.pk) else MEMORY_BLOB
        found = self._conditional(
            self.client.update_item,
            key,
            UpdateExpression="SET #b = :new",
            ConditionExpression="#b = :old",
            ExpressionAttributeNames={"#b": attribute},
            ExpressionAttributeValues={":new": {"B": new}, ":old": {"B": old}},
        )
        return found.refused is None

    # ------------------------------------------------------------ search indexes

    def index_write(self, puts: Sequence[IndexItem] = (), deletes: Sequence[ItemKey] = ()) -> None:
        requests = [{"PutRequest": {"Item": index_item(i)}} for i in puts]
        requests += [{"DeleteRequest": {"Key": key_item(k)}} for k in deletes]
        if requests:
            self._batch(requests)

    def index_query(
        self,
        pk: str,
        bounds: tuple[str, str],
        *,
        descending: bool = False,
        limit: int | None = None,
        after: str | None = None,
        consistent: bool = False,
    ) -> list[IndexItem]:
        request = self._query_args(
            pk, between=bounds, descending=descending, limit=limit, consistent=consistent
        )
        start: Any = None if after is None else key_item(ItemKey(pk, after))
        if limit is not None:
            return [index_from_item(i) for i in self._page("query", request, start)[0]]
        out: list[IndexItem] = []
        while True:
            items, start = self._page("query", request, start)
            out += [index_from_item(i) for i in items]
            if start is None:
                return out

    def manifest_put(self, item: IndexItem, expected: str | None) -> bool:
        if expected is None:
            condition: dict[str, Any] = {
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
            }
        else:
            condition = {
                "ConditionExpression": "#g = :g",
                "ExpressionAttributeNames": {"#g": INDEX_GENERATION},
                "ExpressionAttributeValues": {":g": {"S": expected}},
            }
        out = attempt(
            self.resource,
            self.client.put_item,
            tolerate=(CHECK_FAILED + "Exception",),
            TableName=self.table,
            Item=index_item(item),
            **condition,
        )
        return out.refused is None


class DynamoTableIndex(DynamoIndex, DynamoMemory):
    """Every port of the table: threads (`DynamoIndex`) and long-term memory. What the
    saver builds."""
