"""What every tier shares: no test reaches a real AWS account, and tests a backend
cannot run are skipped by marker.

Tiers: `unit/` (one file per subject, on the in-memory ports; a test taking `backend`
runs there and on the AWS adapters; a subject's request budgets on DynamoDB and S3 are
marked `aws` in its file), `aws/` (what only the adapters have: the port contract on
DynamoDB and S3, request budgets, bytes at rest; on moto in process or the
integration servers), `e2e/` (the command line, the Lambda example, Terraform and the
testing kit, as a user runs them). Helpers live in `support/`.

Every test of `aws/`, and the `aws` half of a `backend` test, carries the `aws` mark:
`make test` runs `-m "not aws"` on `unit/` and `-m aws` on both, and the integration
tiers run `-m aws` against their servers, so the in-memory half runs once."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.backends import Backend, aws_backend, memory_backend
from tests.support.savers import BACKEND, REGION, Clients, RequestCounter

# The shipped port contract asserts in the package: rewritten, its failures say what came.
pytest.register_assert_rewrite("langgraph.checkpoint.s3dynamo.testing.contract")

if BACKEND not in ("moto", "moto-server", "real"):
    raise pytest.UsageError(f"S3DYNAMO_TEST_BACKEND={BACKEND!r}: expected moto|moto-server|real")


# Files of the AWS tier `make test` runs whole: the ports' contract, LangGraph's
# conformance suite and the request budgets of the read and write paths.
SMOKE_WHOLE = frozenset({"test_port_contract.py", "test_conformance.py", "test_budgets.py"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`@pytest.mark.unsupported_on("real", reason=...)` skips a test on that backend only;
    the AWS tier's tests, tests on the `aws` fixture and the `aws` half of `backend`
    tests are marked `aws`."""
    aws_tier = Path(__file__).parent / "aws"
    smoked: set[Path] = set()
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        uses_aws = "aws" in getattr(item, "fixturenames", ())
        if params.get("backend") == "aws" or uses_aws or aws_tier in item.path.parents:
            item.add_marker(pytest.mark.aws)
            # `make test`'s share of the AWS tier: the contracts and budgets whole, and
            # each other subject's first test on the adapters.
            if item.path.name in SMOKE_WHOLE or item.path not in smoked:
                item.add_marker(pytest.mark.smoke)
                smoked.add(item.path)
        for mark in item.iter_markers("unsupported_on"):
            if BACKEND in mark.args:
                item.add_marker(pytest.mark.skip(reason=f"{BACKEND}: {mark.kwargs['reason']}"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The halfway races' counts docs/RELIABILITY.md quotes, where this run had any (xdist's
    workers keep their own: run without -n)."""
    from tests.support.faults import HALFWAY

    if HALFWAY["runs"]:
        faults = sys.modules.get("tests.unit.test_faults")
        terminalreporter.write_line(
            f"halted operations: {HALFWAY['runs']} runs, {HALFWAY['stopped halfway']} "
            f"stopped halfway ({HALFWAY['for good']} for good)"
            + (f"; {len(faults.DIED_AND_LEFT)} died and left garbage" if faults else "")
        )


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


# Whether the process's botocore session was made after moto's import.
MOTO_HOOKED: list[bool] = []


@pytest.fixture
def aws() -> Iterator[None]:
    if BACKEND == "moto":
        from moto import mock_aws  # imported here, so the in-memory half never loads moto

        from langgraph.checkpoint.s3dynamo.backends import aws_clients
        from langgraph.checkpoint.s3dynamo.testing import serialize_moto

        serialize_moto()
        # moto hooks the botocore sessions made after its import: a session an earlier
        # test of this process made before would send to AWS itself.
        if not MOTO_HOOKED:
            with aws_clients._lock:
                aws_clients._session = None
            MOTO_HOOKED.append(True)
        with mock_aws():
            yield
    else:
        yield


@pytest.fixture
def clients(aws: None) -> Clients:
    from langgraph.checkpoint.s3dynamo.testing import Sandbox

    # The same kit users test their agents with: a table and bucket unique to the test.
    if BACKEND == "moto":
        sandbox = Sandbox()
    else:
        sandbox = Sandbox(
            dynamodb_endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"],
            s3_endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"],
        )
    pair = Clients((sandbox.dynamodb, sandbox.s3))
    pair.table, pair.bucket = sandbox.table, sandbox.bucket
    return pair


@pytest.fixture
def counter(clients: tuple[Any, Any]) -> RequestCounter:
    c = RequestCounter()
    for client in clients:
        c.hook(client)
    return c


@pytest.fixture(params=["memory", "aws"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """The test's storage: the in-memory twins, or the DynamoDB and S3 adapters on the
    tier's AWS endpoints (moto in process by default)."""
    if request.param == "memory":
        return memory_backend()
    return aws_backend(request.getfixturevalue("clients"))
