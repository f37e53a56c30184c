"""Bad input, round three (issue 49): every argument given where it is given, as a new
user gives it. A string is never a list of thread ids, no spelling of "false" turns
sealing off, a constructor argument of another type is named, the Store takes a
namespace as a tuple and its configuration is checked when it is built, a copy of a
thread that does not exist is `ThreadNotFoundError`, and LangGraph's server may prune as
it does. Then every argument of every public method given a wrong type once: a named
error, before any request (`arguments.py` holds the tables this checks).

Nothing written by any of these errors: `tests/support/unchanged.py`."""

from __future__ import annotations

import asyncio
import base64
import inspect
import math
import os
import pydoc
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import InvalidNamespaceError

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import (
    ArgumentTypeError,
    ConcurrentUpdateError,
    DeploymentMismatchError,
    InvalidConfigError,
    S3DynamoSaver,
    Settings,
    StorageError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.config.settings import SETTING_ARGUMENTS
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.backends import Backend
from tests.support.embeddings import random_embedding
from tests.support.port_contract import needs_transactions
from tests.support.scenarios import chat_graph
from tests.support.unchanged import nothing_written

NO_SPELLINGS = ["false", "False", "FALSE", "no", "No", "0", "off", " false "]
SECRET_TEXT = "the secret the user told the agent"


def config(tid: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid, "checkpoint_ns": "", **configurable}}


def put_one(saver: S3DynamoSaver, tid: str, text: str, parent: Any = None) -> Any:
    """One checkpoint holding `text` on `tid`, after `parent` (a config put returned)."""
    version = saver.get_next_version(None, None)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notes": text}
    checkpoint["channel_versions"] = {"notes": version}
    return saver.put(parent or config(tid), checkpoint, {"step": 1}, {"notes": version})


def history(saver: S3DynamoSaver, tid: str) -> list[str]:
    return [t.checkpoint["channel_values"]["notes"] for t in saver.list(config(tid))]


def threads_of_three(backend: Backend) -> S3DynamoSaver:
    """The issue's user's deployment: threads "a", "b" and "ab", three checkpoints each."""
    saver = backend.saver()
    for tid in ("a", "b", "ab"):
        parent = None
        for turn in range(3):
            parent = put_one(saver, tid, f"{tid} {turn}", parent)
    return saver


# ------------------------------------------------------- 1. a string for a list


@pytest.mark.parametrize("asynchronous", [False, True], ids=["prune", "aprune"])
def test_prune_of_one_string_is_refused_before_anything_is_read(
    backend: Backend, asynchronous: bool
) -> None:
    saver = threads_of_three(backend)
    backend.reset()
    with nothing_written(backend), pytest.raises(ArgumentTypeError) as raised:
        if asynchronous:
            asyncio.run(saver.aprune("ab", keep_last=1))  # type: ignore[arg-type]
        else:
            saver.prune("ab", keep_last=1)  # type: ignore[arg-type]
    assert str(raised.value).startswith(
        "thread_ids must be a list of thread ids (str), got the string 'ab', which would be "
        "taken for the list of its characters; pass ['ab'] for one"
    )
    assert isinstance(raised.value, TypeError)
    assert not backend.calls()  # nothing read either
    for tid in ("a", "b", "ab"):
        assert history(saver, tid) == [f"{tid} 2", f"{tid} 1", f"{tid} 0"]
    saver.prune(["ab"], keep_last=1)  # what was meant
    assert history(saver, "ab") == ["ab 2"] and len(history(saver, "a")) == 3


