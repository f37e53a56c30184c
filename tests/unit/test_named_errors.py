"""Errors a new user meets in a first hour, each named: what came, what was expected and
the fix, raised before anything is written (issue 28, part 4). On in-memory ports; the
AWS error translation is tested on moto and stubbed botocore in tests/aws/test_named_errors.py.
"""

from __future__ import annotations

import base64
import os
import threading
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import (
    DeploymentMismatchError,
    InvalidConfigError,
    S3DynamoSaver,
    Settings,
    ValueNotSerializableError,
)
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.layout import deployment_pk
from tests.support.savers import MemorySaver, thread_config

KEY_1, KEY_0 = os.urandom(32), os.urandom(32)
SECRET = "a naming secret of 32 characters"


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def saver_on(
    index: MemoryIndex | None = None, objects: MemoryObjects | None = None, **settings: Any
) -> MemorySaver:
    """A saver on in-memory ports with no setup(): nothing is written until it writes."""
    index, objects = index or MemoryIndex(), objects or MemoryObjects()
    settings.setdefault("keys", {"k1": KEY_1})
    settings.setdefault("secret", SECRET)
    saver = MemorySaver(index=index, object_store=objects, **settings)
    saver.index, saver.objects = index, objects
    return saver


def writes_of(saver: MemorySaver) -> dict[str, int]:
    """Every write request either port received."""
    calls = {**saver.index.calls, **{f"s3.{k}": n for k, n in saver.objects.calls.items()}}
    return {k: n for k, n in calls.items() if not k.startswith(("query", "get", "s3.get"))}


def put_value(saver: S3DynamoSaver, tid: str, value: Any) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notes": "fine", "tool": value}
    checkpoint["channel_versions"] = {"notes": "1", "tool": "1"}
    config = thread_config(tid)
    config["configurable"]["checkpoint_ns"] = ""
    return saver.put(
        config, checkpoint, {"source": "input", "step": -1}, {"notes": "1", "tool": "1"}
    )


# ------------------------------------------------ 1. keys in S3DYNAMO_KEYS' form


def test_keys_in_the_environment_form_are_the_keys_the_environment_gives() -> None:
    spec = f"k1:{b64(KEY_1)},k0:{b64(KEY_0)}"
    saver = saver_on(keys=spec)
    from_env = Settings.from_env({"S3DYNAMO_KEYS": spec, "S3DYNAMO_SECRET": SECRET})
    assert saver.settings.keys == from_env.keys
    assert saver.settings.keys is not None
    assert saver.settings.keys.active == "k1"
    assert dict(saver.settings.keys.keys) == {"k1": KEY_1, "k0": KEY_0}
    assert saver_on(keys=spec, active_key="k0").settings.keys.active == "k0"  # type: ignore[union-attr]

    # What a saver given the text wrote, a saver given the mapping reads, and back.
    put_value(saver, "t", "hello")
    same = saver_on(saver.index, saver.objects, keys={"k1": KEY_1, "k0": KEY_0})
    tup = same.get_tuple(thread_config("t"))
    assert tup is not None and tup.checkpoint["channel_values"]["tool"] == "hello"


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        (
            "k1",
            r"keys \(S3DYNAMO_KEYS' form\): keyring entry 'k1'\.\.\. has no id: "
            "expected 'id:base64key'",
        ),
        (
            f"k1:{b64(KEY_1)[:-4]}",
            r"keys \(S3DYNAMO_KEYS' form\): key 'k1' is 30 bytes; AES-256 needs exactly 32",
        ),
        ("k1:not base64!", r"keyring entry 'k1': key is not valid base64"),
        (
            {"k1": b64(KEY_1)},
            r"keys\['k1'\] is str; a mapping must hold raw 32-byte keys .* keys='k1:<base64>'",
        ),
        (
            42,
            r"keys is int; expected keys as 'id:base64key\[,id:base64key\.\.\.\]' "
            r"\(S3DYNAMO_KEYS' form\)",
        ),
    ],
    ids=["no id", "short key", "not base64", "base64 text in a mapping", "an int"],
)
def test_keys_in_another_form_are_refused_by_name(keys: Any, named: str) -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    with pytest.raises(InvalidConfigError, match=named):
        S3DynamoSaver(index=index, object_store=objects, keys=keys, secret=SECRET)
    assert not index.calls and not objects.calls


# ------------------------------------------------------ 2. a naming secret's length


@pytest.mark.parametrize("secret", ["abc", b"fifteen bytes!!", "é" * 7])
def test_a_short_naming_secret_is_refused_with_how_to_make_one(secret: str | bytes) -> None:
    size = len(secret.encode() if isinstance(secret, str) else secret)
    with pytest.raises(InvalidConfigError) as raised:
        saver_on(secret=secret)
    message = str(raised.value)
    assert (
        f"the naming secret (secret=, S3DYNAMO_SECRET) is {size} bytes; expected at least 16"
        in message
    )
    assert "secrets.token_urlsafe(32)" in message
    with pytest.raises(InvalidConfigError, match=f"is {size} bytes; expected at least 16"):
        Settings.from_env(
            {
                "S3DYNAMO_KEYS": f"k1:{b64(KEY_1)}",
                "S3DYNAMO_SECRET": secret if isinstance(secret, str) else secret.decode(),
            }
        )


