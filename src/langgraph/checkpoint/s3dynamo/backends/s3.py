"""The object store on S3: immutable objects written once, read, listed and deleted."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from langgraph.checkpoint.s3dynamo.backends.aws_clients import guard_moto, observe
from langgraph.checkpoint.s3dynamo.backends.aws_errors import (
    attempt,
    http_status,
    located,
    translate,
    translate_errors,
)
from langgraph.checkpoint.s3dynamo.errors import ObjectNotFoundError, StorageError
from langgraph.checkpoint.s3dynamo.ports import BucketRegion, ObjectInfo
from langgraph.checkpoint.s3dynamo.waves import parallel

# S3's limit on one DeleteObjects.
DELETE_OBJECTS_MAX = 1000
# A conditional delete refused because the key was written (or deleted) since listing.
SKIPPED_DELETE_CODES = ("PreconditionFailed", "NoSuchKey", "ConditionalRequestConflict")


def region_header(answer: Any) -> str:
    """The region an S3 answer says its bucket lives in ("" if it says none)."""
    headers = (answer or {}).get("ResponseMetadata", {}).get("HTTPHeaders", {})
    return str(headers.get("x-amz-bucket-region") or (answer or {}).get("BucketRegion") or "")


class S3Objects:
    """The `ObjectStore` port on one S3 bucket."""

    def __init__(self, client: Any, bucket: str) -> None:
        guard_moto()
        observe(client)
        self.client = client
        self.bucket = bucket
        self.name = bucket  # what the deployment record compares (deployment.py)
        self.resource = located(f"S3 bucket {bucket!r}", client)

    def put_new(self, key: str, body: bytes) -> bool:
        out = attempt(
            self.resource,
            self.client.put_object,
            tolerate=("PreconditionFailed", "412"),
            Bucket=self.bucket,
            Key=key,
            Body=body,
            IfNoneMatch="*",
        )
        return out.refused is None

    def overwrite(self, key: str, body: bytes) -> None:
        with translate_errors(self.resource):
            self.client.put_object(Bucket=self.bucket, Key=key, Body=body)

    def get(self, key: str) -> bytes:
        out = attempt(
            self.resource,
            self.client.get_object,
            tolerate=("NoSuchKey",),
            Bucket=self.bucket,
            Key=key,
        )
        if out.refused:
            raise ObjectNotFoundError(key, self.resource)
        with translate_errors(self.resource):
            body: bytes = out.value["Body"].read()
        return body

    def stat(self, key: str) -> ObjectInfo | None:
        out = attempt(
            self.resource,
            self.client.head_object,
            tolerate=("404", "NoSuchKey", "NotFound"),
            Bucket=self.bucket,
            Key=key,
        )
        if out.refused is not None:
            return None
        head = out.value
        return ObjectInfo(
            key, int(head.get("ContentLength", 0)), head["LastModified"], head.get("ETag", "")
        )

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            with translate_errors(self.resource):
                out = self.client.list_objects_v2(**kwargs)
            for obj in out.get("Contents", []):
                yield ObjectInfo(
                    obj["Key"], int(obj.get("Size", 0)), obj["LastModified"], obj.get("ETag", "")
                )
            token = out.get("NextContinuationToken")
            if not out.get("IsTruncated") or not token:
                return

    def probe(self, prefix: str) -> None:
        # A listing, not HeadBucket: the policy's s3:prefix condition allows only
        # listings inside the key prefix, and HeadBucket carries none.
        with translate_errors(self.resource):
            self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)

    def delete(self, keys: Sequence[str]) -> None:
        chunks = [keys[i : i + DELETE_OBJECTS_MAX] for i in range(0, len(keys), DELETE_OBJECTS_MAX)]
        parallel(self._delete_chunk, chunks)

    def delete_unchanged(self, objects: Sequence[ObjectInfo]) -> builtins.list[str]:
        """DeleteObjects with each listed ETag as condition (S3 conditional deletes):
        a key written since it was listed answers PreconditionFailed and stays."""
        chunks = [
            objects[i : i + DELETE_OBJECTS_MAX] for i in range(0, len(objects), DELETE_OBJECTS_MAX)
        ]
        return [key for done in parallel(self._delete_unchanged_chunk, chunks) for key in done]

    def _delete_unchanged_chunk(self, objects: Sequence[ObjectInfo]) -> builtins.list[str]:
        ids = [{"Key": o.key, "ETag": o.tag} if o.tag else {"Key": o.key} for o in objects]
        with translate_errors(self.resource):
            out = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": ids, "Quiet": True}
            )
        kept: set[str] = set()
        for error in out.get("Errors", []):
            if error.get("Code") not in SKIPPED_DELETE_CODES:
                raise StorageError(
                    f"DeleteObjects on {self.resource}: {error.get('Key')!r} not deleted: "
                    f"{error.get('Code')}: {error.get('Message')}"
                )
            kept.add(str(error.get("Key")))
        return [o.key for o in objects if o.key not in kept]

    def _delete_chunk(self, keys: Sequence[str]) -> None:
        with translate_errors(self.resource):
            out = self.client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
            )
        if errors := out.get("Errors"):
            first = errors[0]
            raise StorageError(
                f"DeleteObjects on {self.resource}: {len(errors)} keys not deleted, e.g. "
                f"{first.get('Key')!r}: {first.get('Code')}: {first.get('Message')}"
            )

    def bucket_region(self) -> BucketRegion | None:
        """HeadBucket's `x-amz-bucket-region` header, which S3 sends even when the caller
        may not list the bucket (403: the agent's policy lists only under its prefix), and
        after botocore followed a redirect to the bucket's region."""
        try:
            answer = self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if http_status(exc) == 404:
                return None
            answer = exc.response
            if http_status(exc) != 403 and not region_header(answer):
                raise translate(exc, self.resource) from exc
        except BotoCoreError as exc:
            raise translate(exc, self.resource) from exc
        found = region_header(answer)
        if not found:
            return None
        return BucketRegion(self.bucket, found, str(self.client.meta.region_name or ""))

    def create_if_missing(self) -> bool:
        found = attempt(
            self.resource, self.client.head_bucket, tolerate=("404",), Bucket=self.bucket
        )
        if found.refused is None:
            return False
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        region = self.client.meta.region_name
        if region and region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        attempt(
            self.resource,
            self.client.create_bucket,
            tolerate=("BucketAlreadyOwnedByYou",),
            **kwargs,
        )
        return True