def test_a_graph_run_passes_a_thread_id_of_another_type_as_its_str(backend: Backend) -> None:
    """docs/RELIABILITY.md: LangGraph hands the saver `str(thread_id)` in a graph run, so
    the list ["a"] runs as the thread "['a']"; a direct call with the list is refused,
    and a graph run's None reaches the saver and is refused before anything is written."""
    saver = backend.saver()
    graph = chat_graph(saver)
    graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": ["a"]}})
    stored = saver.get_tuple(config("['a']"))
    assert stored is not None and stored.checkpoint["channel_values"]["turns"] == 1
    with pytest.raises(ArgumentTypeError, match=r"thread_id must be a str .*got list: \['a'\]"):
        saver.get_tuple(config(["a"]))  # type: ignore[arg-type]
    with nothing_written(backend), pytest.raises(ArgumentTypeError, match="got NoneType"):
        graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": None}})


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda s: s.delete_for_runs("run-1"), "run_ids must be a list of run ids"),
        (
            lambda s: s.get_delta_channel_history(config=config("a"), channels="notes"),
            "channels must be a list of channel names",
        ),
        (lambda s: s.ops.plan_prune("ab"), "thread_ids must be a list"),
        (lambda s: s.ops.plan_garbage_collection("ab"), "thread_ids must be a list"),
        (lambda s: s.ops.plan_reencrypt("ab"), "thread_ids must be a list"),
        (lambda s: s.ops.plan_import(InMemorySaver(), "ab"), "thread_ids must be a list"),
        (lambda s: s.ops.plan_delete_runs("run-1"), "run_ids must be a list"),
    ],
)
def test_no_other_list_of_ids_takes_a_string(
    backend: Backend, call: Callable[[S3DynamoSaver], Any], named: str
) -> None:
    saver = threads_of_three(backend)
    backend.reset()
    with nothing_written(backend), pytest.raises(ArgumentTypeError, match=named):
        call(saver)
    assert not backend.calls()


# ---------------------------------------------------- 2. no spelling of "false"


def _found_in_clear(backend: Backend) -> bool:
    return any(SECRET_TEXT.encode() in repr(v).encode() for v in backend.contents().values())


def test_plaintext_true_stores_in_clear_which_a_raw_scan_finds(backend: Backend) -> None:
    """The control: what the checks below would find if sealing were off."""
    saver = backend.saver(keys=None, secret=None, plaintext=True)
    put_one(saver, "t", SECRET_TEXT)
    assert _found_in_clear(backend)
    assert saver.parts.deployment.mine().mode == "plaintext"


@pytest.mark.parametrize("word", NO_SPELLINGS)
def test_no_spelling_of_false_turns_sealing_off(backend: Backend, word: str) -> None:
    saver = backend.saver(plaintext=word)
    assert saver.settings.plaintext is False
    put_one(saver, "t", SECRET_TEXT)
    assert not _found_in_clear(backend)
    recorded = saver.parts.deployment.recorded()
    assert recorded is not None and recorded.mode == "sealed"
    # Without keys, the word is no choice of plaintext: the saver refuses to start.
    with pytest.raises(InvalidConfigError, match="no sealing key is configured"):
        backend.saver(setup=False, keys=None, secret=None, plaintext=word)


