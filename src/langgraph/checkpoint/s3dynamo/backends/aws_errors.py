"""botocore errors, translated once: every AWS adapter raises only `errors.py` types.

What retrying cannot fix (a bucket name S3 refuses, a region or endpoint that does not
serve the service, access or credentials refused) becomes `StorageConfigError`; what may
pass (throttling, a service's own internal error, a dropped connection) `StorageError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
)

from langgraph.checkpoint.s3dynamo.config.aws_names import BUCKET_RULES
from langgraph.checkpoint.s3dynamo.errors import (
    CredentialsNotFoundError,
    EndpointUnreachableError,
    ItemTooLargeError,
    StorageConfigError,
    StorageError,
    StoreMissingError,
)

# Said only after the region and endpoint: a table missing "here" may exist in another
# region, and creating it here would split the deployment in two.
SETUP_HINT = (
    "if it lives in another region, set AWS_REGION (or pass clients built for that region); "
    "if it belongs here, deploy the terraform/ module (saver.setup() in development)"
)
MISSING_CODES = ("ResourceNotFoundException", "NoSuchBucket")
# KMS refusing the key it was named, not the moment: no such key or alias, a key disabled
# or pending deletion, or one that does not encrypt.
KMS_KEY_CODES = (
    "NotFoundException",
    "DisabledException",
    "KMSInvalidStateException",
    "InvalidKeyUsageException",
)
DENIED_CODES = ("AccessDenied", "AccessDeniedException", "403")
UNKNOWN_CREDENTIALS_CODES = (
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "ExpiredTokenException",
)
ENDPOINT_HINT = (
    "set AWS_REGION (or region=) to a region the service runs in, and S3DYNAMO_ENDPOINT_URL "
    "(or AWS_ENDPOINT_URL*) to the service's endpoint, or unset it for AWS's own"
)
POLICY_HINT = (
    "grant the caller the policy from terraform/ (policy_arn for the agent; "
    "maintenance_policy_arn for list(None), reencrypt, garbage collection and key rotation)"
)


def located(name: str, client: Any) -> str:
    """`name` plus the region and endpoint its client talks to, for every message."""
    meta = getattr(client, "meta", None)
    region = getattr(meta, "region_name", None) or "?"
    endpoint = getattr(meta, "endpoint_url", None) or "?"
    return f"{name} (region {region}, endpoint {endpoint})"


def error_code(exc: ClientError) -> str:
    """The service's error code, e.g. `ConditionalCheckFailedException`."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def http_status(exc: ClientError) -> int | None:
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None


def unknown_region(resource: str) -> str | None:
    """The region `located` put in `resource`, if it is on AWS's own endpoints and in no
    partition botocore knows; only asked once a request could not connect."""
    found = re.search(r"\(region ([^,]+), endpoint (\S+)\)$", resource)
    if found is None or not found.group(2).endswith((".amazonaws.com", ".amazonaws.com.cn")):
        return None
    import botocore.session

    data = botocore.session.get_session().get_component("data_loader").load_data("endpoints")
    known = {region for partition in data["partitions"] for region in partition["regions"]}
    return None if found.group(1) in known else found.group(1)


def attempts(exc: ClientError) -> str:
    """How many times botocore sent the request, as the error's metadata says."""
    retries = exc.response.get("ResponseMetadata", {}).get("RetryAttempts")
    return "once" if not retries else f"on all {int(retries) + 1} attempts"


def translate(exc: Exception, resource: str) -> Exception:
    """The s3dynamo error for a botocore failure on `resource` (raise it `from exc`)."""
    if isinstance(exc, ClientError):
        return _refused(exc, resource)
    return _unsent(exc, resource)


