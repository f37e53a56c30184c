"""Settings from the environment as a new user types them (issue 39, part 5): one parser
for every yes/no setting and one for every duration, each error naming the variable, what
came and what it accepts; a key id given twice, a misspelled variable name and an
endpoint URL that is no URL are refused up front, as settings to fix, before any request."""

from __future__ import annotations

import base64
import os
from datetime import timedelta
from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo import (
    InvalidConfigError,
    S3DynamoSaver,
    Settings,
    StorageConfigError,
    StorageError,
)
from langgraph.checkpoint.s3dynamo.backends import aws_clients
from langgraph.checkpoint.s3dynamo.config.arguments import NO_WORDS, YES_WORDS, yes_no
from langgraph.checkpoint.s3dynamo.config.settings import duration
from tests.support.savers import thread_config

KEY = base64.b64encode(os.urandom(32)).decode()
OTHER = base64.b64encode(os.urandom(32)).decode()
SEALED = {"S3DYNAMO_KEYS": f"k1:{KEY}", "S3DYNAMO_SECRET": "a naming secret of 32 characters"}
SEALED_ARGS = {"keys": f"k1:{KEY}", "secret": SEALED["S3DYNAMO_SECRET"]}
STORAGE = {"S3DYNAMO_TABLE": "agent-checkpoints", "S3DYNAMO_BUCKET": "agent-checkpoints-1"}
YES_NO = ("S3DYNAMO_PLAINTEXT", "S3DYNAMO_DETECT_CONCURRENT_RUNS")


def from_env(**env: str) -> Settings:
    return Settings.from_env({**STORAGE, **env})


# ------------------------------------------------------------------- yes or no


@pytest.mark.parametrize("word", [*YES_WORDS, "TRUE", " Yes ", "On"])
def test_every_yes_word_means_yes_for_every_yes_no_setting(word: str) -> None:
    assert from_env(S3DYNAMO_PLAINTEXT=word).plaintext is True
    assert from_env(S3DYNAMO_DETECT_CONCURRENT_RUNS=word, **SEALED).detect_concurrent_runs


@pytest.mark.parametrize("word", [*NO_WORDS, "FALSE", " No ", "Off"])
def test_every_no_word_means_no_for_every_yes_no_setting(word: str) -> None:
    assert from_env(S3DYNAMO_PLAINTEXT=word, **SEALED).plaintext is False
    assert not from_env(S3DYNAMO_DETECT_CONCURRENT_RUNS=word, **SEALED).detect_concurrent_runs


@pytest.mark.parametrize("variable", YES_NO)
@pytest.mark.parametrize("typo", ["ture", "flase", "y", "enabled", "2"])
def test_a_typo_in_a_yes_no_setting_is_named_not_ignored(variable: str, typo: str) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        from_env(**{variable: typo}, **SEALED)
    assert str(raised.value) == (
        f"{variable} must be yes or no, got {typo!r}; expected one of 1, true, yes, on (yes) "
        "or 0, false, no, off (no), in any case"
    )


def test_plaintext_ture_beside_keys_is_refused_instead_of_sealing_silently() -> None:
    # Before: any word but 1/true/yes/on meant "no", so the typo sealed without a word.
    env = {**STORAGE, **SEALED, "S3DYNAMO_PLAINTEXT": "ture"}
    with pytest.raises(InvalidConfigError, match="S3DYNAMO_PLAINTEXT must be yes or no"):
        S3DynamoSaver(settings=Settings.from_env(env))


def test_the_parser_is_the_one_the_command_line_uses_for_its_debug_switch() -> None:
    assert yes_no("S3DYNAMO_DEBUG", "yes") and not yes_no("S3DYNAMO_DEBUG", "0")
    with pytest.raises(InvalidConfigError, match="S3DYNAMO_DEBUG must be yes or no, got 'x'"):
        yes_no("S3DYNAMO_DEBUG", "x")


# -------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("given", "span"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("3600s", timedelta(seconds=3600)),
        ("7", timedelta(days=7)),
        (" 1.5D ", timedelta(days=1.5)),
        (7, timedelta(days=7)),
        (timedelta(hours=2), timedelta(hours=2)),
    ],
)
def test_a_duration_is_a_number_with_a_unit_or_a_number_of_days(
    given: Any, span: timedelta
) -> None:
    assert duration(given) == span
    if isinstance(given, str):
        assert from_env(S3DYNAMO_RETENTION=given).retention == span


