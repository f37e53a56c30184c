"""The Lambda example (examples/lambda_agent/app.py) against moto server on 127.0.0.1.

- The conversation (start, a turn, a refund that waits for approval, a refused turn, the
  approval, another turn, the history, delete) runs cold, one fresh interpreter per
  invocation as a new Lambda container would, and warm, every invocation in one
  interpreter; both with keys from KMS (S3DYNAMO_KMS_KEY_ID, a key on moto server), as the
  Terraform example configures the function.
- With S3DYNAMO_TF_APPLY=1, the example root configuration (terraform/examples/lambda_agent)
  is applied to moto server and the handler runs with the function's configuration.
- The IAM policies in terraform/main.tf are checked against the requests the code makes:
  every request the handler's conversation and the maintenance operations send is
  recorded, mapped to its IAM action and resource, and each policy must grant exactly
  that set, no more and no less; with data subjects declared, what each job requests
  beyond that must be exactly what the policy's subject statements add.

moto server runs in its own process (`python -m moto.server`), started and stopped here.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from langchain_core.messages import HumanMessage

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends import aws_clients
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.terraform import (
    MAIN_TF,
    PLUGIN_DIR,
    blocks,
    needs_provider,
    needs_terraform,
    strip_comments,
    terraform,
)

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "lambda_agent" / "app.py"
REGION = "us-east-1"
PREFIX = "checkpoints/"


# --------------------------------------------------------------------------------------
# moto server, and the environment a function would get
# --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/moto-api/", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP status means the server is up
    except OSError:
        return False


@pytest.fixture(scope="module")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "langgraph.checkpoint.s3dynamo.moto_serve",
                "127.0.0.1",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + 30
        while not answers(url):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"moto server did not answer at {url}:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def function_env(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What the function's environment holds in AWS (Terraform passes the same names),
    plus the endpoint variables that point the AWS SDK at moto server. Also applied to
    this process, and the table and bucket are created with setup()."""
    suffix = uuid.uuid4().hex[:12]
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL_S3": moto_server,
        "AWS_ENDPOINT_URL_DYNAMODB": moto_server,
        "AWS_ENDPOINT_URL_KMS": moto_server,
        "S3DYNAMO_TABLE": f"agent-{suffix}",
        "S3DYNAMO_BUCKET": f"agent-{suffix}",
        "S3DYNAMO_PREFIX": PREFIX,
        "S3DYNAMO_KMS_KEY_ID": "",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "LANGGRAPH_AES_KEY",
        "S3DYNAMO_KEYS",
        "S3DYNAMO_SECRET",
    ):
        monkeypatch.delenv(name, raising=False)
    # The sealing key, as the example's Terraform creates it (KMS on moto server too).
    kms = boto3.session.Session(region_name=REGION).client("kms", endpoint_url=moto_server)
    key_arn = kms.create_key(Description=f"sealing {suffix}")["KeyMetadata"]["Arn"]
    env["S3DYNAMO_KMS_KEY_ID"] = key_arn
    monkeypatch.setenv("S3DYNAMO_KMS_KEY_ID", key_arn)
    # setup() creates the table, the bucket and the keyring (one GenerateDataKey).
    S3DynamoSaver.from_env(kms_client=kms).setup()
    return env


def inspection_clients() -> tuple[Any, Any]:
    """(dynamodb, s3) clients of a session of their own: what the test itself reads is
    not recorded as the code's requests (the recorder hooks the default session)."""
    session = boto3.session.Session(region_name=REGION)
    return session.client("dynamodb"), session.client("s3")


def inspection_saver() -> S3DynamoSaver:
    ddb, s3 = inspection_clients()
    kms = boto3.session.Session(region_name=REGION).client(
        "kms", endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    )
    return S3DynamoSaver.from_env(dynamodb_client=ddb, s3_client=s3, kms_client=kms)


def load_app() -> ModuleType:
    """A fresh copy of the handler module, as a new container would import it."""
    name = f"lambda_agent_app_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # typing.get_type_hints looks the module up by name
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------------------
# The conversation: each step an event and what its reply must say
# --------------------------------------------------------------------------------------

Check = Callable[[dict[str, Any]], None]


def done(*phrases: str) -> Check:
    def check(reply: dict[str, Any]) -> None:
        assert reply["ok"] and reply["status"] == "done", reply
        assert reply["interrupt"] is None, reply
        for phrase in phrases:
            assert phrase in reply["reply"], reply

    return check


def waits_for_approval(order_id: str, amount: float) -> Check:
    def check(reply: dict[str, Any]) -> None:
        assert reply["ok"] and reply["status"] == "waiting_for_approval", reply
        assert reply["interrupt"]["order_id"] == order_id, reply
        assert reply["interrupt"]["amount"] == amount, reply
        assert reply["reply"] == reply["interrupt"]["question"], reply

    return check


def refused(phrase: str) -> Check:
    def check(reply: dict[str, Any]) -> None:
        assert reply == {"ok": False, "error": reply.get("error")}, reply
        assert phrase in reply["error"], reply

    return check


def conversation(tid: str, full: bool) -> list[tuple[dict[str, Any], Check]]:
    """The steps; `full=False` leaves out the refused requests and the small talk, so the
    cold run (about 2 s of imports per invocation) stays short."""
    steps: list[tuple[dict[str, Any], Check, bool]] = [
        ({"action": "start", "thread_id": tid, "message": "hello"}, done("(turn 1)"), True),
        ({"action": "start", "thread_id": tid, "message": "again"}, refused("exists"), False),
        (
            {"action": "send", "thread_id": tid, "message": "please refund A-1001"},
            waits_for_approval("A-1001", 49.0),
            True,
        ),
        (
            {"action": "send", "thread_id": tid, "message": "hurry"},
            refused("waits for approval"),
            False,
        ),
        (
            {"action": "resume", "thread_id": tid, "approved": True, "by": "maria"},
            done("49.00", "A-1001", "approved by maria"),
            True,
        ),
        (
            {"action": "resume", "thread_id": tid, "approved": True},
            refused("not waiting"),
            False,
        ),
        (
            {"action": "send", "thread_id": tid, "message": "refund A-1002 too"},
            done("A-1002 is already refunded"),
            True,
        ),
        ({"action": "send", "thread_id": tid, "message": "thanks"}, done("(turn 4)"), False),
    ]
    return [(event, check) for event, check, essential in steps if full or essential]


