#!/usr/bin/env python3
"""Which of the S3 and DynamoDB features the saver uses work on a local backend.

Usage: python scripts/services_smoke.py moto-server|real [--env-file FILE]

Reads endpoints and credentials from .services/env-TIER.sh (written by
`scripts/services.sh up`), runs each feature once against throw-away resources and
prints a table: ok = behaves as AWS documents, DIFF = answers but not as AWS does,
FAIL = raises an error. Exits 1 if any row is not ok. Needs only boto3.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

ROWS: list[tuple[str, str, str, str]] = []  # (service, feature, status, detail)


class Diff(Exception):
    """The call answered, but not as AWS would."""


def describe(e: Exception) -> str:
    if isinstance(e, ClientError):
        err, meta = e.response.get("Error", {}), e.response.get("ResponseMetadata", {})
        text = f"{meta.get('HTTPStatusCode')} {err.get('Code')}: {err.get('Message')}"
    else:
        text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 200 else f"{text[:70]} ... {text[-110:]}"


def check(service: str, feature: str) -> Callable[[Callable[[], str | None]], None]:
    """Run the decorated function now and record one table row for it."""

    def run(fn: Callable[[], str | None]) -> None:
        try:
            ROWS.append((service, feature, "ok", fn() or ""))
        except Diff as e:
            ROWS.append((service, feature, "DIFF", str(e)))
        except Exception as e:
            ROWS.append((service, feature, "FAIL", describe(e)))

    return run


def expect_error(call: Callable[[], Any], code: str) -> ClientError:
    """Run a call AWS rejects with `code`; return the error, or raise Diff if it differs."""
    try:
        call()
    except ClientError as e:
        if e.response["Error"]["Code"] != code:
            raise Diff(f"expected {code}, got {describe(e)}") from e
        return e
    raise Diff(f"expected {code}, but the call succeeded")


def load_env(path: Path) -> None:
    if not path.exists():
        sys.exit(f"{path} is missing: run scripts/services.sh up first")
    for line in path.read_text().splitlines():
        m = re.match(r"export (\w+)=(.*)", line.strip())
        if m:
            os.environ[m[1]] = m[2]


def dynamodb_checks(ddb: Any) -> None:
    table = f"smoke-{uuid.uuid4().hex[:8]}"
    S = lambda v: {"S": v}  # noqa: E731

    @check("dynamodb", "CreateTable PAY_PER_REQUEST + KEYS_ONLY GSI")
    def _() -> None:
        # The same definition as s3dynamo.schema.table_definition().
        ddb.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "rk")
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "runs",
                    "KeySchema": [
                        {"AttributeName": "rk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        )
        ddb.get_waiter("table_exists").wait(
            TableName=table, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50}
        )

    @check("dynamodb", "CreateTable again (AWS: ResourceInUseException)")
    def _() -> str:
        e = expect_error(
            lambda: ddb.create_table(
                TableName=table,
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            ),
            "ResourceInUseException",
        )
        return describe(e)

    @check("dynamodb", "DescribeTable missing table (AWS: ResourceNotFoundException)")
    def _() -> str:
        return describe(
            expect_error(
                lambda: ddb.describe_table(TableName=f"{table}-none"), "ResourceNotFoundException"
            )
        )

    @check("dynamodb", "DescribeTable (status, billing mode, GSI)")
    def _() -> str:
        t = ddb.describe_table(TableName=table)["Table"]
        gsi = (t.get("GlobalSecondaryIndexes") or [{}])[0]
        seen = (
            f"TableStatus={t.get('TableStatus')} "
            f"BillingMode={t.get('BillingModeSummary', {}).get('BillingMode')} "
            f"GSI={gsi.get('IndexName')}/{gsi.get('IndexStatus')}/"
            f"{gsi.get('Projection', {}).get('ProjectionType')}"
        )
        if seen != "TableStatus=ACTIVE BillingMode=PAY_PER_REQUEST GSI=runs/ACTIVE/KEYS_ONLY":
            raise Diff(seen)
        return seen

    @check("dynamodb", "PutItem ConditionExpression attribute_not_exists(pk)")
    def _() -> str:
        item = {"pk": S("cond"), "sk": S("1"), "v": S("first")}
        put = lambda: ddb.put_item(  # noqa: E731
            TableName=table, Item=item, ConditionExpression="attribute_not_exists(pk)"
        )
        put()
        e = expect_error(put, "ConditionalCheckFailedException")
        return f"second put: {describe(e)}"

    @check("dynamodb", "ReturnValuesOnConditionCheckFailure=ALL_OLD")
    def _() -> str:
        e = expect_error(
            lambda: ddb.put_item(
                TableName=table,
                Item={"pk": S("cond"), "sk": S("1"), "v": S("second")},
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ),
            "ConditionalCheckFailedException",
        )
        old = e.response.get("Item")
        if old != {"pk": S("cond"), "sk": S("1"), "v": S("first")}:
            raise Diff(f"error carries Item={old!r}, expected the stored item")
        return "error response carries the old Item"

    @check("dynamodb", "UpdateItem SET #a = if_not_exists(#a, :v), #b = :w")
    def _() -> None:
        for v, w in (("a1", "b1"), ("a2", "b2")):  # first creates the item, second updates
            ddb.update_item(
                TableName=table,
                Key={"pk": S("upd"), "sk": S("1")},
                UpdateExpression="SET #a = if_not_exists(#a, :v), #b = :w",
                ExpressionAttributeNames={"#a": "created", "#b": "updated"},
                ExpressionAttributeValues={":v": S(v), ":w": S(w)},
            )
        got = ddb.get_item(TableName=table, Key={"pk": S("upd"), "sk": S("1")})["Item"]
        if (got["created"], got["updated"]) != (S("a1"), S("b2")):
            raise Diff(f"after two updates: {got}")

    @check("dynamodb", "GetItem ConsistentRead")
    def _() -> None:
        got = ddb.get_item(
            TableName=table, Key={"pk": S("cond"), "sk": S("1")}, ConsistentRead=True
        )
        if got.get("Item", {}).get("v") != S("first"):
            raise Diff(f"got {got.get('Item')}")

    @check("dynamodb", "PutItem plain (items for the queries below)")
    def _() -> None:
        # Five items under prefix "c#" (three carry rk, for the sparse index), two others.
        for i in range(5):
            rk = {"rk": S("run-1")} if i < 3 else {}
            ddb.put_item(TableName=table, Item={"pk": S("q"), "sk": S(f"c#{i}"), **rk})
        for sk in ("b#0", "d#0"):
            ddb.put_item(TableName=table, Item={"pk": S("q"), "sk": S(sk), "x": S("y")})

    @check("dynamodb", "Query begins_with, ScanIndexForward=False, Limit, ExclusiveStartKey")
    def _() -> str:
        keys, pages, start = [], 0, None
        while True:
            kw = {"ExclusiveStartKey": start} if start else {}
            r = ddb.query(
                TableName=table,
                KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
                ExpressionAttributeValues={":p": S("q"), ":s": S("c#")},
                ScanIndexForward=False,
                Limit=2,
                **kw,
            )
            keys += [i["sk"]["S"] for i in r["Items"]]
            pages += 1
            start = r.get("LastEvaluatedKey")
            if not start or pages > 10:
                break
        if keys != [f"c#{i}" for i in (4, 3, 2, 1, 0)]:
            raise Diff(f"got {keys} in {pages} pages")
        return f"{pages} pages of Limit=2, newest first"

    @check("dynamodb", "Query on KEYS_ONLY GSI (sparse)")
    def _() -> None:
        r = ddb.query(
            TableName=table,
            IndexName="runs",
            KeyConditionExpression="rk = :r",
            ExpressionAttributeValues={":r": S("run-1")},
        )
        got = sorted((i["sk"]["S"], sorted(i)) for i in r["Items"])
        want = [(f"c#{i}", ["pk", "rk", "sk"]) for i in range(3)]
        if got != want:
            raise Diff(f"got {got}")

    @check("dynamodb", "Scan ProjectionExpression")
    def _() -> None:
        r = ddb.scan(
            TableName=table, ProjectionExpression="pk, #s", ExpressionAttributeNames={"#s": "sk"}
        )
        extra = [i for i in r["Items"] if set(i) != {"pk", "sk"}]
        if extra or r["Count"] != 9:
            raise Diff(f"Count={r['Count']}, items with other attributes: {extra[:2]}")

    @check("dynamodb", "Binary (B) attribute and Map (M) holding binary")
    def _() -> None:
        blob = bytes(range(256))
        item = {
            "pk": S("bin"),
            "sk": S("1"),
            "b": {"B": blob},
            "m": {"M": {"x": {"B": blob[:7]}, "n": {"N": "1"}}},
        }
        ddb.put_item(TableName=table, Item=item)
        got = ddb.get_item(
            TableName=table, Key={"pk": S("bin"), "sk": S("1")}, ConsistentRead=True
        )["Item"]
        if got != item:
            raise Diff(f"read back differs: {got!r:.200}")

    def batch(n: int, kind: str) -> Any:
        keys = [{"pk": S("batch"), "sk": S(f"{i:03}")} for i in range(n)]
        reqs = [
            {"PutRequest": {"Item": k}} if kind == "put" else {"DeleteRequest": {"Key": k}}
            for k in keys
        ]
        return ddb.batch_write_item(RequestItems={table: reqs})

    @check("dynamodb", "BatchWriteItem 25 deletes")
    def _() -> None:
        batch(25, "put")
        r = batch(25, "delete")
        left = ddb.query(
            TableName=table,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": S("batch")},
        )["Count"]
        if r.get("UnprocessedItems") or left:
            raise Diff(f"UnprocessedItems={r.get('UnprocessedItems')}, {left} items left")

    @check("dynamodb", "BatchWriteItem 26 deletes (AWS: ValidationException)")
    def _() -> str:
        return describe(expect_error(lambda: batch(26, "delete"), "ValidationException"))

    @check("dynamodb", "TransactWriteItems (Put + Update + Delete)")
    def _() -> None:
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": table,
                        "Item": {"pk": S("tx"), "sk": S("1")},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Update": {
                        "TableName": table,
                        "Key": {"pk": S("tx"), "sk": S("2")},
                        "UpdateExpression": "SET #a = :v",
                        "ExpressionAttributeNames": {"#a": "a"},
                        "ExpressionAttributeValues": {":v": S("x")},
                    }
                },
                {"Delete": {"TableName": table, "Key": {"pk": S("cond"), "sk": S("1")}}},
            ]
        )
        n = ddb.query(
            TableName=table,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": S("tx")},
        )["Count"]
        gone = "Item" not in ddb.get_item(TableName=table, Key={"pk": S("cond"), "sk": S("1")})
        if n != 2 or not gone:
            raise Diff(f"{n} of 2 items written, delete applied: {gone}")

    @check("dynamodb", "TransactWriteItems failing condition (AWS: TransactionCanceled)")
    def _() -> str:
        e = expect_error(
            lambda: ddb.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": table,
                            "Item": {"pk": S("tx"), "sk": S("1")},
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {"Put": {"TableName": table, "Item": {"pk": S("tx"), "sk": S("3")}}},
                ]
            ),
            "TransactionCanceledException",
        )
        reasons = [r.get("Code") for r in e.response.get("CancellationReasons", [])]
        if reasons != ["ConditionalCheckFailed", "None"]:
            raise Diff(
                f"CancellationReasons codes {reasons}, AWS: ['ConditionalCheckFailed',"
                f" 'None']; {describe(e)}"
            )
        return f"CancellationReasons {reasons}"

    @check("dynamodb", "DeleteTable (cleanup)")
    def _() -> None:
        ddb.delete_table(TableName=table)


def s3_checks(s3: Any) -> None:
    bucket = f"smoke-{uuid.uuid4().hex[:8]}"

    @check("s3", "CreateBucket us-east-1 (no LocationConstraint)")
    def _() -> None:
        s3.create_bucket(Bucket=bucket)

    @check("s3", "CreateBucket again (AWS us-east-1: 200 OK, legacy)")
    def _() -> str:
        try:
            s3.create_bucket(Bucket=bucket)
            return "200 OK"
        except ClientError as e:
            # Elsewhere AWS answers BucketAlreadyOwnedByYou, so setup() must accept both.
            if e.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
                raise
            raise Diff(describe(e)) from e

    @check("s3", "HeadBucket")
    def _() -> None:
        s3.head_bucket(Bucket=bucket)

    @check("s3", "HeadBucket missing bucket (AWS: 404)")
    def _() -> str:
        return describe(expect_error(lambda: s3.head_bucket(Bucket=f"{bucket}-none"), "404"))

    @check("s3", "PutObject IfNoneMatch='*' (new key)")
    def _() -> None:
        s3.put_object(Bucket=bucket, Key="cond", Body=b"first", IfNoneMatch="*")

    @check("s3", "PutObject IfNoneMatch='*' again (AWS: 412 PreconditionFailed)")
    def _() -> str:
        try:
            s3.put_object(Bucket=bucket, Key="cond", Body=b"second", IfNoneMatch="*")
            outcome = "second put succeeded"
        except ClientError as e:
            outcome = describe(e)
        body = s3.get_object(Bucket=bucket, Key="cond")["Body"].read()
        if not outcome.startswith("412 PreconditionFailed") or body != b"first":
            raise Diff(f"{outcome}; object now holds {body!r}")
        return outcome

    @check("s3", "GetObject")
    def _() -> None:
        body = s3.get_object(Bucket=bucket, Key="cond")["Body"].read()
        if body != b"first":
            raise Diff(f"body {body!r}")

    @check("s3", "GetObject missing key (AWS: 404 NoSuchKey)")
    def _() -> str:
        return describe(expect_error(lambda: s3.get_object(Bucket=bucket, Key="nope"), "NoSuchKey"))

    @check("s3", "HeadObject")
    def _() -> None:
        n = s3.head_object(Bucket=bucket, Key="cond")["ContentLength"]
        if n != 5:
            raise Diff(f"ContentLength={n}")

    @check("s3", "HeadObject missing key (AWS: 404)")
    def _() -> str:
        return describe(expect_error(lambda: s3.head_object(Bucket=bucket, Key="nope"), "404"))

    @check("s3", "ListObjectsV2 Prefix + MaxKeys pagination")
    def _() -> str:
        want = [f"p/{i}" for i in range(5)]
        for k in [*want, "q/0", "pz"]:
            s3.put_object(Bucket=bucket, Key=k, Body=b"x")
        keys, pages, kw = [], 0, {}
        while True:
            r = s3.list_objects_v2(Bucket=bucket, Prefix="p/", MaxKeys=2, **kw)
            keys += [o["Key"] for o in r.get("Contents", [])]
            pages += 1
            if not r.get("IsTruncated") or pages > 10:
                break
            kw = {"ContinuationToken": r["NextContinuationToken"]}
        if keys != want:
            raise Diff(f"got {keys} in {pages} pages")
        return f"{pages} pages"

    @check("s3", "DeleteObjects 1000 keys")
    def _() -> None:
        keys = [f"d/{i:04}" for i in range(1000)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=b"x"), keys))
        r = s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
        )
        left = s3.list_objects_v2(Bucket=bucket, Prefix="d/").get("KeyCount")
        if r.get("Errors") or left:
            raise Diff(f"Errors={r.get('Errors', [])[:2]}, {left} objects left")

    @check("s3", "DeleteObjects 1001 keys (AWS: MalformedXML)")
    def _() -> str:
        return describe(
            expect_error(
                lambda: s3.delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": f"e/{i}"} for i in range(1001)]}
                ),
                "MalformedXML",
            )
        )

    @check("s3", "PutPublicAccessBlock (read back with Get)")
    def _() -> None:
        conf = dict.fromkeys(
            ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"),
            True,
        )
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=conf)
        try:
            got = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        except ClientError as e:
            raise Diff(f"Put ok, Get: {describe(e)}") from e
        if got != conf:
            raise Diff(f"Put ok, Get returned {got}")

    @check("s3", "GetBucketLifecycleConfiguration, none set (AWS: NoSuchLifecycleConfiguration)")
    def _() -> str:
        return describe(
            expect_error(
                lambda: s3.get_bucket_lifecycle_configuration(Bucket=bucket),
                "NoSuchLifecycleConfiguration",
            )
        )

    @check("s3", "GetBucketLifecycleConfiguration after a Put")
    def _() -> None:
        rule = {
            "ID": "expire",
            "Status": "Enabled",
            "Filter": {"Prefix": "tmp/"},
            "Expiration": {"Days": 1},
        }
        s3.put_bucket_lifecycle_configuration(
            Bucket=bucket, LifecycleConfiguration={"Rules": [rule]}
        )
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
        if [(r.get("ID"), r.get("Expiration")) for r in rules] != [("expire", {"Days": 1})]:
            raise Diff(f"read back {rules}")

    @check("s3", "Delete objects and bucket (cleanup)")
    def _() -> None:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objs = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objs:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": objs})
        s3.delete_bucket(Bucket=bucket)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tier", choices=["moto-server", "real"])
    ap.add_argument("--env-file", type=Path, help="default: .services/env-TIER.sh")
    args = ap.parse_args()
    env = args.env_file or Path(__file__).resolve().parent.parent / f".services/env-{args.tier}.sh"
    load_env(env)
    # No retries: a failure shows up as it is, and at once.
    cfg = Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=60)
    dynamodb_checks(boto3.client("dynamodb", config=cfg))
    s3_checks(boto3.client("s3", config=cfg))

    print(
        f"tier {args.tier}: S3 {os.environ.get('AWS_ENDPOINT_URL_S3')}, "
        f"DynamoDB {os.environ.get('AWS_ENDPOINT_URL_DYNAMODB')}, boto3 {boto3.__version__}"
    )
    width = max(len(f) for _, f, _, _ in ROWS)
    for service, feature, status, detail in ROWS:
        print(f"{service:8} {feature:{width}} {status:4} {detail}")
    bad = sum(status != "ok" for *_, status, _ in ROWS)
    print(f"{len(ROWS) - bad} ok, {bad} not ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
