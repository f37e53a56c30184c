"""`saver.prime()` as an AWS Lambda init phase uses it, in fresh interpreters against moto
server on 127.0.0.1: after priming, the first request (a `get_tuple` that reads an object
from S3, then a `put`) imports no module and builds no client; and priming itself sends
no request (it succeeds with the endpoint pointing at a closed port)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from langgraph.checkpoint.s3dynamo.testing import Sandbox, moto_server

CHILD = r"""
import json, sys
from langgraph.checkpoint.base import create_checkpoint
from langgraph.checkpoint.s3dynamo import S3DynamoSaver

saver = S3DynamoSaver.from_env()
saver.prime()
if sys.argv[1] == "prime-only":
    print(json.dumps({"primed": True}))
    raise SystemExit
import botocore.session
made = []
create = botocore.session.Session.create_client
def counted(self, *args, **kwargs):
    made.append(args[0] if args else kwargs.get("service_name"))
    return create(self, *args, **kwargs)
botocore.session.Session.create_client = counted
before = set(sys.modules)
config = {"configurable": {"thread_id": "primed"}}
found = saver.get_tuple(config)
saver.put(found.config, create_checkpoint(found.checkpoint, None, 1), found.metadata, {})
print(json.dumps({
    "found": found is not None,
    "objects": len(found.checkpoint["channel_values"]["doc"]),
    "imported": sorted(set(sys.modules) - before),
    "clients": made,
}))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _child(env: dict[str, str], mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _env(sandbox: Sandbox) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    env.update({k: v for k, v in sandbox.environment().items() if v is not None})
    return env


def test_after_priming_the_first_request_imports_nothing_and_builds_no_client(
    server: str,
) -> None:
    sandbox = Sandbox(endpoint_url=server)
    saver = sandbox.saver()
    checkpoint = {
        "v": 4,
        "id": "1f000000-0000-6000-8000-000000000001",
        "ts": "2026-12-01T00:00:00+00:00",
        "channel_values": {"doc": os.urandom(200_000).hex()},  # kept as an S3 object
        "channel_versions": {"doc": saver.get_next_version(None, None)},
        "versions_seen": {},
        "updated_channels": ["doc"],
    }
    config = {"configurable": {"thread_id": "primed", "checkpoint_ns": ""}}
    saver.put(config, checkpoint, {"step": 0}, checkpoint["channel_versions"])
    report = _child(_env(sandbox), "first-request")
    assert report["found"] is True and report["objects"] == 400_000
    assert report["imported"] == [], report["imported"]
    assert report["clients"] == []


def test_priming_sends_no_request() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    sandbox = Sandbox(endpoint_url=closed)  # nothing listens there
    assert _child(_env(sandbox), "prime-only") == {"primed": True}