def check_history(reply: dict[str, Any], full: bool) -> None:
    assert reply["ok"], reply
    checkpoints = reply["checkpoints"]
    json.dumps(checkpoints)  # plain JSON
    ids = [c["checkpoint_id"] for c in checkpoints]
    assert ids == sorted(ids, reverse=True), "history is not newest first"
    for newer, older in itertools.pairwise(checkpoints):
        assert newer["parent_checkpoint_id"] == older["checkpoint_id"]
    steps = [c["step"] for c in checkpoints]
    assert steps == list(range(steps[0], steps[0] - len(steps), -1)), steps
    assert checkpoints[-1]["parent_checkpoint_id"] is None and checkpoints[-1]["step"] == -1
    newest = checkpoints[0]
    # human, AI; human, tool call, tool result, approval; human, tool call, tool result, AI
    # (and human, AI for "thanks" in the full conversation)
    assert newest["next"] == [] and newest["messages"] == (12 if full else 10), newest
    assert ("(turn 4)" if full else "already refunded") in newest["last_message"]
    # Exactly one checkpoint stopped at the approval, with the question pending.
    waiting = [c for c in checkpoints if c["interrupts"]]
    assert [c["next"] for c in waiting] == [["approval"]], waiting
    assert waiting[0]["interrupts"][0]["order_id"] == "A-1001"


def check_storage(env: dict[str, str], tid: str, replies: list[dict[str, Any]]) -> None:
    """What the handler stored: readable with the keys, opaque without them."""
    saver = inspection_saver()
    stored = list(saver.list({"configurable": {"thread_id": tid}}))
    history = replies[-1]["checkpoints"]
    assert [t.config["configurable"]["checkpoint_id"] for t in stored] == [
        c["checkpoint_id"] for c in history
    ]
    latest = saver.get_tuple({"configurable": {"thread_id": tid}})
    assert latest is not None
    assert latest.checkpoint["channel_values"]["refunds"] == [
        {"order_id": "A-1001", "amount": 49.0, "approved": True, "by": "maria"}
    ]
    # Sealed: neither the thread id nor anything said appears in the table or the bucket.
    ddb, s3 = inspection_clients()
    raw = json.dumps(ddb.scan(TableName=env["S3DYNAMO_TABLE"])["Items"], default=str).encode()
    for obj in s3.list_objects_v2(Bucket=env["S3DYNAMO_BUCKET"]).get("Contents", []):
        assert obj["Key"].startswith(PREFIX)
        raw += s3.get_object(Bucket=env["S3DYNAMO_BUCKET"], Key=obj["Key"])["Body"].read()
    for plain in (tid, "maria", "blue kettle", "hello", "A-1001"):
        assert plain.encode() not in raw, f"{plain!r} is stored in the clear"


def object_count(env: dict[str, str]) -> int:
    _, s3 = inspection_clients()
    return int(s3.list_objects_v2(Bucket=env["S3DYNAMO_BUCKET"])["KeyCount"])


def run_conversation(
    env: dict[str, str], invoke: Callable[[dict[str, Any]], dict[str, Any]], full: bool = True
) -> list[dict[str, Any]]:
    tid = f"customer-{uuid.uuid4().hex[:8]}"
    replies = []
    for event, check in conversation(tid, full):
        reply = invoke(event)
        check(reply)
        replies.append(reply)
    replies.append(invoke({"action": "history", "thread_id": tid, "limit": 100}))
    check_history(replies[-1], full)
    check_storage(env, tid, replies)
    if full:
        limited = invoke({"action": "history", "thread_id": tid, "limit": 2})
        assert limited["checkpoints"] == replies[-1]["checkpoints"][:2]
    if os.environ.get("S3DYNAMO_INLINE_MAX") == "0":
        assert object_count(env) > 0, "inline_max=0 but no value went to S3"
    assert invoke({"action": "delete", "thread_id": tid}) == {
        "ok": True,
        "thread_id": tid,
        "deleted": True,
    }
    assert object_count(env) == 0, "delete left objects behind"
    assert inspection_saver().get_tuple({"configurable": {"thread_id": tid}}) is None
    if full:
        assert invoke({"action": "history", "thread_id": tid})["checkpoints"] == []
    return replies


def comparable(replies: list[dict[str, Any]]) -> list[Any]:
    """Replies without what differs between two runs (thread ids, ids and times)."""
    out: list[Any] = []
    for reply in replies:
        reply = {k: v for k, v in reply.items() if k != "thread_id"}
        if "checkpoints" in reply:
            reply["checkpoints"] = [
                {k: v for k, v in c.items() if not k.endswith(("_id", "created_at"))}
                for c in reply["checkpoints"]
            ]
        out.append(reply)
    return out


# --------------------------------------------------------------------------------------
# Cold and warm
# --------------------------------------------------------------------------------------

RUNNER = f"""
import json, sys
sys.path.insert(0, {str(APP.parent)!r})
import app
json.dump(app.handler(json.load(sys.stdin), None), sys.stdout)
"""


