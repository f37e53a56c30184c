"""The thread catalog (issue 50): a user's threads, newest activity first, found through
keyed-hash tokens of declared metadata fields instead of a Scan. What a user sees of
`search_threads` and `list(None, filter=...)`, how copies, imports, deletes and
retention keep it right, what a table writer can do to it, and what each costs in
requests and read units. A test taking `backend` runs on the in-memory twins and on moto."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import time
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.s3dynamo import (
    ArgumentTypeError,
    CatalogNotBuiltError,
    IntegrityError,
    InvalidConfigError,
    S3DynamoSaver,
    Settings,
    ThreadSummary,
)
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.format.layout import (
    CATALOG_REF,
    catalog_pk,
    control_pk,
    is_catalog_pk,
)
from langgraph.checkpoint.s3dynamo.table import key_of
from tests.support import raw
from tests.support.backends import Backend
from tests.support.scenarios import chat_graph
from tests.support.sized import NAME, SizedTable

# dynalite serves no TransactWriteItems: savers there run without conflict detection,
# whose transaction carries a thread's first entries.
NEEDS_DETECTION = pytest.mark.unsupported_on("real", reason="no transactions on dynalite")

SERVER = "langgraph"  # LangGraph's server's user_id, assistant_id and graph_id


def chat(saver: S3DynamoSaver, tid: str, user: str, graph: str = "agent", run: str = "") -> None:
    """One turn of a chat on thread `tid`, with the ids LangGraph's server puts in every
    run's config (and so in every checkpoint's metadata)."""
    configurable = {"thread_id": tid, "user_id": user, "assistant_id": "a1", "graph_id": graph}
    config: dict[str, Any] = {"configurable": configurable}
    if run:
        config["metadata"] = {"run_id": run}
    chat_graph(saver).invoke({"messages": [HumanMessage(f"hello from {user}")]}, config)


def ids(found: list[ThreadSummary]) -> list[str]:
    return [t.thread_id for t in found]


def put(saver: S3DynamoSaver, tid: str, metadata: dict[str, Any], parent: str | None = None) -> str:
    """A checkpoint put directly (the root namespace), child of `parent`; its id."""
    configurable = {"thread_id": tid, "checkpoint_ns": ""}
    if parent:
        configurable["checkpoint_id"] = parent
    cp = empty_checkpoint()
    cp["channel_values"] = {"notes": "n"}
    cp["channel_versions"] = {"notes": saver.get_next_version(None, None)}
    config = saver.put({"configurable": configurable}, cp, metadata, cp["channel_versions"])
    return str(config["configurable"]["checkpoint_id"])


def catalogued(backend: Backend) -> list[str]:
    """Every catalog entry and back-reference the table holds, as `pk sk`."""
    found = []
    for label in backend.contents():
        if not label.startswith("item "):
            continue
        _, pk, sk = label.split(" ", 2)
        if is_catalog_pk(pk) or sk.startswith(CATALOG_REF):
            found.append(f"{pk} {sk}")
    return sorted(found)


# ------------------------------------------------------------------ declaring fields


def test_the_langgraph_word_declares_the_servers_three_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = ("user_id", "assistant_id", "graph_id")
    assert Settings(plaintext=True, catalog_fields="langgraph").catalog_fields == server
    both = Settings(plaintext=True, catalog_fields=["tenant", "langgraph", "user_id"])
    assert both.catalog_fields == ("tenant", *server)
    assert Settings(plaintext=True, catalog_fields=" user_id , graph_id ").catalog_fields == (
        "user_id",
        "graph_id",
    )
    assert Settings(plaintext=True).catalog_fields == ()  # none declared: no catalog
    monkeypatch.setenv("S3DYNAMO_CATALOG_FIELDS", "langgraph,tenant")
    env = Settings.from_env(table="t", bucket="b", plaintext=True)
    assert env.catalog_fields == (*server, "tenant")


@pytest.mark.parametrize(
    ("value", "error", "named"),
    [
        (5, ArgumentTypeError, "catalog_fields must be a list of metadata field names"),
        (["user_id", 3], ArgumentTypeError, r"catalog_fields\[1\] must be a str"),
        (["user_id", ""], InvalidConfigError, r"catalog_fields\[1\] must be a field name"),
        (" user_id, ,graph_id ", InvalidConfigError, "got an empty one"),
        ([f"f{i}" for i in range(21)], InvalidConfigError, "at most 20"),
    ],
)
def test_fields_of_another_type_are_named_when_the_saver_is_made(
    value: Any, error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=named):
        Settings(plaintext=True, catalog_fields=value)


def test_without_a_declared_field_there_is_no_catalog(backend: Backend) -> None:
    saver = backend.saver()
    chat(saver, "t1", "ada")
    assert catalogued(backend) == []
    with pytest.raises(InvalidConfigError, match=r"declares no catalog field.*catalog_fields"):
        saver.search_threads(metadata={"user_id": "ada"})


# ----------------------------------------------------------------------- searching


def test_search_by_each_declared_field_newest_activity_first(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=SERVER)
    before = datetime.now(timezone.utc)
    chat(saver, "t1", "ada")
    chat(saver, "t2", "bob")
    chat(saver, "t3", "ada", graph="other")
    chat(saver, "t4", "ada")
    chat(saver, "t1", "ada")  # t1 is the most recently active now
    assert ids(saver.search_threads(metadata={"user_id": "ada"})) == ["t1", "t4", "t3"]
    assert ids(saver.search_threads(metadata={"user_id": "bob"})) == ["t2"]
    assert ids(saver.search_threads(metadata={"graph_id": "agent"})) == ["t1", "t4", "t2"]
    assert ids(saver.search_threads(metadata={"assistant_id": "a1"})) == ["t1", "t4", "t3", "t2"]
    assert ids(saver.search_threads()) == ["t1", "t4", "t3", "t2"]  # every thread
    assert ids(saver.search_threads(metadata={"user_id": "carol"})) == []
    # Several pairs: one answered from its token, the others checked on the metadata.
    both = {"user_id": "ada", "graph_id": "agent", "source": "loop"}
    assert ids(saver.search_threads(metadata=both)) == ["t1", "t4"]
    assert ids(saver.search_threads(metadata={"user_id": "ada", "step": 99})) == []
    newest = saver.search_threads(metadata={"user_id": "ada"}, limit=1)
    assert ids(newest) == ["t1"]
    latest = saver.get_tuple({"configurable": {"thread_id": "t1"}})
    assert latest is not None
    summary = newest[0]
    assert summary.config == latest.config
    assert summary.metadata == latest.metadata
    assert summary.metadata["step"] == 4  # two turns: steps -1 to 1, then 2 to 4
    assert before - timedelta(seconds=1) <= summary.updated_at <= datetime.now(timezone.utc)
    assert summary.updated_at.tzinfo is timezone.utc
    found = asyncio.run(saver.asearch_threads(metadata={"user_id": "ada"}, limit=2))
    assert ids(found) == ["t1", "t4"]


def test_paging_with_before_neither_overlaps_nor_skips(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=["user_id"])
    for i in range(7):
        put(saver, f"t{i}", {"user_id": "ada"})
    put(saver, "other", {"user_id": "bob"})
    saver.copy_thread("t3", "t3-copy")  # the same checkpoint ids: a tie, told apart by name
    everything = ids(saver.search_threads(metadata={"user_id": "ada"}, limit=100))
    assert sorted(everything) == sorted([f"t{i}" for i in range(7)] + ["t3-copy"])
    assert everything[:3] == ["t6", "t5", "t4"]
    pages: list[str] = []
    page = saver.search_threads(metadata={"user_id": "ada"}, limit=3)
    while page:
        pages += ids(page)
        page = saver.search_threads(metadata={"user_id": "ada"}, limit=3, before=page[-1])
    assert pages == everything
    # The cursor, as text a client keeps between requests, does the same.
    first = saver.search_threads(metadata={"user_id": "ada"}, limit=4)
    rest = saver.search_threads(metadata={"user_id": "ada"}, limit=10, before=first[-1].cursor)
    assert ids(first) + ids(rest) == everything
    # So does any object carrying that cursor, as `before` is checked (a client's own
    # record of a result).
    kept = SimpleNamespace(cursor=first[-1].cursor)
    assert ids(saver.search_threads(metadata={"user_id": "ada"}, limit=10, before=kept)) == ids(
        rest
    )


def test_a_changed_declared_value(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=SERVER)
    chat(saver, "t", "ada")
    chat(saver, "u", "ada")
    chat(saver, "t", "bob")  # the thread is bob's now
    assert ids(saver.search_threads(metadata={"user_id": "ada"})) == ["u"]
    assert ids(saver.search_threads(metadata={"user_id": "bob"})) == ["t"]
    # list() lists checkpoints: t's earlier ones still say ada, as a Scan finds them.
    scan = backend.saver(setup=False)
    listed = list(saver.list(None, filter={"user_id": "ada"}))
    assert [t.config for t in listed] == [
        t.config for t in scan.list(None, filter={"user_id": "ada"})
    ]
    assert {t.config["configurable"]["thread_id"] for t in listed} == {"t", "u"}


def test_list_of_every_thread_by_a_declared_field_reads_the_catalog(backend: Backend) -> None:
    """`list(None, filter=...)` on a declared field lists what the Scan lists, in the same
    order, without a Scan."""
    saver = backend.saver(catalog_fields=SERVER)
    for tid, user in (("t1", "ada"), ("t2", "bob"), ("t3", "ada"), ("t4", "carol")):
        chat(saver, tid, user, run=f"run-{tid}")
    chat(saver, "t1", "ada")
    scan = backend.saver(setup=False)  # declares nothing: scans

    def listed(s: S3DynamoSaver, **kw: Any) -> list[Any]:
        return [(t.config, t.metadata, t.checkpoint["id"]) for t in s.list(None, **kw)]

    ada = {"user_id": "ada"}
    newest = listed(saver, filter=ada)
    before = {"configurable": {"checkpoint_id": newest[4][2]}}
    for kw in (
        {"filter": ada},
        {"filter": {"user_id": "ada", "source": "input"}},
        {"filter": ada, "limit": 3},
        {"filter": ada, "before": before},
        {"filter": ada, "before": before, "limit": 2},
        {"filter": {"graph_id": "agent", "run_id": "run-t4"}},
    ):
        backend.reset()
        assert listed(saver, **kw) == listed(scan, **kw), kw
    assert len(newest) == 3 * 3  # t1's two turns, t3's one: three checkpoints a turn
    backend.reset()
    listed(saver, filter=ada)
    assert "dynamodb.Scan" not in backend.calls()


# ----------------------------------------------------- keeping the catalog right


def test_copies_imports_and_deletes_keep_the_catalog_right(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=SERVER)
    chat(saver, "t1", "ada")
    chat(saver, "t2", "bob", run="run-b")
    chat(saver, "t3", "ada")
    saver.copy_thread("t1", "t1-copy")
    found = ids(saver.search_threads(metadata={"user_id": "ada"}))
    # A copy has its source's checkpoint ids: the two tie, and are told apart by name.
    assert found[0] == "t3" and sorted(found[1:]) == ["t1", "t1-copy"]
    source = InMemorySaver()
    graph = chat_graph(source)
    carol = {"configurable": {"thread_id": "imported", "user_id": "carol"}}
    graph.invoke({"messages": [HumanMessage("hi")]}, carol)
    saver.ops.import_threads(source)
    assert ids(saver.search_threads(metadata={"user_id": "carol"})) == ["imported"]
    assert "imported" in ids(saver.search_threads())

    saver.delete_thread("t1")
    assert ids(saver.search_threads(metadata={"user_id": "ada"})) == ["t3", "t1-copy"]
    name = saver.parts.namer.thread("t1")
    assert not [i for i in catalogued(backend) if i.endswith(f" {name}")]
    assert not [i for i in catalogued(backend) if i.startswith(f"{control_pk(name)} ")]

    saver.delete_for_runs(["run-b"])  # every checkpoint of t2: it leaves the catalog
    assert ids(saver.search_threads(metadata={"user_id": "bob"})) == []
    name = saver.parts.namer.thread("t2")
    assert not [i for i in catalogued(backend) if name in i]

    saver.prune(["t3"])  # keeps its latest checkpoint, and its entries
    assert ids(saver.search_threads(metadata={"user_id": "ada"})) == ["t3", "t1-copy"]
    saver.prune(["t3", "t1-copy", "imported"], strategy="delete")
    assert ids(saver.search_threads()) == []
    assert catalogued(backend) == []


def test_retention_removes_a_thread_from_the_catalog(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=SERVER)
    chat(saver, "old", "ada")
    chat(saver, "older", "bob")
    later = time.time() + timedelta(days=10).total_seconds()
    saver.store.clock = lambda: later
    plan = saver.ops.expire_idle_threads("1d")
    assert len(plan.removed) == 2
    assert ids(saver.search_threads()) == []
    assert catalogued(backend) == []


def test_a_catalog_declared_after_threads_exist_is_built_once(backend: Backend) -> None:
    before = backend.saver()  # declares nothing
    chat(before, "t1", "ada")
    chat(before, "t2", "bob")
    saver = backend.saver(setup=False, catalog_fields=SERVER)
    with pytest.raises(CatalogNotBuiltError, match="catalog build"):
        saver.search_threads(metadata={"user_id": "ada"})
    with pytest.raises(CatalogNotBuiltError, match="every thread"):
        saver.search_threads()
    # list() scans meanwhile, and so lists what it always did.
    assert [t.config for t in saver.list(None, filter={"user_id": "ada"})] == [
        t.config for t in before.list(None, filter={"user_id": "ada"})
    ]
    chat(saver, "t3", "ada")  # filed as it is written
    told: list[tuple[int, int | None]] = []
    plan = saver.ops.catalog.plan_build(lambda done, total: told.append((done, total)))
    # Progress: the threads the Scan finds (no total yet), then each one read, of all.
    assert told == [(1, None), (2, None), (3, None), (0, 3), (1, 3), (2, 3), (3, 3)]
    assert plan.to_dict() == {
        "fields": ["user_id", "assistant_id", "graph_id"],
        "threads": 3,
        "entries": 12,  # each thread: every thread's, user_id's, assistant_id's, graph_id's
        "skipped_threads": 0,
        "namespaces": 0,  # Store namespaces named as their subjects' (none declared)
        "skipped": [],
        "executed": False,
        "complete": False,
    }
    assert plan.execute().result()["complete"]
    assert ids(saver.search_threads(metadata={"user_id": "ada"})) == ["t3", "t1"]
    assert ids(saver.search_threads()) == ["t3", "t2", "t1"]
    # Another process sees the catalog built.
    other = backend.saver(setup=False, catalog_fields=SERVER)
    assert ids(other.search_threads(metadata={"user_id": "bob"})) == ["t2"]


def test_reencryption_seals_the_catalog_again(backend: Backend) -> None:
    """After a rotation and `reencrypt`, a saver holding the new key alone finds every
    thread: the entries' sealed ids were sealed again too."""
    saver = backend.saver(catalog_fields=["user_id"])
    chat(saver, "t1", "ada")
    chat(saver, "t2", "ada")
    new = os.urandom(32)
    rotated = backend.saver(
        setup=False, catalog_fields=["user_id"], keys={"k2": new, **backend.keys}
    )
    rotated.ops.reencrypt()
    assert rotated.ops.reencrypt() == 0  # nothing left under the old key
    only_new = backend.saver(setup=False, catalog_fields=["user_id"], keys={"k2": new})
    assert ids(only_new.search_threads(metadata={"user_id": "ada"})) == ["t2", "t1"]