@pytest.mark.parametrize("word", ["false", "no", "0"])
def test_from_env_reads_a_plaintext_override_as_the_variable_is_read(
    word: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3DYNAMO_TABLE", "t")
    monkeypatch.setenv("S3DYNAMO_BUCKET", "b")
    with pytest.raises(InvalidConfigError, match="no sealing key is configured"):
        S3DynamoSaver.from_env(plaintext=word)
    key = base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("S3DYNAMO_KEYS", f"k1:{key}")
    monkeypatch.setenv("S3DYNAMO_SECRET", "s" * 16)
    saver = S3DynamoSaver.from_env(plaintext=word, detect_concurrent_runs=word)
    assert saver.settings.plaintext is False and saver.settings.detect_concurrent_runs is False


@needs_transactions
def test_detect_concurrent_runs_no_turns_detection_off(backend: Backend) -> None:
    def stale_put(**settings: Any) -> None:
        first = backend.saver(**settings)
        latest = put_one(first, "t", "first")
        stale = backend.saver(setup=False, **settings)
        assert stale.get_tuple(config("t")) is not None  # loads the latest
        put_one(first, "t", "moved on", latest)
        put_one(stale, "t", "from the stale run", latest)

    with pytest.raises(ConcurrentUpdateError):
        stale_put(detect_concurrent_runs="yes")
    stale_put(detect_concurrent_runs="no")  # a plain put, not refused


@pytest.mark.parametrize("word", ["ture", "nope", "2"])
def test_a_word_that_is_neither_yes_nor_no_is_named(backend: Backend, word: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"plaintext must be yes or no, got '{word}'"):
        backend.saver(setup=False, plaintext=word)


@pytest.mark.parametrize("value", [1, 0, None, ["no"], 0.0])
def test_a_boolean_setting_of_another_type_is_named(backend: Backend, value: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="plaintext must be True or False, got"):
        backend.saver(setup=False, plaintext=value)


# ------------------------------------------------- 3. constructor arguments


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"table": 123}, "table must be a str (the DynamoDB table's name), got int 123"),
        ({"region": 5}, "region must be a str (an AWS region, such as 'eu-west-1'), got int 5"),
        ({"secret": 123}, "secret must be text or bytes, at least 16 bytes, got a value of type"),
        ({"inline_max": "big"}, "inline_max must be a whole number of bytes, got 'big'"),
        ({"inline_max": 8192.5}, "inline_max must be a whole number of bytes (an int), got float"),
        ({"inline_max": 8192.0}, r"got float 8192.0; pass 8192, not 8192.0"),
        ({"bucket": ["b"]}, r"bucket must be a str \(the S3 bucket's name\), got list \['b'\]"),
        ({"dynamodb_client": "x"}, "dynamodb_client must be a boto3 or botocore dynamodb client"),
        ({"max_attempts": "five"}, "max_attempts must be a whole number of attempts, got 'f"),
        ({"compression_level": 99}, "compression_level must be at most 22"),
        ({"retention": True}, "retention must be a duration, got a bool"),
        ({"active_key": "k2"}, r"active_key='k2' names a key"),
    ],
)
def test_a_constructor_argument_of_another_type_is_named(given: dict[str, Any], named: str) -> None:
    settings: dict[str, Any] = {"table": "t", "bucket": "b", "plaintext": True, **given}
    if "active_key" in given:
        settings["plaintext"] = False
    with pytest.raises(InvalidConfigError) as raised:
        S3DynamoSaver(**settings)
    message = str(raised.value)
    assert named in message or __import__("re").search(named, message), message
    # A setting to fix, never "retry later"; a wrong type is a TypeError too.
    assert not isinstance(raised.value, StorageError)
    if "must be a" in named and "at most" not in named and "got '" not in named:
        assert isinstance(raised.value, TypeError)  # text is read as its variable's is


def test_the_constructor_shows_every_setting_with_its_type_and_default() -> None:
    signature = inspect.signature(S3DynamoSaver)
    params = signature.parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert set(params) >= SETTING_ARGUMENTS
    defaults = {f: getattr(Settings(plaintext=True), f) for f in Settings.__dataclass_fields__}
    for name in SETTING_ARGUMENTS:
        assert params[name].annotation is not inspect.Parameter.empty, name
        if name in defaults and name not in ("plaintext", "async_workers"):
            assert params[name].default == defaults[name], name
    assert params["plaintext"].default is False
    shown = pydoc.render_doc(S3DynamoSaver, renderer=pydoc.plaintext)
    assert "inline_max: 'int' = 8192" in shown and "plaintext: 'bool' = False" in shown


def test_from_env_takes_the_constructors_names_and_says_which_was_meant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("S3DYNAMO_TABLE", "t")
    monkeypatch.setenv("S3DYNAMO_BUCKET", "b")
    given = {"keys", "secret", "kms_key_id", "active_key", "ttl", "plaintext", "table", "bucket"}
    for name in SETTING_ARGUMENTS - given:
        S3DynamoSaver.from_env(plaintext=True, **{name: getattr(Settings(plaintext=True), name)})
    with pytest.raises(
        ArgumentTypeError, match=r"unknown setting\(s\) \['bukcet'\]; did you mean bucket"
    ):
        S3DynamoSaver.from_env(plaintext=True, bukcet="b")
    with pytest.raises(ArgumentTypeError, match=r"; did you mean bucket for 'bukcet', table for"):
        S3DynamoSaver(tabel="t", bukcet="b")
    # An override in its variable's text is read as the variable is.
    assert S3DynamoSaver.from_env(plaintext=True, inline_max="8192").settings.inline_max == 8192


STORE_OWN = "the Store's ['filter_fields', 'index', 'ttl'] or the saver's ['active_key',"
SAVERS = "['active_key',"