def _refused(exc: ClientError, resource: str) -> Exception:
    """The service answered with an error: what its code and status mean here."""
    code = error_code(exc)
    op = getattr(exc, "operation_name", "request")
    message = exc.response.get("Error", {}).get("Message", "")
    status = http_status(exc)
    if code in MISSING_CODES:
        return StoreMissingError(f"{resource} does not exist ({code}); {SETUP_HINT}", resource)
    if code in KMS_KEY_CODES and resource.startswith("KMS key "):
        return StorageConfigError(
            f"{op} on {resource}: KMS refused the key ({code}: {message}), a configuration "
            "error that retrying does not fix. Expected an enabled symmetric encryption "
            "key, by id, ARN, alias name or alias ARN, in this region: fix "
            "S3DYNAMO_KMS_KEY_ID (kms_key_id=) or AWS_REGION"
        )
    if code == "InvalidBucketName":
        return StorageConfigError(
            f"{op} on {resource}: S3 refused the bucket name ({code}: {message}), a "
            f"configuration error that retrying does not fix. Expected a valid name: "
            f"{BUCKET_RULES}; fix S3DYNAMO_BUCKET (bucket=)"
        )
    if code in DENIED_CODES or (str(status) == "403" and code not in UNKNOWN_CREDENTIALS_CODES):
        return StorageConfigError(
            f"access denied: {op} on {resource} ({code}: {message}); {POLICY_HINT}"
        )
    if code in UNKNOWN_CREDENTIALS_CODES:
        return StorageConfigError(
            f"credentials refused: {op} on {resource} ({code}: {message}); the access "
            "key is unknown or expired there: check AWS_PROFILE / AWS_ACCESS_KEY_ID, and "
            "that the endpoint is the service you meant"
        )
    if code == "ValidationException" and "size" in message and "exceeded" in message:
        # What every check before the request should have refused: never worth a retry.
        return ItemTooLargeError(
            f"{op} on {resource}: DynamoDB refused an item over its 400 KB limit ({message}), "
            "which retrying does not fix: a value, key or namespace too large for one item "
            '(docs/RELIABILITY.md, "Item size"); please report it with what was written'
        )
    if status == 500 and code in ("", "500") and message:
        # AWS answers its own internal errors with a code (InternalError,
        # InternalServerError) and those may pass, as may a HEAD's bodiless 500; a body
        # that is no AWS error document, after botocore's retries, is an endpoint that
        # does not serve this service in this region.
        return StorageConfigError(
            f"{op} on {resource}: the endpoint answered HTTP 500 without an AWS error "
            f"code, {attempts(exc)}: it does not serve this service in this region (a "
            f"region it does not know, or another service at that URL), a configuration "
            f"error that retrying does not fix; {ENDPOINT_HINT}"
        )
    return StorageError(f"{op} on {resource} failed: {code}: {message}; retry later")


def _unsent(exc: Exception, resource: str) -> Exception:
    """No answer came: the request was refused before sending, or never arrived."""
    if isinstance(exc, ParamValidationError):
        return StorageConfigError(
            f"botocore refused a request to {resource} before sending it: {exc}. A setting "
            f"is malformed (for a bucket: {BUCKET_RULES}); fix S3DYNAMO_BUCKET / "
            "S3DYNAMO_TABLE (bucket=, table=)"
        )
    if isinstance(exc, NoCredentialsError):
        return CredentialsNotFoundError(
            f"no AWS credentials for {resource}: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where a role is attached"
        )
    if isinstance(exc, EndpointConnectionError) and (region := unknown_region(resource)):
        return StorageConfigError(
            f"cannot reach {resource}: {exc}; {region!r} is no AWS region botocore knows "
            "(a typo?), so its endpoint does not exist, a configuration error that retrying "
            f"does not fix: {ENDPOINT_HINT}"
        )
    if isinstance(exc, (EndpointConnectionError, ConnectionClosedError)):
        return EndpointUnreachableError(
            f"cannot reach {resource}: {exc}; check AWS_REGION and the endpoint "
            "(S3DYNAMO_ENDPOINT_URL, AWS_ENDPOINT_URL*)"
        )
    endpoint = re.search(r"endpoint (\S+)\)$", resource)
    if endpoint and urlsplit(endpoint.group(1)).scheme not in ("http", "https"):
        # A client built elsewhere (botocore checks only that a URL parses).
        return StorageConfigError(
            f"cannot send to {resource}: {exc}; its endpoint is no http:// or https:// URL, "
            "a configuration error that retrying does not fix: fix the endpoint the client "
            "was built with (endpoint_url=, AWS_ENDPOINT_URL_*), or unset it for AWS's own"
        )
    return StorageError(f"request to {resource} failed: {exc}")


@contextmanager
def translate_errors(resource: str) -> Iterator[None]:
    """Map botocore failures inside the block to s3dynamo errors that say what to do."""
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise translate(exc, resource) from exc


class Outcome(NamedTuple):
    """A request's result, or the tolerated error code it failed with."""

    value: Any
    refused: str | None


def attempt(
    resource: str, request: Callable[..., Any], *, tolerate: Collection[str] = (), **kwargs: Any
) -> Outcome:
    """Send one request; an error whose code (or HTTP status, for bodiless answers such as
    HEAD's) is in `tolerate` comes back as `Outcome.refused`, any other is translated."""
    try:
        return Outcome(request(**kwargs), None)
    except ClientError as exc:
        for code in (error_code(exc), str(http_status(exc))):
            if code in tolerate:
                return Outcome(None, code)
        raise translate(exc, resource) from exc
    except BotoCoreError as exc:
        raise translate(exc, resource) from exc
