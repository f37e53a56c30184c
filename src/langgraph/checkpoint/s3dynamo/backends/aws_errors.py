"""botocore errors, translated once: every AWS adapter raises only `errors.py` types."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    NoCredentialsError,
)

from langgraph.checkpoint.s3dynamo.errors import (
    CredentialsNotFoundError,
    EndpointUnreachableError,
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
DENIED_CODES = ("AccessDenied", "AccessDeniedException", "403")
UNKNOWN_CREDENTIALS_CODES = (
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "ExpiredTokenException",
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


def translate(exc: Exception, resource: str) -> Exception:
    """The s3dynamo error for a botocore failure on `resource` (raise it `from exc`)."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        op = getattr(exc, "operation_name", "request")
        message = exc.response.get("Error", {}).get("Message", "")
        if code in MISSING_CODES:
            return StoreMissingError(f"{resource} does not exist ({code}); {SETUP_HINT}")
        if code in DENIED_CODES or (
            str(http_status(exc)) == "403" and code not in (UNKNOWN_CREDENTIALS_CODES)
        ):
            return StorageError(
                f"access denied: {op} on {resource} ({code}: {message}); {POLICY_HINT}"
            )
        if code in UNKNOWN_CREDENTIALS_CODES:
            return StorageError(
                f"credentials refused: {op} on {resource} ({code}: {message}); the access "
                "key is unknown or expired there: check AWS_PROFILE / AWS_ACCESS_KEY_ID, and "
                "that the endpoint is the service you meant"
            )
        return StorageError(f"{op} on {resource} failed: {code}: {message}")
    if isinstance(exc, NoCredentialsError):
        return CredentialsNotFoundError(
            f"no AWS credentials for {resource}: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where a role is attached"
        )
    if isinstance(exc, (EndpointConnectionError, ConnectionClosedError)):
        return EndpointUnreachableError(
            f"cannot reach {resource}: {exc}; check AWS_REGION and the endpoint "
            "(S3DYNAMO_ENDPOINT_URL, AWS_ENDPOINT_URL*)"
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