# ------------------------------------------------------------ what a table writer can do


def test_a_moved_entry_is_an_integrity_error_and_a_removed_one_only_hides(
    backend: Backend,
) -> None:
    saver = backend.saver(catalog_fields=["user_id"])
    chat(saver, "t1", "ada")
    chat(saver, "t2", "bob")
    table = raw.table(saver)
    catalog = saver.parts.namer
    ada, bob = catalog.catalog("user_id", "s:ada"), catalog.catalog("user_id", "s:bob")
    [entry] = raw.catalog_items(saver, ada)
    # Copied into bob's partition, ada's thread would show as bob's: it does not open.
    moved = {**entry, "pk": str(entry["pk"]).replace(ada, bob)}
    table.batch([moved])
    with pytest.raises(IntegrityError, match="catalog entry"):
        saver.search_threads(metadata={"user_id": "bob"})
    table.batch(deletes=[key_of(moved)])
    # Under another thread's name, it does not open either.
    renamed = {**entry, "sk": saver.parts.namer.thread("t2")}
    table.batch([renamed])
    with pytest.raises(IntegrityError, match="catalog entry"):
        saver.search_threads(metadata={"user_id": "ada"})
    # Removed, it only hides the thread from the catalog.
    table.batch(deletes=[key_of(renamed), key_of(entry)])
    assert ids(saver.search_threads(metadata={"user_id": "ada"})) == []
    assert saver.get_tuple({"configurable": {"thread_id": "t1"}}) is not None


