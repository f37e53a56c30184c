"""What a table writer (no keys) or a careless process can still do to the thread catalog
and to deletes, each performed, with the named outcome a user sees (docs/SECURITY.md, "The
thread catalog" and "Deletes stay deleted")."""

from __future__ import annotations

import os
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.s3dynamo import (
    CatalogNotBuiltError,
    DeploymentMismatchError,
    ForgedTombstoneError,
    InvalidConfigError,
    InvalidCursorError,
    S3DynamoSaver,
    ThreadDeletedError,
)
from langgraph.checkpoint.s3dynamo.config.settings import Settings
from langgraph.checkpoint.s3dynamo.format.catalog_records import ref_key
from langgraph.checkpoint.s3dynamo.format.layout import deployment_pk, is_writes_key
from langgraph.checkpoint.s3dynamo.format.records import HEAD, head_key
from langgraph.checkpoint.s3dynamo.table import ItemKey, Update, key_of
from langgraph.checkpoint.s3dynamo.testing import Sandbox
from tests.support import raw
from tests.support.backends import Backend
from tests.support.cli import one_line_error, run
from tests.support.scenarios import chat_graph

# dynalite serves no TransactWriteItems: savers there run without conflict detection,
# which writes no heads, so no tombstone holds their threads.
NEEDS_DETECTION = pytest.mark.unsupported_on("real", reason="no transactions on dynalite")
CONFIG: Any = {"configurable": {"thread_id": "t"}}


def say(graph: Any, text: str, tid: str = "t") -> None:
    graph.invoke({"messages": [HumanMessage(text, id=text)]}, {"configurable": {"thread_id": tid}})


def chat(saver: S3DynamoSaver, tid: str, user: str) -> None:
    chat_graph(saver).invoke(
        {"messages": [HumanMessage("hi", id="hi")]},
        {"configurable": {"thread_id": tid, "user_id": user}},
    )


def problems(report: Any) -> dict[tuple[str, str | None], set[str]]:
    """(kind, thread id) -> the items `verify` names with it."""
    out: dict[tuple[str, str | None], set[str]] = {}
    for p in report.problems:
        out.setdefault((p["kind"], p["thread_id"]), set()).add(p["key"])
    return out


def label(key: Any) -> str:
    return f"{key[0]} {key[1]}"


def humans(saver: S3DynamoSaver, tid: str = "t") -> list[str]:
    state = chat_graph(saver).get_state({"configurable": {"thread_id": tid}})
    return [str(m.content) for m in state.values.get("messages", []) if m.type == "human"]


def root_head(saver: S3DynamoSaver, tid: str = "t") -> ItemKey:
    return head_key(saver.store.name_of(tid), saver.store.name_of(tid, ""))


def writes_records(saver: S3DynamoSaver, tid: str = "t") -> list[str]:
    items = raw.partition(saver, saver.store.name_of(tid))
    return [i["sk"] for i in items if is_writes_key(i["sk"])]


def test_an_item_s3dynamo_never_writes_in_a_threads_partition_does_not_block_its_delete(
    backend: Backend,
) -> None:
    saver = backend.saver()
    graph = chat_graph(saver)
    say(graph, "hello")
    name = saver.store.name_of("t")
    raw.put_items(saver, [{"pk": name, "sk": "planted-without-a-separator", "x": "1"}])
    saver.delete_thread("t")  # completes: the item is named in the log and removed
    assert raw.partition(saver, name) == []
    assert graph.get_state({"configurable": {"thread_id": "t"}}).values == {}
    say(graph, "a new start")  # a new history may start on the id
    messages = graph.get_state({"configurable": {"thread_id": "t"}}).values["messages"]
    assert messages[0].content == "a new start"


def test_a_filter_value_no_float_holds_finds_nothing_instead_of_overflowing(
    backend: Backend,
) -> None:
    saver = backend.saver(catalog_fields=["user_id"])
    graph = chat_graph(saver)
    graph.invoke(
        {"messages": [HumanMessage("hi", id="hi")]},
        {"configurable": {"thread_id": "t", "user_id": 7}},
    )
    assert saver.search_threads(metadata={"user_id": 10**400}) == []
    assert list(saver.list(None, filter={"user_id": 10**400})) == []
    assert [t.thread_id for t in saver.search_threads(metadata={"user_id": 7})] == ["t"]