@pytest.mark.parametrize(
    ("build", "where", "meant", "own"),
    [
        (lambda: S3DynamoStore.from_env(indx={}), "S3DynamoStore.from_env", "index", STORE_OWN),
        (lambda: S3DynamoStore(indx={}), "S3DynamoStore", "index", STORE_OWN),
        (lambda: S3DynamoSaver(tabel="t"), "S3DynamoSaver", "table", SAVERS),
        (lambda: S3DynamoSaver.from_env(tabel="t"), "S3DynamoSaver.from_env", "table", SAVERS),
        (
            lambda: S3DynamoCache(tabel="t"),
            "S3DynamoCache",
            "table",
            "the cache's ['serde'] or the saver's ['active_key',",
        ),
        (
            lambda: S3DynamoCache.from_env(tabel="t"),
            "S3DynamoCache.from_env",
            "table",
            "the saver's ['active_key',",
        ),
    ],
)
def test_a_misspelled_keyword_names_the_one_meant_and_what_that_class_takes(
    monkeypatch: pytest.MonkeyPatch, build: Callable[[], Any], where: str, meant: str, own: str
) -> None:
    """Before anything is read or built: no environment is set here, and the error is
    the keyword's, not a missing table's; still a TypeError, as Python's would be."""
    for name in ("S3DYNAMO_TABLE", "S3DYNAMO_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ArgumentTypeError) as caught:
        build()
    message = str(caught.value)
    typo = "indx" if meant == "index" else "tabel"
    assert message.startswith(
        f"{where}: unknown setting(s) [{typo!r}]; did you mean {meant}? Expected some of {own}"
    ), message
    assert "'inline_max'" in message and isinstance(caught.value, TypeError)
    if "Store" in where:  # the Store's own names are not listed again as the saver's
        assert message.count("'index'") == 1 and message.count("'ttl'") == 1


def test_a_settings_object_is_checked_as_the_arguments_are() -> None:
    assert Settings(plaintext="off", keys={"k": os.urandom(32)}, secret="s" * 16).plaintext is False
    with pytest.raises(ArgumentTypeError, match="table must be a str"):
        Settings(table=123, plaintext=True)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="settings must be a Settings"):
        S3DynamoSaver(settings={"table": "t"})  # type: ignore[arg-type]


# --------------------------------------------------- 4. the Store's arguments

NS = ("users", "ada")
DIMS = 8


class Stored(NamedTuple):
    backend: Backend
    store: S3DynamoStore


def stored(backend: Backend, **options: Any) -> Stored:
    """A deployment holding Store items in ("users", "ada") and in ("u", "s", "e", "r", "s"),
    the namespace a string's characters would name."""
    store = S3DynamoStore.from_saver(backend.saver(), **options)
    store.put(NS, "pref", {"kind": "pref", "text": "likes tea"})
    store.put(("u", "s", "e", "r", "s"), "k", {"kind": "pref"})
    backend.reset()
    return Stored(backend, store)


