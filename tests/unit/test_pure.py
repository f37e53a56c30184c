"""Pure code, no storage: envelopes, names, records, item format, placement."""

from __future__ import annotations

import hashlib
import hmac
import os

import pytest
import zstandard
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from langgraph.checkpoint.s3dynamo.backends import dynamodb as ddb
from langgraph.checkpoint.s3dynamo.blobs.placement import InlineBudget, needs_bundle
from langgraph.checkpoint.s3dynamo.blobs.sealing import (
    CHUNK_SIZE,
    DELTA_DICTIONARIES,
    FLAG_KEYRING,
    FLAG_ZSTD,
    MAX_DECOMPRESSED_SIZE,
    MESSAGE_KEY_LABEL,
    NO_DICTIONARY,
    ContextLender,
    Sealer,
    identity,
)
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    KeyNotFoundError,
    PlaintextRefusedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    checkpoint_sk,
    owner_sk,
    parse_sk,
    split_write_ref,
    write_ref,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    CheckpointRecord,
    WritesRecord,
    pack_bundle,
    record_from,
    record_item,
    referenced_leaves,
    unpack_bundle,
)
from langgraph.checkpoint.s3dynamo.keys.identities import ValueAt
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store import format as thread_format
from langgraph.checkpoint.s3dynamo.table import Update, eq

KEY = os.urandom(32)