@NEEDS_DETECTION
def test_a_forged_tombstone_stops_no_run_and_takes_no_writes_back(backend: Backend) -> None:
    """A head's clear `h` set to a tombstone's text without its seal (the attack), or to a
    genuine tombstone of another thread's head: each new run goes on as if nothing was
    there (the head is put back to the latest checkpoint, the commit sent again), and the
    process that wrote the thread keeps every writes record of its live checkpoints."""
    saver = backend.saver()
    graph = chat_graph(saver)
    say(graph, "first")
    kept = writes_records(saver)
    assert kept
    raw.set_attributes(saver, root_head(saver), h="~9999999999.999")  # a "delete" to come
    say(graph, "second")  # the process that wrote the thread
    assert humans(saver) == ["first", "second"]
    assert set(kept) <= set(writes_records(saver))
    say(graph, "x", tid="other")
    backend.saver().delete_thread("other")  # its head: a genuine tombstone, of "other"
    genuine = raw.table(saver).get(root_head(saver, "other"))[HEAD]
    raw.set_attributes(saver, root_head(saver), h=genuine)
    say(chat_graph(backend.saver()), "third")  # another process
    assert humans(saver) == ["first", "second", "third"]
    latest = saver.get_tuple(CONFIG)
    assert latest is not None
    assert (
        raw.table(saver).get(root_head(saver))[HEAD]
        == latest.config["configurable"]["checkpoint_id"]
    )


