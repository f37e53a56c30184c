"""`saver.prime()` for an init phase, on each backend (`backend`: the in-memory twins,
and the AWS adapters): the ports are built and no request is sent. Where AWS Lambda
SnapStart's runtime hooks exist, Python's `random` is reseeded after each restore,
registered once per process; channel versions never come from `random`'s state, so
clones restored from one snapshot cannot draw the same one. (That the first request
after priming imports no module and builds no client is shown in fresh interpreters
against moto server in `tests/e2e/test_prime.py`.)"""

from __future__ import annotations

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