@pytest.mark.parametrize(
    "typo", ["30 days", "a month", "30x", "d", "", "1e999d", "\u0661\u0662d", "\uff13\uff10"]
)
def test_a_duration_that_is_none_names_the_variable_and_what_it_accepts(typo: str) -> None:
    accepts = "a number with a unit, d, h, m or s (30d, 12h, 90m, 3600s), or a number of days"
    with pytest.raises(InvalidConfigError) as raised:
        duration(typo, "S3DYNAMO_RETENTION")
    assert str(raised.value) == (
        f"S3DYNAMO_RETENTION must be a duration, got {typo!r}; expected {accepts}"
    )
    if typo.strip():  # an empty variable is an unset one
        with pytest.raises(InvalidConfigError, match=r"^S3DYNAMO_RETENTION must be a duration"):
            from_env(S3DYNAMO_RETENTION=typo)


@pytest.mark.parametrize("slip", ["1e-9", "0.5s", 1e-9, timedelta(milliseconds=999)])
def test_a_duration_shorter_than_a_second_is_refused_as_a_slip(slip: object) -> None:
    # Activity is stamped in whole seconds; 1e-9 days would expire every thread at once.
    with pytest.raises(
        InvalidConfigError, match=r"^S3DYNAMO_RETENTION must be at least one second"
    ):
        duration(slip, "S3DYNAMO_RETENTION")
    with pytest.raises(InvalidConfigError, match=r"^--grace must be 0 or at least one second"):
        duration("0.5s", "--grace", bare="seconds", zero=True)
    assert duration("0", "--grace", bare="seconds", zero=True) == timedelta(0)
    assert duration("1s") == timedelta(seconds=1)


def test_a_duration_argument_is_named_as_the_argument() -> None:
    with pytest.raises(InvalidConfigError, match=r"^retention must be a duration, got 'soon'"):
        Settings.of(retention="soon", plaintext=True)
    with pytest.raises(InvalidConfigError, match=r"^sweep_interval must be at least one second"):
        Settings.of(sweep_interval="0h", plaintext=True)
    with pytest.raises(InvalidConfigError, match=r"^retention must be a duration, got a bool"):
        Settings.of(retention=True, plaintext=True)


# ------------------------------------------------ an argument as its variable


# Each whole-number setting, its variable, and what it counts.
WHOLE = [
    ("inline_max", "S3DYNAMO_INLINE_MAX", "bytes"),
    ("delta_max", "S3DYNAMO_DELTA_MAX", "bytes"),
    ("object_cache_bytes", "S3DYNAMO_OBJECT_CACHE_BYTES", "bytes"),
    ("max_attempts", "S3DYNAMO_MAX_ATTEMPTS", "attempts"),
    ("async_workers", "S3DYNAMO_ASYNC_WORKERS", "threads"),
    ("retention_keep_last", "S3DYNAMO_RETENTION_KEEP_LAST", "checkpoints"),
]
KEEP_LATEST = {"retention_strategy": "keep_latest"}


@pytest.mark.parametrize(("setting", "variable", "unit"), WHOLE)
@pytest.mark.parametrize("text", ["7", " 7 ", "7\n"])
def test_a_number_given_as_text_is_read_as_its_variable_is(
    setting: str, variable: str, unit: str, text: str
) -> None:
    # The user: inline_max='8192' was refused while plaintext='false' was read.
    given = Settings.of(**{setting: text}, **KEEP_LATEST, **SEALED_ARGS)
    env = from_env(**{variable: text, "S3DYNAMO_RETENTION_STRATEGY": "keep_latest"}, **SEALED)
    assert getattr(given, setting) == getattr(env, setting) == 7


@pytest.mark.parametrize(("setting", "variable", "unit"), WHOLE)
def test_a_number_that_is_none_is_refused_alike_as_argument_and_as_variable(
    setting: str, variable: str, unit: str
) -> None:
    for name, make in (
        (setting, lambda: Settings.of(**{setting: "8k"}, **KEEP_LATEST, **SEALED_ARGS)),
        (variable, lambda: from_env(**{variable: "8k"}, **SEALED)),
    ):
        with pytest.raises(InvalidConfigError) as raised:
            make()
        assert str(raised.value).startswith(f"{name} must be a whole number of {unit}")
        assert "'8k'" in str(raised.value)


def test_a_duration_argument_is_read_as_its_variable_is() -> None:
    for text in ("30d", "12h", "15m", "90s", "7"):
        assert Settings.of(retention=text, **SEALED_ARGS).retention == (
            from_env(S3DYNAMO_RETENTION=text, **SEALED).retention
        )
    # `gc --grace`'s bare number is seconds, as it always was, and 0 is allowed there.
    assert duration("3600", "--grace", bare="seconds", zero=True) == timedelta(hours=1)
    assert duration("1h", "--grace", bare="seconds", zero=True) == timedelta(hours=1)
    assert duration("0", "--grace", bare="seconds", zero=True) == timedelta(0)


