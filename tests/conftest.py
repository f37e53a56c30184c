"""What every tier shares: no test reaches a real AWS account, and tests a backend
cannot run are skipped by marker.

Tiers: `unit/` (everything but the adapters, on the in-memory ports), `aws/` (the
adapters' contract, request budgets and bytes at rest, on moto in process or the
integration servers), `e2e/` (the command line, the Lambda example, Terraform and the
testing kit, as a user runs them). Helpers live in `support/`."""

from __future__ import annotations

import os

import pytest

from tests.support.savers import BACKEND, REGION

if BACKEND not in ("moto", "moto-server", "real"):
    raise pytest.UsageError(f"S3DYNAMO_TEST_BACKEND={BACKEND!r}: expected moto|moto-server|real")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`@pytest.mark.unsupported_on("real", reason=...)` skips a test on that backend only."""
    for item in items:
        for mark in item.iter_markers("unsupported_on"):
            if BACKEND in mark.args:
                item.add_marker(pytest.mark.skip(reason=f"{BACKEND}: {mark.kwargs['reason']}"))


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # LANGGRAPH_AES_KEY would turn encryption on silently.
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for var in ("S3DYNAMO_REGION", "S3DYNAMO_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    if BACKEND == "moto":
        # Never reach a real account: in process, no endpoint is configured at all.
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
        for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
            monkeypatch.delenv(var, raising=False)
    else:
        for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
            url = os.environ.get(var, "")
            if not url.startswith(("http://127.0.0.1", "http://localhost")):
                raise pytest.UsageError(
                    f"backend {BACKEND!r} needs {var} on 127.0.0.1, got {url!r}: run "
                    f"scripts/services.sh up and source .services/env-{BACKEND}.sh"
                )
