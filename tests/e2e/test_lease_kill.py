"""A lease holder killed with SIGKILL, against moto server on 127.0.0.1: a child process
takes a thread's lease with the defaults, writes under it, keeps it past its ttl by its
heartbeat alone, and is killed; the next holder (this process, defaults too) gets the
lease within ttl + 1 s of the kill, never before the dead holder's last expiry, and
writes. Run with `-s` to see the figures docs/RELIABILITY.md quotes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import LeaseTimeoutError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo import lease as leases
from langgraph.checkpoint.s3dynamo.backends.dynamodb import key_attributes
from langgraph.checkpoint.s3dynamo.format.records import LEASE_EXPIRES
from langgraph.checkpoint.s3dynamo.testing import Sandbox, moto_server

TID = "killed-holder"
CHILD = r"""
import sys, time
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.s3dynamo import S3DynamoSaver

saver = S3DynamoSaver.from_env()
config = {"configurable": {"thread_id": sys.argv[1], "checkpoint_ns": ""}}
with saver.ops.thread_lock(sys.argv[1]) as held:
    saver.put(config, empty_checkpoint(), {"step": 0}, {})
    print("held", held.token, flush=True)
    time.sleep(600)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _env(sandbox: Sandbox) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3DYNAMO_"))}
    env.update({k: v for k, v in sandbox.environment().items() if v is not None})
    return env


def _held_by_another(saver: S3DynamoSaver) -> bool:
    try:
        with saver.ops.thread_lock(TID, wait=0, heartbeat=False):
            return False
    except LeaseTimeoutError:
        return True


def test_a_killed_holders_lease_is_taken_over_within_ttl_plus_one_second(server: str) -> None:
    sandbox = Sandbox(endpoint_url=server)
    saver = sandbox.saver()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, TID],
        env=_env(sandbox),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert child.stdout is not None
        said = []  # what the child printed before it held the lease (warnings, say)
        while not (line := child.stdout.readline()).startswith("held ") and line:
            said.append(line)
        assert line, "".join(said)
        token = int(line.split()[1])
        # Held past its ttl by the heartbeat alone (no write after the first).
        began = time.monotonic()
        while time.monotonic() - began < leases.DEFAULT_TTL + 2:
            assert _held_by_another(saver), f"lost after {time.monotonic() - began:.1f} s"
            time.sleep(1.0)
        child.send_signal(signal.SIGKILL)
        killed = time.time()
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
        if child.stdout is not None:
            child.stdout.close()
    key = leases.lease_key(saver.store, TID)
    item = sandbox.dynamodb.get_item(TableName=sandbox.table, Key=key_attributes(key))["Item"]
    lapses = int(item[LEASE_EXPIRES]["N"]) / 1000 - killed
    with saver.ops.thread_lock(TID) as held:  # the defaults: ttl 10 s, wait ttl + 1 s
        took = time.time() - killed
        config = {"configurable": {"thread_id": TID, "checkpoint_ns": ""}}
        saver.put(config, empty_checkpoint(), {"step": 1}, {})
    # What one renewal (a heartbeat's UpdateItem) and one fenced commit (a put's
    # TransactWriteItems, which renews it too) take here, against the two thirds of ttl
    # a renewal has to land before the lease lapses.
    renewals, commits = [], []
    with saver.ops.thread_lock(TID, heartbeat=False) as held_again:
        for step in range(2, 52):
            began = time.perf_counter()
            held_again.renew()
            renewals.append(time.perf_counter() - began)
            began = time.perf_counter()
            saver.put(config, empty_checkpoint(), {"step": step}, {})
            commits.append(time.perf_counter() - began)
    renewals.sort()
    commits.sort()
    print(
        f"\nkilled holder: its lease lapsed {lapses:.2f} s after SIGKILL; "
        f"the next holder had it {took:.2f} s after (ttl {leases.DEFAULT_TTL:g} s); "
        f"renewal median {renewals[25] * 1000:.1f} ms, max {renewals[-1] * 1000:.1f} ms; "
        f"fenced put median {commits[25] * 1000:.1f} ms, max {commits[-1] * 1000:.1f} ms "
        "(50 each, moto server on loopback)"
    )
    assert renewals[-1] < leases.DEFAULT_TTL * (1 - leases.HEARTBEAT_SHARE)
    assert held.token == token + 1
    assert took <= leases.DEFAULT_TTL + 1, took
    # Not before the dead holder's last expiry; within one backoff step (1 s) after it.
    assert lapses - 0.05 <= took <= max(lapses, 0) + 1.1, (lapses, took)
    # The heartbeat kept the expiry between 2/3 ttl and ttl ahead of the kill.
    assert leases.DEFAULT_TTL * 2 / 3 - 0.5 <= lapses <= leases.DEFAULT_TTL, lapses