# ------------------------------------------------------------------ keys, names


def test_one_key_id_given_two_keys_is_refused_naming_the_id() -> None:
    # A slip during rotation: the new key under the old id.
    with pytest.raises(InvalidConfigError) as raised:
        from_env(S3DYNAMO_KEYS=f"k1:{KEY},k1:{OTHER}", S3DYNAMO_SECRET=SEALED["S3DYNAMO_SECRET"])
    message = str(raised.value)
    assert message.startswith("keys (S3DYNAMO_KEYS' form): key id 'k1' appears twice")
    assert "give the new key an id of its own, first, and keep the old one" in message
    assert KEY not in message and OTHER not in message
    for spec in (f":{KEY}", KEY):  # a key without its id is not shown, even in part
        with pytest.raises(InvalidConfigError, match="has no id") as raised:
            from_env(S3DYNAMO_KEYS=spec, S3DYNAMO_SECRET=SEALED["S3DYNAMO_SECRET"])
        assert KEY[:6] not in str(raised.value)
        assert "keyring entry 1 (" in str(raised.value)
        assert "Put an id before it, 'k1:<the key>'" in str(raised.value)


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("S3DYNAMO_BUKET", "S3DYNAMO_BUCKET"),
        ("S3DYNAMO_PLAIN_TEXT", "S3DYNAMO_PLAINTEXT"),
        ("S3DYNAMO_KEY", "S3DYNAMO_KEYS"),
        ("S3DYNAMO_DETECT_CONCURRENT_RUN", "S3DYNAMO_DETECT_CONCURRENT_RUNS"),
        # Names other savers and the README's words suggest: one word more, or fewer.
        ("S3DYNAMO_TABLE_NAME", "S3DYNAMO_TABLE"),
        ("S3DYNAMO_KEEP_LAST", "S3DYNAMO_RETENTION_KEEP_LAST"),
        ("S3DYNAMO_REGION_NAME", "S3DYNAMO_REGION"),
        ("S3DYNAMO_TTL_STRATEGY", "S3DYNAMO_TTL"),
    ],
)
def test_a_misspelled_variable_is_named_with_the_one_meant(typo: str, meant: str) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        from_env(**{typo: "1"}, **SEALED)
    assert str(raised.value).startswith(
        f"{typo} is set, but s3dynamo reads no such variable, so its value would be "
        f"ignored; did you mean {meant}?"
    )


@pytest.mark.parametrize("argument", ["allow_plaintext_read", "active_key", "serde"])
def test_a_variable_named_after_an_argument_without_one_says_to_pass_the_argument(
    argument: str,
) -> None:
    """A newcomer sets S3DYNAMO_ALLOW_PLAINTEXT_READ=1 expecting it to work like the
    others: ignored, the saver would refuse plaintext later; refused now, naming the way."""
    name = f"S3DYNAMO_{argument.upper()}"
    with pytest.raises(InvalidConfigError) as raised:
        from_env(**{name: "1"}, **SEALED)
    assert str(raised.value) == (
        f"{name} is set, but s3dynamo reads no such variable, so its value would be "
        f"ignored; {argument} has no variable: pass S3DynamoSaver.from_env({argument}=...)"
    )


def test_variables_of_the_projects_other_tools_are_not_taken_for_typos() -> None:
    for name in ("S3DYNAMO_DEBUG", "S3DYNAMO_TEST_BACKEND", "S3DYNAMO_TF_APPLY"):
        assert from_env(**{name: "1"}, **SEALED).table == "agent-checkpoints"


# --------------------------------------------------------------------- endpoints