def test_a_sixteen_byte_secret_is_enough_for_every_key_source() -> None:
    assert saver_on(secret="s" * 16).settings.secret == b"s" * 16
    assert saver_on(keys=None, secret=b"\0" * 16, plaintext=True).settings.secret == b"\0" * 16


# ------------------------------------------ 3. a value the serializer cannot store


class HoldsALock:
    def __init__(self) -> None:
        self.lock = threading.Lock()


@pytest.mark.parametrize(
    ("value", "came"),
    [
        (lambda x: x, "builtins.function"),
        (threading.Lock(), "_thread.lock"),
        (HoldsALock(), "tests.unit.test_named_errors.HoldsALock"),
    ],
    ids=["a lambda", "a lock", "an object holding a lock"],
)
def test_a_value_that_cannot_be_serialized_names_its_channel_and_writes_nothing(
    value: Any, came: str
) -> None:
    saver = saver_on(inline_max=0)  # a fresh deployment: not even its record is written
    with pytest.raises(ValueNotSerializableError) as raised:
        put_value(saver, "customer-42", value)
    message = str(raised.value)
    assert message.startswith("thread 'customer-42' checkpoint ")
    assert (
        f": channel 'tool' holds a {came} the serializer cannot store "
        "(Type is not msgpack serializable" in message
    )
    assert "nothing was written" in message and "keep functions, locks" in message
    assert isinstance(raised.value, TypeError)  # what callers caught before
    assert writes_of(saver) == {}
    assert saver.index.control.get(deployment_pk("")) is None
    assert not saver.objects.blobs


def test_a_write_that_cannot_be_serialized_names_task_and_channel_and_writes_nothing() -> None:
    saver = saver_on()
    config = put_value(saver, "customer-42", "fine")
    before = writes_of(saver)
    with pytest.raises(ValueNotSerializableError) as raised:
        saver.put_writes(config, [("notes", "ok"), ("tool", HoldsALock())], "task-7")
    message = str(raised.value)
    assert (
        f"thread 'customer-42' checkpoint {config['configurable']['checkpoint_id']}: the write "
        "of task 'task-7' to channel 'tool' holds a tests.unit.test_named_errors.HoldsALock"
    ) in message
    assert writes_of(saver) == before  # the writes that could be stored are not written either
    tup = saver.get_tuple(config)
    assert tup is not None and tup.pending_writes == []


def test_a_graph_node_returning_a_function_is_told_which_channel_holds_it() -> None:
    class State(TypedDict):
        question: str
        callback: Any

    def plan(state: State) -> dict[str, Any]:
        return {"callback": lambda: state["question"]}

    saver = saver_on()
    graph = StateGraph(State).add_node(plan).add_edge(START, "plan").compile(checkpointer=saver)
    named = r"checkpoint [0-9a-f-]+: channel 'callback' holds a builtins\.function"
    with pytest.raises(ValueNotSerializableError, match=named):
        graph.invoke({"question": "why?"}, thread_config("t-graph"), durability="sync")


# --------------------------------------------- 5. the bucket the deployment uses


def test_a_saver_on_another_bucket_is_refused_by_name_before_it_reads_or_writes() -> None:
    index = MemoryIndex()
    writer = saver_on(index, MemoryObjects(name="agent-checkpoints"), inline_max=0)
    put_value(writer, "t", "x" * 100)
    assert (
        writer.index.control[deployment_pk("")]["deployment"].fields["bucket"]
        == "agent-checkpoints"
    )

    wrong = saver_on(index, MemoryObjects(name="agent-checkpoint"), inline_max=0)
    for call in (
        lambda: wrong.get_tuple(thread_config("t")),  # a thread that exists
        lambda: wrong.get_tuple(thread_config("new")),  # and one that does not
        lambda: put_value(wrong, "new", "y" * 100),
    ):
        with pytest.raises(DeploymentMismatchError) as raised:
            call()
        message = str(raised.value)
        assert (
            "this saver's objects go to bucket 'agent-checkpoint' and the deployment's are in "
            "bucket 'agent-checkpoints'"
        ) in message
        assert "set S3DYNAMO_BUCKET (bucket=) to 'agent-checkpoints'" in message
    assert not wrong.objects.calls


def test_a_deployment_recorded_before_the_bucket_field_is_read_and_not_stamped() -> None:
    index = MemoryIndex()
    older = saver_on(index, MemoryObjects())  # a store with no name records none
    put_value(older, "t", "small enough to stay in the index")
    assert "bucket" not in index.control[deployment_pk("")]["deployment"].fields

    # A saver on a named store reads it, writes to it, and adds a key to the record,
    # which still names no bucket: nothing proves this bucket is the deployment's.
    named = saver_on(
        index, MemoryObjects(name="agent-checkpoints"), keys={"k2": KEY_0, "k1": KEY_1}
    )
    assert named.get_tuple(thread_config("t")) is not None
    put_value(named, "t2", "also small")
    record = index.control[deployment_pk("")]["deployment"]
    assert '"k2"' in str(record.fields["keys"]) and record.version == 2
    assert "bucket" not in record.fields