# ------------------------------------------------------------------------ budgets


@NEEDS_DETECTION
def test_a_threads_first_put_is_still_one_transaction(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=SERVER)
    server = {"user_id": "ada", "assistant_id": "a1", "graph_id": "agent"}
    first = put(saver, "t", {**server, "step": -1})
    assert backend.writes() == {"dynamodb.TransactWriteItems": 1}
    # entries: every thread's and one per field; each with its back-reference
    assert len(catalogued(backend)) == 2 * 4
    backend.reset()
    second = put(saver, "t", {**server, "step": 0}, first)
    assert backend.calls() == {"dynamodb.TransactWriteItems": 1}  # a later put: the same
    backend.reset()
    put(saver, "t", {**server, "user_id": "bob", "step": 1}, second)  # a new value
    assert backend.calls() == {"dynamodb.TransactWriteItems": 1}
    assert len(catalogued(backend)) == 2 * 5
    # Another process, which never read the thread, files it again inside its commit.
    other = backend.saver(setup=False, catalog_fields=SERVER)
    latest = other.store.read("t", "")
    assert latest is not None
    other.parts.control.records()  # the deployment record in hand, as a first read has it
    backend.reset()
    put(other, "t", {**server, "step": 2}, latest.checkpoint_id)
    assert backend.calls() == {"dynamodb.TransactWriteItems": 1}
    assert len(catalogued(backend)) == 2 * 5
    # Without it in hand, its first put reads it once (the fields it files under).
    third = backend.saver(setup=False, catalog_fields=SERVER)
    backend.reset()
    put(third, "t", {**server, "step": 3}, latest.checkpoint_id)
    assert backend.calls() == {"dynamodb.Query": 1, "dynamodb.TransactWriteItems": 1}


