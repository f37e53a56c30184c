"""Thin adapters over the two AWS services: requests in, plain data out, no policy.

All botocore errors are translated here (`translate_errors`), so the rest of the package
sees only the exceptions drawn in `errors.py`. Items are in DynamoDB's low-level
attribute-value form; `items.py` builds and parses them.

Parallel waves run on a thread pool created for the wave and shut down before the call
returns: nothing outlives a call, which is what a frozen Lambda sandbox needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    StorageError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.schema import RUN_INDEX, RUN_KEY, table_definition

T = TypeVar("T")
R = TypeVar("R")
Item = dict[str, Any]

# DynamoDB's hard limits on one BatchWriteItem and S3's on one DeleteObjects.
BATCH_WRITE_MAX = 25
DELETE_OBJECTS_MAX = 1000
MAX_WAVE_WORKERS = 16
_SETUP_HINT = (
    "create it with saver.setup() for development, or deploy the terraform/ module for production"
)


def parallel(fn: Callable[[T], R], args: Sequence[T]) -> list[R]:
    """Run `fn` over `args` as one concurrent wave; results keep the order of `args`."""
    if len(args) <= 1:
        return [fn(a) for a in args]
    with ThreadPoolExecutor(max_workers=min(len(args), MAX_WAVE_WORKERS)) as pool:
        return list(pool.map(fn, args))


@contextmanager
def translate_errors(resource: str) -> Iterator[None]:
    """Map botocore failures to s3dynamo errors that say what to do."""
    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        op = getattr(exc, "operation_name", "request")
        if code in ("ResourceNotFoundException", "NoSuchBucket"):
            raise StoreMissingError(f"{resource} does not exist ({code}); {_SETUP_HINT}") from exc
        message = exc.response.get("Error", {}).get("Message", "")
        raise StorageError(f"{op} on {resource} failed: {code}: {message}") from exc
    except BotoCoreError as exc:
        raise StorageError(f"request to {resource} failed: {exc}") from exc


class DynamoIndex:
    """The one DynamoDB table: Query, PutItem, UpdateItem, batch deletes, Scan."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table
        self._resource = f"DynamoDB table {table!r}"

    def query(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        upper: str | None = None,
        lower: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        start_key: Item | None = None,
        keys_only: bool = False,
    ) -> tuple[list[Item], Item | None]:
        """One Query page. `prefix` is begins_with; `lower`/`upper` bound sk inclusively."""
        names = {"#pk": "pk"}
        values: dict[str, Any] = {":pk": {"S": pk}}
        if prefix is not None or upper is not None or keys_only:
            names["#sk"] = "sk"  # DynamoDB rejects names an expression does not use
        condition = "#pk = :pk"
        if prefix is not None:
            condition += " AND begins_with(#sk, :prefix)"
            values[":prefix"] = {"S": prefix}
        elif lower is not None and upper is not None:
            condition += " AND #sk BETWEEN :lower AND :upper"
            values[":lower"], values[":upper"] = {"S": lower}, {"S": upper}
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": not descending,
        }
        if keys_only:
            kwargs["ProjectionExpression"] = "#pk, #sk"
        if limit is not None:
            kwargs["Limit"] = limit
        if start_key is not None:
            kwargs["ExclusiveStartKey"] = start_key
        with translate_errors(self._resource):
            out = self.client.query(**kwargs)
        return out.get("Items", []), out.get("LastEvaluatedKey")

    def query_all(self, pk: str, **kwargs: Any) -> Iterator[Item]:
        start: Item | None = None
        while True:
            items, start = self.query(pk, start_key=start, **kwargs)
            yield from items
            if start is None:
                return

    def run_keys(self, run_key: str) -> list[tuple[str, str]]:
        """(pk, sk) of every checkpoint item a run created, from the sparse run index."""
        found: list[tuple[str, str]] = []
        start: Item | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.table,
                "IndexName": RUN_INDEX,
                "KeyConditionExpression": "#rk = :rk",
                "ExpressionAttributeNames": {"#rk": RUN_KEY},
                "ExpressionAttributeValues": {":rk": {"S": run_key}},
            }
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            with translate_errors(self._resource):
                out = self.client.query(**kwargs)
            found += [(i["pk"]["S"], i["sk"]["S"]) for i in out.get("Items", [])]
            start = out.get("LastEvaluatedKey")
            if start is None:
                return found

    def put(self, item: Item) -> None:
        with translate_errors(self._resource):
            self.client.put_item(TableName=self.table, Item=item)

    def update(
        self, key: Item, expression: str, names: dict[str, str], values: dict[str, Any]
    ) -> None:
        with translate_errors(self._resource):
            self.client.update_item(
                TableName=self.table,
                Key=key,
                UpdateExpression=expression,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )

    def update_if_unchanged(self, old: Item, new: Item) -> bool:
        """Set the attributes that differ between `old` and `new`, on condition that each
        still holds its old value; False if a concurrent writer changed one first."""
        changed = [name for name in new if old.get(name) != new[name]]
        if not changed:
            return True
        # Conditions compare scalars only (dynalite cannot compare maps); a map changes
        # only together with the item's sealed body `c`, so `c` stands guard for it.
        guarded = [n for n in changed if "M" not in new[n]]
        if len(guarded) < len(changed) and "c" in old and "c" not in guarded:
            guarded.append("c")
        names = {f"#a{i}": name for i, name in enumerate(changed)}
        values: dict[str, Any] = {}
        sets, conditions = [], []
        for i, name in enumerate(changed):
            values[f":n{i}"] = new[name]
            sets.append(f"#a{i} = :n{i}")
        for i, name in enumerate(guarded):
            names[f"#g{i}"] = name
            if name in old:
                values[f":g{i}"] = old[name]
                conditions.append(f"#g{i} = :g{i}")
            else:
                conditions.append(f"attribute_not_exists(#g{i})")
        try:
            self.client.update_item(
                TableName=self.table,
                Key={"pk": new["pk"], "sk": new["sk"]},
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            with translate_errors(self._resource):
                raise
        raise AssertionError("unreachable")

    def batch_write(self, puts: Iterable[Item] = (), deletes: Iterable[Item] = ()) -> None:
        """Write and delete items in parallel batches of 25, retrying unprocessed ones."""
        requests = [{"PutRequest": {"Item": i}} for i in puts]
        requests += [{"DeleteRequest": {"Key": k}} for k in deletes]
        chunks = [
            requests[i : i + BATCH_WRITE_MAX] for i in range(0, len(requests), BATCH_WRITE_MAX)
        ]
        parallel(self._batch_write_chunk, chunks)

    def _batch_write_chunk(self, chunk: list[Item]) -> None:
        pending, delay = chunk, 0.05
        for _attempt in range(8):
            with translate_errors(self._resource):
                out = self.client.batch_write_item(RequestItems={self.table: pending})
            pending = out.get("UnprocessedItems", {}).get(self.table, [])
            if not pending:
                return
            time.sleep(delay)
            delay *= 2
        raise StorageError(
            f"BatchWriteItem on {self._resource}: {len(pending)} items still unprocessed "
            "after 8 attempts (throttled); retry the operation"
        )

    def scan(self, keys_only: bool = False) -> Iterator[Item]:
        """Every item of the table, page by page (list(None) and garbage collection)."""
        start: Item | None = None
        while True:
            kwargs: dict[str, Any] = {"TableName": self.table}
            if keys_only:
                kwargs["ProjectionExpression"] = "#pk, #sk"
                kwargs["ExpressionAttributeNames"] = {"#pk": "pk", "#sk": "sk"}
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            with translate_errors(self._resource):
                out = self.client.scan(**kwargs)
            yield from out.get("Items", [])
            start = out.get("LastEvaluatedKey")
            if start is None:
                return

    def create_if_missing(self) -> bool:
        """Create the table (and wait for it); False if it already existed."""
        try:
            self.client.describe_table(TableName=self.table)
            return False
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                with translate_errors(self._resource):
                    raise
        with translate_errors(self._resource):
            try:
                self.client.create_table(**table_definition(self.table))
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ResourceInUseException":
                    raise
            self.client.get_waiter("table_exists").wait(
                TableName=self.table, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
            )
        return True


class S3Objects:
    """The bucket: immutable objects written once, read, listed and deleted."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket
        self._resource = f"S3 bucket {bucket!r}"

    def put_new(self, key_body: tuple[str, bytes]) -> None:
        """Write an object unless it exists. An existing one holds the same value: names
        are unique per (thread, ns, channel, version), so 412 means "already there"."""
        key, body = key_body
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*")
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "PreconditionFailed" or status == 412:
                return
            with translate_errors(self._resource):
                raise

    def overwrite(self, key_body: tuple[str, bytes]) -> None:
        """Replace an object in place; only key rotation does this, with the same value
        re-sealed under the same identity."""
        key, body = key_body
        with translate_errors(self._resource):
            self.client.put_object(Bucket=self.bucket, Key=key, Body=body)

    def get(self, key: str) -> bytes:
        try:
            out = self.client.get_object(Bucket=self.bucket, Key=key)
            body: bytes = out["Body"].read()
            return body
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "NoSuchKey":
                raise IntegrityError(
                    f"object {key!r} is referenced by the index but missing from "
                    f"{self._resource}; it was deleted outside s3dynamo"
                ) from exc
            with translate_errors(self._resource):
                raise
        raise AssertionError("unreachable")

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        unique = list(dict.fromkeys(keys))
        return dict(zip(unique, parallel(self.get, unique), strict=True))

    def put_many(self, objects: Sequence[tuple[str, bytes]]) -> None:
        parallel(self.put_new, objects)

    def list_prefix(self, prefix: str) -> Iterator[dict[str, Any]]:
        """Every object under `prefix`: dicts with Key, Size, LastModified."""
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            with translate_errors(self._resource):
                out = self.client.list_objects_v2(**kwargs)
            yield from out.get("Contents", [])
            token = out.get("NextContinuationToken")
            if not out.get("IsTruncated") or not token:
                return

    def delete_many(self, keys: Sequence[str]) -> None:
        chunks = [
            list(keys[i : i + DELETE_OBJECTS_MAX]) for i in range(0, len(keys), DELETE_OBJECTS_MAX)
        ]
        parallel(self._delete_chunk, chunks)

    def _delete_chunk(self, keys: list[str]) -> None:
        with translate_errors(self._resource):
            out = self.client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
            )
        if errors := out.get("Errors"):
            first = errors[0]
            raise StorageError(
                f"DeleteObjects on {self._resource}: {len(errors)} keys not deleted, e.g. "
                f"{first.get('Key')!r}: {first.get('Code')}: {first.get('Message')}"
            )

    def create_if_missing(self, region: str | None) -> bool:
        try:
            self.client.head_bucket(Bucket=self.bucket)
            return False
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status != 404:
                with translate_errors(self._resource):
                    raise
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        if region and region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        with translate_errors(self._resource):
            try:
                self.client.create_bucket(**kwargs)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                    raise
        return True
