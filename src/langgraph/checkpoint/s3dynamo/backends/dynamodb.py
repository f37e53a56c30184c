"""The table port (`table.py`) on DynamoDB: neutral items marshalled to DynamoDB's
attribute values and back, conditions and updates compiled to expressions with every
name a placeholder, pages, batches and transactions. It knows no stored format; every
botocore error leaves through `aws_errors`.

A transaction cancelled only by a conflict with another in flight, or by throttling of
its items, was not applied, so it is sent again (botocore retries neither); a refused
condition raises the error its write names. DynamoDB bills a transaction twice the write
units of the same writes sent plainly, which is why one write is never sent as one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError

from langgraph.checkpoint.s3dynamo.backends.aws_clients import guard_moto, observe
from langgraph.checkpoint.s3dynamo.backends.aws_errors import (
    error_code,
    located,
    translate,
    translate_errors,
)
from langgraph.checkpoint.s3dynamo.backoff import (
    CONFLICT_ATTEMPTS,
    UNPROCESSED_ATTEMPTS,
    tries,
)
from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError, StorageError
from langgraph.checkpoint.s3dynamo.format.schema import (
    INDEX_KEYS,
    PARTITION_KEY,
    SORT_KEY,
    table_definition,
)
from langgraph.checkpoint.s3dynamo.table import (
    BATCH_GET_MAX,
    BATCH_WRITE_MAX,
    All,
    AnyOf,
    BeginsWith,
    Between,
    Check,
    Compare,
    Delete,
    Exists,
    Item,
    ItemKey,
    Missing,
    Page,
    Put,
    Update,
    Value,
    When,
    Write,
    Written,
    item_size,
    keyed,
    number_of,
    number_text,
    refused,
)
from langgraph.checkpoint.s3dynamo.waves import parallel

log = logging.getLogger(__name__)

CHECK_FAILED = "ConditionalCheckFailed"
# Why a transaction can be cancelled and still be sent again.
TRANSIENT_CANCELLATIONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)


# ------------------------------------------------------------------ marshalling


def to_attribute(value: Value) -> dict[str, Any]:
    """A neutral value as DynamoDB's attribute value."""
    if isinstance(value, bool):
        raise TypeError("a stored value is never a bool")
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, (bytes, bytearray)):
        return {"B": bytes(value)}
    if isinstance(value, (int, float)):
        return {"N": number_text(value)}
    if isinstance(value, frozenset):
        if not value:
            raise ValueError("DynamoDB stores no empty set: leave the attribute out")
        return {"SS": sorted(value)}
    return {"M": {k: to_attribute(v) for k, v in value.items()}}


def from_attribute(value: Mapping[str, Any]) -> Value:
    ((kind, inner),) = value.items()
    if kind == "S":
        return str(inner)
    if kind == "B":
        return bytes(inner)
    if kind == "N":
        return number_of(str(inner))
    if kind == "SS":
        return frozenset(inner)
    if kind == "M":
        return {k: from_attribute(v) for k, v in inner.items()}
    raise ValueError(f"an attribute of type {kind} is no stored format's")


def to_item(item: Mapping[str, Value]) -> dict[str, Any]:
    return {name: to_attribute(value) for name, value in item.items()}


def from_item(item: Mapping[str, Any]) -> Item:
    return {name: from_attribute(value) for name, value in item.items()}


def key_attributes(key: ItemKey) -> dict[str, Any]:
    return to_item(keyed(key))