@NEEDS_DETECTION
def test_a_tombstone_forged_again_each_time_is_named_and_writes_nothing(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table writer who forges the tombstone again each time it is put back: the put is
    sent a bounded number of times, then `ForgedTombstoneError` says so; nothing of it is
    written and the thread reads as before."""
    saver = backend.saver()
    say(chat_graph(saver), "first")
    head, forged = root_head(saver), "~forged"
    raw.set_attributes(saver, head, h=forged)
    table = raw.table(saver)
    write = table.write

    def forging(w: Any, **kw: Any) -> Any:
        done = write(w, **kw)
        if isinstance(w, Update) and w.key == head and w.set.get(HEAD) != forged:
            raw.set_attributes(saver, head, h=forged)  # the forger, right after
        return done

    monkeypatch.setattr(table, "write", forging)
    before = raw.partition(saver, saver.store.name_of("t"))
    loaded = saver.get_tuple(CONFIG)
    assert loaded is not None
    checkpoint = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
    with pytest.raises(ForgedTombstoneError) as caught:
        saver.put(loaded.config, checkpoint, {"step": 9}, {})  # type: ignore[arg-type]
    message = str(caught.value)
    assert "not written" in message and "'~forged'" in message and "5 times" in message
    assert "someone without the keys is forging deletes" in message
    assert raw.partition(saver, saver.store.name_of("t")) == before
    assert humans(saver) == ["first"]


@NEEDS_DETECTION
def test_an_earlier_releases_tombstone_still_holds_a_deleted_thread(backend: Backend) -> None:
    """A tombstone without a seal (what an earlier release wrote) counts as forged, which
    is safe: it is put back only over a namespace that still shows a checkpoint, and a
    finished delete leaves none, so a run that loaded the thread before the delete is
    refused as before."""
    saver = backend.saver()
    say(chat_graph(saver), "first")
    stale = backend.saver()
    loaded = stale.get_tuple(CONFIG)
    assert loaded is not None
    saver.delete_thread("t")
    raw.set_attributes(saver, root_head(saver), h="~1700000000.000")  # as 0.x wrote it
    checkpoint = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
    with pytest.raises(ThreadDeletedError):
        stale.put(loaded.config, checkpoint, {"step": 9}, {})  # type: ignore[arg-type]
    assert saver.get_tuple(CONFIG) is None
    say(chat_graph(saver), "afresh")  # a new history starts on it
    assert humans(saver) == ["afresh"]


@NEEDS_DETECTION
def test_a_deleted_tombstone_lets_a_run_in_flight_write_back(backend: Backend) -> None:
    """What the MAC does not cover (docs/SECURITY.md, "Tombstones"): a genuine tombstone
    deleted while a run that loaded the thread before its delete is in flight lets that
    run's next commit through, and the thread comes back from it, without its catalog
    entries (the delete removed them; the run's process knows the thread filed)."""
    saver = backend.saver(catalog_fields=["user_id"])
    chat_graph(saver).invoke(
        {"messages": [HumanMessage("first", id="first")]},
        {"configurable": {"thread_id": "t", "user_id": 7}},
    )
    stale = backend.saver(catalog_fields=["user_id"])
    loaded = stale.get_tuple(CONFIG)
    assert loaded is not None
    saver.delete_thread("t")
    raw.table(saver).batch(deletes=[root_head(saver)])  # the attack
    checkpoint = dict(loaded.checkpoint, id=str(uuid6(clock_seq=9)))
    stale.put(loaded.config, checkpoint, {"step": 9, "user_id": 7}, {})  # type: ignore[arg-type]
    back = saver.get_tuple(CONFIG)
    assert back is not None and back.checkpoint["id"] == checkpoint["id"]
    assert [c.checkpoint["id"] for c in saver.list(CONFIG)] == [checkpoint["id"]]
    assert saver.search_threads(metadata={"user_id": 7}) == []
    assert set(problems(saver.ops.verify())) == {("unfiled thread", "t")}


@NEEDS_DETECTION
def test_verify_names_swapped_forged_and_orphaned_catalog_entries_and_tombstones(
    backend: Backend,
) -> None:
    """Each thing a table writer (or a delete that stopped) can leave in the catalog and on
    the heads, which `verify` names by kind, item and thread, table-wide and, for what one
    thread's partitions show, for that thread."""
    saver = backend.saver(catalog_fields=["user_id"])
    for tid, user in (("a", "ada"), ("b", "bob"), ("c", "cy"), ("d", "dee"), ("e", "eve")):
        chat(saver, tid, user)
    assert saver.ops.verify().ok
    namer, table = saver.parts.namer, raw.table(saver)
    ada, bob, cy = (namer.catalog("user_id", f"s:{u}") for u in ("ada", "bob", "cy"))
    [a_entry], [b_entry] = raw.catalog_items(saver, ada), raw.catalog_items(saver, bob)
    [c_entry] = raw.catalog_items(saver, cy)
    # Swapped: a's entry given b's sealed id. Forged: a keys-only entry for "ghost".
    table.batch([{**a_entry, "c": b_entry["c"]}])
    ghost = {"pk": a_entry["pk"], "sk": namer.thread("ghost")}
    table.batch([ghost])
    # Orphaned: c deleted, its entry put back; b's back-reference gone; e's entry gone.
    saver.delete_thread("c")
    table.batch([c_entry])
    table.batch(deletes=[ref_key(namer.thread("b"), bob)])
    eve = namer.catalog("user_id", "s:eve")
    [e_entry] = raw.catalog_items(saver, eve)
    table.batch(deletes=[key_of(e_entry)])
    # A forged tombstone over d's records.
    raw.set_attributes(saver, root_head(saver, "d"), h="~forged")
    found = problems(saver.ops.verify())
    assert found == {
        ("tampered", None): {label(key_of(a_entry)), label(key_of(ghost))},
        ("orphaned catalog entry", "c"): {label(key_of(c_entry))},
        ("orphaned catalog entry", "b"): {label(key_of(b_entry))},
        ("dangling back-reference", "e"): {label(ref_key(namer.thread("e"), eve))},
        ("forged tombstone", "d"): {label(root_head(saver, "d"))},
    }, found
    # One thread's verify reads its own partitions: what they show of it.
    assert set(problems(saver.ops.verify("e"))) == {("dangling back-reference", "e")}
    assert set(problems(saver.ops.verify("d"))) == {("forged tombstone", "d")}


@NEEDS_DETECTION
def test_verify_names_a_delete_that_stopped_before_its_records_went(backend: Backend) -> None:
    """A genuine tombstone over checkpoints made before it: the delete stopped midway (or
    its records were put back), and new runs of the thread are refused as deleted."""
    saver = backend.saver()
    say(chat_graph(saver), "first")
    name = saver.store.name_of("t")
    records = raw.partition(saver, name)
    saver.delete_thread("t")
    raw.put_items(saver, records)
    report = saver.ops.verify()
    assert [(p["kind"], p["thread_id"]) for p in report.problems] == [("unfinished delete", "t")]
    assert "delete the thread again" in report.problems[0]["detail"]
    saver.delete_thread("t")
    assert saver.ops.verify().ok


def test_a_build_that_could_not_file_a_thread_says_which_and_why_and_is_not_complete(
    backend: Backend,
) -> None:
    """A thread sealed under a key the builder does not hold ("other keys") and one whose
    record was altered ("tampered") are named, as `verify` tells them, and the catalog is
    not recorded complete: a search by the field stays `CatalogNotBuiltError` rather than
    answering without them."""
    plain = backend.saver()  # threads written before the field was declared
    for tid, user in (("a", "ada"), ("b", "bob")):
        chat(plain, tid, user)
    newer = os.urandom(32)
    chat(backend.saver(keys={"k2": newer, **backend.keys}), "k", "kim")  # sealed under k2
    name = plain.store.name_of("b")
    [record] = [i for i in raw.partition(plain, name) if i["sk"].count("#") == 1][-1:]
    raw.set_attributes(plain, key_of(record), t=bytes(record["t"])[:-1] + b"x")
    saver = backend.saver(setup=False, catalog_fields=["user_id"])
    plan = saver.ops.catalog.plan_build()
    skipped = {(s["partition"], s["kind"]) for s in plan.to_dict()["skipped"]}
    assert skipped == {(name, "tampered"), (saver.store.name_of("k"), "other keys")}
    assert plan.execute().result()["complete"] is False
    with pytest.raises(CatalogNotBuiltError):
        saver.search_threads(metadata={"user_id": "ada"})
    # With the keys and the altered thread deleted, a build files everything: complete.
    full = backend.saver(
        setup=False, catalog_fields=["user_id"], keys={**backend.keys, "k2": newer}
    )
    full.delete_thread("b")
    assert full.ops.catalog.build().result()["complete"] is True
    assert [t.thread_id for t in full.search_threads(metadata={"user_id": "ada"})] == ["a"]


def test_a_deployment_with_threads_and_no_record_is_not_taken_for_a_complete_catalog(
    backend: Backend,
) -> None:
    """Its deployment record deleted (or never there for what an earlier process wrote),
    a deployment with threads does not read as a complete catalog, for a search nor for
    the next writer that records itself: `CatalogNotBuiltError` until a build."""
    plain = backend.saver()
    chat(plain, "a", "ada")
    raw.table(plain).batch(deletes=[ItemKey(deployment_pk(""), "deployment")])
    saver = backend.saver(setup=False, catalog_fields=["user_id"])
    with pytest.raises(CatalogNotBuiltError, match="not complete"):
        saver.search_threads(metadata={"user_id": "ada"})
    chat(saver, "b", "ada")  # records the deployment again: its old threads unfiled
    with pytest.raises(CatalogNotBuiltError):
        backend.saver(setup=False, catalog_fields=["user_id"]).search_threads()
    saver.ops.catalog.build()
    found = saver.search_threads(metadata={"user_id": "ada"})
    assert sorted(t.thread_id for t in found) == ["a", "b"]


def test_a_process_without_declared_fields_files_its_threads_under_the_deployments(
    backend: Backend,
) -> None:
    """The fields are the deployment's: `setup()` of a saver declaring them records them
    (sealed) in the deployment record, and a process that declares none (a worker
    started without S3DYNAMO_CATALOG_FIELDS) files its threads under them, so a search
    finds every user's thread, whichever process wrote it."""
    saver = backend.saver(catalog_fields=["user_id"])
    chat(saver, "a", "ada")
    careless = backend.saver(setup=False)  # declares nothing
    chat(careless, "b", "ada")
    assert careless.store.catalog_fields == ("user_id",)
    found = saver.search_threads(metadata={"user_id": "ada"})
    assert sorted(t.thread_id for t in found) == ["a", "b"]
    record = next(i for i in raw.partition(saver, deployment_pk("")) if i["sk"] == "deployment")
    assert b"user_id" not in bytes(record["catalog"])  # sealed: the names are not shown


def test_a_process_declaring_other_fields_is_refused_before_it_writes(
    backend: Backend,
) -> None:
    saver = backend.saver(catalog_fields=["user_id"])
    chat(saver, "a", "ada")
    other = backend.saver(setup=False, catalog_fields=["graph_id"])
    before = backend.contents()
    with pytest.raises(DeploymentMismatchError) as refused:
        chat(other, "b", "bob")
    message = str(refused.value)
    assert "declares catalog fields ['graph_id']" in message
    assert "files its threads under ['user_id']" in message
    assert "S3DYNAMO_CATALOG_FIELDS=user_id" in message and "Nothing was read or written" in message
    assert backend.contents() == before


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("LangGraph", "did you mean 'langgraph'"),
        ("User_ID", "did you mean 'user_id'"),
        ('["user_id"]', "cannot be a metadata field name"),
        (",", "got an empty one"),
        ("user_id,,graph_id", "got an empty one"),
    ],
)
def test_a_catalog_field_that_cannot_be_a_metadata_key_is_refused_by_name(
    value: str, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The argument, the variable and the command line refuse it, before any request."""
    with pytest.raises(InvalidConfigError, match=named):
        Settings(plaintext=True, catalog_fields=value)
    monkeypatch.setenv("S3DYNAMO_CATALOG_FIELDS", value)
    with pytest.raises(InvalidConfigError, match=r"S3DYNAMO_CATALOG_FIELDS.*" + named):
        Settings.from_env(table="t", bucket="b", plaintext=True)
    env = {"S3DYNAMO_TABLE": "t", "S3DYNAMO_BUCKET": "b", "S3DYNAMO_CATALOG_FIELDS": value}
    said = run({**env, "S3DYNAMO_PLAINTEXT": "1", "AWS_REGION": "us-east-1"}, "threads")
    assert said.code == 2 and named in one_line_error(said)


def ids(found: Any) -> list[str]:
    return [t.thread_id for t in found]


def pages(saver: S3DynamoSaver, limit: int, **search: Any) -> list[list[str]]:
    """Every page of a search, following each page's last cursor."""
    out: list[list[str]] = []
    page = saver.search_threads(limit=limit, **search)
    while page:
        out.append(ids(page))
        page = saver.search_threads(limit=limit, before=page[-1].cursor, **search)
    return out


@NEEDS_DETECTION
def test_a_forged_head_moves_no_thread_ahead_of_honest_ones_and_drops_none(
    backend: Backend,
) -> None:
    """A thread's place is its latest checkpoint, authenticated, or its head where that
    is older: a head forged to a newer id than the thread has does not bring it ahead
    (the next threads are read instead), one forged to an older id places it there, and
    every thread is on exactly one page."""
    saver = backend.saver(catalog_fields=["user_id"])
    made = {}
    for i in range(6):
        chat(saver, f"t{i}", "ada")
        made[f"t{i}"] = raw.table(saver).get(root_head(saver, f"t{i}"))[HEAD]
    honest = pages(saver, 2, metadata={"user_id": "ada"})
    assert honest == [["t5", "t4"], ["t3", "t2"], ["t1", "t0"]]
    future = str(uuid6(clock_seq=1)).replace(str(uuid6(clock_seq=1))[:8], "ffffffff", 1)
    raw.set_attributes(saver, root_head(saver, "t0"), h=future)  # the oldest, "newest"
    raw.set_attributes(saver, root_head(saver, "t4"), h=made["t1"])  # pushed down to t1
    name = saver.store.name_of
    tied = sorted(["t4", "t1"], key=name, reverse=True)  # one place: by name, as ties are
    expected = ["t5", "t3", "t2", *tied, "t0"]
    assert [i for p in pages(saver, 2, metadata={"user_id": "ada"}) for i in p] == expected
    assert [i for p in pages(saver, 1) for i in p] == expected  # every thread's list too
    assert ids(saver.search_threads(metadata={"user_id": "ada"}, limit=10)) == expected


@NEEDS_DETECTION
def test_a_cursor_is_opaque_bounded_and_refused_unless_a_search_returned_it(
    backend: Backend,
) -> None:
    """A head's clear text is copied nowhere: a cursor is sealed, of bounded size, names
    no stored name; `before` that no search of this filter returned is
    `InvalidCursorError`, before any request."""
    saver = backend.saver(catalog_fields=["user_id"])
    for i in range(3):
        chat(saver, f"t{i}", "ada")
    markup = "<script>alert(1)</script>" * 12_000  # 300 KB of markup in a head
    raw.set_attributes(saver, root_head(saver, "t1"), h=markup)
    found = saver.search_threads(metadata={"user_id": "ada"})
    assert ids(found) == ["t2", "t1", "t0"]  # t1 placed by its record
    for t in found:
        assert len(t.cursor) < 300 and "<" not in t.cursor
        assert saver.store.name_of(t.thread_id) not in t.cursor
    first = found[0].cursor
    bob = saver.search_threads(metadata={"user_id": "bob"})
    assert bob == []
    altered = first[:10] + ("A" if first[10] != "A" else "B") + first[11:]
    old_style = f"{found[0].checkpoint_id}#{saver.store.name_of('t2')}"
    backend.reset()
    for before, said in (
        ("garbage", "made up, altered"),
        ("", "no base64url text"),
        (altered, "made up, altered"),
        (old_style, "no base64url text"),
        (markup, "no base64url text"),
        ("x" * 70_000, "no base64url text of at most 64 KB"),
    ):
        with pytest.raises(InvalidCursorError, match=said) as refused:
            saver.search_threads(metadata={"user_id": "ada"}, before=before)
        assert "Search again without before" in str(refused.value)
        assert len(str(refused.value)) < 600
    with pytest.raises(InvalidCursorError, match="another filter"):  # another search's
        saver.search_threads(metadata={"user_id": "bob"}, before=first)
    assert backend.calls() == {}
    assert ids(saver.search_threads(metadata={"user_id": "ada"}, before=first)) == ["t1", "t0"]


def test_a_thread_written_between_two_pages_is_on_neither(backend: Backend) -> None:
    """Paging is keyset over a moving order (docs/ARCHITECTURE.md, "The thread
    catalog"): a thread written after the first page moves to the top, so the next page
    starts below where the first ended and does not show it."""
    saver = backend.saver(catalog_fields=["user_id"])
    for i in range(4):
        chat(saver, f"t{i}", "ada")
    first = saver.search_threads(metadata={"user_id": "ada"}, limit=2)
    assert ids(first) == ["t3", "t2"]
    chat(saver, "t0", "ada")  # written between the pages
    rest = saver.search_threads(metadata={"user_id": "ada"}, limit=2, before=first[-1])
    assert ids(rest) == ["t1"]
    assert ids(saver.search_threads(metadata={"user_id": "ada"}))[0] == "t0"


@NEEDS_DETECTION
def test_the_command_line_finds_a_number_as_json_and_refuses_a_key_given_twice(
    aws: None,
) -> None:
    """`threads --filter KEY=VALUE` compares text: a user id stored as the number 42 is
    found with `--filter '{"user_id": 42}'`, the rule `memory search --filter` has too;
    a key given twice, in either form, is refused by name, before any request."""
    sandbox = Sandbox(  # the tier's endpoints: moto in process, or servers on loopback
        dynamodb_endpoint_url=os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"),
        s3_endpoint_url=os.environ.get("AWS_ENDPOINT_URL_S3"),
    )
    saver = sandbox.saver(catalog_fields=["user_id"])
    for tid, user in (("number", 42), ("text", "42")):
        chat_graph(saver).invoke(
            {"messages": [HumanMessage("hi", id="hi")]},
            {"configurable": {"thread_id": tid, "user_id": user}},
        )
    env = sandbox.environment()

    def found(*filters: str) -> list[str]:
        given = [arg for f in filters for arg in ("--filter", f)]
        said = run(env, "threads", *given, "--json")
        assert said.code == 0, said.err
        return [row["thread_id"] for row in said.json()["threads"]]

    assert found('{"user_id": 42}') == ["number"]
    assert found("user_id=42") == ["text"]
    for command in (("threads",), ("memory", "search", "users")):
        for twice in (("user_id=1", "user_id=2"), ("user_id=1", '{"user_id": 1}')):
            said = run(env, *command, "--filter", twice[0], "--filter", twice[1])
            assert said.code == 2, said.err
            assert "'user_id' is given twice" in " ".join(said.err.split())
