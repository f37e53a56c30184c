"""What each stored blob holds and which identity it is bound to. No I/O here.

The serializer turns objects into (type, bytes); the sealer frames, compresses and
encrypts them. This module decides the identity (associated data) of every kind of blob,
so that a blob moved to another place fails to open: the kind, then the fields of its
`CheckpointAt`, `ValueAt` or `WriteAt` (`identities.py`), each length-prefixed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer, SealingKey, identity, padded
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    InvalidConfigError,
    S3DynamoError,
    ValueNotSerializableError,
)
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt, WriteAt

# What a refused checkpoint leaves: nothing of it, and (durability "async") the writes
# LangGraph sent for the step after it, which no put will ever commit.
NONE_OF_IT = (
    'nothing of this checkpoint was written (with durability="async", writes LangGraph '
    "sent for the step after it stay, unread: `verify` counts them as leftover writes, "
    "`s3dynamo gc --full` removes them)"
)


@contextmanager
def serializing(
    subject: str | Callable[[], str], value: Any, nothing: str = "nothing was written"
) -> Iterator[None]:
    """Turn the serializer's bare error for `value` (msgpack's "Type is not msgpack
    serializable: function", a pickling error) into one that names what held it: a
    checkpoint's channel, a write, a Store item (`subject`, or a function making its text
    only then); `nothing` says what was left."""
    try:
        yield
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, S3DynamoError):
            raise
        kind, holder = type(value), subject if isinstance(subject, str) else subject()
        raise ValueNotSerializableError(
            f"{holder} holds a {kind.__module__}.{kind.__qualname__} the serializer cannot "
            f"store ({exc}); {nothing}. Expected data LangGraph's serializer "
            "stores (primitives, lists, dicts, dataclasses, pydantic models, messages): keep "
            "functions, locks, clients and open files out of it (make them where they are "
            "used, or pass them through config or the runtime context), or pass serde= a "
            "serializer that stores this type"
        ) from exc


def _channel_prefix(channel: str) -> bytes:
    """What a pending write's data is prefixed with: its channel."""
    raw = channel.encode("utf-8", "surrogatepass")
    return len(raw).to_bytes(4, "big") + raw


def unpack_channel(data: bytes, what: str) -> tuple[str, bytes]:
    """A pending write's opened data: (its channel, the serialized value)."""
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 + size:
        raise IntegrityError(f"{what}: write record is truncated")
    return data[4 : 4 + size].decode("utf-8", "surrogatepass"), data[4 + size :]


def value_id(at: ValueAt) -> bytes:
    return identity("value", *at)


def delta_id(at: ValueAt, base_version: str) -> bytes:
    """A value stored as a delta is bound to the version it was made against too, so it
    cannot be replayed over another base."""
    return identity("delta", *at, base_version)


def write_id(at: WriteAt) -> bytes:
    return identity("write", *at)


def body_id(at: CheckpointAt) -> bytes:
    return identity("checkpoint", *at)


def metadata_id(at: CheckpointAt) -> bytes:
    return identity("metadata", *at)


def ref_id(pk: str, sk: str) -> bytes:
    return identity("ref", pk, sk)


def catalog_id(pk: str, sk: str) -> bytes:
    """A catalog entry's thread id is bound to the entry's keys: moved to another value's
    partition or to another thread's sort key, it does not open."""
    return identity("catalog", pk, sk)


