"""LangGraph's strict serialization (`LANGGRAPH_STRICT_MSGPACK=true`): a compiled graph
hands the saver its state types through `with_allowlist`, and the copy it gets back
reads them as their classes, as LangGraph's own savers do; a type the allowlist blocks
is logged and reported the way LangGraph's serializer does it, listing included; the
copy shares its origin's ports, caches and keys."""

from __future__ import annotations

import logging
import operator
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from langchain_core.agents import AgentAction
from langgraph._internal import _serde as graph_serde
from langgraph.checkpoint.base import BaseCheckpointSaver, create_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde import _msgpack, jsonplus
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel
from typing_extensions import TypedDict

from langgraph.checkpoint.s3dynamo import InvalidConfigError, S3DynamoSaver
from tests.support.savers import MemorySaver, memory_saver

HERE = __name__  # the module LangGraph's allowlist names these types by


@dataclass
class Point:
    x: int
    y: int


class Profile(BaseModel):
    name: str


class State(TypedDict):
    point: Point
    profile: Profile
    action: AgentAction
    trail: Annotated[list[Point], operator.add]


def step(state: State) -> dict[str, Any]:
    # Attribute access: a state type read back as a dict fails here, in the next run.
    point, profile, action = state["point"], state["profile"], state["action"]
    return {
        "point": Point(point.x + 1, point.y),
        "profile": Profile(name=profile.name + "!"),
        "action": AgentAction(action.tool, action.tool_input, action.log + "."),
        "trail": [Point(point.x, point.y)],
    }


def compiled(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_edge("step", END)
    return g.compile(checkpointer=checkpointer)


FIRST = {
    "point": Point(0, 7),
    "profile": Profile(name="ada"),
    "action": AgentAction("search", {"q": "moths"}, "looked"),
    "trail": [],
}


def config(tid: str = "t") -> Any:
    return {"configurable": {"thread_id": tid}}


def run(checkpointer: BaseCheckpointSaver[Any], turns: int = 3) -> list[dict[str, Any]]:
    """Runs the graph `turns` times on one thread (each run reads the state the last one
    stored), then its state and history as the caller gets them."""
    graph = compiled(checkpointer)
    graph.invoke(FIRST, config())
    for _ in range(turns - 1):
        graph.invoke({"trail": [Point(-1, -1)]}, config())
    return [graph.get_state(config()).values] + [
        s.values for s in graph.get_state_history(config())
    ]


@pytest.fixture
def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strict mode as a process started with LANGGRAPH_STRICT_MSGPACK=true has it:
    LangGraph reads the variable at import, into the flags patched here, and builds its
    savers' default serializer then."""
    monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "true")
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", True)
    monkeypatch.setattr(graph_serde, "STRICT_MSGPACK_ENABLED", True)
    monkeypatch.setattr(BaseCheckpointSaver, "serde", JsonPlusSerializer())
    # LangGraph logs each blocked type once per process: a fresh record for each test.
    monkeypatch.setattr(jsonplus, "_warned_blocked_types", set())


@pytest.fixture
def events() -> Iterator[list[SerdeEvent]]:
    """What LangGraph's serializer reports to its event listeners."""
    seen: list[SerdeEvent] = []
    unregister = register_serde_event_listener(seen.append)
    yield seen
    unregister()


