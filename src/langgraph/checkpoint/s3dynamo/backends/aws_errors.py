"""botocore errors, translated once: every AWS adapter raises only `errors.py` types."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

from langgraph.checkpoint.s3dynamo.errors import StorageError, StoreMissingError

SETUP_HINT = (
    "create it with saver.setup() for development, or deploy the terraform/ module for production"
)
MISSING_CODES = ("ResourceNotFoundException", "NoSuchBucket")


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
        if code in MISSING_CODES:
            return StoreMissingError(f"{resource} does not exist ({code}); {SETUP_HINT}")
        op = getattr(exc, "operation_name", "request")
        message = exc.response.get("Error", {}).get("Message", "")
        return StorageError(f"{op} on {resource} failed: {code}: {message}")
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