STORE_CALLS: dict[str, tuple[type[Exception], str, Callable[[S3DynamoStore, bool], Any]]] = {
    "put into a string": (
        InvalidNamespaceError,
        r"namespace must be a tuple of labels, got the string 'users'.*pass \('users',\)",
        lambda s, a: (
            asyncio.run(s.aput("users", "k", {"v": 1})) if a else s.put("users", "k", {"v": 1})
        ),  # type: ignore[arg-type]
    ),
    "put into a list holding an empty label": (
        InvalidNamespaceError,
        r"namespace \('users', ''\): each label must be a non-empty str, got the string ''",
        lambda s, a: (
            asyncio.run(s.aput(["users", ""], "k", {"v": 1}))
            if a
            else s.put(["users", ""], "k", {"v": 1})
        ),  # type: ignore[arg-type]
    ),
    "search a string": (
        InvalidNamespaceError,
        "namespace_prefix must be a tuple of labels, got the string 'users'",
        lambda s, a: asyncio.run(s.asearch("users")) if a else s.search("users"),  # type: ignore[arg-type]
    ),
    "list namespaces under a string": (
        InvalidNamespaceError,
        "prefix must be a tuple of labels, got the string 'users'",
        lambda s, a: (
            asyncio.run(s.alist_namespaces(prefix="users"))
            if a
            else s.list_namespaces(prefix="users")
        ),  # type: ignore[arg-type]
    ),
    "get from a string": (
        InvalidNamespaceError,
        "namespace must be a tuple of labels, got the string 'users'",
        lambda s, a: asyncio.run(s.aget("users", "k")) if a else s.get("users", "k"),  # type: ignore[arg-type]
    ),
    "delete from a string": (
        InvalidNamespaceError,
        "namespace must be a tuple of labels, got the string 'users'",
        lambda s, a: asyncio.run(s.adelete("users", "k")) if a else s.delete("users", "k"),  # type: ignore[arg-type]
    ),
    "a limit as text": (
        ArgumentTypeError,
        "limit must be a whole number .* got the string '5'; pass 5, not '5'",
        lambda s, a: asyncio.run(s.asearch(NS, limit="5")) if a else s.search(NS, limit="5"),  # type: ignore[arg-type]
    ),
    "a filter as text": (
        ArgumentTypeError,
        "filter must be a dict, got the string 'kind=pref'",
        lambda s, a: (
            asyncio.run(s.asearch(NS, filter="kind=pref"))
            if a
            else s.search(NS, filter="kind=pref")
        ),  # type: ignore[arg-type]
    ),
    "a negative limit": (
        InvalidConfigError,
        "limit must be a whole number, at least 0, got -1",
        lambda s, a: asyncio.run(s.asearch(NS, limit=-1)) if a else s.search(NS, limit=-1),
    ),
    "a value that is no mapping": (
        ArgumentTypeError,
        r"value must be a dict, got list \[1, 2\]",
        lambda s, a: asyncio.run(s.aput(NS, "k", [1, 2])) if a else s.put(NS, "k", [1, 2]),  # type: ignore[arg-type]
    ),
    "a key that is no string": (
        ArgumentTypeError,
        "key must be a str, got NoneType None",
        lambda s, a: asyncio.run(s.aput(NS, None, {"v": 1})) if a else s.put(NS, None, {"v": 1}),  # type: ignore[arg-type]
    ),
    "index fields as one string": (
        ArgumentTypeError,
        r"index must be a list of field paths .* pass \['text'\]",
        lambda s, a: (
            asyncio.run(s.aput(NS, "k", {"text": "x"}, index="text"))
            if a
            else s.put(NS, "k", {"text": "x"}, index="text")
        ),  # type: ignore[arg-type]
    ),
}


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("case", sorted(STORE_CALLS))
def test_a_store_argument_of_another_form_is_named_and_nothing_is_written(
    backend: Backend, case: str, asynchronous: bool
) -> None:
    error, named, call = STORE_CALLS[case]
    s = stored(backend)
    with nothing_written(backend), pytest.raises(error, match=named):
        call(s.store, asynchronous)
    assert not backend.calls()


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
def test_a_namespace_of_one_label_is_the_tuple_the_error_names(backend: Backend) -> None:
    s = stored(backend)
    s.store.put(("users",), "k", {"v": 1})
    assert sorted(i.key for i in s.store.search(("users",))) == ["k", "pref"]
    assert ("users",) in s.store.list_namespaces(prefix=("users",))
    # The characters' namespace is its own, as it always was.
    assert s.store.get(("u", "s", "e", "r", "s"), "k") is not None


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
def test_a_store_key_of_another_type_is_its_str_as_in_langgraphs_own_stores(
    backend: Backend,
) -> None:
    """LangGraph's `BaseStore` keys an item by `str(key)`: code that puts under a UUID
    or a number reads back alike here and from `InMemoryStore`."""
    from langgraph.store.memory import InMemoryStore

    key = uuid.UUID(int=7)
    for store in (stored(backend).store, InMemoryStore()):
        store.put(NS, key, {"v": 1})
        asyncio.run(store.aput(NS, 42, {"v": 2}))
        got = store.get(NS, key)
        assert got is not None and got.key == str(key), store
        assert store.get(NS, "42").value == {"v": 2}, store
        store.delete(NS, 42)
        assert store.get(NS, "42") is None, store


def test_a_store_given_a_saver_and_settings_too_is_refused(backend: Backend) -> None:
    with pytest.raises(InvalidConfigError, match="pass a saver or the saver's settings"):
        S3DynamoStore(backend.saver(), inline_max=0)
    with pytest.raises(ArgumentTypeError, match="saver must be an S3DynamoSaver"):
        S3DynamoStore.from_saver("checkpoints")