def test_without_detection_a_first_put_files_the_thread_in_one_batch(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=SERVER, detect_concurrent_runs=False)
    first = put(saver, "t", {"user_id": "ada"})
    assert backend.writes() == {"dynamodb.BatchWriteItem": 1, "dynamodb.PutItem": 1}
    backend.reset()
    put(saver, "t", {"user_id": "ada"}, first)
    assert backend.calls() == {"dynamodb.PutItem": 1}
    assert ids(saver.search_threads(metadata={"user_id": "ada"})) == ["t"]


@NEEDS_DETECTION
def test_a_search_reads_its_value_the_heads_and_what_it_returns(backend: Backend) -> None:
    saver = backend.saver(catalog_fields=["user_id"])
    for i in range(5):
        put(saver, f"t{i}", {"user_id": "ada"})
    for i in range(20):
        put(saver, f"other{i}", {"user_id": f"user{i}"})
    saver.search_threads(metadata={"user_id": "ada"})  # the process reads its deployment once
    backend.reset()
    assert ids(saver.search_threads(metadata={"user_id": "ada"}, limit=2)) == ["t4", "t3"]
    # ada's entries, their heads, and the two latest checkpoints it returns
    assert backend.calls() == {"dynamodb.Query": 1 + 2, "dynamodb.BatchGetItem": 1}
    # Without concurrent-run detection no put moves a head: each of ada's threads is
    # read to learn its latest checkpoint, and those it returns are not read again.
    off = backend.saver(setup=False, catalog_fields=["user_id"], detect_concurrent_runs=False)
    for i in range(5, 8):
        put(off, f"t{i}", {"user_id": "ada"})
    off.search_threads(metadata={"user_id": "bob"})
    backend.reset()
    found = off.search_threads(metadata={"user_id": "ada"}, limit=2)
    assert ids(found) == ["t7", "t6"]
    assert backend.calls() == {"dynamodb.Query": 1 + 3, "dynamodb.BatchGetItem": 1}


