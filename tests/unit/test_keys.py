"""Keys a deployment can live with: sealed unless plaintext is chosen, KMS-made keys,
a wrong key or naming secret as an error that names it on every read path (never an
empty thread, never "tampered", while a blob really altered is still reported as
altered), and table-wide operations that keep going past threads they cannot open.
Requests are counted on the botocore clients (the tests on `clients`, marked aws)."""

from __future__ import annotations

import base64
import json
import logging
import os
from datetime import timedelta
from typing import Any

import boto3
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.s3dynamo import (
    DeploymentMismatchError,
    IntegrityError,
    InvalidConfigError,
    KeyringMissingError,
    S3DynamoSaver,
    Settings,
    StorageConfigError,
)
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryKms, MemoryObjects
from langgraph.checkpoint.s3dynamo.blobs.sealing import SealingKey
from langgraph.checkpoint.s3dynamo.format.layout import deployment_pk
from langgraph.checkpoint.s3dynamo.format.records import CheckpointRecord, ItemKey, record_item
from langgraph.checkpoint.s3dynamo.format.subject_records import KeyState
from tests.support import raw
from tests.support.backends import Backend
from tests.support.memory_index import MemoryIndex
from tests.support.savers import (
    BACKEND,
    REGION,
    MemorySaver,
    RequestCounter,
    make_saver,
    memory_saver,
    thread_config,
)
from tests.support.scenarios import chat_graph
from tests.support.unchanged import nothing_written

WRITES = {
    "dynamodb.PutItem",
    "dynamodb.UpdateItem",
    "dynamodb.BatchWriteItem",
    "dynamodb.DeleteItem",
    "s3.PutObject",
    "s3.DeleteObject",
    "s3.DeleteObjects",
}
needs_kms = pytest.mark.unsupported_on("real", reason="dynalite and SeaweedFS have no KMS")


def _writes(counter: RequestCounter) -> dict[str, int]:
    return {k: n for k, n in counter.calls.items() if k in WRITES}


def _turn(saver: S3DynamoSaver, tid: str, text: str) -> Any:
    return chat_graph(saver).invoke(
        {"messages": [HumanMessage(text, id=f"h-{text}")]}, thread_config(tid)
    )


# ------------------------------------------------------------ 1. sealed unless chosen