@pytest.mark.parametrize(
    ("variable", "url"),
    [
        ("AWS_ENDPOINT_URL_DYNAMODB", "htp://127.0.0.1:4566"),
        ("AWS_ENDPOINT_URL_DYNAMODB", "127.0.0.1:4566"),
        ("AWS_ENDPOINT_URL", "http://"),
        ("S3DYNAMO_ENDPOINT_URL", "htp://127.0.0.1:4566"),
    ],
)
def test_an_endpoint_that_is_no_url_is_a_setting_to_fix_before_any_request(
    variable: str, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv(variable, url)
    env = {**STORAGE, **SEALED}
    if variable.startswith("S3DYNAMO_"):
        env[variable] = url
    saver = S3DynamoSaver(settings=Settings.from_env(env))
    with pytest.raises(InvalidConfigError) as raised:
        saver.get_tuple(thread_config("t"))
    message = str(raised.value)
    named = (
        "S3DYNAMO_ENDPOINT_URL (endpoint_url=, --endpoint-url)" if variable[0] == "S" else variable
    )
    assert message.startswith(f"{named} is {url!r}, not an endpoint URL the dynamodb client")
    assert "expected http:// or https:// then a host" in message
    assert "Nothing was sent" in message
    assert not isinstance(raised.value, StorageError)  # not "retry later"


def test_a_client_built_elsewhere_with_such_an_endpoint_is_a_configuration_error() -> None:
    import boto3

    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="htp://127.0.0.1:4566",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    saver = S3DynamoSaver(dynamodb_client=client, table="t", bucket="b-1", plaintext=True)
    with pytest.raises(StorageConfigError, match=r"its endpoint is no http:// or https:// URL"):
        saver.get_tuple(thread_config("t"))


# ----------------------------------------------------------------------- regions


def aws_only(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """The AWS environment of a test: these variables and no other region or endpoint
    (the config file none), credentials that are never sent."""
    for name in [n for n in os.environ if n.startswith(("AWS_ENDPOINT_URL", "AWS_REGION"))]:
        monkeypatch.delenv(name)
    for name in ("AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("variable", ["AWS_REGION", "AWS_DEFAULT_REGION", "S3DYNAMO_REGION"])
def test_a_region_with_a_trailing_space_is_read_without_it(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user: the endpoint variable was blamed, though it held a good URL.
    aws_only(monkeypatch, AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:4566")
    monkeypatch.setenv(variable, "us-east-1 ")
    saver = S3DynamoSaver(settings=Settings.from_env({**STORAGE, **SEALED, **os.environ}))
    client = saver.parts.engine.ports.table.client  # type: ignore[attr-defined]
    assert client.meta.region_name == "us-east-1"
    assert client.meta.endpoint_url == "http://127.0.0.1:4566"


@pytest.mark.parametrize("variable", ["AWS_REGION", "AWS_DEFAULT_REGION", "S3DYNAMO_REGION"])
@pytest.mark.parametrize(
    ("value", "fix"),
    [
        ('"us-east-1"', "remove the quotes"),
        ("'us-east-1' ", "remove the quotes"),
        ("us east 1", "set it to the region of the deployment's table and bucket."),
        ("   ", "set it to the region of the deployment's table and bucket, or unset it"),
    ],
)
def test_a_region_that_is_no_region_name_is_refused_naming_its_variable_before_any_request(
    variable: str, value: str, fix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws_only(monkeypatch, AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:4566")
    monkeypatch.setenv(variable, value)
    with pytest.raises(InvalidConfigError) as raised:
        saver = S3DynamoSaver(settings=Settings.from_env({**STORAGE, **SEALED, **os.environ}))
        saver.get_tuple(thread_config("t"))  # the clients are built before its first request
    message = str(raised.value)
    assert message.startswith(
        f"{variable} is {value!r}, not an AWS region name: expected letters, digits and "
        "hyphens, such as 'eu-west-1' (spaces around it are ignored); "
    )
    assert fix in message and message.endswith("Nothing was sent")
    assert "AWS_ENDPOINT_URL" not in message  # the endpoint is not the cause
    assert not isinstance(raised.value, StorageError)


@pytest.mark.parametrize("value", ["", " ", "'eu-west-1'", "eu_west_1", "-eu"])
def test_a_region_argument_that_is_no_region_name_is_named_as_the_argument(value: str) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        Settings.of(region=value, plaintext=True)
    assert str(raised.value).startswith(
        f"region (region=, --region) is {value!r}, not an AWS region name"
    )
    assert Settings.of(region=" eu-west-1\n", plaintext=True).region == "eu-west-1"


def test_a_profile_region_that_is_no_region_name_names_the_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    aws_only(monkeypatch, AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:4566")
    config = tmp_path / "config"
    config.write_text('[default]\nregion = "us-east-1"\n')
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setattr(aws_clients, "_session", None)  # the config file is read again
    saver = S3DynamoSaver(settings=Settings.from_env({**STORAGE, **SEALED}))
    with pytest.raises(InvalidConfigError) as raised:
        saver.get_tuple(thread_config("t"))
    message = str(raised.value)
    assert message.startswith(
        "the region of the AWS config file's profile is '\"us-east-1\"', not an AWS region name"
    )
    assert "fix the profile's region" in message and "AWS_ENDPOINT_URL" not in message


def test_other_tools_s3dynamo_variables_are_left_alone() -> None:
    """The project's own test and CI switches share the prefix and name no setting."""
    names = ["S3DYNAMO_DEBUG", "S3DYNAMO_TF_APPLY", "S3DYNAMO_TEST_BACKEND", "S3DYNAMO_CHECKOV"]
    assert from_env(**dict.fromkeys(names, "1"), **SEALED) is not None