# ------------------------------------ 5. the Store's configuration, when it is built

embed = random_embedding(DIMS)


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        (
            {"index": {"dims": "64", "embed": embed}},
            ArgumentTypeError,
            r"index\['dims'\] must be a whole number of dimensions .* got the string '64'; pass 64",
        ),
        (
            {"index": {"embed": embed, "fields": ["text"]}},
            InvalidConfigError,
            "index has no 'dims'",
        ),
        (
            {"index": {"dims": 8, "embed": embed, "fields": "text"}},
            ArgumentTypeError,
            r"index\['fields'\] must be a list of field paths",
        ),
        ({"index": {"dims": 8, "embed": 5}}, ArgumentTypeError, r"index\['embed'\] must be"),
        (  # a typo would otherwise index every field, silently
            {"index": {"dims": 8, "embed": embed, "feilds": ["text"]}},
            ArgumentTypeError,
            r"index: unknown setting\(s\) \['feilds'\]; did you mean fields\?",
        ),
        (  # ... or keep every item for good
            {"ttl": {"defualt_ttl": 60}},
            ArgumentTypeError,
            r"ttl: unknown setting\(s\) \['defualt_ttl'\]; did you mean default_ttl\?",
        ),
        (
            {"ttl": {"default_ttl": "1h"}},
            ArgumentTypeError,
            r"ttl\['default_ttl'\] must be a number of minutes, got the string '1h'",
        ),
        ({"ttl": {"default_ttl": -5}}, InvalidConfigError, "at least 0, got -5"),
        ({"ttl": {"refresh_on_read": "maybe"}}, InvalidConfigError, "must be yes or no"),
        ({"ttl": "1h"}, ArgumentTypeError, "ttl must be a TTLConfig"),
        (
            {"ttl": {"sweep_interval_minutes": True}},
            ArgumentTypeError,
            r"ttl\['sweep_interval_minutes'\] must be a number of minutes, got bool True$",
        ),
        (
            {"ttl": {"sweep_interval_minutes": "often"}},
            ArgumentTypeError,
            r"must be a number of minutes, got the string 'often'$",
        ),
        *(
            (
                {"ttl": {"sweep_interval_minutes": bad}},
                InvalidConfigError,
                rf"ttl\['sweep_interval_minutes'\] must be a positive, finite number of "
                rf"minutes, got {shown}$",
            )
            for bad, shown in [
                (0, "0"),
                (-5, "-5"),
                (-0.5, "-0.5"),
                (math.nan, "nan"),
                (math.inf, "inf"),
            ]
        ),
        ({"filter_fields": "kind"}, ArgumentTypeError, r"pass \['kind'\]"),
    ],
)
def test_the_store_s_configuration_is_checked_when_it_is_built(
    backend: Backend, options: dict[str, Any], error: type[Exception], named: str
) -> None:
    saver = backend.saver()
    backend.reset()
    with nothing_written(backend), pytest.raises(error, match=named):
        S3DynamoStore.from_saver(saver, **options)
    assert not backend.calls()


@pytest.mark.parametrize("interval", [0.05, 5, 1e-3])
def test_a_sweep_interval_is_any_positive_number_of_minutes_as_langgraph_s_stores_take(
    backend: Backend, interval: float
) -> None:
    # LangGraph's own store tests sweep every 0.05 minutes; its TTLConfig says int, its
    # stores take a float (`float(...) * 60` seconds).
    ttl = {"default_ttl": 0.5, "refresh_on_read": True, "sweep_interval_minutes": interval}
    store = S3DynamoStore.from_saver(backend.saver(), ttl=ttl)  # type: ignore[arg-type]
    assert store.ttl_config == ttl


def test_a_ttl_refresh_given_as_a_word_is_read_as_one(backend: Backend) -> None:
    store = S3DynamoStore.from_saver(
        backend.saver(), ttl={"default_ttl": 60, "refresh_on_read": "no"}
    )
    assert store.ttl_config == {"default_ttl": 60, "refresh_on_read": False}


# --------------------------------------------- 6. a copy of a missing thread


