"""The testing kit (langgraph.checkpoint.s3dynamo.testing) as users meet it: a user's
project in a scratch directory runs its own tests on the shipped fixtures, and the
fixtures themselves are sealed, fresh per test, sync and async, and keep every client
away from real AWS."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.testing import Sandbox, moto_saver
from tests.support.scenarios import chat_graph

pytest_plugins = ["langgraph.checkpoint.s3dynamo.testing"]

SANDBOXES = ["s3dynamo_sandbox", "s3dynamo_server_sandbox"]

# Where nothing listens: a client that kept this endpoint would fail at once.
DEAD_ENDPOINT = "http://127.0.0.1:9"


# ------------------------------------------------------------ a user's own project

USER_AGENT = """
from typing import Annotated

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def reply(state: State) -> dict:
    said = [m.content for m in state["messages"] if m.type == "human"]
    return {"messages": [AIMessage("you said: " + ", ".join(said))]}


def build_agent() -> StateGraph:
    return StateGraph(State).add_node(reply).add_edge(START, "reply")
"""

USER_CONFTEST = 'pytest_plugins = ["langgraph.checkpoint.s3dynamo.testing"]\n'

USER_TEST = """
import asyncio
from agent import build_agent

def test_agent_remembers(s3dynamo_saver):
    graph = build_agent().compile(checkpointer=s3dynamo_saver)
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [("user", "hi")]}, config)
    out = asyncio.run(graph.ainvoke({"messages": [("user", "again")]}, config))
    assert out["messages"][-1].content == "you said: hi, again"

def test_agent_over_http(s3dynamo_server_saver):
    graph = build_agent().compile(checkpointer=s3dynamo_server_saver)
    out = graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})
    assert out["messages"][-1].content == "you said: hi"
"""

# An `async def` test, as pytest-asyncio or anyio users write them (anyio's plugin comes
# with LangGraph's own dependencies; the kit needs neither).
USER_ASYNC_TEST = """
import pytest
from agent import build_agent

@pytest.mark.anyio
async def test_agent_async(s3dynamo_saver):
    graph = build_agent().compile(checkpointer=s3dynamo_saver)
    config = {"configurable": {"thread_id": "t1"}}
    await graph.ainvoke({"messages": [("user", "one")]}, config)
    out = await graph.ainvoke({"messages": [("user", "two")]}, config)
    assert out["messages"][-1].content == "you said: one, two"
"""


def test_user_project_runs_its_tests_on_the_fixtures(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(USER_AGENT)
    (tmp_path / "conftest.py").write_text(USER_CONFTEST)
    (tmp_path / "test_agent.py").write_text(USER_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    expected = 2
    if importlib.util.find_spec("anyio") is not None:
        (tmp_path / "test_agent_async.py").write_text(USER_ASYNC_TEST)
        expected += 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # A developer's shell pointed somewhere else: the fixtures must not go there.
    env.update(
        AWS_ENDPOINT_URL=DEAD_ENDPOINT,
        AWS_ENDPOINT_URL_S3=DEAD_ENDPOINT,
        AWS_ENDPOINT_URL_DYNAMODB=DEAD_ENDPOINT,
        AWS_PROFILE="no-such-profile",
    )
    env.pop("AWS_ACCESS_KEY_ID", None)
    env.pop("AWS_SECRET_ACCESS_KEY", None)
    assert f"{expected} passed" in _users_pytest(tmp_path, env)


# The README's Lambda pattern: the saver built and primed when the module is imported,
# here at collection, before any fixture has imported moto.
USER_PRIMED_AGENT = (
    USER_AGENT
    + """
from langgraph.checkpoint.s3dynamo import S3DynamoSaver

saver = S3DynamoSaver.from_env()
saver.prime()
"""
)

USER_PRIMED_TEST = """
from agent import build_agent
from langgraph.checkpoint.s3dynamo import S3DynamoSaver

