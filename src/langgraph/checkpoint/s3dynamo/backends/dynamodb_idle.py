"""The idle-period index on DynamoDB (`ControlItems.set_idle`, `TableScan.idle_query`),
mixed into the table's control-items adapter (`dynamodb.py`): the sparse global secondary
index retention Queries for threads idle since a day (`layout.idle_key`, docs/FORMAT.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from langgraph.checkpoint.s3dynamo.backends.aws_errors import Outcome
from langgraph.checkpoint.s3dynamo.errors import (
    StorageConfigError,
    StorageError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.records import ItemKey
from langgraph.checkpoint.s3dynamo.schema import IDLE_INDEX, IDLE_KEY, PARTITION_KEY, SORT_KEY


class DynamoIdleIndex:
    """The idle index of the table; the host holds the client and pages Queries."""

    client: Any
    _conditional: Callable[..., Outcome]  # the host's (`DynamoTable`)
    table: str
    resource: str
    _pages: Callable[[str, dict[str, Any]], Iterator[list[dict[str, Any]]]]

    def set_idle(self, key: ItemKey, to: str, was: str | None) -> bool:
        out = self._conditional(
            self.client.update_item,
            key,
            UpdateExpression="SET #ik = :to",
            ConditionExpression="#ik = :was" if was else "attribute_exists(#pk)",
            ExpressionAttributeNames={"#ik": IDLE_KEY, **({} if was else {"#pk": PARTITION_KEY})},
            ExpressionAttributeValues={":to": {"S": to}, **({":was": {"S": was}} if was else {})},
        )
        return out.refused is None

    def idle_query(self, partition: str, prefix: str = "") -> Iterator[list[ItemKey]]:
        cond, names, values = "#ik = :ik", {"#ik": IDLE_KEY}, {":ik": {"S": partition}}
        if prefix:
            cond += " AND begins_with(#pk, :p)"
            names["#pk"], values[":p"] = PARTITION_KEY, {"S": prefix}
        request: dict[str, Any] = {"TableName": self.table, "IndexName": IDLE_INDEX}
        request |= {"KeyConditionExpression": cond, "ExpressionAttributeNames": names}
        request["ExpressionAttributeValues"] = values
        try:
            for items in self._pages("query", request):
                yield [ItemKey(i[PARTITION_KEY]["S"], i[SORT_KEY]["S"]) for i in items]
        except (StorageError, StoreMissingError) as exc:
            # DynamoDB: ValidationException naming the index; moto: ResourceNotFound.
            if isinstance(exc, StorageError) and "index" not in str(exc):
                raise
            raise StorageConfigError(
                f"{self.resource} has no global secondary index {IDLE_INDEX!r}, which "
                f"retention Queries for idle threads ({exc}). Add it: apply this version's "
                "terraform/ (aws_dynamodb_table.this declares it), or run setup() on a new "
                "table; meanwhile sweep with the full Scan (`s3dynamo expire --full`)"
            ) from exc
