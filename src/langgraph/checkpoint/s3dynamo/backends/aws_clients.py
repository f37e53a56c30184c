"""The AWS clients the saver builds when none are passed: botocore alone, one session.

botocore, not boto3: the saver needs only low-level clients, and `import boto3` costs a
cold start more than `botocore.session` does (boto3's resource layer comes with it).
One botocore session serves every client the process builds this way (as boto3's
default session did), so the data files (endpoints, partitions, retry and default
configuration) are read and credentials resolved once, however many of DynamoDB, S3 and
KMS clients, or savers, the process ends up with. Each client is built on first use (see
`S3DynamoSaver`): a turn that never touches S3 never builds its client.

The region and endpoint are the saver's settings where it has them (`compose.py`);
otherwise, and for credentials, the environment as the SDK reads it
(`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`, the shared config file, ...). Retries
are chosen, not inherited from `AWS_RETRY_MODE` or the config file: botocore's `standard`
mode (backoff with jitter, a retry quota, transient errors and throttling) with a stated
attempt budget, and enough pooled connections for the shared wave pool (`waves.py`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from botocore.config import Config
from botocore.exceptions import InvalidRegionError, NoRegionError
from botocore.handlers import BUILTIN_HANDLERS
from botocore.session import Session

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError, RegionNotSetError

_session: Session | None = None
_handlers = 0  # how many of botocore's built-in handlers the session was made with
_lock = threading.Lock()  # botocore sessions are not safe to share unlocked


def session() -> Session:
    """The process's one botocore session, created on first use (event handlers
    registered on it apply to the clients created after)."""
    with _lock:
        return _the_session()


def _the_session() -> Session:
    global _session, _handlers
    # A handler added to botocore's built-ins since (moto's, imported by a test after the
    # process built its first client) reaches only sessions made after it: a new one, so
    # that no client built from here on sends past it to AWS.
    if _session is None or _handlers != len(BUILTIN_HANDLERS):
        _session, _handlers = Session(), len(BUILTIN_HANDLERS)
    return _session


@contextlib.contextmanager
def set_aside() -> Iterator[None]:
    """The process's session set aside while the block runs, then put back: the testing
    kit's, so that the clients a test builds resolve the test's credentials, never those
    a session made before it had cached (the developer's own)."""
    global _session, _handlers
    with _lock:
        held = _session, _handlers
        _session = None
    try:
        yield
    finally:
        with _lock:
            _session, _handlers = held


# Every message about a missing region says the same thing.
REGION_HINT = (
    "set AWS_REGION (or AWS_DEFAULT_REGION, S3DYNAMO_REGION, or region=... / --region) to "
    "the region of the deployment's table and bucket"
)


def client(
    service: str,
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
    max_attempts: int,
    max_pool_connections: int,
) -> Any:
    """A botocore client for `service` from the process's one session."""
    config = Config(
        max_pool_connections=max_pool_connections,
        retries={"mode": "standard", "total_max_attempts": max_attempts},
    )
    with _lock:
        try:
            built = _the_session().create_client(
                service, region_name=region, endpoint_url=endpoint_url, config=config
            )
        except NoRegionError:
            raise RegionNotSetError(
                f"no AWS region for the {service} client: {REGION_HINT}"
            ) from None
        except InvalidRegionError as exc:  # the profile's: every other source is checked
            raise InvalidConfigError(
                f"the region of the AWS config file's profile is "
                f"{exc.kwargs.get('region_name')!r}, not an AWS region name: expected "
                "letters, digits and hyphens, such as 'eu-west-1'; fix the profile's region "
                "(or set AWS_REGION, which comes first). Nothing was sent"
            ) from None
        except ValueError as exc:  # botocore's "Invalid endpoint: ..."
            raise InvalidConfigError(
                endpoint_problem(service, endpoint_url, str(exc).partition(": ")[2])
            ) from None
    url = str(getattr(built.meta, "endpoint_url", "") or "")
    if urlsplit(url).scheme not in ("http", "https"):
        raise InvalidConfigError(endpoint_problem(service, endpoint_url, url))
    return built


def endpoint_problem(service: str, given: str | None, url: str) -> str:
    """What is wrong with the endpoint a client was configured with, naming where it
    came from: the saver's setting, or the variable botocore read it from."""
    if given is not None:
        source = "S3DYNAMO_ENDPOINT_URL (endpoint_url=, --endpoint-url)"
    else:
        # The variable botocore took it from, if it holds what is wrong; one that holds
        # a URL is not the cause.
        named = f"AWS_ENDPOINT_URL_{service.upper()}"
        held = next((os.environ[n] for n in (named, "AWS_ENDPOINT_URL") if os.environ.get(n)), "")
        source = next(
            (n for n in (named, "AWS_ENDPOINT_URL") if os.environ.get(n)),
            "the endpoint_url of the AWS config file's profile",
        )
        if held and _is_url(held):
            source = f"the endpoint the {service} client was built with"
    return (
        f"{source} is {url!r}, not an endpoint URL the {service} client can send to; "
        "expected http:// or https:// then a host, such as http://127.0.0.1:4566, or "
        "unset it for AWS's own endpoint. Nothing was sent"
    )


def _is_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


# Error codes of a throttled request (botocore's standard retry mode retries them).
THROTTLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "SlowDown",
        "ThrottlingError",
    }
)