@pytest.mark.parametrize("asynchronous", [False, True], ids=["copy_thread", "acopy_thread"])
def test_copying_a_thread_that_does_not_exist_is_thread_not_found(
    backend: Backend, asynchronous: bool
) -> None:
    saver = threads_of_three(backend)
    with nothing_written(backend), pytest.raises(ThreadNotFoundError) as raised:
        if asynchronous:
            asyncio.run(saver.acopy_thread("nobody", "copy"))
        else:
            saver.copy_thread("nobody", "copy")
    assert str(raised.value).startswith("copy_thread source 'nobody' has no checkpoints")
    assert isinstance(raised.value, LookupError)
    # A saver with another naming secret finds no thread either, and is told why.
    other = backend.saver(setup=False, secret=os.urandom(16))
    with nothing_written(backend), pytest.raises(DeploymentMismatchError):
        other.copy_thread("a", "copy")


# ------------------------------------ 7. a checkpoint id LangGraph could have made

EXPECTED_ID = (
    "must be a checkpoint id as LangGraph makes them: a UUID in canonical form, such as "
    "'1f0c2a8e-5b3d-6e2a-8001-3c5d7e9f1a2b', got "
)
TO_FIX = (
    ". Pass the checkpoint_id of a config get_state, get_tuple or list returned, or none "
    "for the thread's latest"
)
A_REAL_ID = "1f0c2a8e-5b3d-6e2a-8001-3c5d7e9f1a2b"


def with_id(tid: str, cid: Any) -> dict[str, Any]:
    return config(tid, checkpoint_id=cid)


# Each method that takes a checkpoint id, given `cid` by a user: (where the id goes, a
# call). LangGraph's graphs call these same methods with the config a user passes.
ID_TAKERS: dict[str, tuple[str, Callable[[S3DynamoSaver, Any], Any]]] = {
    "get_tuple": ("config", lambda s, cid: s.get_tuple(with_id("a", cid))),
    "aget_tuple": ("config", lambda s, cid: asyncio.run(s.aget_tuple(with_id("a", cid)))),
    "list": ("config", lambda s, cid: list(s.list(with_id("a", cid)))),
    "list before": ("before", lambda s, cid: list(s.list(config("a"), before=with_id("a", cid)))),
    "alist before": (
        "before",
        lambda s, cid: asyncio.run(_alist(s, config("a"), before=with_id("a", cid))),
    ),
    "list(None) before": ("before", lambda s, cid: list(s.list(None, before=with_id("a", cid)))),
    "put after it (a fork)": ("config", lambda s, cid: put_one(s, "a", "fork", with_id("a", cid))),
    "put_writes": ("config", lambda s, cid: s.put_writes(with_id("a", cid), [("c", 1)], "task")),
    "get_delta_channel_history": (
        "config",
        lambda s, cid: s.get_delta_channel_history(config=with_id("a", cid), channels=["c"]),
    ),
}


async def _alist(saver: S3DynamoSaver, cfg: Any, **kwargs: Any) -> list[Any]:
    return [t async for t in saver.alist(cfg, **kwargs)]


@pytest.mark.parametrize(
    ("cid", "hint"),
    [
        ("garbage", ""),
        ("1f1f", ""),
        (A_REAL_ID.upper(), f"; pass {A_REAL_ID!r}"),
        (A_REAL_ID.replace("-", ""), f"; pass {A_REAL_ID!r}"),
        (f"{{{A_REAL_ID}}}", f"; pass {A_REAL_ID!r}"),
        ("a#b", ""),
    ],
)
@pytest.mark.parametrize("method", sorted(ID_TAKERS))
def test_a_checkpoint_id_no_checkpoint_can_have_is_refused_before_any_request(
    backend: Backend, method: str, cid: str, hint: str
) -> None:
    """Issue 56: "garbage" read as an empty thread, and a run from it became the thread's
    latest state."""
    saver = threads_of_three(backend)
    where, call = ID_TAKERS[method]
    backend.reset()
    with nothing_written(backend), pytest.raises(InvalidConfigError) as refused:
        call(saver, cid)
    assert str(refused.value) == (
        f"{where}['configurable']['checkpoint_id'] {EXPECTED_ID}{cid!r}{hint}{TO_FIX}"
    )
    assert not backend.calls()
    assert history(saver, "a") == ["a 2", "a 1", "a 0"]


