"""Tenants: deployments with their own prefix and keys on one table and one bucket.

Three tenants, each with another key source (keys and a naming secret; KMS, where the
backend has it; a keyring of two keys), and a deployment without a prefix beside them.
Each reads only its own threads, even under the same thread id; every item and object a
tenant writes carries its prefix; its maintenance (garbage collection, retention, re-
encryption, delete, copy) never changes a byte of another's; a tenant's prefix with
another tenant's keys is named as a key mismatch, never shown as an empty thread; the
saver without a prefix refuses a table-wide sweep until its scope is named, and
`scope="*"` expires every tenant's idle threads in one Scan.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import boto3
import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo import (
    DeploymentMismatchError,
    InvalidConfigError,
    S3DynamoSaver,
    ScopeNotNamedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import object_scope, scope_of
from langgraph.checkpoint.s3dynamo.ops.retention import SCAN_SEGMENTS
from tests.support.savers import BACKEND, Clients, RequestCounter, make_saver
from tests.support.scenarios import chat_graph

DAY = 86_400
PREFIXES = ["tenant-a/", "tenant-b/", "tenant-c/"]


def _kms_alias() -> tuple[Any, str]:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") if BACKEND == "moto-server" else None
    kms = boto3.client("kms", region_name="us-east-1", endpoint_url=endpoint)
    key = kms.create_key(Description="tenant b")["KeyMetadata"]["KeyId"]
    alias = f"alias/tenant-b-{key[:8]}"
    kms.create_alias(AliasName=alias, TargetKeyId=key)
    return kms, alias


def key_sources() -> dict[str, dict[str, Any]]:
    """Each tenant's key source: other keys, other ids, one on KMS (but where the
    backend has no KMS: dynalite and SeaweedFS)."""
    b: dict[str, Any] = {"keys": {"b1": os.urandom(32)}, "secret": os.urandom(16)}
    if BACKEND != "real":
        kms, alias = _kms_alias()
        b = {"kms_key_id": alias, "kms_client": kms}
    return {
        "tenant-a/": {"keys": {"a1": os.urandom(32)}, "secret": os.urandom(16)},
        "tenant-b/": b,
        "tenant-c/": {
            "keys": {"c2": os.urandom(32), "c1": os.urandom(32)},
            "secret": os.urandom(16),
        },
        "": {"keys": {"root": os.urandom(32)}, "secret": os.urandom(16)},
    }


@pytest.fixture
def tenants(clients: Clients) -> dict[str, Callable[..., S3DynamoSaver]]:
    """A saver factory per prefix ("" is the deployment without one), all on the test's
    one table and bucket."""
    sources = key_sources()

    def factory(prefix: str) -> Callable[..., S3DynamoSaver]:
        return lambda **kw: make_saver(clients, prefix=prefix, **{**sources[prefix], **kw})

    made = {prefix: factory(prefix) for prefix in sources}
    made[""]().setup()  # the table and bucket
    return made


def say(saver: S3DynamoSaver, tid: str, text: str, *, days_ago: float = 0) -> dict[str, Any]:
    """One chat turn; with `days_ago`, its records are stamped that long ago (idle)."""
    clock = saver.store.clock
    if days_ago:
        saver.store.clock = lambda: time.time() - days_ago * DAY
    config = {"configurable": {"thread_id": tid}}
    try:
        chat_graph(saver).invoke({"messages": [HumanMessage(text)]}, config)
    finally:
        saver.store.clock = clock
    return chat_graph(saver).get_state(config).values


def stored(clients: Clients) -> dict[str | None, tuple[set[Any], set[str]]]:
    """Every item (key and content) and object key of the table and bucket, by the
    deployment prefix each belongs to."""
    ddb, s3 = clients
    out: dict[str | None, tuple[set[Any], set[str]]] = {}
    pages = ddb.get_paginator("scan").paginate(TableName=clients.table)
    for item in (i for page in pages for i in page["Items"]):
        content = tuple(sorted((k, repr(v)) for k, v in item.items()))
        out.setdefault(scope_of(item["pk"]["S"]), (set(), set()))[0].add(content)
    listing = s3.get_paginator("list_objects_v2").paginate(Bucket=clients.bucket)
    for obj in (o for page in listing for o in page.get("Contents", [])):
        out.setdefault(object_scope(obj["Key"]), (set(), set()))[1].add(obj["Key"])
    return out


def test_each_tenant_reads_only_its_own_threads(
    tenants: dict[str, Callable[..., S3DynamoSaver]], clients: Clients
) -> None:
    big = os.urandom(10_000).hex()  # a value kept as an object
    for prefix in PREFIXES:
        saver = tenants[prefix]()
        say(saver, "shared-id", f"{prefix} {big}")
        say(saver, f"own-{prefix}", "hello")
    for prefix in PREFIXES:
        saver = tenants[prefix]()  # a cold process
        values = say(saver, "shared-id", "again")
        assert [m.content for m in values["messages"] if m.type == "human"] == [
            f"{prefix} {big}",
            "again",
        ]
        threads = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
        assert threads == {"shared-id", f"own-{prefix}"}
    by_scope = stored(clients)
    assert None not in by_scope  # nothing outside a deployment's shape
    for prefix in PREFIXES:
        items, objects = by_scope[prefix]
        assert items and objects and all(k.startswith(prefix) for k in objects)
    assert "" in by_scope  # the deployment without a prefix: its own records only
    assert by_scope[""][0] and not by_scope[""][1]


def test_a_tenant_prefix_with_another_tenants_keys_is_named(
    tenants: dict[str, Callable[..., S3DynamoSaver]], clients: Clients
) -> None:
    a = tenants["tenant-a/"]()
    say(a, "t", "hello")
    wrong = make_saver(
        clients, prefix="tenant-a/", keys={"c1": os.urandom(32)}, secret=os.urandom(16)
    )
    with pytest.raises(DeploymentMismatchError, match="prefix 'tenant-a/'"):
        wrong.get_tuple({"configurable": {"thread_id": "t"}})
    with pytest.raises(DeploymentMismatchError, match="prefix 'tenant-a/'"):
        list(wrong.list(None))
    # Its maintenance removes nothing either: retention and the Store's expiry.
    say(a, "idle", "old", days_ago=3)
    before = stored(clients)
    for sweep in (
        lambda: wrong.ops.expire_idle_threads("1d"),
        lambda: wrong.ops.expire_idle_threads("1d", strategy="keep_latest"),
        lambda: wrong.ops.memory.expire(),
    ):
        with pytest.raises(DeploymentMismatchError):
            sweep()
    assert stored(clients) == before


def test_maintenance_of_one_tenant_never_touches_another(
    tenants: dict[str, Callable[..., S3DynamoSaver]], clients: Clients
) -> None:
    big = os.urandom(10_000).hex()
    for prefix in PREFIXES:
        saver = tenants[prefix]()
        say(saver, "idle", big, days_ago=3)
        say(saver, "busy", big)
        say(saver, "busy", "more")
    before = stored(clients)
    a = tenants["tenant-a/"]()
    expired = a.ops.expire_idle_threads("1d")
    assert expired.removed == [a.parts.namer.thread("idle")]
    a.copy_thread("busy", "busy-copy")
    a.prune(["busy-copy"], strategy="keep_latest")
    a.ops.plan_garbage_collection(grace=timedelta(0)).execute()
    assert a.ops.reencrypt() >= 0
    a.delete_thread("busy-copy")
    after = stored(clients)
    for prefix in ["tenant-b/", "tenant-c/", ""]:
        assert after.get(prefix) == before.get(prefix), prefix
    assert after["tenant-a/"] != before["tenant-a/"]
    assert {t.config["configurable"]["thread_id"] for t in a.list(None)} == {"busy"}


def test_without_a_prefix_a_table_wide_sweep_names_its_scope(
    tenants: dict[str, Callable[..., S3DynamoSaver]],
    clients: Clients,
    counter: RequestCounter,
) -> None:
    for prefix in ["", *PREFIXES]:
        saver = tenants[prefix]()
        say(saver, "idle", os.urandom(10_000).hex(), days_ago=3)  # kept as objects
        say(saver, "busy", "new")
    root = tenants[""]()
    for sweep in (
        lambda **kw: root.ops.plan_garbage_collection(grace=timedelta(0), **kw),
        lambda **kw: root.ops.plan_expiry("1d", **kw),
        lambda **kw: root.ops.plan_reencrypt(**kw),
    ):
        with pytest.raises(ScopeNotNamedError, match="'tenant-a/', 'tenant-b/', 'tenant-c/'"):
            sweep()
        with pytest.raises(InvalidConfigError, match="not this saver's"):
            sweep(scope="tenant-a/")
    before = stored(clients)
    plan = root.ops.expire_idle_threads("1d", scope="")
    assert plan.removed == [root.parts.namer.thread("idle")]
    after = stored(clients)
    assert all(after[p] == before[p] for p in PREFIXES)

    # Every tenant's idle threads, in one sweep: one pass over the table.
    with pytest.raises(InvalidConfigError, match="needs that tenant's keys"):
        root.ops.plan_expiry("1d", scope="*", strategy="keep_latest")
    counter.reset()
    swept = root.ops.expire_idle_threads("1d", scope="*")
    assert sorted(swept.removed) == sorted(
        tenants[p]().parts.namer.thread("idle") for p in PREFIXES
    )
    # The one Scan, read in parallel segments (a page each, on a table this small).
    assert counter["dynamodb.Scan"] == SCAN_SEGMENTS
    for prefix in PREFIXES:
        saver = tenants[prefix]()
        assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {"busy"}


def test_a_tenant_sweep_needs_no_scope_named(
    tenants: dict[str, Callable[..., S3DynamoSaver]],
) -> None:
    for prefix in ["", *PREFIXES]:
        say(tenants[prefix](), "idle", "old", days_ago=3)
    b = tenants["tenant-b/"]()
    # Every tenant's sweep is the table's operator's, never a tenant's.
    with pytest.raises(InvalidConfigError, match="every tenant of the table"):
        b.ops.expire_idle_threads("1d", scope="*")
    assert len(b.ops.expire_idle_threads("1d").removed) == 1
    assert b.ops.plan_garbage_collection(grace=timedelta(0)).objects == 0
    assert len(tenants[""]().ops.plan_expiry("1d", scope="").idle) == 1
