"""Encryption at rest, as someone holding the bucket and the table sees it.

Every test reads the raw S3 objects and DynamoDB items through plain boto3 calls, the way
an attacker with read (or write) access to the storage would, and asserts what a user of
the saver then sees: nothing readable, or an IntegrityError naming the thread and the
checkpoint, never wrong data.
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import re
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import zstandard
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.types import Command

from langgraph.checkpoint.s3dynamo import (
    DeploymentMismatchError,
    IntegrityError,
    KeyNotFoundError,
    PlaintextRefusedError,
    S3DynamoSaver,
)
from langgraph.checkpoint.s3dynamo.format.layout import object_key
from langgraph.checkpoint.s3dynamo.keys.identities import ValueAt
from tests.support.savers import make_saver, thread_config
from tests.support.scenarios import Runner, ask_graph, chat_graph, snapshot_view, sub_graph

MARKER = "MARKER-SECRET-7f3a"
META_MARKER = "MARKER-META-5c21"
ASK_MARKER = "MARKER-ASK-0b9e"
RESUME_MARKER = "MARKER-RESUME-d41c"
ITEM_MARKER = "MARKER-ITEM-88a0"
RUN_MARKER = "MARKER-RUN-3e17"
TID = "THREAD-SECRET-91"
SECRET = b"naming-secret-16+bytes"
AES_KEY = b"0123456789abcdef0123456789abcdef"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Shorter terms could turn up by chance in base64 names (64^-5 per position is already
# about 1e-9); node "ask" of ask_graph is left out for that reason.
MIN_TERM = 5
SYNC = Runner("sync")
# Node names of the graphs below (ask_graph's "ask" is too short to scan for).
NODES = {"respond", "outer", "child", "inner_a", "inner_b"}

Raw = list[tuple[str, bytes]]


# ----------------------------------------------------------------- raw storage


def _table(clients: tuple[Any, Any]) -> str:
    """The table and bucket of this test's savers (make_saver's defaults)."""
    return str(getattr(clients, "table", "checkpoints"))


def _bucket(clients: tuple[Any, Any]) -> str:
    return str(getattr(clients, "bucket", "checkpoints-bucket"))


def _attribute_bytes(where: str, value: dict[str, Any]) -> Iterator[tuple[str, bytes]]:
    ((kind, inner),) = value.items()
    if kind in ("S", "N"):
        yield where, inner.encode("utf-8", "surrogatepass")
    elif kind == "B":
        yield where, bytes(inner)
    elif kind in ("SS", "NS"):
        for s in inner:
            yield where, s.encode("utf-8", "surrogatepass")
    elif kind == "BS":
        for b in inner:
            yield where, bytes(b)
    elif kind == "M":
        for name, sub in inner.items():
            yield f"{where}.<name>", name.encode("utf-8", "surrogatepass")
            yield from _attribute_bytes(f"{where}.{name}", sub)
    elif kind == "L":
        for i, sub in enumerate(inner):
            yield from _attribute_bytes(f"{where}[{i}]", sub)


def _raw_items(clients: tuple[Any, Any]) -> Raw:
    """Every attribute name and value of every item of the table, as bytes."""
    ddb, _ = clients
    out: Raw = []
    for page in ddb.get_paginator("scan").paginate(TableName=_table(clients)):
        for n, item in enumerate(page["Items"]):
            for name, value in item.items():
                out.append((f"item {n} attribute name", name.encode()))
                out.extend(_attribute_bytes(f"item {n} {name}", value))
    return out


def _objects(clients: tuple[Any, Any]) -> dict[str, bytes]:
    _, s3 = clients
    found: dict[str, bytes] = {}
    bucket = _bucket(clients)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            found[obj["Key"]] = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return found


def _raw_objects(clients: tuple[Any, Any]) -> Raw:
    """Every key, user metadata and body of every object in the bucket."""
    _, s3 = clients
    out: Raw = []
    bucket = _bucket(clients)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            got = s3.get_object(Bucket=bucket, Key=key)
            out.append(("object key", key.encode("utf-8", "surrogatepass")))
            for name, value in got.get("Metadata", {}).items():
                out.append((f"object {key} metadata", f"{name}={value}".encode()))
            out.append((f"object {key}", got["Body"].read()))
    return out


def _raw(clients: tuple[Any, Any]) -> Raw:
    return _raw_items(clients) + _raw_objects(clients)


def _readable_forms(blob: bytes) -> list[bytes]:
    """The bytes as stored, plus every zstd frame inside them decompressed (compressed
    plaintext must not hide a marker from the scan) and base64url runs decoded."""
    forms = [blob]
    start = blob.find(ZSTD_MAGIC)
    while start != -1:
        with contextlib.suppress(zstandard.ZstdError):
            forms.append(zstandard.ZstdDecompressor().decompressobj().decompress(blob[start:]))
        start = blob.find(ZSTD_MAGIC, start + 1)
    for run in re.findall(rb"[A-Za-z0-9_-]{8,}", blob):
        with contextlib.suppress(ValueError):
            forms.append(base64.urlsafe_b64decode(run + b"=" * (-len(run) % 4)))
    return forms


def _leaks(raw: Raw, terms: set[str]) -> list[tuple[str, str]]:
    """(term, where) for every term readable anywhere in the raw storage."""
    assert all(len(t) >= MIN_TERM for t in terms), sorted(t for t in terms if len(t) < MIN_TERM)
    needles = {t: t.encode("utf-8", "surrogatepass") for t in terms}
    found = []
    for where, blob in raw:
        for form in _readable_forms(blob):
            found += [(t, where) for t, needle in needles.items() if needle in form]
    return sorted(set(found))


def _envelopes(blob: bytes) -> list[bytes]:
    """Sealed envelopes in a stored blob: the blob itself, or those of a writes bundle
    (`idx(4) | length(4) | envelope` repeated)."""
    if blob[:1] == b"\x01":
        return [blob]
    out, pos = [], 0
    while pos + 8 <= len(blob):
        size = int.from_bytes(blob[pos + 4 : pos + 8], "big")
        out.append(blob[pos + 8 : pos + 8 + size])
        pos += 8 + size
    assert pos == len(blob), f"neither an envelope nor a bundle: {blob[:16]!r}"
    return out


def _stored_envelopes(clients: tuple[Any, Any]) -> list[tuple[str, bytes]]:
    """Every sealed blob: binary item attributes and object bodies (not names)."""
    ddb, _ = clients
    out = []
    for page in ddb.get_paginator("scan").paginate(TableName=_table(clients)):
        for item in page["Items"]:
            for name, value in item.items():
                if "B" in value:
                    out.append((name, bytes(value["B"])))
                elif "M" in value:
                    out += [(f"{name}.{k}", bytes(v["B"])) for k, v in value["M"].items()]
    for key, body in _objects(clients).items():
        out += [(key, env) for env in _envelopes(body)]
    return out


def _key_ids(clients: tuple[Any, Any]) -> Counter[str | None]:
    """How many stored envelopes carry each keyring key id (None: not keyring-sealed)."""
    ids: Counter[str | None] = Counter()
    for _, env in _stored_envelopes(clients):
        ids[env[3 : 3 + env[2]].decode() if env[1] & 0x02 else None] += 1
    return ids


def _stored_size(clients: tuple[Any, Any]) -> int:
    """Bytes at rest: every object body plus every binary item attribute."""
    ddb, _ = clients
    size = sum(len(body) for body in _objects(clients).values())
    for page in ddb.get_paginator("scan").paginate(TableName=_table(clients)):
        for item in page["Items"]:
            for value in item.values():
                if "B" in value:
                    size += len(value["B"])
                elif "M" in value:
                    size += sum(len(v["B"]) for v in value["M"].values())
    return size


# ----------------------------------------------------------------- what a user reads


def _view(t: CheckpointTuple | None) -> Any:
    if t is None:
        return None
    return (t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes)


def _namespaces(saver: S3DynamoSaver) -> dict[str, set[str]]:
    spaces: dict[str, set[str]] = {}
    for t in saver.list(None):
        c = t.config["configurable"]
        spaces.setdefault(c["thread_id"], set()).add(c["checkpoint_ns"])
    return spaces


def _read_threads(saver: S3DynamoSaver, spaces: dict[str, set[str]]) -> dict[str, Any]:
    """Latest checkpoint and full history of every (thread, namespace), read per thread."""
    seen: dict[str, Any] = {}
    for tid, namespaces in sorted(spaces.items()):
        for ns in sorted(namespaces):
            config = thread_config(tid, checkpoint_ns=ns)
            seen[f"{tid}|{ns}|latest"] = _view(saver.get_tuple(config))
            seen[f"{tid}|{ns}|list"] = [_view(t) for t in saver.list(config)]
    return seen


def _read_all(saver: S3DynamoSaver, spaces: dict[str, set[str]]) -> dict[str, Any]:
    return {**_read_threads(saver, spaces), "all": [_view(t) for t in saver.list(None)]}


def _put(
    saver: S3DynamoSaver,
    tid: str,
    values: dict[str, Any],
    parent: dict[str, Any] | None = None,
    versions: dict[str, str] | None = None,
) -> dict[str, Any]:
    """put() a checkpoint holding `values` (as a new version of each), after `parent`."""
    cp = empty_checkpoint()
    new = versions or {ch: saver.get_next_version(None, None) for ch in values}
    cp["channel_values"] = dict(values)
    cp["channel_versions"] = dict(new)
    config = parent or thread_config(tid, checkpoint_ns="")
    result: dict[str, Any] = saver.put(config, cp, {"source": "input", "step": 0}, new)
    return result


def _put_new_objects(
    saver: S3DynamoSaver, clients: tuple[Any, Any], tid: str, values: dict[str, Any], **kw: Any
) -> tuple[dict[str, Any], list[str]]:
    before = set(_objects(clients))
    config = _put(saver, tid, values, **kw)
    return config, sorted(set(_objects(clients)) - before)


def _encrypted(clients: tuple[Any, Any], **kwargs: Any) -> S3DynamoSaver:
    kwargs.setdefault("keys", {"a": os.urandom(32)})
    kwargs.setdefault("secret", SECRET)
    saver = make_saver(clients, **kwargs)
    saver.setup()
    return saver


def _overwrite(clients: tuple[Any, Any], key: str, body: bytes) -> None:
    clients[1].put_object(Bucket=_bucket(clients), Key=key, Body=body)


def _checkpoint_item(clients: tuple[Any, Any], cid: str) -> dict[str, Any]:
    items = clients[0].scan(TableName=_table(clients))["Items"]
    (item,) = [i for i in items if i["sk"]["S"].endswith("#" + cid)]
    return dict(item)


def _names_thread_and_checkpoint(exc: pytest.ExceptionInfo[Any], tid: str, cid: str) -> None:
    assert repr(tid) in str(exc.value) and cid in str(exc.value), str(exc.value)


# ----------------------------------------------------------------- graph runs


def _run_graphs(saver: S3DynamoSaver, big: bool) -> dict[str, Any]:
    """A chat of several turns, an interrupted and resumed question, and a subgraph
    paused inside its child namespace; every value carries a marker."""
    chat = chat_graph(saver)
    config = {"configurable": {"thread_id": TID}, "metadata": {"owner": META_MARKER}}
    for i in range(3):
        text = f"{MARKER} turn {i}"
        if big and i == 1:  # incompressible, far over inline_max: lands in S3
            text += " " + random.Random(i).randbytes(20000).hex()
        chat.invoke({"messages": [HumanMessage(text, id=f"h-{i}")]}, config)

    ask = ask_graph(saver)
    ask_config = {"configurable": {"thread_id": f"{TID}-ask"}, "metadata": {"owner": META_MARKER}}
    ask.invoke({"question": ASK_MARKER}, ask_config)
    ask.invoke(Command(resume=RESUME_MARKER), ask_config)

    sub = sub_graph(saver)
    sub_config = {"configurable": {"thread_id": f"{TID}-sub"}}
    sub.invoke({"items": [ITEM_MARKER]}, sub_config)  # pauses inside the child

    # A run id in metadata (graphs given one replay that run): keyed in the run index.
    run_md: Any = {"run_id": RUN_MARKER, "source": "input", "step": -1}
    saver.put(thread_config(f"{TID}-run", checkpoint_ns=""), empty_checkpoint(), run_md, {})
    return {
        "chat": snapshot_view(chat.get_state(config)),
        "ask": snapshot_view(ask.get_state(ask_config)),
        "sub": snapshot_view(sub.get_state(sub_config, subgraphs=True)),
    }


def _secrets(saver: S3DynamoSaver) -> set[str]:
    """Everything a reader without keys must not learn, taken from what the saver reads
    back: markers, thread ids, namespaces, channel and node names, versions, task ids and
    metadata (keys and values). Checkpoint ids are sort keys by design (see SECURITY.md)."""
    terms = {MARKER, META_MARKER, ASK_MARKER, RESUME_MARKER, ITEM_MARKER, RUN_MARKER, TID}
    terms |= NODES
    cids: set[str] = set()
    for t in saver.list(None):
        c = t.config["configurable"]
        cids.add(c["checkpoint_id"])
        terms |= {c["thread_id"], c["checkpoint_ns"], *c["checkpoint_ns"].split(":")}
        cp = t.checkpoint
        terms |= set(cp["channel_versions"]) | {str(v) for v in cp["channel_versions"].values()}
        for node, seen in cp["versions_seen"].items():
            terms |= {node, *seen}
        for task_id, channel, _ in t.pending_writes:
            terms |= {task_id, channel}
        stack: list[Any] = [t.metadata]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                terms |= {str(k) for k in value}
                stack += list(value.values())
            elif isinstance(value, str):
                terms.add(value)
    return {t for t in terms if len(t) >= MIN_TERM} - cids


# ------------------------------------------------------------- 1. nothing readable


@pytest.mark.parametrize("inline_max", [None, 0])
def test_nothing_readable_at_rest(clients: tuple[Any, Any], inline_max: int | None) -> None:
    kwargs = {} if inline_max is None else {"inline_max": inline_max}
    saver = _encrypted(clients, **kwargs)
    _run_graphs(saver, big=True)
    terms = _secrets(saver)
    # The collection is not vacuous: names the brief and the graphs use are all in it.
    assert {"messages", "turns", "question", "answer", "items", "child"} <= terms
    assert {"respond", "outer", "inner_a", "inner_b", "__interrupt__"} <= terms
    assert {"source", "input", "owner", "run_id"} <= terms
    assert any(t.startswith("child:") for t in terms)
    raw = _raw(clients)
    objects = [w for w, _ in _raw_objects(clients) if w != "object key"]
    assert objects, "values went to S3 in both settings (large value or inline_max=0)"
    assert _leaks(raw, terms) == []


def test_the_scan_finds_plaintext_when_it_is_there(clients: tuple[Any, Any]) -> None:
    """The same scan on an unencrypted saver finds the marker: in a tiny value stored
    uncompressed, and in a large value zstd-compressed (found by decompressing)."""
    saver = make_saver(clients)
    saver.setup()
    tiny = f"{MARKER}-tiny"
    large = f"{MARKER}-large " + "lorem ipsum dolor sit amet " * 8000
    _put(saver, TID, {"small": tiny, "large": large})
    compressed = [b for _, b in _raw(clients) if ZSTD_MAGIC in b and len(b) < len(large) // 10]
    assert compressed, "the large value is stored compressed"
    leaks = _leaks(_raw(clients), {tiny, f"{MARKER}-large", TID})
    assert {t for t, _ in leaks} == {tiny, f"{MARKER}-large", TID}


# ----------------------------------------------------------------- 2. tampering


@pytest.fixture
def sealed(clients: tuple[Any, Any]) -> S3DynamoSaver:
    # No object cache: these tests alter the bucket behind the writer's back and read
    # what is there, as any other process would (a process trusts what it wrote itself).
    return _encrypted(clients, inline_max=0, object_cache_bytes=0)


@pytest.mark.parametrize("position", [0, 1, 2, 3, 10, 25, -1])
def test_flipped_byte_in_an_object_is_refused(
    clients: tuple[Any, Any], sealed: S3DynamoSaver, position: int
) -> None:
    config, (key,) = _put_new_objects(sealed, clients, "t-flip", {"alpha": f"{MARKER} alpha"})
    body = bytearray(_objects(clients)[key])
    body[position] ^= 0x01
    _overwrite(clients, key, bytes(body))
    cid = config["configurable"]["checkpoint_id"]
    for target in (config, thread_config("t-flip")):
        with pytest.raises(IntegrityError) as exc:
            sealed.get_tuple(target)
        _names_thread_and_checkpoint(exc, "t-flip", cid)
    with pytest.raises(IntegrityError):
        list(sealed.list(None))


def test_object_copied_over_another_channels_key_is_refused(
    clients: tuple[Any, Any], sealed: S3DynamoSaver
) -> None:
    # The same version for both: only the channel tells the two objects apart.
    version = sealed.get_next_version(None, None)
    config, keys = _put_new_objects(
        sealed,
        clients,
        "t-swap",
        {"alpha": f"{MARKER} alpha", "beta": f"{MARKER} beta"},
        versions={"alpha": version, "beta": version},
    )
    assert len(keys) == 2
    objects = _objects(clients)
    _overwrite(clients, keys[1], objects[keys[0]])
    with pytest.raises(IntegrityError) as exc:
        sealed.get_tuple(config)
    _names_thread_and_checkpoint(exc, "t-swap", config["configurable"]["checkpoint_id"])


def test_object_copied_into_another_thread_is_refused(
    clients: tuple[Any, Any], sealed: S3DynamoSaver
) -> None:
    versions = {"alpha": sealed.get_next_version(None, None)}
    _, (key_a,) = _put_new_objects(sealed, clients, "A", {"alpha": "A's"}, versions=versions)
    config_b, (key_b,) = _put_new_objects(sealed, clients, "B", {"alpha": "B's"}, versions=versions)
    _overwrite(clients, key_b, _objects(clients)[key_a])
    with pytest.raises(IntegrityError) as exc:
        sealed.get_tuple(config_b)
    _names_thread_and_checkpoint(exc, "B", config_b["configurable"]["checkpoint_id"])
    got = sealed.get_tuple(thread_config("A"))
    assert got is not None and got.checkpoint["channel_values"] == {"alpha": "A's"}


@pytest.mark.parametrize("keep", [0, 1, 2, 3, 12, 20, "half", "all-but-one"])
def test_truncated_object_is_refused(
    clients: tuple[Any, Any], sealed: S3DynamoSaver, keep: int | str
) -> None:
    config, (key,) = _put_new_objects(sealed, clients, "t-cut", {"alpha": MARKER * 20})
    body = _objects(clients)[key]
    size = {"half": len(body) // 2, "all-but-one": len(body) - 1}.get(str(keep), keep)
    assert isinstance(size, int)
    _overwrite(clients, key, body[:size])
    with pytest.raises(IntegrityError) as exc:
        sealed.get_tuple(config)
    _names_thread_and_checkpoint(exc, "t-cut", config["configurable"]["checkpoint_id"])


def test_metadata_swapped_between_checkpoints_is_refused(
    clients: tuple[Any, Any], sealed: S3DynamoSaver
) -> None:
    first = _put(sealed, "t-meta", {"alpha": 1})
    second = _put(sealed, "t-meta", {"alpha": 2}, parent=first)
    cid1, cid2 = (c["configurable"]["checkpoint_id"] for c in (first, second))
    item1, item2 = _checkpoint_item(clients, cid1), _checkpoint_item(clients, cid2)
    item1["m"], item2["m"] = item2["m"], item1["m"]
    for item in (item1, item2):
        clients[0].put_item(TableName=_table(clients), Item=item)
    for config, cid in ((first, cid1), (second, cid2)):
        with pytest.raises(IntegrityError) as exc:
            sealed.get_tuple(config)
        _names_thread_and_checkpoint(exc, "t-meta", cid)
    with pytest.raises(IntegrityError):
        list(sealed.list(thread_config("t-meta", checkpoint_ns=""), filter={"step": 0}))


def test_wrong_key_under_the_same_id_is_refused(
    clients: tuple[Any, Any], sealed: S3DynamoSaver
) -> None:
    config = _put(sealed, "t-key", {"alpha": MARKER})
    cid = config["configurable"]["checkpoint_id"]
    other = make_saver(clients, keys={"a": os.urandom(32)}, secret=SECRET)
    # A wrong key is a configuration error, named as one (with both check values), not
    # reported as tampering; the blob that did not open is the cause.
    with pytest.raises(
        DeploymentMismatchError, match=r"key id\(s\) \['a'\] hold other keys"
    ) as exc:
        other.get_tuple(config)
    cause = exc.value.__cause__
    assert isinstance(cause, IntegrityError) and not isinstance(cause, KeyNotFoundError)
    assert "t-key" in str(cause) and cid in str(cause)
    # Table-wide, a thread that does not open is skipped and reported (partition and key
    # id); a listing that finds nothing else names the mismatch instead of coming back empty.
    with pytest.raises(DeploymentMismatchError, match=r"key id\(s\) \['a'\] hold other keys"):
        list(other.list(None))
    [skipped] = other.ops.last_skipped
    assert (skipped.partition, skipped.key_id) == (other.parts.namer.thread("t-key"), "a")
    assert cid in skipped.reason


def test_key_id_missing_from_the_keyring_is_named(
    clients: tuple[Any, Any], sealed: S3DynamoSaver
) -> None:
    config = _put(sealed, "t-kid", {"alpha": MARKER})
    cid = config["configurable"]["checkpoint_id"]
    other = make_saver(clients, keys={"z": os.urandom(32)}, secret=SECRET)
    with pytest.raises(DeploymentMismatchError, match=r"none of the deployment's \['a'\]") as exc:
        other.get_tuple(config)
    assert isinstance(exc.value.__cause__, KeyNotFoundError)
    assert "key id 'a'" in str(exc.value.__cause__) and cid in str(exc.value.__cause__)
    # With the deployment's key beside another, only blobs under a missing id are named.
    both = make_saver(clients, keys={"z": os.urandom(32), "a": b"\0" * 32}, secret=SECRET)
    with pytest.raises(DeploymentMismatchError, match=r"key id\(s\) \['a'\]"):
        both.get_tuple(config)


# ----------------------------------------------------------------- 3. rotation


def test_rotation_then_reencrypt_lets_the_old_key_go(clients: tuple[Any, Any]) -> None:
    ka, kb = os.urandom(32), os.urandom(32)
    under_a = _encrypted(clients, keys={"a": ka})
    chat, ask, sub = chat_graph(under_a), ask_graph(under_a), sub_graph(under_a)
    for i in range(2):
        text = f"{MARKER} {i} " + os.urandom(3000).hex()  # some values in S3, some inline
        chat.invoke({"messages": [HumanMessage(text, id=f"h-{i}")]}, thread_config("rot-chat"))
    ask.invoke({"question": ASK_MARKER}, thread_config("rot-ask"))
    sub.invoke({"items": [ITEM_MARKER]}, thread_config("rot-sub"))
    bundled = _put(under_a, "rot-bundle", {"alpha": 1})
    under_a.put_writes(bundled, [(f"ch{i}", i) for i in range(70)], "task-many")

    both = make_saver(clients, keys={"b": kb, "a": ka}, secret=SECRET)
    chat, ask = chat_graph(both), ask_graph(both)
    chat.invoke({"messages": [HumanMessage(f"{MARKER} 2", id="h-2")]}, thread_config("rot-chat"))
    ask.invoke(Command(resume=RESUME_MARKER), thread_config("rot-ask"))
    chat.invoke({"messages": [HumanMessage(MARKER, id="n")]}, thread_config("rot-new"))
    assert set(_key_ids(clients)) == {"a", "b"}

    spaces = _namespaces(both)
    assert len(spaces["rot-sub"]) == 2, "the subgraph's child namespace is covered"
    before = _read_all(both, spaces)

    rewritten = both.ops.reencrypt(thread_ids=["rot-chat"])
    assert isinstance(rewritten, int) and rewritten > 0
    only_b = make_saver(clients, keys={"b": kb}, secret=SECRET)
    chat_spaces = {"rot-chat": spaces["rot-chat"]}
    assert _read_threads(only_b, chat_spaces) == _read_threads(both, chat_spaces)
    with pytest.raises(KeyNotFoundError, match="key id 'a'"):
        only_b.get_tuple(thread_config("rot-sub"))

    assert both.ops.reencrypt() > 0
    assert set(_key_ids(clients)) == {"b"}, "no stored blob is sealed under the old key"
    assert _read_all(only_b, spaces) == before
    state = ask_graph(only_b).get_state(thread_config("rot-ask"))
    assert state.values["answer"] == f"you said {RESUME_MARKER}"


# ----------------------------------------------------------------- 4. plaintext


@pytest.mark.parametrize("encryption", ["keyring", "serde"])
def test_plaintext_is_refused_unless_allowed(clients: tuple[Any, Any], encryption: str) -> None:
    # The naming secret carries over: names must match for the data to be found at all.
    secret: dict[str, Any] = {"secret": SECRET} if encryption == "keyring" else {}
    plain = make_saver(clients, **secret)
    plain.setup()
    config = thread_config(TID)
    for i in range(2):
        SYNC.invoke(chat_graph(plain), {"messages": [HumanMessage(f"{MARKER} {i}")]}, config)
    spaces = _namespaces(plain)
    written = _read_all(plain, spaces)

    crypto: dict[str, Any] = (
        {"keys": {"a": os.urandom(32)}, **secret}
        if encryption == "keyring"
        else {"serde": EncryptedSerializer.from_pycryptodome_aes(key=AES_KEY)}
    )
    strict = make_saver(clients, **crypto)
    # Over a deployment written in plaintext, a sealing saver is told so by the deployment
    # check; LangGraph's own cipher is not recorded there, and its reads are refused.
    refused = DeploymentMismatchError if encryption == "keyring" else PlaintextRefusedError
    with pytest.raises(refused) as exc:
        strict.get_tuple(config)
    assert "allow_plaintext_read=True" in str(exc.value)
    blob_error = exc.value.__cause__ if encryption == "keyring" else exc.value
    assert isinstance(blob_error, PlaintextRefusedError) and repr(TID) in str(blob_error)
    with pytest.raises(refused):
        chat_graph(strict).get_state(config)

    migrating = make_saver(clients, allow_plaintext_read=True, **crypto)
    assert _read_all(migrating, spaces) == written
    if encryption == "keyring":
        # Continue the thread, then re-seal what is left in plaintext: strict reads it all.
        graph = chat_graph(migrating)
        graph.invoke({"messages": [HumanMessage(f"{MARKER} 2", id="h-2")]}, config)
        expected = _read_all(migrating, spaces)
        assert migrating.ops.reencrypt() > 0
        assert set(_key_ids(clients)) == {"a"}
        assert _read_all(strict, spaces) == expected
        assert _leaks(_raw(clients), {MARKER, TID}) == []


# ------------------------------------------------------- 5. EncryptedSerializer


def test_encrypted_serializer_round_trips_and_compresses(clients: tuple[Any, Any]) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=AES_KEY)
    saver = make_saver(clients, serde=serde)
    saver.setup()
    big = f"{MARKER} " + "the same sentence, again and again. " * 5600  # ~200 KB
    assert len(big) > 200_000

    def run(cp: Any) -> Any:
        graph = chat_graph(cp)
        config = thread_config(TID)
        graph.invoke({"messages": [HumanMessage(big, id="h-0")]}, config)
        graph.invoke({"messages": [HumanMessage(f"{MARKER} short", id="h-1")]}, config)
        return {
            "state": snapshot_view(graph.get_state(config)),
            "history": [snapshot_view(s) for s in graph.get_state_history(config)],
        }

    assert run(saver) == run(InMemorySaver())
    assert _leaks(_raw(clients), {MARKER, TID, "messages", "turns", "respond"}) == []
    envelope = next(e for _, e in _stored_envelopes(clients))
    assert envelope[1] & 0x04, "sealed by the serializer's cipher"

    # The same run through LangGraph's own saver stores what EncryptedSerializer alone
    # makes (ciphertext of uncompressed msgpack); s3dynamo compresses before encrypting.
    baseline = InMemorySaver(serde=serde)
    run(baseline)
    baseline_size = sum(
        len(cp[1]) + len(md[1])
        for ns in baseline.storage.values()
        for cps in ns.values()
        for cp, md, _ in cps.values()
    )
    baseline_size += sum(len(b[1]) for b in baseline.blobs.values())
    baseline_size += sum(len(w[2][1]) for ws in baseline.writes.values() for w in ws.values())
    assert baseline_size > 5 * len(big)
    assert _stored_size(clients) * 20 < baseline_size

    # One value alone: its envelope against serde.dumps_typed of it.
    before = _stored_size(clients)
    _put(saver, "one-value", {"text": big})
    alone = len(serde.dumps_typed(big)[1])
    assert alone > len(big)
    assert (_stored_size(clients) - before) * 50 < alone
    got = saver.get_tuple(thread_config("one-value"))
    assert got is not None and got.checkpoint["channel_values"] == {"text": big}

    # Without the serializer's cipher the blobs do not open, with a message saying why.
    with pytest.raises(DeploymentMismatchError, match="EncryptedSerializer"):
        make_saver(clients).get_tuple(thread_config("one-value"))


# ------------------------------------------------------------ 6. LANGGRAPH_AES_KEY


def test_langgraph_aes_key_alone_turns_encryption_on(
    clients: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_AES_KEY", AES_KEY.decode())
    saver = make_saver(clients)
    saver.setup()
    expected = _run_graphs(InMemorySaver(), big=True)
    assert _run_graphs(saver, big=True) == expected
    envelopes = _stored_envelopes(clients)
    assert envelopes
    unsealed = [where for where, env in envelopes if not env[1] & 0x02]
    assert unsealed == []
    assert _leaks(_raw(clients), _secrets(saver)) == []
    # Another process with the same key reads the same state.
    again = ask_graph(make_saver(clients)).get_state(thread_config(f"{TID}-ask"))
    assert again.values["answer"] == f"you said {RESUME_MARKER}"
    # Without the key, names differ too; the deployment record says so instead of
    # showing an empty thread.
    monkeypatch.delenv("LANGGRAPH_AES_KEY")
    with pytest.raises(DeploymentMismatchError, match="naming key differs"):
        make_saver(clients).get_tuple(thread_config(TID))


def test_thread_ids_are_opaque_even_without_encryption(clients: tuple[Any, Any]) -> None:
    """Names are hashes in every mode; uuid thread ids included."""
    saver = make_saver(clients, inline_max=0)
    saver.setup()
    tid = str(uuid.uuid4())
    _put(saver, tid, {"alpha": "x" * 100})
    assert not [w for w, b in _raw_objects(clients) if w == "object key" and tid.encode() in b]
    names = [b for w, b in _raw_items(clients) if w.endswith((" pk", " sk"))]
    assert names and not [b for b in names if tid.encode() in b]


def test_encrypted_serializer_blob_moved_to_another_thread_fails(clients: Any) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef0123456789abcdef")
    # No object cache: the test reads back what it altered in the bucket.
    saver = make_saver(clients, serde=serde, inline_max=0, object_cache_bytes=0)
    saver.setup()
    keys = {}
    for tid in ("A", "B"):
        cp = empty_checkpoint()
        cp["channel_values"] = {"alpha": f"{tid}'s secret"}
        cp["channel_versions"] = {"alpha": "00000000000000000000000000000001.5"}
        saver.put(
            {"configurable": {"thread_id": tid, "checkpoint_ns": ""}},
            cp,
            {},
            cp["channel_versions"],
        )
        leaf = saver.parts.namer.value(ValueAt(tid, "", "alpha", cp["channel_versions"]["alpha"]))
        keys[tid] = object_key(saver.parts.namer.thread(tid), leaf)
    s3 = clients[1]
    stolen = s3.get_object(Bucket=saver.settings.bucket, Key=keys["A"])["Body"].read()
    s3.put_object(Bucket=saver.settings.bucket, Key=keys["B"], Body=stolen)
    with pytest.raises(IntegrityError, match="thread 'B'"):
        saver.get_tuple({"configurable": {"thread_id": "B"}})


def test_removed_inline_value_is_an_error_not_a_missing_channel(clients: Any) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    saver = make_saver(clients, keys={"a": os.urandom(32)}, secret=b"s" * 16)
    saver.setup()
    cp = empty_checkpoint()
    cp["channel_values"] = {"alpha": "one", "beta": "two"}
    cp["channel_versions"] = {"alpha": "1", "beta": "1"}
    config = saver.put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {}, cp["channel_versions"]
    )
    ddb = clients[0]
    [item] = [i for i in ddb.scan(TableName=saver.settings.table)["Items"] if "iv" in i]
    del item["iv"]["M"][saver.parts.namer.channel("t", "", "alpha")]
    ddb.put_item(TableName=saver.settings.table, Item=item)
    with pytest.raises(IntegrityError, match="missing from its index item"):
        saver.get_tuple(config)


# ------------------------------------- what sizes say (issue 51, docs/SECURITY.md)


@pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")
def test_what_the_sizes_of_references_entries_and_index_items_say(
    clients: tuple[Any, Any],
) -> None:
    """A thread's sealed reference, its catalog entries and a namespace's directory entry
    are padded, stored
    uncompressed: their sizes say the thread id's or namespace's length only to a power
    of two (64 bytes at least). A vector log entry's size says the embedding's
    dimensions; an item's stamps and a tombstone have one size each; a node-cache
    entry's name is the same for the same input whenever and whoever writes it. These are
    the figures docs/SECURITY.md gives."""
    from langgraph.store.base import IndexConfig

    from langgraph.cache.s3dynamo import S3DynamoCache
    from langgraph.checkpoint.s3dynamo.format.catalog_records import THREAD as CATALOG_THREAD
    from langgraph.store.s3dynamo import S3DynamoStore
    from tests.support import raw

    saver = make_saver(clients, keys={"k1": AES_KEY}, secret=SECRET)
    saver.setup()

    def ref_size(tid: str) -> int:
        saver.put(thread_config(tid, checkpoint_ns=""), empty_checkpoint(), {}, {})
        (item,) = raw.partition(saver, saver.parts.namer.thread(tid))
        return len(item["t"])

    sizes = {n: ref_size("t" * n) for n in (1, 20, 36, 56, 57, 120, 121)}
    assert sizes[1] == sizes[20] == sizes[36] == sizes[56] == 106  # 64 bytes of JSON
    assert sizes[57] == sizes[120] == 170 and sizes[121] == 298  # 128, then 256
    # A catalog entry names its thread as a reference does: the same sizes.
    filing = make_saver(clients, keys={"k1": AES_KEY}, secret=SECRET, catalog_fields=["user_id"])
    every = filing.parts.namer.catalog("", "")

    def entry_size(tid: str) -> int:
        config = thread_config(tid, checkpoint_ns="")
        filing.put(config, empty_checkpoint(), {"user_id": "u"}, {})
        name = filing.parts.namer.thread(tid)
        (entry,) = [e for e in raw.catalog_items(filing, every) if e["sk"] == name]
        return len(entry[CATALOG_THREAD])

    entries = {n: entry_size("e" * n) for n in (1, 7, 33, 56, 60, 61)}
    assert len({entries[n] for n in (1, 7, 33, 56, 60)}) == 1 and entries[1] == 106
    assert entries[61] == 170  # 64 bytes of JSON hold an id of up to 60 characters
    store = S3DynamoStore.from_saver(saver)
    entry_sizes = {}
    for namespace in [("a",), ("users", "ada", "memories"), ("n" * 60,), ("n" * 61,)]:
        store.put(namespace, "k", {"v": 1})
        key = store.space._names.entry_key(namespace)
        entry_sizes[len(repr(namespace))] = len(raw.table(saver).get(key)["n"])  # type: ignore[index]
    assert sorted(set(entry_sizes.values())) == [106, 170]

    def log_size(dims: int) -> int:
        rng = random.Random(dims)

        def embed(texts: list[str]) -> list[list[float]]:
            return [[rng.uniform(-1, 1) for _ in range(dims)] for _ in texts]

        index: IndexConfig = {"dims": dims, "embed": embed}
        indexed = S3DynamoStore.from_saver(saver, index=index)
        namespace = ("dims", str(dims))
        indexed.put(namespace, "k", {"text": "x"})
        pk = indexed.space.pk(namespace)
        (entry,) = [i for i in raw.partition(saver, pk) if i["sk"].startswith("~v")]
        return len(entry["v"])

    # One vector of d random dimensions: 141 + d + the digits of d bytes, key id "k1".
    assert [log_size(d) for d in (64, 384, 1536)] == [207, 528, 1681]
    # An item's stamps and a tombstone: one size each.
    clock = [1_800_000_000.0]
    timed = S3DynamoStore.from_saver(saver, ttl={"refresh_on_read": True})
    timed.space.clock = lambda: clock[0]
    timed.put(("stamps",), "k", {"v": 1}, ttl=60)
    clock[0] += 600
    timed.get(("stamps",), "k")  # refreshed
    stamped = raw.table(saver).get(timed.space.item_key(("stamps",), "k"))
    assert stamped is not None and (len(stamped["mk"]), len(stamped["mr"])) == (61, 80)
    indexed = S3DynamoStore.from_saver(
        saver, index={"dims": 4, "embed": lambda t: [[1.0] * 4 for _ in t]}
    )
    indexed.put(("gone",), "k", {"text": "x"})
    indexed.delete(("gone",), "k")
    pk = indexed.space.pk(("gone",))
    (tomb,) = [i for i in raw.partition(saver, pk) if "#k" in i["sk"]]
    assert len(tomb["v"]) == 42
    # The node cache: one input's entry has one name, written by any process, any time.
    caches = [S3DynamoCache.from_saver(make_saver(clients, keys={"k1": AES_KEY}, secret=SECRET))]
    caches.append(S3DynamoCache.from_saver(saver))
    names = []
    for cache in caches:
        cache.set({(("node",), "input-hash"): ("result", None)})
        names.append(cache.space.item_key(("node",), "input-hash"))
    assert names[0] == names[1]
