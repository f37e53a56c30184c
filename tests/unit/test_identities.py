"""Identities as values change no stored byte: the associated data and the names derived
from a `CheckpointAt`, `ValueAt` or `WriteAt` are the ones the positional form made, and
blobs the positional form sealed (recorded below from that code) still open."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.keys.codec import (
    Codec,
    body_id,
    delta_id,
    metadata_id,
    value_id,
    write_id,
)
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.keys.naming import Namer

CHECKPOINT = CheckpointAt("t", "ns", "1f0-cid")
VALUE = ValueAt("t", "ns", "messages", "00000002.5")
BASE_VERSION = "00000001.4"
WRITE = CHECKPOINT.write("task-9", 3)


def _part(text: str) -> bytes:
    raw = text.encode()
    return len(raw).to_bytes(4, "big") + raw


def test_the_associated_data_is_the_kind_then_each_field_length_prefixed() -> None:
    checkpoint = _part("t") + _part("ns") + _part("1f0-cid")
    value = _part("t") + _part("ns") + _part("messages") + _part("00000002.5")
    assert value_id(VALUE) == _part("value") + value
    assert delta_id(VALUE, BASE_VERSION) == _part("delta") + value + _part(BASE_VERSION)
    assert write_id(WRITE) == _part("write") + checkpoint + _part("task-9") + _part("3")
    assert body_id(CHECKPOINT) == _part("checkpoint") + checkpoint
    assert metadata_id(CHECKPOINT) == _part("metadata") + checkpoint
    # Pinned as bytes too, as the positional functions returned them.
    assert value_id(VALUE) == (
        b"\x00\x00\x00\x05value\x00\x00\x00\x01t\x00\x00\x00\x02ns"
        b"\x00\x00\x00\x08messages\x00\x00\x00\n00000002.5"
    )
    assert write_id(WRITE) == (
        b"\x00\x00\x00\x05write\x00\x00\x00\x01t\x00\x00\x00\x02ns"
        b"\x00\x00\x00\x071f0-cid\x00\x00\x00\x06task-9\x00\x00\x00\x013"
    )


def test_names_are_the_ones_the_positional_form_derived() -> None:
    keyed, unkeyed = Namer(b"known-answer-naming-secret"), Namer(None)
    assert keyed.value(VALUE) == "SkFCVpGzsOp5Zxtk-rdj_w"
    assert keyed.write(WRITE, "nonce-1") == "_7nJ_VhlSy9eyzRUqwdnNQ"
    assert keyed.task(CHECKPOINT, "task-9") == "wlvp5E6rWCzcywDj"
    assert keyed.channel("t", "ns", "messages") == "QJ8AarFZ"
    assert unkeyed.value(VALUE) == "SROqQdpXW4VrRMVXUiRb9w"
    assert unkeyed.write(WRITE, "nonce-1") == "GjKjISQc1O0jykoG1pG6qQ"
    assert unkeyed.task(CHECKPOINT, "task-9") == "BvEnTWgcZmwojN2H"


# Sealed under key k1 = bytes(range(32)) by the positional form's `Codec`
# (`seal_value("t", "ns", "messages", "00000002.5", "hello")`, and so on).
SEALED_VALUE = bytes.fromhex(
    "0102026b31c8a17c66dbc356af4479b46e587eb6252a44cb54785d34eec0fb7d589af1b6fefc67bc1da6b9"
    "78ac088f1cbed675"
)
SEALED_DELTA = bytes.fromhex(  # "hello world, hello world!" against "hello world, hello world"
    "010b026b3180f180731310e2f398d564faa1c2e08160a76908032d0d63acfa3384d90466bc8ccc54ec36ea"
    "427f38fd9f2155b4fdab354b09a266b0e15540"
)
SEALED_WRITE = bytes.fromhex(  # "hi" to channel "messages"
    "0102026b31851aacebb13164342f2f09dbca3ce33575d9cb1702774f281045efce513e5fecee0c84e26434"
    "6467f5aa964bcd992f8a6b534bea4a567d"
)
SEALED_BODY = bytes.fromhex(  # {"v": 1}
    "0102026b31ca05937ad1b47fa81ca389b7f19ba617b0e5eca67af3d261a1138b61867be0cf3c24fbd369af"
    "08593d2498da"
)
SEALED_METADATA = bytes.fromhex(  # {"step": 2}
    "0102026b31f28409129969c6db1af526846f61903e0a43bac0e88af22f91f6a49230ca8dc96bab21f6e065"
    "cd0fd8f86e87d3529f"
)


@pytest.fixture
def codec() -> Codec:
    return Codec(Sealer(keyring=Keyring({"k1": bytes(range(32))}, "k1")), JsonPlusSerializer)


def test_blobs_sealed_by_the_positional_form_open(codec: Codec) -> None:
    assert codec.load(codec.value_data(VALUE, SEALED_VALUE, "value")) == "hello"
    base = codec.dump("hello world, hello world")
    opened = codec.delta_data(VALUE, SEALED_DELTA, BASE_VERSION, base, "delta")
    assert codec.load(opened) == "hello world, hello world!"
    channel, typed = codec.write_data(WRITE, SEALED_WRITE, "write")
    assert (channel, codec.load(typed)) == ("messages", "hi")
    assert codec.open_body(CHECKPOINT, SEALED_BODY, "body") == {"v": 1}
    assert codec.open_metadata(CHECKPOINT, SEALED_METADATA, "metadata") == {"step": 2}


def test_a_blob_opens_under_its_own_identity_only(codec: Codec) -> None:
    with pytest.raises(IntegrityError, match="authentication failed"):
        codec.write_data(CHECKPOINT.write("task-9", 4), SEALED_WRITE, "write")
    with pytest.raises(IntegrityError, match="authentication failed"):
        codec.value_data(VALUE._replace(version=BASE_VERSION), SEALED_VALUE, "value")
    with pytest.raises(IntegrityError, match="authentication failed"):
        codec.open_metadata(CHECKPOINT._replace(tid="u"), SEALED_METADATA, "metadata")
    # A write and the checkpoint it belongs to: the same checkpoint fields, in order.
    assert WRITE == ("t", "ns", "1f0-cid", "task-9", 3)
    assert WRITE[:3] == CHECKPOINT