def points_as_dicts(value: Any) -> int:
    """How many Points a value holds as the plain dict a blocked Point becomes."""
    if isinstance(value, dict):
        own = 1 if set(value) == {"x", "y"} else 0
        return own + sum(points_as_dicts(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(points_as_dicts(v) for v in value)
    return 0


# ----------------------------------------------------------- the graph's own types


@pytest.mark.usefixtures("strict")
def test_state_types_read_back_as_their_classes_as_with_langgraphs_saver() -> None:
    expected = run(InMemorySaver())
    got = run(memory_saver())
    assert got == expected
    latest = got[0]
    assert type(latest["point"]) is Point and latest["point"] == Point(3, 7)
    assert type(latest["profile"]) is Profile and latest["profile"].name == "ada!!!"
    assert type(latest["action"]) is AgentAction and latest["action"].log == "looked..."
    assert all(type(p) is Point for p in latest["trail"])
    # The history's older snapshots too (a listing, with its growing-list fast path).
    assert all(type(v["point"]) is Point for v in got[1:] if "point" in v)
    assert all(type(p) is Point for v in got[1:] for p in v.get("trail", []))


@pytest.mark.usefixtures("strict")
def test_with_an_encrypted_serializer_too() -> None:
    key = os.urandom(32)

    def encrypted() -> EncryptedSerializer:
        return EncryptedSerializer.from_pycryptodome_aes(serde=JsonPlusSerializer(), key=key)

    expected = run(InMemorySaver(serde=encrypted()))
    saver = memory_saver(serde=encrypted(), keys=None)
    assert run(saver) == expected
    assert type(expected[0]["point"]) is Point
    # Sealed with the serializer's cipher: a reader with the same cipher but no allowlist
    # opens the values, and its strict inner serializer blocks the types.
    reader = memory_saver(
        saver.index, saver.objects, serde=encrypted(), keys=None, secret=saver.settings.secret
    )
    found = reader.get_tuple(config())
    assert found is not None and found.checkpoint["channel_values"]["point"] == {"x": 3, "y": 7}


@pytest.mark.usefixtures("strict")
def test_an_assigned_serializer_is_the_one_used() -> None:
    saver = memory_saver()
    run(saver)
    found = saver.get_tuple(config())
    assert found is not None and isinstance(found.checkpoint["channel_values"]["point"], dict)
    saver.serde = JsonPlusSerializer(allowed_msgpack_modules=[(HERE, "Point")])
    found = saver.get_tuple(config())
    assert found is not None and found.checkpoint["channel_values"]["point"] == Point(3, 7)


def test_a_serializer_with_another_cipher_is_refused_before_anything_is_written() -> None:
    saver = memory_saver(
        serde=EncryptedSerializer.from_pycryptodome_aes(key=os.urandom(32)), keys=None
    )
    saver.serde = EncryptedSerializer.from_pycryptodome_aes(key=os.urandom(32))
    with pytest.raises(InvalidConfigError, match="cipher is fixed at construction"):
        compiled(saver).invoke(FIRST, config())
    plain = memory_saver()
    plain.serde = EncryptedSerializer.from_pycryptodome_aes(key=os.urandom(32))
    with pytest.raises(InvalidConfigError, match="built with no cipher"):
        compiled(plain).invoke(FIRST, config())
    for s in (saver, plain):
        assert s.index.calls["put_checkpoint"] == 0 and not s.objects.calls


# ------------------------------------------------------------------ blocked types


@pytest.mark.usefixtures("strict")
def test_a_blocked_type_is_logged_as_langgraph_logs_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    saver = memory_saver()
    run(saver)
    with caplog.at_level(logging.WARNING, logger=jsonplus.logger.name):
        # The saver itself, not the graph's copy: no allowlist names the state's types.
        found = saver.get_tuple(config())
    assert found is not None
    assert found.checkpoint["channel_values"]["point"] == {"x": 3, "y": 7}
    logged = [r.getMessage() for r in caplog.records if r.name == jsonplus.logger.name]
    for module, name in (
        (HERE, "Point"),
        (HERE, "Profile"),
        ("langchain_core.agents", "AgentAction"),
    ):
        assert any(
            m.startswith(f"Blocked deserialization of {module}.{name} - not in allowed")
            for m in logged
        ), (name, logged)


@pytest.mark.usefixtures("strict")
def test_a_listing_reports_every_blocked_item_it_returns(events: list[SerdeEvent]) -> None:
    """The growing-list fast path copies a list it deserialized before; a list holding a
    blocked type is deserialized again for each snapshot, so every blocked Point a
    listing returns was reported, as reading each snapshot alone reports it."""
    saver = memory_saver()
    run(saver, turns=5)
    events.clear()
    listed = list(saver.list(config()))
    blocked = sum(1 for e in events if e["kind"] == "msgpack_blocked" and e["name"] == "Point")
    returned = sum(
        points_as_dicts(t.checkpoint["channel_values"]) + points_as_dicts(t.pending_writes)
        for t in listed
    )
    assert returned > 5 and blocked == returned
    # The same listing through LangGraph's saver reports as much.
    baseline = InMemorySaver()
    run(baseline, turns=5)
    events.clear()
    listed_there = list(baseline.list(config()))
    assert len(listed_there) == len(listed)
    assert sum(1 for e in events if e["kind"] == "msgpack_blocked" and e["name"] == "Point") == (
        blocked
    )


# -------------------------------------------------------------- what a copy shares


@pytest.mark.usefixtures("strict")
def test_a_copy_shares_ports_caches_and_keys_and_reads_with_its_own_allowlist() -> None:
    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    saver = memory_saver(inline_max=0, keys=keys, secret=secret)  # every value in S3
    run(saver)
    clone = saver.with_allowlist([(HERE, "Point")])
    assert isinstance(clone, S3DynamoSaver) and clone is not saver
    shared = ("settings", "clients", "sealer", "namer", "control", "deployment")
    assert all(getattr(clone.parts, n) is getattr(saver.parts, n) for n in shared)
    assert clone.parts.engine.ports is saver.parts.engine.ports
    assert clone.parts.engine.objects is saver.parts.engine.objects
    assert clone.ops is saver.ops  # a lease taken through either fences both's writes
    assert saver.serde is BaseCheckpointSaver.serde  # the origin keeps its serializer

    # A read through the copy after one through its origin costs what a second read
    # through the origin costs: the object cache and the deployment check are shared.
    assert saver.get_tuple(config()) is not None
    saver.index.calls.clear()
    saver.objects.calls.clear()
    again = saver.get_tuple(config())
    by_origin = (dict(saver.index.calls), dict(saver.objects.calls))
    saver.index.calls.clear()
    saver.objects.calls.clear()
    found = clone.get_tuple(config())
    assert (dict(saver.index.calls), dict(saver.objects.calls)) == by_origin
    assert by_origin[1] == {}, "values from the shared object cache"
    assert again is not None and found is not None
    assert again.checkpoint["channel_values"]["point"] == {"x": 3, "y": 7}
    assert found.checkpoint["channel_values"]["point"] == Point(3, 7)

    # A put through the copy of a checkpoint the origin wrote sends what a put through
    # the origin would: what the origin's write handed on is shared, so the parent's
    # record is not read again, as a saver of another process must.
    made = saver.put(found.config, create_checkpoint(found.checkpoint, None, 9), {}, {})
    saver.index.calls.clear()
    put = clone.put(made, create_checkpoint(found.checkpoint, None, 10), {}, {})
    assert dict(saver.index.calls) == {"TransactWriteItems": 1}
    stranger = memory_saver(saver.index, saver.objects, inline_max=0, keys=keys, secret=secret)
    stranger.put(put, create_checkpoint(found.checkpoint, None, 11), {}, {})
    assert dict(saver.index.calls) == {"Query": 1, "TransactWriteItems": 1}


def test_default_mode_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without strict mode every type is revived and `with_allowlist` makes no copy."""
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", False)
    monkeypatch.setattr(graph_serde, "STRICT_MSGPACK_ENABLED", False)
    monkeypatch.setattr(BaseCheckpointSaver, "serde", JsonPlusSerializer())
    saver: MemorySaver = memory_saver()
    assert saver.with_allowlist([(HERE, "Point")]) is saver
    assert run(saver) == run(InMemorySaver())