@pytest.mark.parametrize("method", sorted(ID_TAKERS))
def test_a_checkpoint_id_of_another_type_is_named(backend: Backend, method: str) -> None:
    saver = backend.saver()
    where, call = ID_TAKERS[method]
    with pytest.raises(ArgumentTypeError) as refused:
        call(saver, 42)
    assert str(refused.value) == (
        f"{where}['configurable']['checkpoint_id'] {EXPECTED_ID.removesuffix(', got ')}, "
        "got int: 42"
    )


def test_a_put_checkpoint_whose_own_id_no_checkpoint_can_have_is_refused(
    backend: Backend,
) -> None:
    saver = backend.saver()
    checkpoint = {**empty_checkpoint(), "id": "my-own-checkpoint-id"}
    with nothing_written(backend), pytest.raises(InvalidConfigError) as refused:
        saver.put(config("a"), checkpoint, {"step": 1}, {})  # type: ignore[arg-type]
    assert str(refused.value) == f"checkpoint['id'] {EXPECTED_ID}'my-own-checkpoint-id'{TO_FIX}"


def test_a_graph_run_from_a_malformed_checkpoint_id_is_refused_and_the_thread_kept(
    backend: Backend,
) -> None:
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        turns: int

    builder = StateGraph(State)
    builder.add_node("count", lambda s: {"turns": s["turns"] + 1})
    builder.add_edge(START, "count")
    graph = builder.compile(checkpointer=backend.saver())
    graph.invoke({"turns": 0}, config("chat"))
    latest = graph.get_state(config("chat"))
    with nothing_written(backend), pytest.raises(InvalidConfigError, match="got 'garbage'"):
        graph.invoke({"turns": 100}, with_id("chat", "garbage"))
    with pytest.raises(InvalidConfigError, match="got '1f1f'"):
        graph.get_state(with_id("chat", "1f1f"))
    assert graph.get_state(config("chat")).config == latest.config
    assert graph.get_state(config("chat")).values == {"turns": 1}


def test_every_checkpoint_id_langgraph_and_its_conformance_suite_make_is_taken(
    backend: Backend,
) -> None:
    import uuid

    from langgraph.checkpoint.base.id import uuid6

    saver = threads_of_three(backend)
    newest = saver.get_tuple(config("a"))
    assert newest is not None
    cid = newest.config["configurable"]["checkpoint_id"]
    assert uuid.UUID(cid).version == 6  # LangGraph's uuid6
    assert saver.get_tuple(with_id("a", cid)) == newest
    assert saver.get_tuple(with_id("a", uuid.UUID(cid))) == newest  # a UUID object too
    # Ids no checkpoint of the thread has: none found, as the conformance suite expects.
    for other in (str(uuid.uuid4()), str(uuid6(clock_seq=-1)), A_REAL_ID):
        assert saver.get_tuple(with_id("a", other)) is None
        assert len(list(saver.list(config("a"), before=with_id("a", other)))) in (0, 3)
    # A checkpoint LangGraph's conformance suite makes carries a uuid4 id of its own.
    four = {**empty_checkpoint(), "id": str(uuid.uuid4())}
    saved = saver.put(config("four"), four, {"step": 1}, {})  # type: ignore[arg-type]
    assert saver.get_tuple(saved).checkpoint["id"] == four["id"]  # type: ignore[union-attr]


# ------------------------------------------ LangGraph's server's prune strategies


def test_aprune_takes_the_strategy_names_langgraph_server_sends(backend: Backend) -> None:
    """langgraph-api 0.16.7 sends "keep_latest" or "delete_all" (`aprune(list(ids),
    strategy=...)`); the bulk budget of 100 ids: `tests/aws/test_bulk_budgets.py`."""
    saver = threads_of_three(backend)
    asyncio.run(saver.aprune(["a"], strategy="keep_latest"))
    asyncio.run(saver.aprune(["b"], strategy="delete_all"))
    assert history(saver, "a") == ["a 2"] and history(saver, "b") == []
    assert len(history(saver, "ab")) == 3
    with pytest.raises(InvalidConfigError, match=r"unknown prune strategy 'delete-all'"):
        saver.prune(["ab"], strategy="delete-all")