def test_a_search_costs_what_it_returns_whatever_else_the_table_holds() -> None:
    """From 1,000 threads to 100,000 (100 users of ten threads each, then 10,000), a
    search returning one user's ten threads sends the same requests and reads the same
    units, as DynamoDB bills them (`tests/support/sized.py`): what the issue asks is at
    most 1.5 times as much. The 99,000 threads added are the other users' 990 threads'
    items under new names, 100 times over: other users' partitions, entries in the
    deployment's catalog and heads, as DynamoDB would hold them (written through the
    saver, 100,000 threads take a minute: benchmarks/catalog.py does that)."""
    table = SizedTable()
    saver = S3DynamoSaver(
        index=table,
        object_store=MemoryObjects(),
        keys={"k1": os.urandom(32)},
        secret=os.urandom(16),
        catalog_fields=["user_id"],
    )
    saver.setup()
    for i in range(1000):
        put(saver, f"t{i}", {"user_id": f"user{i % 100}", "source": "loop", "step": 3})
    mine = [f"t{i}" for i in range(7, 1000, 100)]

    def search() -> dict[str, float]:
        start = table.snapshot()
        found = saver.search_threads(metadata={"user_id": "user7"}, limit=10)
        assert sorted(ids(found)) == sorted(mine)
        return {**table.since(start), **{f"calls {k}": n for k, n in table.calls.items()}}

    search()  # the process reads its deployment record once
    table.calls.clear()
    small = search()
    others = [t for t in (f"t{i}" for i in range(1000)) if t not in mine]
    names = [saver.parts.namer.thread(t) for t in others]
    tokens = {saver.parts.namer.catalog("user_id", f"s:user{u}") for u in range(100)}
    tokens.discard(saver.parts.namer.catalog("user_id", "s:user7"))
    theirs = [  # every item whose keys name one of the other threads or users
        i
        for i in table.items()
        if {*NAME.findall(str(i["pk"])), *NAME.findall(str(i["sk"]))} & {*names, *tokens}
    ]
    for copy in range(100):
        renames = {n: fake_name(f"{copy}/{n}") for n in [*names, *tokens]}
        table.load_renamed(theirs, renames)
    every_thread = catalog_pk("", saver.parts.namer.catalog("", ""))
    assert table.partition_size(every_thread) == 100_000
    table.calls.clear()
    large = search()
    assert large == small
    assert large["units"] <= 1.5 * small["units"]
    assert small == {
        # its ten entries (1 unit: strongly consistent), their heads (0.5 each), and the
        # latest checkpoint of each (one strongly consistent Query each)
        "units": 1 + 5 + 10,
        "read_bytes": small["read_bytes"],
        "requests": 12,
        "calls Query": 11,
        "calls BatchGetItem": 1,
    }


def fake_name(seed: str) -> str:
    """A name as `naming.py` makes them (22 URL-safe base64 characters), for a thread or
    a token that is no one's."""
    digest = hashlib.sha256(seed.encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