def turn(text):
    graph = build_agent().compile(checkpointer=S3DynamoSaver.from_env())
    out = graph.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": "t"}})
    return out["messages"][-1].content

def test_1_over_http(s3dynamo_server_saver):
    assert turn("hi") == "you said: hi"

def test_2_in_process(s3dynamo_saver):
    assert turn("hello") == "you said: hello"
"""


def test_a_saver_primed_at_import_leaves_the_fixtures_clients_on_moto(tmp_path: Path) -> None:
    """A developer's shell holds real credentials and their deployment's settings; the
    agent module builds and primes its saver at import, before moto is imported. The
    savers the tests build from the environment still go to moto, with its credentials:
    every request that would leave the machine meets a dead proxy, and none does."""
    (tmp_path / "agent.py").write_text(USER_PRIMED_AGENT)
    (tmp_path / "conftest.py").write_text(USER_CONFTEST)
    (tmp_path / "test_agent.py").write_text(USER_PRIMED_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AWS_"))}
    env.update(
        AWS_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="AKIADEVELOPERSOWNKEY",
        AWS_SECRET_ACCESS_KEY="the developer's secret",
        HTTPS_PROXY=DEAD_ENDPOINT,
        S3DYNAMO_TABLE="agent-checkpoints",
        S3DYNAMO_BUCKET="agent-checkpoints-bucket",
        S3DYNAMO_KEYS=f"k1:{base64.b64encode(os.urandom(32)).decode()}",
        S3DYNAMO_SECRET="s" * 32,
    )
    assert "2 passed" in _users_pytest(tmp_path, env)


def _users_pytest(folder: Path, env: dict[str, str], *args: str) -> str:
    """The user's pytest run in `folder`, which must pass: what it printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


# A test that fixes uuid.uuid4 for repeatable ids, run alone in its process: the
# saver's fixture asked for first makes moto's first request, which draws from it.
USER_IDS_TEST = """
import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from agent import build_agent

def fix_ids(monkeypatch):
    ids = (uuid.UUID(f"00000000-0000-4000-8000-{i:012}") for i in range(10000))
    monkeypatch.setattr(uuid, "uuid4", lambda: next(ids))

@pytest.fixture
def fixed_ids(monkeypatch):
    fix_ids(monkeypatch)

def message_ids(saver):
    graph = build_agent().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [("user", "hi")]}, config)
    out = graph.invoke({"messages": [("user", "again")]}, config)
    return [m.id for m in out["messages"]]

def test_ids_as_in_memory(s3dynamo_saver, fixed_ids, monkeypatch):
    ours = message_ids(s3dynamo_saver)
    fix_ids(monkeypatch)  # the same ids again, for LangGraph's own saver
    assert ours == message_ids(InMemorySaver()) == [
        f"00000000-0000-4000-8000-{i:012}" for i in range(4)
    ]
"""