class Codec:
    def __init__(self, sealer: Sealer, serde: Callable[[], SerializerProtocol]) -> None:
        self.sealer = sealer
        # Asked on every call: the serializer is the saver's, which may be swapped.
        self._serde = serde

    def serde(self) -> SerializerProtocol:
        """The serializer in use now: the saver's `serde`, asked on every call, so a copy
        (`with_allowlist`) or an assigned serializer is honoured. With an
        `EncryptedSerializer`, its inner serializer: the sealer calls the cipher itself,
        after compressing, so the cipher must stay the one the saver was built with."""
        serde = self._serde()
        cipher = serde.cipher if isinstance(serde, EncryptedSerializer) else None
        built = self.sealer.serde_cipher
        if cipher is not built:
            expected = "no cipher" if built is None else "its EncryptedSerializer's cipher"
            got = "no cipher" if cipher is None else "a cipher of its own"
            raise InvalidConfigError(
                f"serde: the saver was built with {expected}, and its serde was replaced by "
                f"a {type(serde).__name__} with {got}; the cipher is fixed at construction: "
                "wrap the new serializer in the cipher the saver was built with "
                "(EncryptedSerializer(cipher, serializer)), or build a new saver"
            )
        return serde.serde if isinstance(serde, EncryptedSerializer) else serde

    def under(self, key: SealingKey | None) -> Codec:
        """This codec sealing new blobs under `key` (a data subject's: `subjects.py`)."""
        return self if key == self.sealer.key else Codec(self.sealer.under(key), self._serde)

    def reseal(self, blob: bytes, old: bytes, new: bytes, what: str) -> bytes:
        """Open a blob under one identity and seal it under another (or the same one,
        with the active key): for copying threads and rotating keys. A subject's blob
        stays under its subject's key (`Sealer.for_blob`)."""
        typ, data = self.sealer.open(blob, old, what)
        sealer = self.sealer.for_blob(blob)
        return sealer.seal(typ, data, new, compress=sealer.compressed(blob))

    def _dump(self, obj: Any, ident: bytes) -> bytes:
        typ, data = self.serde().dumps_typed(obj)
        return self.sealer.seal(typ, data, ident)

    def _load(self, blob: bytes, ident: bytes, what: str) -> Any:
        typ, data = self.sealer.open(blob, ident, what)
        return self.serde().loads_typed((typ, data))

    # Channel values: one per (thread, ns, channel, version).
    def seal_value(self, at: ValueAt, obj: Any) -> bytes:
        return self._dump(obj, value_id(at))

    def value_data(self, at: ValueAt, blob: bytes, what: str) -> tuple[str, bytes]:
        """A full value opened but not deserialized: what a delta is made against."""
        return self.sealer.open(blob, value_id(at), what)

    def dump(self, obj: Any) -> tuple[str, bytes]:
        """Serialize once; `seal_value_typed` and `seal_value_delta` take the result."""
        typed: tuple[str, bytes] = self.serde().dumps_typed(obj)
        return typed

    def seal_value_typed(self, at: ValueAt, typed: tuple[str, bytes]) -> bytes:
        return self.sealer.seal(typed[0], typed[1], value_id(at))

    def seal_value_delta(
        self,
        at: ValueAt,
        typed: tuple[str, bytes],
        base_version: str,
        base: tuple[str, bytes],
    ) -> bytes | None:
        """The value sealed as a delta against the opened `base` version; None when the
        serializer gave another type than the base's (no common bytes to reuse)."""
        if typed[0] != base[0]:
            return None
        ident = delta_id(at, base_version)
        return self.sealer.seal(typed[0], typed[1], ident, dictionary=base[1])

    def delta_data(
        self, at: ValueAt, blob: bytes, base_version: str, base: tuple[str, bytes], what: str
    ) -> tuple[str, bytes]:
        """A delta opened against its opened `base` but not deserialized."""
        ident = delta_id(at, base_version)
        return self.sealer.open(blob, ident, what, dictionary=base[1])

    # Pending writes: one per (thread, ns, checkpoint, task, idx); the channel is sealed too.
    def seal_write(self, at: WriteAt, channel: str, obj: Any) -> bytes:
        typ, data = self.serde().dumps_typed(obj)
        # The channel goes in as a prefix: joined here, a huge value would be copied.
        return self.sealer.seal(typ, data, write_id(at), prefix=_channel_prefix(channel))

    def write_data(self, at: WriteAt, blob: bytes, what: str) -> tuple[str, tuple[str, bytes]]:
        """A write opened but not deserialized: (channel, (type, data)) for `load`."""
        typ, data = self.sealer.open(blob, write_id(at), what)
        channel, payload = unpack_channel(data, what)
        return channel, (typ, payload)

    def load(self, typed: tuple[str, bytes]) -> Any:
        """Deserialize what `write_data` or `value_data` opened: a new object each call."""
        return self.serde().loads_typed(typed)

    # Checkpoint body and metadata: bound to (thread, ns, checkpoint).
    def seal_body(self, at: CheckpointAt, body: dict[str, Any]) -> bytes:
        return self._dump(body, body_id(at))

    def open_body(self, at: CheckpointAt, blob: bytes, what: str) -> dict[str, Any]:
        body: dict[str, Any] = self._load(blob, body_id(at), what)
        return body

    def seal_metadata(self, at: CheckpointAt, metadata: Any) -> bytes:
        return self._dump(metadata, metadata_id(at))

    def open_metadata(self, at: CheckpointAt, blob: bytes, what: str) -> Any:
        return self._load(blob, metadata_id(at), what)

    # References that let a reader learn the thread id / task id behind a keyed name;
    # bound to the item's own keys, and checked against them after opening.
    def seal_ref(self, pk: str, sk: str, *fields: str) -> bytes:
        # Padded, uncompressed: the size says a thread id's length only to a power of two.
        data = json.dumps(list(fields), ensure_ascii=False).encode("utf-8", "surrogatepass")
        return self.sealer.seal("json", padded(data), ref_id(pk, sk), compress=False)

    def open_ref(self, pk: str, sk: str, blob: bytes, what: str) -> list[str]:
        _, data = self.sealer.open(blob, ref_id(pk, sk), what)
        fields: list[str] = json.loads(data.decode("utf-8", "surrogatepass"))
        return fields

    # A catalog entry's thread id: bound to the entry's own keys, padded as a reference
    # is (an entry of an earlier release holds the id as text, unpadded).
    def seal_catalog(self, pk: str, sk: str, tid: str) -> bytes:
        data = json.dumps([tid], ensure_ascii=False).encode("utf-8", "surrogatepass")
        return self.sealer.seal("json", padded(data), catalog_id(pk, sk), compress=False)

    def open_catalog(self, pk: str, sk: str, blob: bytes, what: str) -> str:
        typ, data = self.sealer.open(blob, catalog_id(pk, sk), what)
        if typ != "json":
            return data.decode("utf-8", "surrogatepass")
        (tid,) = json.loads(data.decode("utf-8", "surrogatepass"))
        return str(tid)