def test_no_key_source_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("S3DYNAMO_KEYS", "S3DYNAMO_SECRET", "S3DYNAMO_KMS_KEY_ID", "S3DYNAMO_PLAINTEXT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("S3DYNAMO_TABLE", "t")
    monkeypatch.setenv("S3DYNAMO_BUCKET", "b")
    for build in (lambda: S3DynamoSaver(table="t", bucket="b"), S3DynamoSaver.from_env):
        with pytest.raises(InvalidConfigError) as exc:
            build()
        message = str(exc.value)
        # How to configure a key source, how to make a key, and how to choose plaintext.
        for hint in ("S3DYNAMO_KMS_KEY_ID", "S3DYNAMO_KEYS", "os.urandom(32)", "PLAINTEXT=1"):
            assert hint in message, (hint, message)
    assert S3DynamoSaver(table="t", bucket="b", plaintext=True).settings.plaintext
    monkeypatch.setenv("S3DYNAMO_PLAINTEXT", "1")
    assert S3DynamoSaver.from_env().settings.plaintext
    with pytest.raises(InvalidConfigError, match="plaintext=True"):
        S3DynamoSaver.from_env(keys={"a": os.urandom(32)}, secret="s" * 16)


# ------------------------------------------- 3. a wrong key is an error, never empty


WRITER_AES_KEY = "0123456789abcdef0123456789abcdef"
CASES = ["wrong LANGGRAPH_AES_KEY", "missing key", "changed S3DYNAMO_SECRET", "key over plaintext"]


def _writer_and_reader(
    case: str, clients: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> tuple[S3DynamoSaver, Any]:
    key = {"a": b"k" * 32}
    if case in ("wrong LANGGRAPH_AES_KEY", "missing key"):
        monkeypatch.setenv("LANGGRAPH_AES_KEY", WRITER_AES_KEY)
        writer = make_saver(clients)
        monkeypatch.delenv("LANGGRAPH_AES_KEY")
        if case == "missing key":
            return writer, lambda: make_saver(clients, plaintext=True)
        monkeypatch.setenv("LANGGRAPH_AES_KEY", "fedcba9876543210fedcba9876543210")
        return writer, lambda: make_saver(clients)
    if case == "changed S3DYNAMO_SECRET":
        writer = make_saver(clients, keys=key, secret="the first naming secret")
        return writer, lambda: make_saver(clients, keys=key, secret="the second naming secret")
    writer = make_saver(clients, plaintext=True)
    return writer, lambda: make_saver(clients, keys=key, secret="a secret turned on later")


@pytest.mark.parametrize("source", ["keys", "langgraph_aes_key"])
def test_no_repr_shows_a_key_or_the_secret(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Settings and savers end up in logs, and in error reports that record locals.
    key, secret, aes_key = os.urandom(32), b"n" * 32, "a" * 32
    if source == "keys":
        saver = memory_saver(keys={"k1": key}, secret=secret)
    else:
        monkeypatch.setenv("LANGGRAPH_AES_KEY", aes_key)
        saver = memory_saver(keys=None, secret=None)
    shown = " ".join(
        repr(value)
        for value in (
            saver.settings,
            saver.settings.key_source(),
            saver.parts,
            saver.settings.keys,
            SealingKey("s:subject", key),  # a data subject's key, as sealing takes it
            KeyState("token", key, None),  # and as its key item is read
        )
    )
    for hidden in (key, secret, aes_key.encode()):
        assert repr(hidden)[2:-1] not in shown and base64.b64encode(hidden).decode() not in shown
    if source == "keys":
        assert "Keyring(ids=['k1'], active='k1')" in shown


@pytest.mark.parametrize("case", CASES)
def test_wrong_keys_raise_and_write_nothing(
    case: str,
    clients: tuple[Any, Any],
    counter: RequestCounter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, reader_of = _writer_and_reader(case, clients, monkeypatch)
    writer.setup()
    _turn(writer, "t", "hello")
    reader = reader_of()
    graph = chat_graph(reader)
    counter.reset()
    with pytest.raises(DeploymentMismatchError, match="Nothing was read or written") as exc:
        graph.get_state(thread_config("t"))
    message = str(exc.value)
    assert "naming key differs" in message and "fingerprint" in message
    if case == "key over plaintext":
        assert "written without encryption" in message and "allow_plaintext_read" in message
    if case == "missing key":
        assert "no sealing key" in message
    # Key bytes never appear; the fingerprint of each side does.
    assert WRITER_AES_KEY not in message and "k" * 32 not in message
    assert (
        writer.parts.namer.fingerprint() in message and reader.parts.namer.fingerprint() in message
    )
    with pytest.raises(DeploymentMismatchError):
        graph.invoke({"messages": [HumanMessage("again")]}, thread_config("t"))
    # At most one extra request for the whole process, and no write: no parallel names.
    assert _writes(counter) == {}
    assert counter["dynamodb.Query"] <= 3
    assert [t.config["configurable"]["thread_id"] for t in writer.list(None)] == ["t"] * 3


def test_the_deployment_record_is_read_once_per_process_and_never_on_the_warm_path(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    saver = make_saver(clients, keys={"a": os.urandom(32)}, secret="s" * 16)
    saver.setup()
    _turn(saver, "t", "hello")
    for first in ("t", "new"):  # a process whose first read finds a thread, or none
        cold = make_saver(clients, keys=saver.parts.sealer.keyring, secret="s" * 16)
        counter.reset()
        # The first read: the thread's Query and the record's, in one wave.
        assert (cold.get_tuple(thread_config(first)) is None) == (first == "new")
        assert counter.calls == {"dynamodb.Query": 2}
        counter.reset()
        assert cold.get_tuple(thread_config("t")) is not None  # warm: one Query
        assert cold.get_tuple(thread_config("new-2")) is None  # the record is known
        assert counter.calls == {"dynamodb.Query": 2}


def test_racing_first_writers_agree_on_one_record(clients: tuple[Any, Any]) -> None:
    """Two processes both find no record; the one whose conditional put loses reads the
    winner's and refuses if its keys differ, before writing any checkpoint."""
    first = make_saver(clients, keys={"a": os.urandom(32)}, secret="one" * 6)
    second = make_saver(clients, keys={"b": os.urandom(32)}, secret="two" * 6)
    # Table and bucket exist (as Terraform creates them), no deployment record yet.
    first.parts.engine.ports.table.create_if_missing()
    first.parts.engine.objects.port.create_if_missing()
    assert (
        first.get_tuple(thread_config("x")) is None and second.get_tuple(thread_config("y")) is None
    )
    _turn(first, "x", "hi")  # wins the conditional put
    with pytest.raises(DeploymentMismatchError):
        _turn(second, "y", "hi")  # its put fails, it reads the winner's record
    assert {t.config["configurable"]["thread_id"] for t in first.list(None)} == {"x"}


# The slips: a naming secret copied with a trailing space, or from a .env file
# with its quotes; and a deployment made by writers that read the secret from a file whole.
TYPED = "a naming secret of 32 characters"
SLIPS = [
    (TYPED, TYPED + " ", "the secret given has ' ' after it, and without it, it is the "
     "deployment's naming secret: remove it from S3DYNAMO_SECRET (secret=)"),
    (TYPED, f'"{TYPED}"', "the secret given has '\"' before it and '\"' after it, and without "
     "it, it is the deployment's naming secret"),
    (TYPED, f"'{TYPED}'\n", "the secret given has \"'\" before it and \"'\\n\" after it, and "
     "without it, it is the deployment's naming secret"),
    (TYPED + "\n", TYPED, "the deployment's naming secret is this one with '\\n' after it: its "
     "writers read the secret with that slip"),
    (f'"{TYPED}"', TYPED, "the deployment's naming secret is this one with '\"' before it and "
     "'\"' after it"),
    ("another naming secret entirely", TYPED + " ", "the secret given has ' ' after it, a "
     "likely slip (a .env file's quotes, a copied trailing space): if the deployment's "
     "writers give it without them, remove them from S3DYNAMO_SECRET (secret=)"),
]  # fmt: skip


@pytest.mark.parametrize(("written", "given", "cause"), SLIPS)
def test_a_naming_secret_mismatch_names_whitespace_or_quotes_around_a_secret(
    written: str, given: str, cause: str
) -> None:
    keys = {"k1": os.urandom(32)}
    writer = memory_saver(keys=keys, secret=written)
    _turn(writer, "t", "hello")
    env = {"S3DYNAMO_TABLE": "t", "S3DYNAMO_BUCKET": "b", "S3DYNAMO_SECRET": given}
    env["S3DYNAMO_KEYS"] = "k1:" + base64.b64encode(keys["k1"]).decode()
    reader = MemorySaver(
        settings=Settings.from_env(env), index=writer.index, object_store=writer.objects
    )
    before = writer.index.items()
    with pytest.raises(DeploymentMismatchError) as raised:
        chat_graph(reader).get_state(thread_config("t"))
    assert writer.index.items() == before
    message = str(raised.value)
    assert "the naming key differs" in message and cause in message
    assert TYPED not in message and "another naming secret" not in message  # never the secret


def test_a_naming_secret_mismatch_with_nothing_to_explain_it_says_no_more() -> None:
    writer = memory_saver(secret="the first naming secret")
    _turn(writer, "t", "hello")
    reader = MemorySaver(
        index=writer.index, object_store=writer.objects, keys=writer.parts.sealer.keyring,
        secret="the second naming secret",
    )  # fmt: skip
    with pytest.raises(DeploymentMismatchError) as raised:
        chat_graph(reader).get_state(thread_config("t"))
    message = str(raised.value)
    assert "KMS keyring in this table). Deployment: " in message  # no likely cause added
    assert "slip" not in message and "the secret given" not in message


@pytest.mark.parametrize("declared", ["catalog_fields", "subject_field"])
def test_another_naming_secret_is_named_where_the_deployment_records_catalog_fields(
    declared: str,
) -> None:
    """The recorded catalog fields are sealed under the naming key, so another secret
    opens nothing: that is a mismatch to fix, never a record to suspect of tampering."""
    setting: dict[str, Any] = (
        {"catalog_fields": ["user_id"]}
        if declared == "catalog_fields"
        else {"subject_field": "user_id"}
    )
    keys, key_index = {"k1": os.urandom(32)}, MemoryIndex()
    writer = memory_saver(
        keys=keys, secret="the first naming secret", key_index=key_index, **setting
    )
    chat_graph(writer).invoke({"messages": [HumanMessage("hi")]}, thread_config("t", user_id="u"))
    before = writer.index.items()
    reader = MemorySaver(
        index=writer.index, object_store=writer.objects, keys=keys, key_index=key_index,
        secret="the second naming secret", **setting,
    )  # fmt: skip
    for step in ("read", "write"):
        with pytest.raises(DeploymentMismatchError, match="the naming key differs"):
            if step == "read":
                chat_graph(reader).get_state(thread_config("t"))
            else:
                chat_graph(reader).invoke({"messages": [HumanMessage("x")]}, thread_config("u2"))
    assert writer.index.items() == before


# ------------------------------------------------------------------- 2. keys from KMS


def _kms(counter: RequestCounter) -> tuple[Any, str]:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") if BACKEND == "moto-server" else None
    kms = boto3.client("kms", region_name=REGION, endpoint_url=endpoint)
    counter.hook(kms)
    key = kms.create_key(Description="s3dynamo test")["KeyMetadata"]["KeyId"]
    alias = f"alias/s3dynamo-{key[:8]}"
    kms.create_alias(AliasName=alias, TargetKeyId=key)
    return kms, alias


def _key_ids(clients: tuple[Any, Any], table: str) -> set[str]:
    ids = set()
    for item in clients[0].scan(TableName=table)["Items"]:
        if item["pk"]["S"] == "#s3dynamo":
            continue
        for value in item.values():
            blobs = [value["B"]] if "B" in value else [v["B"] for v in value.get("M", {}).values()]
            ids |= {bytes(b[3 : 3 + b[2]]).decode() for b in blobs if b[1] & 0x02}
    return ids


@needs_kms
def test_kms_saver_round_trips_rotates_and_reencrypts(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    kms, alias = _kms(counter)
    saver = make_saver(clients, kms_key_id=alias, kms_client=kms)
    counter.reset()
    saver.setup()  # creates the keyring: one GenerateDataKey, no Decrypt
    assert counter["kms.GenerateDataKey"] == 1 and counter["kms.Decrypt"] == 0
    _turn(saver, "t", "MARKER-KMS-31")
    raw = repr(clients[0].scan(TableName=saver.settings.table)["Items"]).encode()
    assert b"MARKER-KMS-31" not in raw and b"heard" not in raw

    # A cold start on an existing thread: one Query for the control partition (keyring and
    # deployment record together) and one Decrypt, then the thread's own Query.
    cold = make_saver(clients, kms_key_id=alias, kms_client=kms)
    counter.reset()
    state = chat_graph(cold).get_state(thread_config("t"))
    assert "heard: MARKER-KMS-31" in state.values["messages"][-1].content
    assert counter.calls == {"dynamodb.Query": 2, "kms.Decrypt": 1}
    counter.reset()
    chat_graph(cold).get_state(thread_config("t"))
    assert counter.calls == {"dynamodb.Query": 1}  # warm: the keys are cached

    # Rotation: one GenerateDataKey, the keyring and the deployment record rewritten.
    counter.reset()
    assert saver.ops.rotate_key() == "kms-2"
    assert counter["kms.GenerateDataKey"] == 1 and counter["kms.Decrypt"] == 0
    assert _key_ids(clients, saver.settings.table) == {"kms-1"}
    result = saver.ops.reencrypt()
    assert result > 0 and result.skipped == []
    assert _key_ids(clients, saver.settings.table) == {"kms-2"}
    again = make_saver(clients, kms_key_id=alias, kms_client=kms)
    counter.reset()
    assert again.parts.sealer.keyring is not None and again.parts.sealer.keyring.active == "kms-2"
    assert counter["kms.Decrypt"] == 1  # one Decrypt however many keys the keyring holds
    _turn(again, "t", "after rotation")
    assert _key_ids(clients, saver.settings.table) == {"kms-2"}
    check = again.ops.check()
    assert check.ok and "match the deployment" in str(check)


@needs_kms
def test_the_check_before_the_first_write_asks_kms_whether_the_key_can_make_the_keyring(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    """Before a KMS deployment's first write there is no keyring to unwrap, so the check
    asks KMS for a data key and discards it: a key that does not exist is named up front,
    not passed as ok before a first write that fails; the right key passes; nothing is
    written either way."""
    kms, alias = _kms(counter)
    wrong = make_saver(clients, kms_key_id="alias/s3dynamo-no-such-key", kms_client=kms)
    with pytest.raises(StorageConfigError, match="NotFoundException"):
        wrong.setup()  # makes the table and bucket, then fails at the keyring
    (problem,) = wrong.ops.check(raise_on_problem=False).problems
    assert problem.startswith("keys: GenerateDataKey on KMS key 'alias/s3dynamo-no-such-key'")
    assert "NotFoundException" in problem and "S3DYNAMO_KMS_KEY_ID" in problem
    right = make_saver(clients, kms_key_id=alias, kms_client=kms)
    report = right.ops.check()
    assert report.ok and "makes data keys for it" in str(report)
    assert report.requests == {"kms.GenerateDataKey": 1, "kms.Decrypt": 0}
    assert clients[0].scan(TableName=right.settings.table)["Items"] == []


def test_a_newly_active_key_is_recorded_by_its_first_put_and_another_under_its_id_refused() -> None:
    """A rotation (`b` put first, `a` kept) goes into the deployment record with the first
    put that may seal under `b`, on a thread that exists too; a process then given
    another key under `b` is refused by name, never told the data was altered."""
    a, b = os.urandom(32), os.urandom(32)
    first = memory_saver(keys={"a": a}, secret="the naming secret")
    _turn(first, "t", "under a")
    rotated = MemorySaver(
        index=first.index, object_store=first.objects, keys={"b": b, "a": a},
        secret="the naming secret",
    )  # fmt: skip
    _turn(rotated, "t", "under b")
    (record,) = [i for i in raw.partition(first, deployment_pk("")) if i["sk"] == "deployment"]
    assert set(json.loads(record["keys"])) == {"a", "b"}
    wrong = MemorySaver(
        index=first.index, object_store=first.objects, keys={"b": os.urandom(32), "a": a},
        secret="the naming secret",
    )  # fmt: skip
    with pytest.raises(DeploymentMismatchError, match=r"key id\(s\) \['b'\] hold other keys"):
        chat_graph(wrong).get_state(thread_config("t"))


def test_the_check_names_a_deployment_key_the_keyring_lacks() -> None:
    """A process left with the old keyring after a rotation (`b` first elsewhere) reads
    what is under `a` and seals under `a`: the check names `b`. The record keeps every
    key id ever used, so a retired one after a finished rotation is said, not failed."""
    a, b = os.urandom(32), os.urandom(32)
    rotated = memory_saver(keys={"b": b, "a": a}, secret="the naming secret")
    _turn(rotated, "t", "under b")
    stale = MemorySaver(
        index=rotated.index, object_store=rotated.objects, keys={"a": a},
        secret="the naming secret",
    )  # fmt: skip
    report = stale.ops.check()
    (line,) = [line for line in report.lines if line.startswith("keys: ")]
    assert "the deployment also has key id(s) ['b'], which this saver lacks" in line
    assert "a newer one (a rotation) belongs first in this keyring" in line
    assert "also has" not in str(rotated.ops.check())


@pytest.mark.parametrize("sealed", [False, True], ids=["serializer alone", "and keys"])
def test_a_keyring_saver_on_an_encrypted_serializers_data_names_the_serializer(
    sealed: bool,
) -> None:
    """Written with LangGraph's EncryptedSerializer (alone, or with the deployment's
    keys too), read with keys and no serializer: the error says which serializer opens
    it, never that the data is unencrypted or altered."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    serde = EncryptedSerializer.from_pycryptodome_aes(key=os.urandom(32))
    keys = {"k1": os.urandom(32)}
    writer = memory_saver(serde=serde, keys=keys if sealed else None, secret="the naming secret")
    _turn(writer, "t", "hello")
    reader = MemorySaver(
        index=writer.index, object_store=writer.objects, keys=keys, secret="the naming secret"
    )
    with pytest.raises(DeploymentMismatchError, match="the same EncryptedSerializer") as raised:
        chat_graph(reader).get_state(thread_config("t"))
    assert "allow_plaintext_read" not in str(raised.value)


def test_a_warm_process_reads_what_is_sealed_under_a_key_rotated_in_elsewhere() -> None:
    """An operator rotates the KMS data key while a process is warm: what others seal
    under the new key reads in that process (the keyring read again once, one Query and
    one Decrypt), instead of `KeyNotFoundError` until it restarts."""
    kms = MemoryKms()
    warm = memory_saver(keys=None, secret=None, key_service=kms)
    _turn(warm, "t", "before")
    operator = MemorySaver(index=warm.index, object_store=warm.objects, key_service=kms)
    assert operator.ops.rotate_key() == "kms-2"
    other = MemorySaver(index=warm.index, object_store=warm.objects, key_service=kms)
    _turn(other, "u", "sealed under kms-2")
    warm.index.calls.clear()
    state = chat_graph(warm).get_state(thread_config("u"))
    assert "heard: sealed under kms-2" in state.values["messages"][-1].content
    assert warm.index.calls["Query"] == 2  # the thread's, and the keyring's once more
    chat_graph(warm).get_state(thread_config("u"))
    assert warm.index.calls["Query"] == 3  # no more


@needs_kms
def test_kms_keyring_is_bound_to_its_table(
    clients: tuple[Any, Any], counter: RequestCounter
) -> None:
    kms, alias = _kms(counter)
    saver = make_saver(clients, kms_key_id=alias, kms_client=kms)
    saver.setup()
    ddb = clients[0]
    [ring] = [
        i for i in ddb.scan(TableName=saver.settings.table)["Items"] if i["sk"]["S"] == "keyring"
    ]
    other = make_saver(
        clients, table=saver.settings.table + "-copy", kms_key_id=alias, kms_client=kms
    )
    other.parts.engine.ports.table.create_if_missing()
    ddb.put_item(TableName=other.settings.table, Item=ring)
    with pytest.raises(DeploymentMismatchError, match="another table"):
        other.get_tuple(thread_config("t"))


@pytest.mark.parametrize("lost", [["keyring"], ["keyring", "deployment"]], ids=["1", "2"])
def test_a_deployment_with_data_and_no_keyring_makes_no_new_one(
    backend: Backend, lost: list[str]
) -> None:
    """Issue 51: someone who can write the table deletes a KMS deployment's keyring (and
    its deployment record). A new keyring would show every thread empty and leave its
    data unopenable for good: the saver refuses, names the items and how to restore them,
    and writes nothing; with them restored, the data reads again."""
    kms = MemoryKms()
    saver = backend.saver(keys=None, secret=None, key_service=kms)
    _turn(saver, "t", "MARKER-51")
    pk = deployment_pk("")
    saved = {i["sk"]: i for i in raw.partition(saver, pk)}
    raw.table(saver).batch(deletes=[ItemKey(pk, sk) for sk in lost])
    fresh = backend.saver(setup=False, keys=None, secret=None, key_service=kms)
    with nothing_written(backend):
        with pytest.raises(KeyringMissingError, match="point-in-time recovery") as caught:
            chat_graph(fresh).get_state(thread_config("t"))
        with pytest.raises(KeyringMissingError):
            fresh.ops.rotate_key()
        if "deployment" not in lost:
            report = fresh.ops.check(raise_on_problem=False)
            assert any("KMS keyring of this deployment" in p for p in report.problems)
    assert "'keyring'" in str(caught.value) and kms.calls["generate_data_key"] == 1
    raw.put_items(saver, [saved[sk] for sk in lost])
    again = backend.saver(setup=False, keys=None, secret=None, key_service=kms)
    state = chat_graph(again).get_state(thread_config("t"))
    assert "heard: MARKER-51" in state.values["messages"][-1].content


def test_a_deleted_deployment_record_lets_the_next_writer_record_its_own_keys(
    backend: Backend,
) -> None:
    """The stated limit (docs/SECURITY.md): with keys given (not KMS), the deployment
    record is what names a wrong key. Deleted, the next writer records its own keys: one
    with the deployment's loses nothing; one with other keys sees the threads empty, and
    the deployment's own savers, which still read their threads, are refused by name
    where they meet an empty one, until the record is restored."""
    saver = backend.saver()
    _turn(saver, "t", "MARKER-51")
    pk = deployment_pk("")
    (record,) = [i for i in raw.partition(saver, pk) if i["sk"] == "deployment"]
    raw.table(saver).batch(deletes=[ItemKey(pk, "deployment")])
    other = backend.saver(setup=False, keys={"k9": os.urandom(32)}, secret=os.urandom(16))
    assert chat_graph(other).get_state(thread_config("t")).values == {}
    _turn(other, "u", "other keys")
    mine = backend.saver(setup=False)
    assert chat_graph(mine).get_state(thread_config("t")).values["turns"] == 1
    with pytest.raises(DeploymentMismatchError, match="naming key differs"):
        chat_graph(mine).get_state(thread_config("new"))
    raw.put_items(saver, [record])
    again = backend.saver(setup=False)
    state = chat_graph(again).get_state(thread_config("t"))
    assert "heard: MARKER-51" in state.values["messages"][-1].content


def test_a_new_deployment_beside_another_s_data_makes_its_keyring(backend: Backend) -> None:
    """The check reads only the deployment's own partitions: a tenant's first keyring on
    a table another deployment holds data in is made."""
    other = backend.saver()
    _turn(other, "t", "theirs")
    kms = MemoryKms()
    tenant = backend.saver(setup=False, prefix="t-2/", keys=None, secret=None, key_service=kms)
    _turn(tenant, "t", "mine")
    assert kms.calls["generate_data_key"] == 1


# -------------------------------------------- 4. table-wide operations keep going


def _put_big(saver: S3DynamoSaver, tid: str, run_id: str, parent: Any = None) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = {"doc": os.urandom(3000)}
    cp["channel_versions"] = {"doc": saver.get_next_version(None, None)}
    return saver.put(
        parent or thread_config(tid, checkpoint_ns=""),
        cp,
        {"run_id": run_id},
        cp["channel_versions"],
    )


def test_a_table_under_two_key_sets(
    clients: tuple[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    ddb = clients[0]
    b = make_saver(clients, keys={"b": os.urandom(32)}, secret="B" * 16, inline_max=0)
    b.setup()
    _put_big(b, "b1", "b-run-2", parent=_put_big(b, "b1", "b-keep"))
    b.delete_for_runs(["b-run-2"])  # leaves an orphan object of b's
    # Written before the deployment record existed: drop it, as an older version had none.
    ddb.delete_item(
        TableName=b.settings.table, Key={"pk": {"S": "#s3dynamo"}, "sk": {"S": "deployment"}}
    )
    a_keys = {"a": os.urandom(32)}
    a = make_saver(clients, keys=a_keys, secret="A" * 16, inline_max=0)
    a.setup()
    for tid in ("a1", "a2"):
        _put_big(a, tid, f"{tid}-run-2", parent=_put_big(a, tid, f"{tid}-keep"))
    a.delete_for_runs(["a1-run-2"])

    caplog.set_level(logging.WARNING, logger="langgraph.checkpoint.s3dynamo")
    listed = {t.config["configurable"]["thread_id"] for t in a.list(None)}
    assert listed == {"a1", "a2"}
    assert [(s.partition, s.key_id) for s in a.ops.last_skipped] == [
        (b.parts.namer.thread("b1"), "b")
    ]

    rotated = make_saver(
        clients, keys={"a2": os.urandom(32), **a_keys}, secret="A" * 16, inline_max=0
    )
    result = rotated.ops.reencrypt()
    assert result > 0
    assert [(s.partition, s.key_id) for s in result.skipped] == [(b.parts.namer.thread("b1"), "b")]

    plan = rotated.ops.plan_garbage_collection(grace=timedelta(0))
    assert [(s.partition, s.key_id) for s in plan.skipped] == [(b.parts.namer.thread("b1"), "b")]
    assert list(plan.candidates) == [a.parts.namer.thread("a1")] and plan.objects == 1
    assert plan.execute() == 1
    # b's orphan is still there: a thread this saver cannot open is never collected.
    assert b.ops.plan_garbage_collection(["b1"], grace=timedelta(0)).objects == 1

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for operation in ("list(None)", "reencrypt", "garbage collection"):
        assert any(
            m.startswith(f"{operation}: skipped thread {b.parts.namer.thread('b1')}")
            for m in warnings
        )
        assert any(m.startswith(f"{operation}: skipped 1 thread(s)") for m in warnings)


# ------------------------------------------------------- 5. set-up errors that lead to the fix


def _no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith(("AWS_", "S3DYNAMO_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_no_region_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fails while building the client, before any request.
    _no_aws_environment(monkeypatch)
    saver = S3DynamoSaver(table="t", bucket="b", plaintext=True)
    with pytest.raises(InvalidConfigError, match=r"no AWS region.*AWS_DEFAULT_REGION"):
        saver.get_tuple(thread_config("t"))


def test_no_credentials_names_region_and_endpoint() -> None:
    # Translated directly: provoking it for real would need a client that may connect out.
    from botocore.exceptions import NoCredentialsError

    from langgraph.checkpoint.s3dynamo.backends.aws_errors import translate

    where = (
        "DynamoDB table 't' (region eu-west-3, endpoint https://dynamodb.eu-west-3.amazonaws.com)"
    )
    message = str(translate(NoCredentialsError(), where))
    assert message.startswith(f"no AWS credentials for {where}: set AWS_ACCESS_KEY_ID")


def test_access_denied_names_region_endpoint_and_policy() -> None:
    from botocore.exceptions import ClientError

    from langgraph.checkpoint.s3dynamo.backends.aws_errors import translate

    denied = ClientError(
        {"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}}, "Scan"
    )
    message = str(translate(denied, "DynamoDB table 't' (region r, endpoint e)"))
    assert "access denied: Scan on DynamoDB table 't' (region r, endpoint e)" in message
    assert "maintenance_policy_arn" in message


# ------------------------------------- 6. a wrong key on every read path (in memory)

KEY, SECRET = os.urandom(32), os.urandom(16)
CONFIG = {"configurable": {"thread_id": "customer-42"}}
CASES = {
    "wrong key under the same id": (
        {"keys": {"k1": os.urandom(32)}, "secret": SECRET},
        r"key id\(s\) \['k1'\] hold other keys",
    ),
    "wrong key id": ({"keys": {"k2": KEY}, "secret": SECRET}, r"none of the deployment's \['k1'\]"),
    "wrong naming secret": (
        {"keys": {"k1": KEY}, "secret": os.urandom(16)},
        "the naming key differs",
    ),
}


def written() -> tuple[MemoryIndex, MemoryObjects]:
    index, objects = MemoryIndex(), MemoryObjects()
    saver = memory_saver(index, objects, keys={"k1": KEY}, secret=SECRET)
    graph = chat_graph(saver)
    for i in range(2):
        graph.invoke({"messages": [HumanMessage(f"my kettle is late {i}", id=f"h{i}")]}, CONFIG)
    return index, objects


def reader(index: MemoryIndex, objects: MemoryObjects, **settings: Any) -> MemorySaver:
    saver = MemorySaver(index=index, object_store=objects, **settings)  # no setup(): a reader
    saver.index, saver.objects = index, objects
    return saver


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_read_path_names_the_mismatch(case: str) -> None:
    settings, named = CASES[case]
    other = reader(*written(), **settings)
    reads = {
        "get_tuple": lambda: other.get_tuple(CONFIG),
        "list": lambda: list(other.list(CONFIG)),
        "get_state": lambda: chat_graph(other).get_state(CONFIG),
        "history": lambda: other.ops.history("customer-42"),
        "stats": lambda: other.ops.stats("customer-42"),
        "verify": lambda: other.ops.verify("customer-42"),
        "verify everything": lambda: other.ops.verify(),
        "threads": lambda: other.ops.threads(),
        "copy": lambda: other.copy_thread("customer-42", "copy"),
        "delta history": lambda: other.get_delta_channel_history(config=CONFIG, channels=["x"]),
    }
    for name, read in reads.items():
        with pytest.raises(DeploymentMismatchError, match=named) as exc:
            read()
        assert "fingerprint" in str(exc.value), name


def test_a_flipped_byte_is_still_reported_as_tampering() -> None:
    index, objects = written()
    [record] = [r for r in index.records() if isinstance(r, CheckpointRecord) and r.inline][-1:]
    tag, blob = next(iter(record.inline.items()))
    record.inline[tag] = blob[:-1] + bytes([blob[-1] ^ 1])
    index.batch([record_item(record)])
    same = reader(index, objects, keys={"k1": KEY}, secret=SECRET)
    with pytest.raises(IntegrityError) as exc:
        for _ in same.list(CONFIG):
            pass
    assert not isinstance(exc.value, DeploymentMismatchError)
    assert "authentication failed" in str(exc.value)
    report = same.ops.verify("customer-42")
    assert [p["kind"] for p in report.problems] == ["tampered"]