def cold_invoker(function_env: dict[str, str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Each call a fresh interpreter, as in a new Lambda container."""
    # Only what a Lambda's environment would hold, plus PATH: no endpoint or key leaks in
    # from the test process beyond these.
    child_env = {**function_env, "PATH": os.environ.get("PATH", "")}

    def cold(event: dict[str, Any]) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", RUNNER],
            input=json.dumps(event),
            env=child_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # Before the reply, the invocation's metrics line (`publish`).
        reply: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
        return reply

    return cold


def test_conversation_cold_then_warm(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every value to S3 (by default this conversation's small state stays in DynamoDB), so
    # the sealing and delete checks see objects too. The IAM test runs both settings.
    function_env = {**function_env, "S3DYNAMO_INLINE_MAX": "0"}
    monkeypatch.setenv("S3DYNAMO_INLINE_MAX", "0")
    cold = cold_invoker(function_env)
    cold_replies = run_conversation(function_env, cold, full=False)

    app = load_app()
    graphs = set()

    def warm(event: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = json.loads(json.dumps(app.handler(event, None)))
        graphs.add(id(app._graph))
        return reply

    warm_replies = run_conversation(function_env, warm, full=False)
    assert len(graphs) == 1, "the graph was compiled more than once in one container"
    assert comparable(warm_replies) == comparable(cold_replies)
    run_conversation(function_env, warm, full=True)
    assert len(graphs) == 1


def test_each_invocation_publishes_its_storage_figures_as_cloudwatch_metrics(
    function_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The embedded-metric-format line a warm container prints per invocation: every
    metric its directive names has a value, Powertools' namespace and service variables
    place it, and its requests are the ones the clients sent."""
    sent: list[str] = []
    monkeypatch.setattr(aws_clients, "_session", None)  # the clients the app builds count
    aws_clients.session().register(
        "before-call.*.*",
        lambda model, **_: sent.append(model.service_model.service_name + "." + model.name),
    )
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "shop-agents")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "refunds")
    monkeypatch.setenv("S3DYNAMO_INLINE_MAX", "0")  # S3 requests too
    app = load_app()
    app.handler({"action": "start", "thread_id": "emf-1", "message": "hello"}, None)
    capsys.readouterr()
    sent.clear()

    reply = app.handler({"action": "send", "thread_id": "emf-1", "message": "refund A-1001"})
    assert reply["ok"], reply
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    directive = record["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "shop-agents"
    assert directive["Dimensions"] == [["service"]] and record["service"] == "refunds"
    assert abs(record["_aws"]["Timestamp"] / 1000 - time.time()) < 60
    for metric in directive["Metrics"]:
        assert isinstance(record[metric["Name"]], int), metric
    assert {m["Name"] for m in directive["Metrics"]} >= {
        "DynamoDBRequests",
        "S3Requests",
        "BytesReadStored",
        "BytesWrittenStored",
        "BytesWrittenLogical",
        "CacheHits",
        "Waves",
        "Retries",
        "Throttles",
    }
    assert record["action"] == "send"
    assert record["S3DynamoRequests"] == dict(Counter(sent))
    assert record["DynamoDBRequests"] == sum(1 for n in sent if n.startswith("dynamodb."))
    assert record["S3Requests"] == sum(1 for n in sent if n.startswith("s3.")) > 0
    assert record["Requests"] == len(sent)
    assert record["BytesWrittenLogical"] > 0 and record["BytesWrittenStored"] > 0
    assert record["Throttles"] == record["Retries"] == 0

    # A cold container prints the same line before its reply; a bad event costs nothing.
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps({"action": "nope"}),
        env={**function_env, "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    first, reply_line = done.stdout.splitlines()
    cold = json.loads(first)
    assert cold["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "s3dynamo"
    assert (cold["service"], cold["action"], cold["Requests"]) == ("lambda_agent", None, 0)
    assert json.loads(reply_line)["ok"] is False


class LambdaContext:
    """What the handlers read of AWS Lambda's context object (a fixed time left)."""

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_retention_job_out_of_time_removes_nothing_and_says_so(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = load_app()
    started = app.handler({"action": "start", "message": "hi"}, None)
    assert started["ok"]
    monkeypatch.setenv("S3DYNAMO_RETENTION", "1s")
    time.sleep(2.1)  # stamps are whole seconds: the thread is now idle for over 1 s
    # Less time left than the margin the job keeps: the Scan stops at its first page.
    late = app.expire({}, LambdaContext(app.EXPIRE_MARGIN_MS - 1))
    assert late["scanned_all"] is False, late
    assert late["idle_threads"] == late["removed_threads"] == 0, late
    kept = app.handler({"action": "history", "thread_id": started["thread_id"]}, None)
    assert kept["ok"] and kept["checkpoints"], kept
    roomy = app.expire({"dry_run": True}, LambdaContext(app.EXPIRE_MARGIN_MS + 600_000))
    assert roomy["scanned_all"] is True and roomy["idle_threads"] >= 1, roomy


def test_retention_job_without_retention_keeps_threads_and_expires_store_items(
    function_env: dict[str, str],
) -> None:
    """The job's function wired up without S3DYNAMO_RETENTION: it answers JSON that says
    threads are kept and why, and still removes Store items past their TTL."""
    app = load_app()
    started = app.handler({"action": "start", "message": "hi"}, None)
    S3DynamoStore.from_env().put(("users", "gone"), "k", {"v": 1}, ttl=0.01)
    time.sleep(1.5)  # past the item's 0.6 s
    swept = app.expire({}, None)
    assert swept["ok"] and swept["memory_items_expired"] == 1, swept
    assert "S3DYNAMO_RETENTION" in swept["threads_kept"] and "removed_threads" not in swept
    kept = app.handler({"action": "history", "thread_id": started["thread_id"]}, None)
    assert kept["ok"] and kept["checkpoints"], kept


def test_two_sends_at_once_are_both_answered_and_neither_is_lost(
    function_env: dict[str, str],
) -> None:
    """Two invocations send to one thread at the same moment: the saver refuses the run
    that commits second, and the handler runs it again on the new state."""
    app = load_app()
    started = app.handler({"action": "start", "message": "hi"}, None)
    tid = started["thread_id"]
    arrived, both = [0], threading.Event()
    real_agent = app.agent

    def agent_after_both_loaded(state: Any) -> Any:
        arrived[0] += 1
        if arrived[0] <= 2:
            if arrived[0] == 2:
                both.set()
            assert both.wait(30)
        return real_agent(state)

    app.agent = agent_after_both_loaded
    app._graph = app.build_graph(app._saver)  # the graph again, with this node
    replies: list[dict[str, Any]] = []

    def send(text: str) -> None:
        replies.append(app.handler({"action": "send", "thread_id": tid, "message": text}, None))

    senders = [threading.Thread(target=send, args=(text,)) for text in ("one", "two")]
    for s in senders:
        s.start()
    for s in senders:
        s.join(60)
    assert [r["ok"] for r in replies] == [True, True], replies
    assert arrived[0] == 3  # the refused run ran once more
    history = app.handler({"action": "history", "thread_id": tid, "limit": 100}, None)
    assert history["ok"], history
    state = app.get_graph().get_state({"configurable": {"thread_id": tid}}).values
    said = [m.content for m in state["messages"] if m.type == "human"]
    assert sorted(said) == ["hi", "one", "two"], said


def test_serialized_sends_wait_for_each_other_within_the_invocation(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SERIALIZE_RUNS=1: two sends at once run one after the other under the thread's
    lease (no run is refused or repeated); the lease passes to the second at release."""
    monkeypatch.setenv("SERIALIZE_RUNS", "1")
    app = load_app()
    started = app.handler({"action": "start", "message": "hi"}, LambdaContext(30_000))
    assert started["ok"], started
    tid = started["thread_id"]
    inside, most, runs, lock = [0], [0], [0], threading.Lock()
    real_agent = app.agent

    def slow_agent(state: Any) -> Any:
        with lock:
            inside[0] += 1
            runs[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.5)
        with lock:
            inside[0] -= 1
        return real_agent(state)

    app.agent = slow_agent
    app._graph = app.build_graph(app._saver)
    replies: list[dict[str, Any]] = []

    def send(text: str) -> None:
        event = {"action": "send", "thread_id": tid, "message": text}
        replies.append(app.handler(event, LambdaContext(30_000)))

    senders = [threading.Thread(target=send, args=(text,)) for text in ("one", "two")]
    for s in senders:
        s.start()
    for s in senders:
        s.join(60)
    assert [r["ok"] for r in replies] == [True, True], replies
    assert runs[0] == 2 and most[0] == 1, (runs, most)  # never both, none repeated
    state = app.get_graph().get_state({"configurable": {"thread_id": tid}}).values
    said = [m.content for m in state["messages"] if m.type == "human"]
    assert sorted(said) == ["hi", "one", "two"], said


def test_serialized_send_to_a_held_thread_answers_before_the_invocation_ends(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread whose lease another invocation holds: with 2.5 s left, the handler gives
    up waiting a second before its end and answers "retry"."""
    monkeypatch.setenv("SERIALIZE_RUNS", "1")
    app = load_app()
    started = app.handler({"action": "start", "message": "hi"}, LambdaContext(30_000))
    tid = started["thread_id"]
    other = load_app()  # another container, holding the thread's lease
    with other._saver.ops.thread_lock(tid, heartbeat=True):
        began = time.monotonic()
        reply = app.handler(
            {"action": "send", "thread_id": tid, "message": "late"}, LambdaContext(2_500)
        )
        took = time.monotonic() - began
    assert reply["ok"] is False and reply["retry"] is True, reply
    assert "remaining time" in reply["error"], reply
    assert 1.4 <= took < 2.5, took  # waited 1.5 s, answered with about a second to spare
    state = app.get_graph().get_state({"configurable": {"thread_id": tid}}).values
    assert [m.content for m in state["messages"] if m.type == "human"] == ["hi"]


def test_bad_events(function_env: dict[str, str]) -> None:
    app = load_app()
    for event, phrase in [
        ([], "JSON object"),
        ({}, "action must be one of"),
        ({"action": "send", "message": "hi"}, "thread_id"),
        ({"action": "send", "thread_id": "x", "message": ""}, "message"),
        ({"action": "send", "thread_id": "x", "message": "x" * 4001}, "longer"),
        ({"action": "send", "thread_id": "never-started", "message": "hi"}, "no thread"),
        ({"action": "resume", "thread_id": "x", "approved": "yes"}, "approved"),
        ({"action": "history", "thread_id": "x", "limit": 0}, "limit"),
        ({"action": "collect", "grace_seconds": -1}, "grace_seconds"),
    ]:
        reply = app.handler(event, None)
        assert reply["ok"] is False and phrase in reply["error"], (event, reply)
    started = app.handler({"action": "start", "message": "hi"}, None)
    assert started["ok"] and uuid.UUID(started["thread_id"])


# --------------------------------------------------------------------------------------
# IAM: the policies grant exactly the requests the code makes
# --------------------------------------------------------------------------------------

# botocore operation -> the IAM actions it needs (AWS's service authorization reference).
OPERATION_ACTIONS: dict[str, tuple[str, ...]] = {
    "dynamodb.BatchGetItem": ("dynamodb:BatchGetItem",),
    "dynamodb.BatchWriteItem": ("dynamodb:BatchWriteItem",),
    "dynamodb.DeleteItem": ("dynamodb:DeleteItem",),
    "dynamodb.DescribeTable": ("dynamodb:DescribeTable",),
    "dynamodb.GetItem": ("dynamodb:GetItem",),
    "dynamodb.PutItem": ("dynamodb:PutItem",),
    "dynamodb.Query": ("dynamodb:Query",),
    "dynamodb.Scan": ("dynamodb:Scan",),
    # Each action of a transaction needs its own (Put, Update, Delete): see `_actions`.
    "dynamodb.TransactWriteItems": (),
    "dynamodb.UpdateItem": ("dynamodb:UpdateItem",),
    "kms.Decrypt": ("kms:Decrypt",),
    "kms.GenerateDataKey": ("kms:GenerateDataKey",),
    "s3.CopyObject": ("s3:GetObject", "s3:PutObject"),
    "s3.DeleteObject": ("s3:DeleteObject",),
    "s3.DeleteObjects": ("s3:DeleteObject",),
    "s3.GetObject": ("s3:GetObject",),
    "s3.HeadBucket": ("s3:ListBucket",),
    "s3.HeadObject": ("s3:GetObject",),
    "s3.ListObjects": ("s3:ListBucket",),
    "s3.ListObjectsV2": ("s3:ListBucket",),
    "s3.PutObject": ("s3:PutObject",),
}

# How main.tf names each resource in a policy statement.
RESOURCE_EXPRESSIONS = {
    "aws_dynamodb_table.this.arn": "table",
    '"${aws_dynamodb_table.this.arn}/index/runs"': "index/runs",
    '"${aws_dynamodb_table.this.arn}/index/idle"': "index/idle",
    "local.object_arn_pattern": "objects",
    "aws_s3_bucket.this.arn": "bucket",
}

# How main.tf names the resource of each `dynamic "statement"` (its for_each), and whether
# the statement is there only with data subjects. The bucket's own KMS key is left out: S3
# uses it on the saver's behalf, the saver requests nothing of it.
DYNAMIC_RESOURCES = {
    "var.sealing_kms_key_arn == null ? [] : [var.sealing_kms_key_arn]": ("sealing key", False),
    "local.subjects ? [aws_dynamodb_table.this.arn] : []": ("table", True),
    "aws_dynamodb_table.keys[*].arn": ("key table", True),
}
NOT_REQUESTED = {"var.kms_key_arn == null ? [] : [var.kms_key_arn]"}

Grant = tuple[str, str]  # (IAM action, resource kind)


class Recorder:
    """Every request the default boto3 session's clients send, as (IAM action, resource)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.grants: set[Grant] = set()
        self.operations: set[str] = set()

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        operation = f"{model.service_model.service_name}.{model.name}"
        assert operation in OPERATION_ACTIONS, (
            f"the code sends {operation}: add its IAM action(s) to OPERATION_ACTIONS"
        )
        self.operations.add(operation)
        if operation.startswith("kms."):
            # Always the configured key, with this table's encryption context (the policy's
            # kms:EncryptionContext condition).
            assert params["KeyId"] == self.env["S3DYNAMO_KMS_KEY_ID"], params
            context = params["EncryptionContext"]
            assert context["s3dynamo:table"] == self.env["S3DYNAMO_TABLE"], params
            resource = "sealing key"
        elif operation.startswith("dynamodb."):
            tables = [params["TableName"]] if "TableName" in params else []
            tables += list(params.get("RequestItems", {}))
            for item in params.get("TransactItems", []):
                tables += [op["TableName"] for op in item.values()]
            # The data table, or (with data subjects) the key table, never both at once.
            kinds = {self.env["S3DYNAMO_TABLE"]: "table"}
            if "S3DYNAMO_KEY_TABLE" in self.env:
                kinds[self.env["S3DYNAMO_KEY_TABLE"]] = "key table"
            assert tables and len(set(tables)) == 1 and tables[0] in kinds, params
            resource = kinds[tables[0]]
            if "IndexName" in params:
                assert resource == "table", params
                resource = f"index/{params['IndexName']}"
        else:
            assert params["Bucket"] == self.env["S3DYNAMO_BUCKET"], params
            if operation in ("s3.ListObjects", "s3.ListObjectsV2", "s3.HeadBucket"):
                resource = "bucket"
                # The policy's s3:prefix condition: listings stay inside the key prefix.
                assert params.get("Prefix", "").startswith(PREFIX), params
            else:
                resource = "objects"
                keys = [params["Key"]] if "Key" in params else []
                keys += [o["Key"] for o in params.get("Delete", {}).get("Objects", [])]
                assert keys and all(k.startswith(PREFIX) for k in keys), params
        for action in _actions(operation, params):
            self.grants.add((action, resource))

    def take(self) -> set[Grant]:
        grants, self.grants = self.grants, set()
        return grants


class UploadCrash(Exception):
    """A process dying right after an object upload, before the write's commit."""


def _crash(**_: Any) -> None:
    raise UploadCrash()


TRANSACTION_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


def _actions(operation: str, params: dict[str, Any]) -> tuple[str, ...]:
    """The IAM actions a request needs: a TransactWriteItems needs the action of each
    item it holds (AWS's service authorization reference)."""
    if operation != "dynamodb.TransactWriteItems":
        return OPERATION_ACTIONS[operation]
    return tuple(sorted({TRANSACTION_ACTIONS[kind] for i in params["TransactItems"] for kind in i}))


def policy_grants(document: str, subjects: bool = False) -> set[Grant]:
    """(action, resource kind) pairs of the Allow statements of a policy document in
    main.tf, as a deployment without data subjects gets them (with `subjects`, as one
    declaring them does). `dynamic "statement"` blocks are read by their for_each
    (DYNAMIC_RESOURCES): the saver's own KMS key and, with subjects, their fences and key
    table; the bucket's KMS key (used by S3 on the saver's behalf, not requested by it) is
    left out."""
    [body] = blocks(
        strip_comments(MAIN_TF.read_text(encoding="utf-8")),
        rf'data\s+"aws_iam_policy_document"\s+"{document}"',
    )
    grants: set[Grant] = set()
    for statement in blocks(body, "statement"):
        effect = re.search(r'effect\s*=\s*"(\w+)"', statement)
        assert effect and effect.group(1) == "Allow", statement
        actions = _list(statement, "actions")
        resources = _list(statement, "resources")
        for expression in resources:
            assert expression in RESOURCE_EXPRESSIONS, (
                f"{document}: unknown resource {expression}; add it to RESOURCE_EXPRESSIONS"
            )
        grants |= {(a.strip('"'), RESOURCE_EXPRESSIONS[r]) for a in actions for r in resources}
    # Statements shared between policies live in documents of their own.
    shared_in = re.search(r"^\s*source_policy_documents\s*=", body, re.MULTILINE)
    for source in _list(body, "source_policy_documents") if shared_in else []:
        shared = re.fullmatch(r"data\.aws_iam_policy_document\.(\w+)\.json", source)
        assert shared, f"{document}: unknown source document {source}"
        grants |= policy_grants(shared.group(1), subjects)
    for dynamic in blocks(body, r'dynamic\s+"statement"'):
        for_each = re.search(r"^\s*for_each\s*=\s*(.*?)\s*$", dynamic, re.MULTILINE)
        assert for_each, dynamic
        if for_each.group(1) in NOT_REQUESTED:
            continue
        assert for_each.group(1) in DYNAMIC_RESOURCES, (
            f"{document}: unknown dynamic statement over {for_each.group(1)}; add it to "
            "DYNAMIC_RESOURCES"
        )
        resource, with_subjects = DYNAMIC_RESOURCES[for_each.group(1)]
        if with_subjects and not subjects:
            continue
        [content] = blocks(dynamic, "content")
        assert _list(content, "resources") == ["statement.value"], content
        grants |= {(a.strip('"'), resource) for a in _list(content, "actions")}
    return grants


def _list(statement: str, name: str) -> list[str]:
    match = re.search(rf"^\s*{name}\s*=\s*\[(.*?)\]", statement, re.MULTILINE | re.DOTALL)
    assert match, f"statement has no {name} list: {statement}"
    return [item.strip() for item in match.group(1).split(",") if item.strip()]


def _embed(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, float(t.count("a")), 0.5] for t in texts]


def test_policy_parser_reads_main_tf() -> None:
    grants = policy_grants("saver")
    assert ("dynamodb:Query", "table") in grants and ("s3:GetObject", "objects") in grants
    assert ("s3:ListBucket", "bucket") in grants  # from the shared object_listing document
    assert not {g for g in grants if g[1] == "key table"}
    assert ("dynamodb:GetItem", "key table") in policy_grants("saver", subjects=True)


def test_policies_grant_exactly_what_the_code_requests(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(function_env)
    # The session every client the saver builds comes from (a new one for this test).
    monkeypatch.setattr(aws_clients, "_session", None)
    aws_clients.session().register("before-parameter-build.*.*", recorder)

    # Runtime: the whole conversation, with values inline (the default) and all in S3,
    # without the object cache, as containers that did not write what they read.
    monkeypatch.setenv("S3DYNAMO_OBJECT_CACHE_BYTES", "0")
    for inline_max in ("8192", "0"):
        monkeypatch.setenv("S3DYNAMO_INLINE_MAX", inline_max)
        run_conversation(function_env, load_app().handler)
    # The scheduled collection runs on the agent's function, under the same role: a put
    # that dies after uploading its object leaves an intent and an orphan, which the
    # "collect" action deletes.
    crash = "crash-after-upload"
    aws_clients.session().register("after-call.s3.PutObject", _crash, unique_id=crash)
    try:
        with pytest.raises(UploadCrash):
            load_app().handler({"action": "start", "message": "hello"})
    finally:
        aws_clients.session().unregister("after-call.s3.PutObject", unique_id=crash)
    collected = load_app().handler({"action": "collect", "grace_seconds": 0})
    assert collected["ok"] and collected["objects_deleted"] >= 1, collected
    # The function deletes a thread a copy shares objects of (the copy made by an
    # operator, through clients of its own): the delete reads its loans' borrowings.
    lender = load_app().handler({"action": "start", "message": "hello"})["thread_id"]
    inspection_saver().copy_thread(lender, f"{lender}-copy")
    assert load_app().handler({"action": "delete", "thread_id": lender})["deleted"]
    runtime = recorder.take()
    monkeypatch.delenv("S3DYNAMO_OBJECT_CACHE_BYTES")

    # Maintenance: two threads, one created by a known run; then every operation.
    app = load_app()
    graph = app.get_graph()
    run_id = str(uuid.uuid4())
    graph.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "m1"}})
    graph.invoke(
        {"messages": [HumanMessage("refund A-1001")]},
        {"configurable": {"thread_id": "m2"}, "run_id": run_id},
    )
    saver = app._saver
    recorder.take()
    assert len(list(saver.list(None))) > 0
    saver.copy_thread("m1", "m3")
    saver.prune(["m3"], strategy="keep_latest")
    saver.delete_for_runs([run_id])
    # A writes record LangGraph left for a checkpoint never committed, a second old.
    m1 = saver.get_tuple({"configurable": {"thread_id": "m1"}})
    assert m1 is not None
    leftover = {"configurable": {**m1.config["configurable"], "checkpoint_id": str(uuid.uuid4())}}
    saver.store.clock = lambda: time.time() - 1
    saver.put_writes(leftover, [("messages", [])], "task")
    rotated = S3DynamoSaver.from_env()
    assert rotated.ops.rotate_key() == "kms-2"
    assert rotated.ops.reencrypt() > 0
    full = rotated.ops.plan_garbage_collection(grace=timedelta(0))
    full.execute()
    assert full.writes_deleted == 1
    rotated.ops.plan_garbage_collection(["m1"], grace=timedelta(0)).execute()
    rotated.ops.plan_incremental_garbage_collection(grace=timedelta(0)).execute()
    rotated.delete_thread("m1")
    maintenance = recorder.take()

    # Long-term memory at run time: a fresh process (cold start) using the Store and the
    # node cache, small values and large ones.
    monkeypatch.delenv("S3DYNAMO_INLINE_MAX")
    store = S3DynamoStore.from_env()
    store.put(("users", "u1"), "small", {"text": "likes tea"})
    store.put(("users", "u1"), "large", {"text": os.urandom(20_000).hex()})
    assert store.get(("users", "u1"), "large") is not None
    assert len(store.search(("users",), filter={"text": "likes tea"})) == 1
    assert store.list_namespaces() == [("users", "u1")]
    store.delete(("users", "u1"), "large")
    # Declared filter fields and semantic search: tokens and a vector log entry beside
    # each put, a search's index built, read and compacted (a segment object).
    indexed = S3DynamoStore.from_env(
        filter_fields=["kind"], index={"dims": 4, "embed": _embed, "fields": ["text"]}
    )
    for i in range(120):
        indexed.put(("users", "u2"), f"m{i}", {"text": f"tea {i}", "kind": "fact"})
    assert len(indexed.search(("users", "u2"), filter={"kind": "fact"}, limit=5)) == 5
    assert len(indexed.search(("users", "u2"), query="tea", limit=5)) == 5
    for i in range(120, 400):
        indexed.put(("users", "u2"), f"m{i}", {"text": f"tea {i}", "kind": "fact"})
    assert len(indexed.search(("users", "u2"), query="tea", limit=5)) == 5  # compacts
    indexed.delete(("users", "u2"), "m0")
    # Another process reads what this one wrote and cached: the large value, the segments.
    fresh = S3DynamoStore.from_env(index={"dims": 4, "embed": _embed, "fields": ["text"]})
    assert fresh.get(("users", "u1"), "small") is not None
    assert len(fresh.search(("users", "u2"), query="tea", limit=5)) == 5
    cache: S3DynamoCache[Any] = S3DynamoCache.from_env()
    cache.set({(("node",), "k"): ("v", 60)})
    assert cache.get([(("node",), "k")]) == {(("node",), "k"): "v"}
    cache.clear()
    memory = recorder.take()

    # Retention: the scheduled handler, once a thread with objects has been idle for over
    # 2 s (4 s on: stamps are whole seconds, and S3 modification times may be rounded),
    # beside a Store item whose TTL (0.02 minutes) has passed.
    monkeypatch.setenv("S3DYNAMO_INLINE_MAX", "0")
    graph = load_app().get_graph()
    graph.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "r1"}})
    S3DynamoStore.from_env().put(("users", "gone"), "k", {"v": 1}, ttl=0.02)
    time.sleep(4.1)
    monkeypatch.setenv("S3DYNAMO_RETENTION", "2s")
    recorder.take()
    swept = load_app().expire({}, None)  # the first sweep: the Scan, and the cursor
    retention = recorder.take()
    assert swept["removed_threads"] >= 1 and swept["objects_deleted"] >= 1, swept
    graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "r3"}})
    time.sleep(4.1)
    recorder.take()
    again = load_app().expire({}, None)  # the next: the idle index after the cursor
    retention |= recorder.take()
    assert again["removed_threads"] >= 1, again
    assert swept["memory_items_expired"] == 1, swept

    # Retention with keep_latest: it opens the latest checkpoint of each idle thread (its
    # metadata says which ancestors DeltaChannel needs), so it reads what delete does not.
    monkeypatch.delenv("S3DYNAMO_RETENTION")
    graph = load_app().get_graph()
    for text in ("hello", "refund A-1001", "thanks"):
        graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "r2"}})
    time.sleep(4.1)
    monkeypatch.setenv("S3DYNAMO_RETENTION", "2s")
    monkeypatch.setenv("S3DYNAMO_RETENTION_STRATEGY", "keep_latest")
    r2 = {"configurable": {"thread_id": "r2"}}
    # First the last 2 checkpoints (S3DYNAMO_RETENTION_KEEP_LAST), then the latest alone.
    monkeypatch.setenv("S3DYNAMO_RETENTION_KEEP_LAST", "2")
    recorder.take()
    swept = load_app().expire({}, None)
    keep_latest = recorder.take()
    assert swept["pruned_threads"] >= 1 and swept["records_deleted"] >= 1, swept
    assert len(list(load_app().get_graph().get_state_history(r2))) == 2
    monkeypatch.delenv("S3DYNAMO_RETENTION_KEEP_LAST")
    recorder.take()  # the reader's requests: the agent's, not the job's
    swept = load_app().expire({}, None)
    keep_latest |= recorder.take()
    assert swept["pruned_threads"] >= 1 and swept["records_deleted"] >= 1, swept
    assert len(list(load_app().get_graph().get_state_history(r2))) == 1

    assert runtime, "no request was recorded: does the saver still use aws_clients.session()?"
    assert policy_grants("saver") == runtime, (
        f"terraform/main.tf saver policy: grants but never used "
        f"{sorted(policy_grants('saver') - runtime)}; used but not granted "
        f"{sorted(runtime - policy_grants('saver'))}"
    )
    assert policy_grants("maintenance") == maintenance, (
        f"terraform/main.tf maintenance policy: grants but never used "
        f"{sorted(policy_grants('maintenance') - maintenance)}; used but not granted "
        f"{sorted(maintenance - policy_grants('maintenance'))}"
    )
    assert policy_grants("retention") == retention, (
        f"terraform/main.tf retention policy: grants but never used "
        f"{sorted(policy_grants('retention') - retention)}; used but not granted "
        f"{sorted(retention - policy_grants('retention'))}"
    )
    assert policy_grants("memory") == memory, (
        f"terraform/main.tf memory policy: grants but never used "
        f"{sorted(policy_grants('memory') - memory)}; used but not granted "
        f"{sorted(memory - policy_grants('memory'))}"
    )
    both = retention | keep_latest
    assert policy_grants("retention_keep_latest") == both, (
        f"terraform/main.tf retention_keep_latest policy: grants but never used "
        f"{sorted(policy_grants('retention_keep_latest') - both)}; used but not granted "
        f"{sorted(both - policy_grants('retention_keep_latest'))}"
    )
    # What the function's role does not get, and why: listing every thread, re-sealing and
    # garbage collection scan the whole table; delete_for_runs queries the run index; only
    # rotation asks KMS for a new data key (the keyring was created by setup()).
    assert maintenance - runtime == {
        ("dynamodb:Scan", "table"),
        ("dynamodb:Query", "index/runs"),
        ("kms:GenerateDataKey", "sealing key"),
    }
    assert ("kms:Decrypt", "sealing key") in runtime