def observe(client: Any) -> None:
    """Count `client`'s requests, retries and throttles into the running operation's
    figures (`telemetry.py`; a hook does nothing while nothing counts), and draw its
    request ids without `uuid.uuid4` (`_own_ids`). Once per client, whoever built it."""
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is None:  # a stand-in without botocore's events (a test's fake)
        return
    events.register("provide-client-params.*.*", _own_ids, unique_id="s3dynamo-request-ids")
    events.register("before-call.*.*", _called, unique_id="s3dynamo-telemetry-call")
    events.register("needs-retry.*.*", _attempted, unique_id="s3dynamo-telemetry-attempt")


def _own_ids(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    """Draw a request's invocation id and idempotency tokens (a transaction's
    `ClientRequestToken`) as botocore would, from `os.urandom`, before botocore draws them
    from `uuid.uuid4()`: a test that fixes `uuid.uuid4` to get repeatable message ids
    (LangGraph's own do) then gets the same ids with this saver as without it."""
    context.setdefault("retries", {}).setdefault("invocation-id", str(_random_uuid()))
    for name in model.idempotent_members:
        params.setdefault(name, str(_random_uuid()))


def _random_uuid() -> uuid.UUID:
    return uuid.UUID(bytes=os.urandom(16), version=4)


def _called(event_name: str, **_: Any) -> None:
    if telemetry.active():
        service, operation = event_name.split(".", 2)[1:]
        telemetry.request(service, operation)


def _attempted(attempts: int = 1, response: Any = None, **_: Any) -> None:
    # Sent after every attempt, before botocore decides whether to retry it.
    if not telemetry.active():
        return
    if attempts > 1:
        telemetry.add("retries")
    if response is not None and response[1].get("Error", {}).get("Code") in THROTTLE_CODES:
        telemetry.add("throttles")


def guard_moto() -> None:
    """Make moto in process answer one request at a time, if moto is loaded (idempotent;
    nothing happens where moto is not imported).

    moto's TransactWriteItems deep-copies its tables to roll back a refused condition;
    another request changing a table meanwhile (a parallel graph task's writes, a wave of
    this saver's requests) breaks that copy ("dictionary changed size during iteration").
    DynamoDB has no such limit, and a user's own `with mock_aws():` test should not need
    to know. One lock around moto's request handler keeps it correct; under moto the
    requests were never truly parallel anyway. Called when an adapter is built, so a test
    that imported moto is guarded before the first request."""
    stubber = sys.modules.get("moto.core.botocore_stubber")
    if stubber is None:
        return
    cls = stubber.BotocoreStubber
    if getattr(cls, "s3dynamo_serialized", False):
        return
    with _lock:
        if getattr(cls, "s3dynamo_serialized", False):
            return
        original = cls.__call__
        one_at_a_time = threading.RLock()

        def serialized(self: Any, *args: Any, **kwargs: Any) -> Any:
            with one_at_a_time:
                return original(self, *args, **kwargs)

        cls.__call__ = serialized
        cls.s3dynamo_serialized = True
