"""`saver.prime()` as an AWS Lambda init phase uses it, in fresh interpreters against moto
server on 127.0.0.1: after priming, the first request (a `get_tuple` that reads an object
from S3, then a `put`) imports no module and builds no client; and priming itself sends
no request (it succeeds with the endpoint pointing at a closed port). And what a
checkpointer-only cold start loads of this package, fixed by name."""

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


# A Lambda handler with a checkpointer only: the saver from the environment, a one-node
# graph, one invoke on a new thread.
COLD = r"""
import json, sys
from typing import Annotated
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict
from langgraph.checkpoint.s3dynamo import S3DynamoSaver

class State(TypedDict):
    messages: Annotated[list, add_messages]

graph = StateGraph(State).add_node("reply", lambda s: {"messages": [("ai", "ok")]})
graph = graph.add_edge(START, "reply").compile(checkpointer=S3DynamoSaver.from_env())
graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "cold"}})
package = "langgraph.checkpoint.s3dynamo"
print(json.dumps(sorted(m[len(package) + 1:] for m in sys.modules if m.startswith(package + "."))))
"""

# What that cold start loads, and no more: the Store's and the cache's side (`memory`),
# maintenance (`ops`), removal, copying, searching, auditing, garbage collection, the
# sealed-blob enumeration, the KMS keyring and data subjects load when used. A module
# added here is a cost every Lambda cold start pays: add one only when the first request
# needs it.
COLD_START_MODULES = [
    "backends",
    "backends.aws_clients",
    "backends.aws_errors",
    "backends.dynamodb",
    "backoff",
    "blobs",
    "blobs.cache",
    "blobs.lazy_ports",
    "blobs.objects",
    "blobs.placement",
    "blobs.sealing",
    "blobs.steps",
    "boundary",
    "compose",
    "config",
    "config.arguments",
    "config.aws_names",
    "config.keywords",
    "config.runnable_config",
    "config.settings",
    "deployment",
    "equality",
    "errors",
    "format",
    "format.catalog_records",
    "format.layout",
    "format.records",
    "format.schema",
    "keys",
    "keys.codec",
    "keys.identities",
    "keys.keyring",
    "keys.naming",
    "ports",
    "saver",
    "store",
    "store.catalog",
    "store.committer",
    "store.decoder",
    "store.fences",
    "store.finder",
    "store.format",
    "store.handoff",
    "store.placing",
    "store.policy",
    "store.scope",
    "store.upkeep",
    "store.walker",
    "table",
    "telemetry",
    "waves",
]


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


def test_a_checkpointer_only_cold_start_loads_these_modules_and_no_more(server: str) -> None:
    sandbox = Sandbox(endpoint_url=server)
    sandbox.saver().setup()
    done = subprocess.run(
        [sys.executable, "-c", COLD], env=_env(sandbox), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == COLD_START_MODULES
