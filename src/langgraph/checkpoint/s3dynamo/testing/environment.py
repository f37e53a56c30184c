"""Where a test's AWS clients go: the environment that keeps them on moto (fake
credentials, no profile, every endpoint variable cleared or on loopback, so no request
can reach a real AWS endpoint), and moto's HTTP server on 127.0.0.1. The sandbox and the
fixtures that use them: `testing/__init__.py`; why: docs/TESTING.md."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping

import pytest

from langgraph.checkpoint.s3dynamo.backends import aws_clients
from langgraph.checkpoint.s3dynamo.backoff import tries
from langgraph.checkpoint.s3dynamo.config.settings import VARIABLES

REGION = "us-east-1"

_LOOPBACK = ("http://127.0.0.1:", "http://localhost:", "http://[::1]:")

# Variables that could send a client anywhere but where the test means, or make it look
# for real credentials. Every AWS_ENDPOINT_URL* variable is cleared as well.
_CLEARED = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    # Would turn encryption on for a saver built without keys.
    "LANGGRAPH_AES_KEY",
    # And every setting `from_env` reads (a sandbox sets its table, bucket and keys):
    # one left in the developer's shell would take code under test elsewhere.
    *VARIABLES,
)


def aws_environment(endpoint_url: str | None = None) -> dict[str, str | None]:
    """The environment changes that keep AWS clients on moto (None means unset).

    Args:
        endpoint_url: A moto server's URL on loopback, exported as every
            ``AWS_ENDPOINT_URL*`` variable; None (in process) clears them all.

    Returns:
        Variable names mapped to their test values, or to None for those to unset.
    """
    if endpoint_url is not None:
        check_loopback(endpoint_url)
    env: dict[str, str | None] = dict.fromkeys(_CLEARED)
    env.update({k: None for k in os.environ if k.startswith("AWS_ENDPOINT_URL")})
    env.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            # No profile file can name an endpoint, a role or a credential process.
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    if endpoint_url is None:
        env["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = "true"
    else:
        env["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = None
        for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
            env[var] = endpoint_url
        # An HTTP proxy from the environment must not carry requests meant for loopback.
        no_proxy = ",".join(
            filter(None, [os.environ.get("NO_PROXY", ""), "127.0.0.1,localhost,::1"])
        )
        env["NO_PROXY"] = env["no_proxy"] = no_proxy
    return env


def check_loopback(url: str) -> None:
    if not url.startswith(_LOOPBACK):
        raise ValueError(f"a test endpoint must be on loopback over http, got {url!r}")


@contextlib.contextmanager
def patched_environ(changes: Mapping[str, str | None]) -> Iterator[None]:
    """`changes` applied while the block runs, and the process's botocore session set
    aside (`aws_clients.set_aside`)."""
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        with aws_clients.set_aside():
            yield
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old


def apply_environment(monkeypatch: pytest.MonkeyPatch, changes: Mapping[str, str | None]) -> None:
    """`changes` applied for the test (a fixture sets the process's botocore session
    aside too: `aws_clients.set_aside`)."""
    for k, v in changes.items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)


# ------------------------------------------------------------------ moto server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def moto_server(port: int = 0, *, timeout: float = 30.0) -> Iterator[str]:
    """Run moto server (S3, DynamoDB and the rest of AWS over HTTP) on 127.0.0.1.

    It runs in a subprocess of the current interpreter (moto's server app, from
    ``moto[server]``, answering one request at a time: see `moto_serve`), with fake
    credentials, and is stopped when the block ends.

    Args:
        port: The port to listen on; 0 picks a free one (retried if taken meanwhile).
        timeout: Seconds to wait for the server to answer.

    Yields:
        The server's URL, ``http://127.0.0.1:PORT``.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({k: v for k, v in aws_environment().items() if v is not None})
    attempts = 1 if port else 3
    # A free port may be taken before the server binds it: another port, a few times.
    for attempt in tries(attempts):
        chosen = port or _free_port()
        env["MOTO_PORT"] = str(chosen)
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(
                # moto's own server, one request at a time (see moto_serve.py).
                [
                    sys.executable,
                    "-m",
                    "langgraph.checkpoint.s3dynamo.moto_serve",
                    "127.0.0.1",
                    str(chosen),
                ],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                deadline = time.monotonic() + timeout
                while proc.poll() is None and not _answers(chosen):
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"moto server did not answer on port {chosen}")
                    time.sleep(0.05)
                if proc.poll() is not None:
                    log.seek(0)
                    tail = log.read()[-2000:].decode(errors="replace")
                    if attempt < attempts:
                        continue
                    raise RuntimeError(f"moto server exited ({proc.returncode}):\n{tail}")
                yield f"http://127.0.0.1:{chosen}"
                return
            finally:
                if proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()


def serialize_moto() -> None:
    """Make moto in process answer one request at a time (idempotent). The saver does
    this itself when it builds its DynamoDB or S3 adapter with moto loaded, so a plain
    ``with mock_aws():`` test needs no call; see `backends.aws_clients.guard_moto`."""
    import moto.core.botocore_stubber  # noqa: F401 - loaded, so guard_moto sees it

    from langgraph.checkpoint.s3dynamo.backends.aws_clients import guard_moto

    guard_moto()