class Expression:
    """Placeholders for one request's expressions: `#n<i>` for names, `:v<i>` for values."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        for token, known in self.names.items():
            if known == attribute:
                return token
        token = f"#n{len(self.names)}"
        self.names[token] = attribute
        return token

    def value(self, value: Value) -> str:
        token = f":v{len(self.values)}"
        self.values[token] = to_attribute(value)
        return token

    def condition(self, when: When) -> str:
        if isinstance(when, Exists):
            return f"attribute_exists({self.name(when.attribute)})"
        if isinstance(when, Missing):
            return f"attribute_not_exists({self.name(when.attribute)})"
        if isinstance(when, Compare):
            return f"{self.name(when.attribute)} {when.op} {self.value(when.value)}"
        if isinstance(when, Between):
            low, high = self.value(when.low), self.value(when.high)
            return f"{self.name(when.attribute)} BETWEEN {low} AND {high}"
        if isinstance(when, BeginsWith):
            return f"begins_with({self.name(when.attribute)}, {self.value(when.prefix)})"
        joint = " AND " if isinstance(when, All) else " OR "
        assert isinstance(when, (All, AnyOf))
        return "(" + joint.join(self.condition(part) for part in when.parts) + ")"

    def update(self, update: Update) -> str:
        sets = [f"{self.name(k)} = {self.value(v)}" for k, v in update.set.items()]
        sets += [
            f"{(n := self.name(k))} = if_not_exists({n}, {self.value(v)})"
            for k, v in update.keep.items()
        ]
        clauses = []
        if sets:
            clauses.append("SET " + ", ".join(sets))
        if update.remove:
            clauses.append("REMOVE " + ", ".join(self.name(k) for k in update.remove))
        if update.add:
            adds = [f"{self.name(k)} {self.value(v)}" for k, v in update.add.items()]
            clauses.append("ADD " + ", ".join(adds))
        if update.take:
            takes = [f"{self.name(k)} {self.value(v)}" for k, v in update.take.items()]
            clauses.append("DELETE " + ", ".join(takes))
        return " ".join(clauses)

    def arguments(self) -> dict[str, Any]:
        """The placeholders a request carries (DynamoDB refuses empty maps)."""
        out: dict[str, Any] = {}
        if self.names:
            out["ExpressionAttributeNames"] = self.names
        if self.values:
            out["ExpressionAttributeValues"] = self.values
        return out


def write_request(write: Write) -> tuple[str, dict[str, Any]]:
    """(the operation, its arguments less the table) of one write."""
    expression = Expression()
    args: dict[str, Any]
    if isinstance(write, Put):
        operation, args = "Put", {"Item": to_item(write.item)}
    elif isinstance(write, (Delete, Check)):
        operation = "Delete" if isinstance(write, Delete) else "ConditionCheck"
        args = {"Key": key_attributes(write.key)}
    else:
        operation = "Update"
        args = {"Key": key_attributes(write.key), "UpdateExpression": expression.update(write)}
    if write.when is not None:
        args["ConditionExpression"] = expression.condition(write.when)
        if callable(write.refusal):
            # The item as found comes back with the refusal, for its message.
            args["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return operation, args | expression.arguments()


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
    """The table port on one DynamoDB table (see `schema.py`)."""

    def __init__(self, client: Any, table: str) -> None:
        guard_moto()
        observe(client)
        self.client = client
        self.table = table
        self.resource = located(f"DynamoDB table {table!r}", client)

    # ------------------------------------------------------------------ reads

    def get(self, key: ItemKey, *, consistent: bool = True) -> Item | None:
        with translate_errors(self.resource):
            out = self.client.get_item(
                TableName=self.table, Key=key_attributes(key), ConsistentRead=consistent
            )
        item = out.get("Item")
        return from_item(item) if item else None

    def get_many(self, keys: Sequence[ItemKey], *, consistent: bool = False) -> list[Item]:
        unique = list(dict.fromkeys(keys))
        chunks = [unique[i : i + BATCH_GET_MAX] for i in range(0, len(unique), BATCH_GET_MAX)]
        found = parallel(lambda chunk: self._get_chunk(chunk, consistent), chunks)
        return [item for items in found for item in items]

    def _get_chunk(self, keys: Sequence[ItemKey], consistent: bool) -> list[Item]:
        pending: dict[str, Any] = {
            self.table: {"Keys": [key_attributes(k) for k in keys], "ConsistentRead": consistent}
        }
        items: list[Item] = []
        for _ in tries(UNPROCESSED_ATTEMPTS):
            with translate_errors(self.resource):
                out = self.client.batch_get_item(RequestItems=pending)
            items += [from_item(i) for i in out.get("Responses", {}).get(self.table, [])]
            pending = out.get("UnprocessedKeys") or {}
            if not pending:
                return items
        raise StorageError(
            f"BatchGetItem on {self.resource}: keys still unprocessed after "
            f"{UNPROCESSED_ATTEMPTS} attempts (throttled); retry the operation"
        )

    def query(
        self,
        partition: str,
        *,
        where: When | None = None,
        index: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        cursor: Item | None = None,
        consistent: bool = False,
        filter: When | None = None,
        attributes: Sequence[str] | None = None,
    ) -> Page:
        expression = Expression()
        hash_key, _ = INDEX_KEYS[index]
        condition = f"{expression.name(hash_key)} = {expression.value(partition)}"
        if where is not None:
            condition += " AND " + expression.condition(where)
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": condition,
            "ScanIndexForward": not descending,
        }
        if index is not None:
            request["IndexName"] = index
        if consistent:
            request["ConsistentRead"] = True
        if limit is not None:
            request["Limit"] = limit
        return self._page("query", request, expression, cursor, filter, attributes, index)

    def scan(
        self,
        *,
        segment: int = 0,
        segments: int = 1,
        cursor: Item | None = None,
        filter: When | None = None,
        attributes: Sequence[str] | None = None,
    ) -> Page:
        request: dict[str, Any] = {"TableName": self.table}
        if segments > 1:
            request |= {"Segment": segment, "TotalSegments": segments}
        return self._page("scan", request, Expression(), cursor, filter, attributes, None)

    def _page(
        self,
        operation: str,
        request: dict[str, Any],
        expression: Expression,
        cursor: Item | None,
        filter: When | None,
        attributes: Sequence[str] | None,
        index: str | None,
    ) -> Page:
        if filter is not None:
            request["FilterExpression"] = expression.condition(filter)
        if attributes is not None:
            keys = {PARTITION_KEY, SORT_KEY, *INDEX_KEYS[index]}
            wanted = [*sorted(keys), *(a for a in attributes if a not in keys)]
            request["ProjectionExpression"] = ", ".join(expression.name(a) for a in wanted)
        request |= expression.arguments()
        if cursor is not None:
            request["ExclusiveStartKey"] = to_item(cursor)
        with translate_errors(self.resource):
            out = getattr(self.client, operation)(**request)
        last = out.get("LastEvaluatedKey")
        return Page([from_item(i) for i in out.get("Items", [])], from_item(last) if last else None)

    # ----------------------------------------------------------------- writes

    def write(
        self,
        write: Write,
        *,
        returning: Literal["old", "new"] | None = None,
        found_on_refusal: bool = False,
    ) -> Written:
        if isinstance(write, Check):
            raise ValueError("a condition check goes in a transaction, beside what it guards")
        operation, args = write_request(write)
        if returning is not None:
            args["ReturnValues"] = "ALL_OLD" if returning == "old" else "ALL_NEW"
        if found_on_refusal and write.when is not None:
            # A refused condition answers with the item as it is: still one request.
            args["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        call = getattr(self.client, f"{operation.lower()}_item")
        try:
            out = call(TableName=self.table, **args)
        except ClientError as exc:
            if error_code(exc) != CHECK_FAILED + "Exception":
                raise translate(exc, self.resource) from exc
            found = exc.response.get("Item")
            item = from_item(found) if found else None
            if write.refusal is not None:
                raise refused(write, item) from exc
            return Written(False, item)
        except BotoCoreError as exc:
            raise translate(exc, self.resource) from exc
        attributes = out.get("Attributes")
        return Written(True, from_item(attributes) if attributes else None)

    def transact(self, writes: Sequence[Write]) -> None:
        requests = []
        for write in writes:
            operation, args = write_request(write)
            requests.append({operation: {"TableName": self.table, **args}})
        for sent in tries(CONFLICT_ATTEMPTS):
            try:
                self.client.transact_write_items(TransactItems=requests)
                return
            except ClientError as exc:
                if error_code(exc) != "TransactionCanceledException":
                    raise translate(exc, self.resource) from exc
                codes = cancellation_codes(exc)
                reasons = exc.response.get("CancellationReasons") or [{}] * len(codes)
                for write, code, reason in zip(writes, codes, reasons, strict=False):
                    if code == CHECK_FAILED:
                        found = reason.get("Item")
                        raise refused(write, from_item(found) if found else None) from exc
                failures = {c for c in codes if c not in ("None", "")}
                if not failures or not failures <= TRANSIENT_CANCELLATIONS:
                    raise translate(exc, self.resource) from exc
                if sent == CONFLICT_ATTEMPTS:
                    if "TransactionConflict" in failures:
                        raise ConcurrentUpdateError(
                            f"other requests kept changing the same items at the same moment "
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

    def batch(self, puts: Sequence[Item] = (), deletes: Sequence[ItemKey] = ()) -> None:
        requests = [{"PutRequest": {"Item": to_item(i)}} for i in puts]
        requests += [{"DeleteRequest": {"Key": key_attributes(k)}} for k in deletes]
        chunks = [
            requests[i : i + BATCH_WRITE_MAX] for i in range(0, len(requests), BATCH_WRITE_MAX)
        ]
        parallel(self._write_chunk, chunks)

    def _write_chunk(self, chunk: list[dict[str, Any]]) -> None:
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

    # ---------------------------------------------------------------- the table

    def item_size(self, item: Mapping[str, Value]) -> int:
        return item_size(item)

    def create_if_missing(self) -> bool:
        """Create the table (and wait for it); False if it already existed."""
        try:
            self.client.describe_table(TableName=self.table)
            return False
        except ClientError as exc:
            if error_code(exc) != "ResourceNotFoundException":
                raise translate(exc, self.resource) from exc
        except BotoCoreError as exc:
            raise translate(exc, self.resource) from exc
        try:
            self.client.create_table(**table_definition(self.table))
        except ClientError as exc:
            if error_code(exc) != "ResourceInUseException":
                raise translate(exc, self.resource) from exc
        except BotoCoreError as exc:
            raise translate(exc, self.resource) from exc
        with translate_errors(self.resource):
            self.client.get_waiter("table_exists").wait(
                TableName=self.table, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
            )
        return True