def sealer(**kw: object) -> Sealer:
    return Sealer(keyring=Keyring(keys={"k1": KEY}, active="k1"), **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------ envelopes


def test_envelope_round_trips_and_compresses() -> None:
    data = b"the blue kettle " * 100
    blob = sealer().seal("json", data, identity("value", "t", "", "ch", "1"))
    assert len(blob) < len(data) / 4 and b"kettle" not in blob
    assert sealer().open(blob, identity("value", "t", "", "ch", "1"), "x") == ("json", data)


def test_envelope_bound_to_its_identity() -> None:
    blob = sealer().seal("json", b"x" * 100, identity("value", "t", "", "ch", "1"))
    with pytest.raises(IntegrityError, match="authentication failed"):
        sealer().open(blob, identity("value", "t", "", "ch", "2"), "x")


def test_contexts_are_lent_one_caller_at_a_time_and_kept_for_few_dictionaries() -> None:
    made: list[bytes] = []
    lender: ContextLender[object] = ContextLender(lambda d: made.append(d) or object())
    base = b"base version " * 100
    # While one is lent, a second caller gets a context of its own.
    with lender.lend(base) as first, lender.lend(base) as second:
        assert second is not first
    with lender.lend(base) as again:
        assert again in (first, second)
    assert made == [base, base]
    with pytest.raises(RuntimeError), lender.lend(NO_DICTIONARY):
        raise RuntimeError("a failed frame")
    with lender.lend(NO_DICTIONARY):  # the context of a failed call was not kept
        pass
    assert made.count(NO_DICTIONARY) == 2
    for n in range(DELTA_DICTIONARIES + 2):
        with lender.lend(b"%d" % n + base):
            pass
    with lender.lend(base):  # the oldest dictionaries went; the plain contexts stay
        pass
    with lender.lend(NO_DICTIONARY):
        pass
    assert made.count(base) == 3 and made.count(NO_DICTIONARY) == 2


def test_a_delta_is_small_and_opens_against_its_base() -> None:
    base = os.urandom(2000)
    ident = identity("delta", "t", "", "ch", "2", "1")
    blob = sealer().seal("json", base + b"turn two", ident, dictionary=base)
    assert len(blob) < 100
    assert sealer().open(blob, ident, "x", dictionary=base) == ("json", base + b"turn two")
    with pytest.raises(IntegrityError, match="version it was made against"):
        sealer().open(blob, ident, "x")


def test_flipped_byte_and_truncation_refused() -> None:
    ident = identity("a")
    blob = bytearray(sealer().seal("json", b"hello", ident))
    blob[-1] ^= 1
    with pytest.raises(IntegrityError):
        sealer().open(bytes(blob), ident, "x")
    with pytest.raises(IntegrityError, match="truncated"):
        sealer().open(bytes(blob[:20]), ident, "x")


def test_missing_key_id_is_named() -> None:
    blob = sealer().seal("json", b"hello", identity("a"))
    other = Sealer(keyring=Keyring(keys={"k2": os.urandom(32)}, active="k2"))
    with pytest.raises(KeyNotFoundError, match=r"'k1'.*add that key"):
        other.open(blob, identity("a"), "x")


def test_plaintext_refused_while_encryption_is_on_unless_allowed() -> None:
    blob = Sealer().seal("json", b"hello", identity("a"))
    with pytest.raises(PlaintextRefusedError, match="allow_plaintext_read"):
        sealer().open(blob, identity("a"), "x")
    assert sealer(allow_plaintext_read=True).open(blob, identity("a"), "x")[1] == b"hello"


def test_a_frame_declaring_more_than_the_limit_is_refused_before_inflating() -> None:
    # zstandard ignores max_output_size for frames that declare their size: the declared
    # size is checked first (an unsealed store is where a forged frame could come from).
    stream = zstandard.ZstdCompressor().compressobj(size=MAX_DECOMPRESSED_SIZE + 1)
    frame = stream.compress(b"a" * 100) + stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    blob = bytes([1, FLAG_ZSTD, 0, 4]) + b"json" + frame
    with pytest.raises(IntegrityError, match="declares 2147483649 bytes"):
        Sealer().open(blob, identity("a"), "x")


def test_identity_parts_cannot_run_together() -> None:
    assert identity("ab", "c") != identity("a", "bc")


def _one_shot(blob: bytes, ident: bytes) -> bytes:
    """The payload of a keyring envelope under KEY, opened the plain way: AES-GCM over
    everything after the header and nonce, with the header and identity as AAD."""
    pos = 3 + blob[2]
    nonce = blob[pos : pos + 16]
    key = hmac.new(KEY, MESSAGE_KEY_LABEL + nonce, hashlib.sha256).digest()
    return AESGCM(key).decrypt(nonce[:12], blob[pos + 16 :], blob[:pos] + ident)


@pytest.mark.parametrize("compressible", [True, False])
def test_a_large_envelope_is_sealed_in_chunks_into_the_same_format(compressible: bool) -> None:
    """Data over a chunk is compressed and encrypted a chunk at a time and decrypted in
    parts (so that no whole copy of it is made besides the envelope); the envelope is
    the one sealing it whole makes, and either opens the other's."""
    ident = identity("value", "t", "", "ch", "1")
    data = b"the blue kettle " * (CHUNK_SIZE // 5) if compressible else os.urandom(CHUNK_SIZE + 7)
    blob = sealer().seal("msgpack", data, ident)
    assert sealer().open(blob, ident, "x") == ("msgpack", data)
    payload = _one_shot(blob, ident)
    assert payload[:8] == b"\x07msgpack"
    assert bool(blob[1] & FLAG_ZSTD) == compressible  # decided by the first chunk
    stored = zstandard.ZstdDecompressor().decompress(payload[8:]) if compressible else payload[8:]
    assert stored == data
    # An envelope sealed whole (as before chunks) opens through the chunked path.
    header = bytes([1, FLAG_ZSTD | FLAG_KEYRING, 2]) + b"k1"
    nonce = os.urandom(16)
    key = hmac.new(KEY, MESSAGE_KEY_LABEL + nonce, hashlib.sha256).digest()
    packed = b"\x07msgpack" + zstandard.ZstdCompressor().compress(data)
    whole = header + nonce + AESGCM(key).encrypt(nonce[:12], packed, header + ident)
    assert sealer().open(whole, ident, "x") == ("msgpack", data)
    # A prefix (a pending write's channel) is sealed as if joined to the data.
    headed = sealer().seal("msgpack", data, ident, prefix=b"\0\0\0\2ch")
    assert sealer().open(headed, ident, "x") == ("msgpack", b"\0\0\0\2ch" + data)
    # Without a keyring too.
    plain = Sealer().seal("msgpack", data, ident)
    assert bool(plain[1] & FLAG_ZSTD) == compressible
    assert sealer(allow_plaintext_read=True).open(plain, ident, "x") == ("msgpack", data)


def test_a_large_envelope_altered_or_truncated_is_refused() -> None:
    ident = identity("a")
    blob = bytearray(sealer().seal("json", os.urandom(2 * CHUNK_SIZE), ident))
    blob[CHUNK_SIZE] ^= 1
    with pytest.raises(IntegrityError, match="authentication failed"):
        sealer().open(bytes(blob), ident, "x")
    blob[CHUNK_SIZE] ^= 1
    with pytest.raises(IntegrityError, match="authentication failed"):
        sealer().open(bytes(blob[:-1]), ident, "x")
    with pytest.raises(IntegrityError, match="authentication failed"):
        sealer().open(bytes(blob), identity("b"), "x")
    assert sealer().open(bytes(blob), ident, "x")[0] == "json"


# ---------------------------------------------------------------------- names


def test_names_are_keyed_and_opaque() -> None:
    a, b = Namer(b"secret-a"), Namer(b"secret-b")
    assert a.thread("user-42") != b.thread("user-42")
    assert "user" not in a.thread("user-42")
    assert a.namespace("t", "ab") != a.namespace("t", "a")
    # Length-prefixed parts: ("a", "bc") and ("ab", "c") never collide.
    assert a.value(ValueAt("t", "a", "bc", "1")) != a.value(ValueAt("t", "ab", "c", "1"))


def test_sort_keys_parse_back() -> None:
    assert parse_sk(checkpoint_sk("ns", "cid")) == ("ns", "cid", None)
    assert parse_sk(writes_sk("ns", "cid", "task")) == ("ns", "cid", "task")
    assert owner_sk(writes_sk("ns", "cid", "task")) == checkpoint_sk("ns", "cid")


# -------------------------------------------------------------------- records


def test_bundle_round_trips_and_refuses_truncation() -> None:
    writes = {0: b"a", 5: b"bcd", -1: b""}
    packed = pack_bundle(writes)
    assert unpack_bundle(packed) == writes
    with pytest.raises(ValueError, match="truncated"):
        unpack_bundle(packed[:-1])


def test_write_refs_and_referenced_leaves() -> None:
    ref = write_ref("leaf1", "tag")
    assert split_write_ref(ref) == ("leaf1", "tag")
    w = WritesRecord("p", "n#c#t", b"ref", {0: b"inline", 1: ref}, bundle="leaf2")
    assert referenced_leaves(w) == {"leaf1", "leaf2"}
    c = CheckpointRecord("p", "n#c", b"b", b"m", b"t", objects=frozenset({"o1"}))
    assert referenced_leaves(c) == {"o1"}


# ---------------------------------------------------------------- item format


def _checkpoint() -> CheckpointRecord:
    return CheckpointRecord(
        "pk", "ns#cid", b"body", b"meta", b"ref", "run", frozenset({"o1"}), {"tag": b"v"}
    )


def test_items_round_trip_both_kinds() -> None:
    writes = WritesRecord("pk", "ns#cid#t", b"ref", {0: b"x", -3: "leaf.tag"}, bundle="b1")
    for record in (_checkpoint(), writes):
        assert record_from(record_item(record)) == record
        # and through DynamoDB's attribute values
        assert record_from(ddb.from_item(ddb.to_item(record_item(record)))) == record


def test_malformed_item_is_an_integrity_error() -> None:
    item = record_item(_checkpoint())
    del item["c"]
    with pytest.raises(IntegrityError, match=r"ns#cid.*malformed"):
        record_from(item)


def test_merge_update_keeps_first_regular_and_last_special() -> None:
    record = WritesRecord("pk", "ns#cid#t", b"ref", {0: b"x", -3: b"y"})
    (update,) = thread_format.commit_writes(record, frozenset({-3}), None)
    assert isinstance(update, Update)
    assert update.keep["w0"] == b"x" and update.set == {"w-3": b"y"}
    expression = ddb.Expression()
    text = expression.update(update)
    names = {v: k for k, v in expression.names.items()}
    w0, special = names["w0"], names["w-3"]
    assert f"{w0} = if_not_exists({w0}, " in text and f"{special} = :" in text


def test_replace_update_guards_changed_attributes() -> None:
    old, new = _checkpoint(), _checkpoint()
    assert thread_format.replace_if_unchanged(old, new) is None
    new.inline = {"tag": b"resealed"}
    update = thread_format.replace_if_unchanged(old, new)
    assert update is not None
    # A map cannot be compared everywhere, so the sealed body stands guard for it.
    assert update.when == eq("c", b"body")
    assert update.set == {"iv": {"tag": b"resealed"}}


# ------------------------------------------------------------------ placement


def test_inline_budget() -> None:
    budget = InlineBudget(inline_max=10, total=25)
    assert budget.take(b"x" * 10)
    assert not budget.take(b"x" * 11)  # above inline_max: an object
    assert budget.take(b"x" * 11, carried=True)  # was inline in the parent
    assert not budget.take(b"x" * 5)  # the record is full
    assert InlineBudget(inline_max=0).take(b"") and not InlineBudget(inline_max=0).take(b"x")


def test_bundle_threshold() -> None:
    assert not needs_bundle(64) and needs_bundle(65)


def test_base64_langgraph_aes_key_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    from langgraph.checkpoint.s3dynamo.config.settings import Settings
    from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError

    monkeypatch.setenv("LANGGRAPH_AES_KEY", base64.b64encode(os.urandom(32)).decode())
    with pytest.raises(InvalidConfigError, match=r"44 bytes.*raw string.*not base64-decoded"):
        Settings()
    monkeypatch.setenv("LANGGRAPH_AES_KEY", "k" * 32)
    source = Settings().key_source()
    assert source.keyring is not None and source.keyring.active == "lg"
    assert source.secret == b"k" * 32


def test_item_size_follows_dynamodb_rules() -> None:
    from langgraph.checkpoint.s3dynamo.table import item_size

    item = {"pk": "abc", "c": b"12345", "o": frozenset({"x", "yz"}), "iv": {"k": b"123"}}
    assert item_size(item) == (2 + 3) + (1 + 5) + (1 + 3) + (2 + 3 + 1 + 1 + 3)