def test_subject_statements_grant_exactly_what_subjects_add(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With data subjects declared, as the module's `subject_field` and `subject_label`
    set the environment: what each job requests beyond the policy a deployment without
    subjects gets is exactly what the module's subject statements add to it (the fences
    in the data table, the key table), and everything it requests is granted."""
    env = {
        **function_env,
        "S3DYNAMO_SUBJECT_FIELD": "user_id",
        "S3DYNAMO_SUBJECT_LABEL": "1",
        "S3DYNAMO_KEY_TABLE": f"{function_env['S3DYNAMO_TABLE']}-subject-keys",
    }
    for name in ("S3DYNAMO_SUBJECT_FIELD", "S3DYNAMO_SUBJECT_LABEL", "S3DYNAMO_KEY_TABLE"):
        monkeypatch.setenv(name, env[name])
    inspection_saver().setup()  # the key table (Terraform's, in AWS)
    recorder = Recorder(env)
    monkeypatch.setattr(aws_clients, "_session", None)
    aws_clients.session().register("before-parameter-build.*.*", recorder)

    def turn(tid: str, text: str, run_id: str | None = None) -> None:
        """One turn of alice's thread `tid` in a new container."""
        config: dict[str, Any] = {"configurable": {"thread_id": tid, "user_id": "alice"}}
        if run_id:
            config["run_id"] = run_id
        load_app().get_graph().invoke({"messages": [HumanMessage(text)]}, config)

    # Runtime: alice's first write (her fence read, her key made, the commit checking the
    # fence), a turn and the history in other containers (her key read), the delete; with
    # values inline and in S3.
    monkeypatch.setenv("S3DYNAMO_OBJECT_CACHE_BYTES", "0")
    for inline_max in ("8192", "0"):
        monkeypatch.setenv("S3DYNAMO_INLINE_MAX", inline_max)
        tid = f"alice-{inline_max}"
        turn(tid, "hello")
        turn(tid, "thanks")
        history = load_app().handler({"action": "history", "thread_id": tid}, None)
        assert history["ok"] and len(history["checkpoints"]) > 2, history
        assert load_app().handler({"action": "delete", "thread_id": tid}, None)["deleted"]
    runtime = recorder.take()
    assert ("dynamodb:PutItem", "key table") in runtime  # the subjects were in play
    monkeypatch.delenv("S3DYNAMO_OBJECT_CACHE_BYTES")

    # Maintenance, over alice's threads.
    run_id = str(uuid.uuid4())
    turn("m1", "hello")
    turn("m2", "hello", run_id)
    recorder.take()
    saver = S3DynamoSaver.from_env()
    assert len(list(saver.list(None))) > 0
    saver.copy_thread("m1", "m3")
    saver.prune(["m3"], strategy="keep_latest")
    saver.delete_for_runs([run_id])
    rotated = S3DynamoSaver.from_env()
    assert rotated.ops.rotate_key() == "kms-2"
    assert rotated.ops.reencrypt() > 0
    rotated.ops.plan_garbage_collection(grace=timedelta(0)).execute()
    rotated.delete_thread("m1")
    maintenance = recorder.take()

    # Long-term memory, in a namespace whose position 1 names alice.
    store = S3DynamoStore.from_env()
    store.put(("users", "alice", "memories"), "small", {"text": "likes tea"})
    store.put(("users", "alice", "memories"), "large", {"text": os.urandom(20_000).hex()})
    assert S3DynamoStore.from_env().get(("users", "alice", "memories"), "large") is not None
    store.put(("users", "bob", "memories"), "small", {"text": "likes coffee"})  # his key made
    memory = recorder.take()

    # alice's export and erasure, and the records an auditor reads (maintenance's), in a
    # deployment whose subject field was declared after its first threads: its catalog
    # is built first, as the error of an erasure before it says, and its data sealed.
    eraser = S3DynamoSaver.from_env()
    eraser.ops.catalog.build()
    eraser.ops.subjects.plan_build().execute()
    assert any(r["type"] == "store_item" for r in eraser.export_subject("alice"))
    assert eraser.erase_subject("alice")["threads"] >= 2
    assert len(eraser.ops.subjects.erasures()) == 1
    maintenance |= recorder.take()

    # Retention of alice's idle threads: keep_latest (which opens their latest
    # checkpoints' metadata), then delete.
    monkeypatch.setenv("S3DYNAMO_INLINE_MAX", "0")
    for text in ("hello", "thanks", "bye"):
        turn("r1", text)
    time.sleep(4.1)  # stamps are whole seconds: idle for over 2 s
    monkeypatch.setenv("S3DYNAMO_RETENTION", "2s")
    monkeypatch.setenv("S3DYNAMO_RETENTION_STRATEGY", "keep_latest")
    recorder.take()
    swept = load_app().expire({}, None)
    keep_latest = recorder.take()
    assert swept["pruned_threads"] >= 1, swept
    monkeypatch.delenv("S3DYNAMO_RETENTION_STRATEGY")
    swept = load_app().expire({}, None)
    retention = recorder.take()
    assert swept["removed_threads"] >= 1, swept

    for document, requested in (
        ("saver", runtime),
        ("maintenance", maintenance),
        ("memory", memory),
        ("retention", retention),
        ("retention_keep_latest", keep_latest | retention),
    ):
        without, granted = policy_grants(document), policy_grants(document, subjects=True)
        assert requested <= granted, (
            f"terraform/main.tf {document} policy with data subjects: used but not granted "
            f"{sorted(requested - granted)}"
        )
        assert requested - without == granted - without, (
            f"terraform/main.tf {document} policy: its subject statements grant "
            f"{sorted(granted - without)}; subjects add to its requests "
            f"{sorted(requested - without)}"
        )


