"""`saver.prime()` for an init phase, on each backend (`backend`: the in-memory twins,
and the AWS adapters): the ports are built and no request is sent (in an on-demand
Lambda's init, the object store's waits for the first object). Where AWS Lambda
SnapStart's runtime hooks exist, Python's `random` is reseeded after each restore,
registered once per process; channel versions never come from `random`'s state, so
clones restored from one snapshot cannot draw the same one. (That the first request
after priming imports no module and builds no client is shown in fresh interpreters
against moto server in `tests/e2e/test_prime.py`.)"""

from __future__ import annotations

import os
import random
import sys
import types
from collections.abc import Callable

import pytest

from langgraph.checkpoint.s3dynamo import compose
from tests.support.backends import Backend
from tests.support.savers import memory_saver


def test_prime_builds_every_port_and_sends_nothing(backend: Backend) -> None:
    saver = backend.saver(setup=False)
    ports = saver.parts.engine.ports
    assert not any(ports.built(name) for name in ("table", "objects"))
    saver.prime()
    assert all(ports.built(name) for name in ("table", "objects"))
    assert backend.calls() == {}
    # Primed on a deployment that exists, the first read is an ordinary one.
    backend.saver()
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None


@pytest.mark.parametrize(
    ("initialization", "objects_built"),
    [("on-demand", False), ("snap-start", True), ("provisioned-concurrency", True)],
)
def test_an_on_demand_lambda_init_leaves_the_object_store_to_its_first_use(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, initialization: str, objects_built: bool
) -> None:
    """The first request of an on-demand Lambda waits for its init: S3's client, the
    costliest to build, is built there only where init is off the request's path."""
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", initialization)
    saver = backend.saver(setup=False)
    ports = saver.parts.engine.ports
    saver.prime()
    assert ports.built("table") and ports.built("objects") is objects_built
    assert backend.calls() == {}
    backend.saver()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    doc = os.urandom(200_000).hex()  # larger than the table keeps, even compressed
    checkpoint = {
        "v": 4,
        "id": "1f000000-0000-6000-8000-000000000001",
        "ts": "2026-12-01T00:00:00+00:00",
        "channel_values": {"doc": doc},
        "channel_versions": {"doc": saver.get_next_version(None, None)},
        "versions_seen": {},
        "updated_channels": ["doc"],
    }
    saver.put(config, checkpoint, {"step": 0}, checkpoint["channel_versions"])
    assert ports.built("objects")  # built when the first object was written
    found = saver.get_tuple(config)
    assert found is not None and found.checkpoint["channel_values"]["doc"] == doc


def test_after_a_snapstart_restore_random_is_reseeded_once_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooks: list[Callable[[], object]] = []
    runtime = types.ModuleType("snapshot_restore_py")
    runtime.register_after_restore = hooks.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", runtime)
    monkeypatch.setattr(compose, "_after_restore", [])
    memory_saver().prime()
    memory_saver().prime()
    assert hooks == [random.seed]  # once per process, however many savers prime
    # Two clones restored from one snapshot start with the same state; the hook makes
    # them draw differently.
    random.seed(42)
    state = random.getstate()
    first = random.random()
    random.setstate(state)
    hooks[0]()
    assert random.random() != first


def test_channel_versions_do_not_follow_random_state() -> None:
    saver = memory_saver()
    random.seed(7)
    a = saver.get_next_version(None, None)
    random.seed(7)
    b = saver.get_next_version(None, None)
    assert a != b and a.split(".")[0] == b.split(".")[0]
