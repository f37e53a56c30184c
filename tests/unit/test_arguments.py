"""Bad input, round three (issue 49): settings given as arguments, as a new user gives
them. No spelling of "false" turns sealing off, a yes/no argument is read as its variable
is, and a constructor argument of another type is named (`ArgumentTypeError`) before any
request, never a `StorageError` ("retry later"); the constructor shows every setting with
its type and default."""

from __future__ import annotations

import base64
import inspect
import os
import pydoc
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import (
    ArgumentTypeError,
    ConcurrentUpdateError,
    InvalidConfigError,
    S3DynamoSaver,
    Settings,
    StorageError,
)
from langgraph.checkpoint.s3dynamo.settings import SETTING_ARGUMENTS
from tests.support.backends import Backend
from tests.support.port_contract import needs_transactions

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
        ({"inline_max": "big"}, "inline_max must be a whole number of bytes (an int), got the"),
        ({"inline_max": 8192.5}, "inline_max must be a whole number of bytes (an int), got float"),
        ({"inline_max": 8192.0}, r"got float 8192.0; pass 8192, not 8192.0"),
        ({"bucket": ["b"]}, r"bucket must be a str \(the S3 bucket's name\), got list \['b'\]"),
        ({"dynamodb_client": "x"}, "dynamodb_client must be a boto3 or botocore dynamodb client"),
        ({"max_attempts": "5"}, "max_attempts must be a whole number of attempts"),
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
    if "must be a" in named and "at most" not in named:
        assert isinstance(raised.value, TypeError)


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
    with pytest.raises(ArgumentTypeError, match="inline_max must be a whole number"):
        S3DynamoSaver.from_env(plaintext=True, inline_max="8192")


def test_a_settings_object_is_checked_as_the_arguments_are() -> None:
    assert Settings(plaintext="off", keys={"k": os.urandom(32)}, secret="s" * 16).plaintext is False
    with pytest.raises(ArgumentTypeError, match="table must be a str"):
        Settings(table=123, plaintext=True)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="settings must be a Settings"):
        S3DynamoSaver(settings={"table": "t"})  # type: ignore[arg-type]