# --------------------------------------------------------------------------------------
# terraform apply of the example against moto server, then the handler against it
# --------------------------------------------------------------------------------------

MOTO_PROVIDER = """
provider "aws" {{
  region                      = "{region}"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  skip_requesting_account_id  = true
  s3_use_path_style           = true

  endpoints {{
{endpoints}
  }}
}}
"""


@needs_terraform
@needs_provider
@pytest.mark.skipif(
    os.environ.get("S3DYNAMO_TF_APPLY") != "1",
    reason="terraform apply of the example on moto server takes about a minute; "
    "run it with S3DYNAMO_TF_APPLY=1",
)
def test_terraform_apply_example_on_moto(
    moto_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "terraform"
    shutil.copytree(ROOT / "terraform", copy, ignore=shutil.ignore_patterns(".terraform*"))
    example = copy / "examples" / "lambda_agent"
    # An override file (merged into the provider block) points every service at moto.
    services = ("dynamodb", "events", "iam", "kms", "lambda", "logs", "s3", "sts")
    endpoints = "\n".join(f'    {s} = "{moto_server}"' for s in services)
    (example / "moto_override.tf").write_text(
        MOTO_PROVIDER.format(region=REGION, endpoints=endpoints)
    )
    # moto stores the function's code but does not run it: the test runs the handler itself
    # with the configuration Terraform created, so app.py alone is a sufficient zip.
    package = tmp_path / "app.zip"
    with zipfile.ZipFile(package, "w") as zf:
        zf.write(APP, "app.py")
    suffix = uuid.uuid4().hex[:8]
    variables = {
        "name": f"agent-{suffix}",
        "table_name": f"agent-{suffix}",
        "bucket_name": f"agent-{suffix}",
        "deletion_protection": "false",
        "package_path": str(package),
    }
    init = terraform(
        ["init", "-backend=false", f"-plugin-dir={PLUGIN_DIR}", "-input=false"], example, tmp_path
    )
    assert init.returncode == 0, init.stdout + init.stderr
    var_args = [arg for k, v in variables.items() for arg in ("-var", f"{k}={v}")]
    apply = terraform(["apply", "-auto-approve", "-input=false", *var_args], example, tmp_path)
    assert apply.returncode == 0, apply.stdout[-3000:] + apply.stderr[-3000:]
    output = terraform(["output", "-json"], example, tmp_path)
    outputs = {k: v["value"] for k, v in json.loads(output.stdout).items()}

    session = boto3.session.Session(
        region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    lam = session.client("lambda", endpoint_url=moto_server)
    iam = session.client("iam", endpoint_url=moto_server)
    config = lam.get_function_configuration(FunctionName=outputs["function_name"])
    assert (config["Runtime"], config["Handler"], config["Architectures"]) == (
        "python3.12",
        "app.handler",
        ["x86_64"],
    )
    assert config["KMSKeyArn"].startswith("arn:aws:kms:")
    environment = config["Environment"]["Variables"]
    assert environment == outputs["environment"]
    assert environment["S3DYNAMO_KMS_KEY_ID"].startswith("arn:aws:kms:")
    assert environment["S3DYNAMO_TABLE"] == outputs["table_name"] == variables["table_name"]

    # The role: the saver's policy, as main.tf renders it, and its own log group; no more.
    role = outputs["role_name"]
    [attached] = iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
    version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=attached["PolicyArn"], VersionId=version)
    table_arn = f"arn:aws:dynamodb:{REGION}:123456789012:table/{variables['table_name']}"
    bucket_arn = f"arn:aws:s3:::{variables['bucket_name']}"
    kinds = {table_arn: "table", bucket_arn: "bucket", f"{bucket_arn}/{PREFIX}*": "objects"}
    kinds[environment["S3DYNAMO_KMS_KEY_ID"]] = "sealing key"
    rendered: set[Grant] = set()
    for statement in document["PolicyVersion"]["Document"]["Statement"]:
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        resources = statement["Resource"]
        resources = resources if isinstance(resources, list) else [resources]
        rendered |= {(a, kinds[r]) for a in actions for r in resources}
    assert rendered == policy_grants("saver")
    assert iam.list_role_policies(RoleName=role)["PolicyNames"] == ["logs"]

    # The handler, cold, with exactly the function's environment (plus the endpoints and
    # test credentials that stand in for AWS).
    function_env = {
        **environment,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL_S3": moto_server,
        "AWS_ENDPOINT_URL_DYNAMODB": moto_server,
        "AWS_ENDPOINT_URL_KMS": moto_server,
    }
    for name, value in function_env.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN", "S3DYNAMO_INLINE_MAX"):
        monkeypatch.delenv(name, raising=False)
    run_conversation(function_env, cold_invoker(function_env), full=False)

    # The retention job: same zip and environment, handler app.expire, the module's
    # retention policy, run daily by an EventBridge rule; a dry run with its settings.
    job = lam.get_function_configuration(FunctionName=outputs["retention_function_name"])
    assert (job["Handler"], job["Timeout"]) == ("app.expire", 900)
    assert job["Environment"]["Variables"] == environment
    assert environment["S3DYNAMO_RETENTION"] == "30d"
    [job_policy] = iam.list_attached_role_policies(RoleName=job["Role"].rsplit("/", 1)[1])[
        "AttachedPolicies"
    ]
    assert job_policy["PolicyName"].startswith(f"s3dynamo-{variables['table_name']}-ret-")
    events = session.client("events", endpoint_url=moto_server)
    rule = events.describe_rule(Name=outputs["retention_function_name"])
    assert rule["ScheduleExpression"] == "rate(1 day)"
    [target] = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
    assert target["Arn"] == job["FunctionArn"]
    swept = load_app().expire({"dry_run": True}, None)
    assert swept["ok"] and swept["dry_run"] and swept["removed_threads"] == 0

    # The collection: the agent's own function (its role), daily, with {"action": "collect"}.
    rule = events.describe_rule(Name=f"{outputs['function_name']}-collection")
    assert rule["ScheduleExpression"] == "rate(1 day)"
    [target] = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
    assert target["Arn"] == config["FunctionArn"]
    assert json.loads(target["Input"]) == {"action": "collect"}
    collected = load_app().handler({"action": "collect", "dry_run": True}, None)
    assert collected["ok"] and collected["dry_run"] and collected["objects_deleted"] == 0