def test_a_users_fixed_uuid4_ids_are_the_same_as_with_langgraphs_saver(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(USER_AGENT)
    (tmp_path / "conftest.py").write_text(USER_CONFTEST)
    (tmp_path / "test_ids.py").write_text(USER_IDS_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    assert "1 passed" in _users_pytest(tmp_path, env, "test_ids.py")


# ----------------------------------------------------------------- the fixtures


def chat(saver: S3DynamoSaver, thread_id: str, *texts: str) -> Any:
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": thread_id}}
    for text in texts:
        graph.invoke({"messages": [HumanMessage(text)]}, config)
    return graph.get_state(config)


class Upload(TypedDict):
    data: bytes
    note: str


def upload_graph(saver: S3DynamoSaver) -> Any:
    """Keeps what it is given; random bytes survive compression verbatim, so only
    sealing can keep them out of storage."""
    builder = StateGraph(Upload)
    builder.add_node("receive", lambda state: {"note": state["note"] + " (received)"})
    builder.add_edge(START, "receive")
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("sandbox_fixture", SANDBOXES)
def test_nothing_stored_in_plaintext(request: pytest.FixtureRequest, sandbox_fixture: str) -> None:
    sandbox: Sandbox = request.getfixturevalue(sandbox_fixture)
    secret_text = f"the vault code is {uuid.uuid4().hex}"
    thread_id = f"customer-{uuid.uuid4().hex}"
    data = os.urandom(20_000)
    # Messages inline in DynamoDB; a value too large for the item in S3; every value in S3.
    chat(sandbox.saver(), thread_id, secret_text, "a" * 20_000 + secret_text)
    for saver, tid in ((sandbox.saver(), thread_id), (sandbox.saver(inline_max=0), "s3-only")):
        upload_graph(saver).invoke(
            {"data": data, "note": secret_text}, {"configurable": {"thread_id": tid}}
        )
    assert sandbox.s3.list_objects_v2(Bucket=sandbox.bucket)["KeyCount"] > 0

    stored = sandbox.stored_bytes()
    assert stored
    needles = [secret_text.encode(), thread_id.encode(), b"vault", b"customer-", b"messages"]
    needles += [data[i : i + 32] for i in range(0, len(data), 4000)]
    for needle in needles:
        assert not [blob for blob in stored if needle in blob], needle

    # The inspection does see what is stored: unsealed, the random bytes show up. (On
    # storage of its own: the sealed deployment refuses a plaintext saver.)
    plain = Sandbox(endpoint_url=sandbox.endpoint_url)
    try:
        upload_graph(plain.saver(sealed=False)).invoke(
            {"data": data, "note": "plain"}, {"configurable": {"thread_id": "plain"}}
        )
        assert any(data[:32] in blob for blob in plain.stored_bytes())
    finally:
        if plain.endpoint_url:
            plain.delete()


SEEN: dict[str, tuple[str, str]] = {}


@pytest.mark.parametrize("sandbox_fixture", SANDBOXES)
def test_fresh_per_test_first(request: pytest.FixtureRequest, sandbox_fixture: str) -> None:
    sandbox: Sandbox = request.getfixturevalue(sandbox_fixture)
    state = chat(sandbox.saver(), "shared-thread", "left behind")
    assert state.values["messages"][0].content == "left behind"
    # Stored, not only held by this saver: another saver on the sandbox reads it.
    assert sandbox.saver().get_tuple({"configurable": {"thread_id": "shared-thread"}})
    SEEN[sandbox_fixture] = (sandbox.table, sandbox.secret)


@pytest.mark.parametrize("sandbox_fixture", SANDBOXES)
def test_fresh_per_test_second(request: pytest.FixtureRequest, sandbox_fixture: str) -> None:
    sandbox: Sandbox = request.getfixturevalue(sandbox_fixture)
    if sandbox_fixture not in SEEN:
        pytest.skip("runs after test_fresh_per_test_first")
    table, secret = SEEN[sandbox_fixture]
    assert (sandbox.table, sandbox.secret) != (table, secret)
    saver = sandbox.saver()
    assert saver.get_tuple({"configurable": {"thread_id": "shared-thread"}}) is None
    assert list(saver.list(None)) == []
    # The first test's table is gone, not just out of sight.
    assert table not in sandbox.dynamodb.list_tables()["TableNames"]


@pytest.mark.parametrize("saver_fixture", ["s3dynamo_saver", "s3dynamo_server_saver"])
def test_sync_async_and_from_env_share_a_thread(
    request: pytest.FixtureRequest, saver_fixture: str
) -> None:
    saver: S3DynamoSaver = request.getfixturevalue(saver_fixture)
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": "mixed"}}
    graph.invoke({"messages": [HumanMessage("sync")]}, config)
    out = asyncio.run(graph.ainvoke({"messages": [HumanMessage("async")]}, config))
    assert out["messages"][-1].content == "turn 2; heard: sync / async"

    # Code under test that builds its own saver from the environment gets this storage.
    from_env = chat_graph(S3DynamoSaver.from_env())
    assert from_env.get_state(config).values["turns"] == 2


@pytest.fixture
def hostile_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell configured for somewhere else."""
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.setenv(var, DEAD_ENDPOINT)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "stale")
    monkeypatch.setenv("LANGGRAPH_AES_KEY", "0" * 32)
    # Settings of the developer's own deployment, which `from_env` would otherwise take.
    monkeypatch.setenv("S3DYNAMO_REGION", "eu-west-1")
    monkeypatch.setenv("S3DYNAMO_PLAINTEXT", "1")
    monkeypatch.setenv("S3DYNAMO_SUBJECT_FIELD", "user_id")


def test_fixture_replaces_the_environment(hostile_env: None, s3dynamo_sandbox: Sandbox) -> None:
    s3dynamo_sandbox.setup()
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
        assert var not in os.environ
    assert "AWS_PROFILE" not in os.environ and "LANGGRAPH_AES_KEY" not in os.environ
    state = chat(S3DynamoSaver.from_env(), "t", "hello")
    assert state.values["turns"] == 1
    assert sandbox_has_thread(s3dynamo_sandbox, "t")


def test_server_fixture_points_the_environment_at_loopback(
    hostile_env: None, s3dynamo_server_sandbox: Sandbox
) -> None:
    s3dynamo_server_sandbox.setup()
    url = s3dynamo_server_sandbox.endpoint_url
    assert url is not None and url.startswith("http://127.0.0.1:") and url != DEAD_ENDPOINT
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
        assert os.environ[var] == url
    chat(S3DynamoSaver.from_env(), "t", "hello")
    assert sandbox_has_thread(s3dynamo_server_sandbox, "t")


def sandbox_has_thread(sandbox: Sandbox, thread_id: str) -> bool:
    saver = sandbox.saver(setup=False)
    return saver.get_tuple({"configurable": {"thread_id": thread_id}}) is not None


def test_moto_saver_without_pytest_restores_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", DEAD_ENDPOINT)
    monkeypatch.setenv("AWS_PROFILE", "mine")
    monkeypatch.delenv("S3DYNAMO_TABLE", raising=False)
    with moto_saver() as saver:
        assert "AWS_ENDPOINT_URL_S3" not in os.environ
        assert os.environ["S3DYNAMO_TABLE"] == saver.settings.table
        assert chat(saver, "t", "hi").values["turns"] == 1
    assert os.environ["AWS_ENDPOINT_URL_S3"] == DEAD_ENDPOINT
    assert os.environ["AWS_PROFILE"] == "mine"
    assert "S3DYNAMO_TABLE" not in os.environ


def test_only_loopback_endpoints() -> None:
    for url in ("https://dynamodb.us-east-1.amazonaws.com", "http://10.0.0.5:5000"):
        with pytest.raises(ValueError, match="loopback"):
            Sandbox(endpoint_url=url)
    script = textwrap.dedent("""
        from langgraph.checkpoint.s3dynamo.testing import moto_saver
        with moto_saver("http://192.0.2.1:5000"):
            pass
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode != 0 and "loopback" in proc.stderr


def test_sandbox_with_an_endpoint_per_service(
    s3dynamo_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for DynamoDB and S3 served by two local programs (both moto here)."""
    sandbox = Sandbox(dynamodb_endpoint_url=s3dynamo_server, s3_endpoint_url=s3dynamo_server)
    env = sandbox.environment()
    assert env["AWS_ENDPOINT_URL_DYNAMODB"] == env["AWS_ENDPOINT_URL_S3"] == s3dynamo_server
    for var, value in env.items():
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    try:
        assert chat(sandbox.saver(), "t", "hi").values["turns"] == 1
        assert chat(S3DynamoSaver.from_env(), "t", "again").values["turns"] == 2
    finally:
        sandbox.delete()
