"""Envelopes: every stored byte string is compressed, then sealed, then framed.

    byte 0      format (1)
    byte 1      flags: 0x01 zstd, 0x02 AES-256-GCM under the keyring,
                       0x04 encrypted by the serializer's own cipher (EncryptedSerializer),
                       0x08 a delta: the zstd frame was compressed against another
                            version's data as a raw-content dictionary (with 0x01)
    byte 2      length n of the key id (0 when not sealed by the keyring)
    3 .. 3+n    key id (ASCII)
    next 16     nonce (only with 0x02)
    rest        body: AES-GCM ciphertext and tag, or the payload itself

The payload is `len(type) | type | data`, where (type, data) is what the serializer made.
Compression applies to `data` and is kept only where it shrinks it (for data over
`CHUNK_SIZE`, where its first chunk shrinks: see `Sealer._seal_large`); it always happens
before any encryption, including LangGraph's own `EncryptedSerializer`, whose cipher we
call on the compressed bytes instead of letting it encrypt incompressible-to-be data.

A delta opens only with the data of the version it was made against (the codec binds the
pair in the identity). Associated data is the frame header plus the blob's identity
(thread, namespace, channel and version for values; ..., task and index for writes; ...,
checkpoint for metadata), so a blob copied to another key, thread or checkpoint fails to
open. A data subject's key (`keys/subjects.py`) has an id beginning `s:`, which no keyring
id does: `Sealer.under` seals with it, `open` asks `subject_keys` for it.

Nonces never repeat under one key: each message is sealed under its own key,
HMAC-SHA-256(key, label | nonce) with a fresh random 128-bit nonce, so a repeat needs two
equal 128-bit nonces (about 2^64 messages per key before that is even likely), and the
AES-GCM nonce under that one-time key cannot repeat at all."""

from __future__ import annotations

import copy
import hashlib
import hmac
import io
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, NamedTuple, TypeVar

import zstandard
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import (
    AEADEncryptionContext,
    Cipher,
    algorithms,
    modes,
)
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from langgraph.checkpoint.serde.base import CipherProtocol

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.errors import (
    DeploymentMismatchError,
    IntegrityError,
    KeyNotFoundError,
    PlaintextRefusedError,
)
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring

FORMAT_V1 = 1
FLAG_ZSTD = 0x01
FLAG_KEYRING = 0x02
FLAG_SERDE_CIPHER = 0x04
FLAG_DELTA = 0x08
NONCE_SIZE = 16
TAG_SIZE = 16
MESSAGE_KEY_LABEL = b"s3dynamo/v1/message-key"
SERDE_BINDING_LABEL = b"s3dynamo/v1/serde-binding"
BINDING_SIZE = 32
# Below this, zstd's frame header costs more than it can save.
MIN_COMPRESS_SIZE = 64
# Refuse to inflate a corrupt or hostile frame beyond this.
MAX_DECOMPRESSED_SIZE = 1 << 31
# Data larger than this is compressed and encrypted a chunk at a time (`Sealer.seal`).
CHUNK_SIZE = 1 << 20
# zstd contexts kept for reuse (see `ContextLender`): one for each of the last few
# dictionaries (delta bases) of at most 1 MiB, whose contexts hold a digested copy of the
# dictionary (at most about 8 MiB of them in all), and a few plain ones, for waves that
# seal in parallel.
DELTA_DICTIONARIES = 8
DELTA_COMPRESSOR_MAX_DICT = 1 << 20
IDLE_PLAIN_CONTEXTS = 4
NO_DICTIONARY = b""

Context = TypeVar("Context")


# A data subject's key id begins so (`subjects.py`); a keyring's ids hold no colon.
SUBJECT_KEY_MARK = "s:"


# What a length-hiding blob is padded to: at least this, then the next power of two.
PAD_MIN = 64


def padded(text: bytes) -> bytes:
    """JSON text padded with spaces (which JSON readers skip, every release's too) to at
    least `PAD_MIN` bytes, then to the next power of two: sealed uncompressed, its size
    says the text's length to within a factor of two, and nothing below `PAD_MIN`."""
    size = max(PAD_MIN, 1 << (len(text) - 1).bit_length())
    return text + b" " * (size - len(text))


def key_id(blob: bytes) -> str | None:
    """The id of the key a blob is sealed under (its header names it), or None if it is
    not sealed."""
    if len(blob) < 3 or not blob[1] & FLAG_KEYRING:
        return None
    return blob[3 : 3 + blob[2]].decode("ascii", "replace")


def is_subject_key(kid: str | None) -> bool:
    """Whether a key id is a data subject's (`keys/subjects.py`)."""
    return kid is not None and kid.startswith(SUBJECT_KEY_MARK)


class SealingKey(NamedTuple):
    """A key that seals new blobs in place of the keyring's active one: a data subject's
    (`kid` begins with `SUBJECT_KEY_MARK`). Its repr names the id only."""

    kid: str
    key: bytes

    def __repr__(self) -> str:
        return f"SealingKey({self.kid!r})"


def own_sealer(key: bytes | None) -> Sealer:
    """A sealer under one key of a deployment's own (derived from its naming key:
    `Namer.sealing_key`), for what it keeps or hands out about itself (its catalog
    fields, a search's cursor); without one (no secret), blobs go unsealed."""
    return Sealer(keyring=Keyring({"n": key}, "n") if key is not None else None)


class Sealer:
    """Turns serializer output into envelopes and back, bound to an identity."""

    def __init__(
        self,
        *,
        keyring: Keyring | Callable[[], Keyring] | None = None,
        serde_cipher: CipherProtocol | None = None,
        compression_level: int = 3,
        allow_plaintext_read: bool = False,
        subject_keys: Callable[[str, str], bytes] | None = None,
        holding: Callable[[str], Keyring] | None = None,
    ) -> None:
        # A callable keyring (data keys unwrapped by KMS) is asked on every use; it caches
        # what it unwrapped and follows rotations.
        self._keyring = keyring
        self.serde_cipher = serde_cipher
        self.allow_plaintext_read = allow_plaintext_read
        self.compression_level = compression_level
        self._compressors = ContextLender(self._new_compressor)
        self._decompressors = ContextLender(_new_decompressor)
        # A subject's key by its id, for `what` (errors name it); None: no subjects.
        self.subject_keys = subject_keys
        # The keyring read again for a key id it lacks (KMS's: another process rotated).
        self.holding = holding
        # What seals new blobs instead of the active key (`under`): a subject's key.
        self.key: SealingKey | None = None

    def under(self, key: SealingKey | None) -> Sealer:
        """This sealer sealing new blobs under `key` (a subject's; None: the keyring's
        active key), sharing everything else."""
        if key == self.key:
            return self
        view = copy.copy(self)
        view.key = key
        return view

    def stale(self, blob: bytes | None) -> bool:
        """Whether re-sealing moves a blob: sealed under another key than this sealer
        seals with. Re-sealed under the keyring's active key (a rotation), a subject's
        blob never is: it stays under its subject's key, which the rotation leaves."""
        if blob is None:
            return False
        kid = self.key_id_of(blob)
        return kid != self.sealing_id and (self.key is not None or not is_subject_key(kid))

    @property
    def sealing_id(self) -> str | None:
        """The key id new blobs are sealed under (None: not sealed)."""
        if self.key is not None:
            return self.key.kid
        keyring = self.keyring
        return None if keyring is None else keyring.active

    def for_blob(self, blob: bytes) -> Sealer:
        """What seals a blob again (a copy, a rotation): its subject's key where it has
        one, which stays the subject's; else this sealer's own key."""
        kid = self.key_id_of(blob)
        if kid is None or not is_subject_key(kid) or self.subject_keys is None:
            return self
        if self.key is not None and self.key.kid == kid:
            return self
        return self.under(SealingKey(kid, self.subject_keys(kid, "a blob sealed again")))

    @property
    def keyring(self) -> Keyring | None:
        source = self._keyring
        if source is None or isinstance(source, Keyring):
            return source
        return source()

    @keyring.setter
    def keyring(self, value: Keyring | Callable[[], Keyring] | None) -> None:
        self._keyring = value

    @property
    def sealed(self) -> bool:
        """True when keyring encryption is configured (without resolving a lazy keyring)."""
        return self._keyring is not None

    def seal(
        self,
        typ: str,
        data: bytes,
        identity: bytes,
        *,
        dictionary: bytes | None = None,
        prefix: bytes = b"",
        compress: bool = True,
    ) -> bytes:
        """Compress, encrypt and frame `data`; with `dictionary` (another version's data),
        as a delta against it, which only that dictionary opens. A `prefix` is sealed
        before `data` as if the caller had joined them, without a copy of `data`. With
        `compress` False, stored as it is (padded data, whose size must say no more)."""
        logical = len(prefix) + len(data)
        if dictionary is None and self.serde_cipher is None and len(data) > CHUNK_SIZE:
            large = self._seal_large(typ, prefix, data, identity, compress)
            return telemetry.sealed(logical, large)
        if prefix:
            data = prefix + data
        flags = 0
        if dictionary is not None:
            with self._compressors.lend(dictionary) as compressor:
                data = compressor.compress(data)
            flags = FLAG_ZSTD | FLAG_DELTA
        elif compress and len(data) >= MIN_COMPRESS_SIZE:
            with self._compressors.lend(NO_DICTIONARY) as compressor:
                packed = compressor.compress(data)
            if len(packed) < len(data):
                data, flags = packed, flags | FLAG_ZSTD
        if self.serde_cipher is not None:
            # The serializer's cipher authenticates only what it is given, so the identity
            # goes in with the data: a blob moved elsewhere fails the check on open.
            data = _binding(typ, flags, identity) + data
            cipher_name, data = self.serde_cipher.encrypt(data)
            typ, flags = f"{typ}+{cipher_name}", flags | FLAG_SERDE_CIPHER
        return telemetry.sealed(logical, self._frame(flags, typ, data, identity))

    def _seal_large(
        self, typ: str, prefix: bytes, data: bytes, identity: bytes, compress: bool = True
    ) -> bytes:
        """`seal` for data over one chunk, in about the memory of the envelope alone.

        Whole, the compressed data, the payload (type, then data), its ciphertext and the
        envelope (header, nonce, then ciphertext) would each be a copy as large as the
        value. Here each chunk is compressed, encrypted and appended to the envelope in
        turn (`_frame_pieces`). Whether to compress is decided before the first byte is
        encrypted (the flags are in the associated data), so by the first chunk: random
        or already compressed data is stored as it is, without a wasted pass of zstd."""
        view = memoryview(data)
        chunks: Iterator[bytes | memoryview] = itertools.chain(
            [prefix], (view[at : at + CHUNK_SIZE] for at in range(0, len(view), CHUNK_SIZE))
        )
        if not compress:
            return self._frame_pieces(0, typ, chunks, identity)
        with self._compressors.lend(NO_DICTIONARY) as compressor:
            if len(compressor.compress(view[:CHUNK_SIZE])) >= CHUNK_SIZE:
                return self._frame_pieces(0, typ, chunks, identity)
            stream = compressor.compressobj(size=len(prefix) + len(view))

            def packed() -> Iterator[bytes]:
                for chunk in chunks:
                    yield stream.compress(chunk)
                yield stream.flush()

            return self._frame_pieces(FLAG_ZSTD, typ, packed(), identity)

    def _header(self, flags: int) -> tuple[bytes | None, bytes]:
        """The key sealing a new envelope, if any (a subject's, else the keyring's active
        one), and the envelope's header, which names it."""
        if self.key is not None:
            kid, key = self.key.kid, self.key.key
        else:
            keyring = self.keyring
            if keyring is None:
                return None, bytes([FORMAT_V1, flags, 0])
            kid, key = keyring.active, keyring.keys[keyring.active]
        raw = kid.encode()
        return key, bytes([FORMAT_V1, flags | FLAG_KEYRING, len(raw)]) + raw

    def _frame(self, flags: int, typ: str, data: bytes, identity: bytes) -> bytes:
        """The envelope of the payload `len(type) | type | data`, encrypted under the
        active key when there is a keyring."""
        key, header = self._header(flags)
        type_raw = typ.encode()
        payload = bytes([len(type_raw)]) + type_raw + data
        if key is None:
            return header + payload
        nonce = os.urandom(NONCE_SIZE)
        aead = AESGCM(_message_key(key, nonce))
        return header + nonce + aead.encrypt(nonce[:12], payload, header + identity)

    def _frame_pieces(
        self, flags: int, typ: str, pieces: Iterator[bytes | memoryview], identity: bytes
    ) -> bytes:
        """`_frame` of data given in pieces, without a copy of it but the envelope: each
        piece is encrypted (AES-GCM encrypts a stream) and appended as it comes, and
        `BytesIO.getvalue` hands over the buffer it grew without copying it. The same
        bytes as `_frame`'s; only for large data, as the streaming cipher costs a few
        microseconds more to set up than one-shot `AESGCM`."""
        key, header = self._header(flags)
        envelope = io.BytesIO()
        envelope.write(header)
        encryptor: AEADEncryptionContext | None = None
        if key is not None:
            nonce = os.urandom(NONCE_SIZE)
            envelope.write(nonce)
            message_key = _message_key(key, nonce)
            encryptor = Cipher(algorithms.AES(message_key), modes.GCM(nonce[:12])).encryptor()
            encryptor.authenticate_additional_data(header + identity)
        type_raw = typ.encode()
        for piece in itertools.chain([bytes([len(type_raw)]) + type_raw], pieces):
            envelope.write(piece if encryptor is None else encryptor.update(piece))
        if encryptor is not None:
            envelope.write(encryptor.finalize() + encryptor.tag)
        return envelope.getvalue()

    def open(
        self, blob: bytes, identity: bytes, what: str, *, dictionary: bytes | None = None
    ) -> tuple[str, bytes]:
        """Open an envelope; `what` names the blob in errors (thread, checkpoint, ...).
        A delta needs the `dictionary` it was sealed against."""
        if len(blob) < 3 or blob[0] != FORMAT_V1:
            raise IntegrityError(
                f"{what}: expected an s3dynamo envelope (format {FORMAT_V1}), got "
                f"{len(blob)} bytes starting {blob[:4]!r}; the object was altered or "
                "written by something else"
            )
        flags = blob[1]
        if flags & ~(FLAG_ZSTD | FLAG_KEYRING | FLAG_SERDE_CIPHER | FLAG_DELTA):
            raise IntegrityError(f"{what}: unknown envelope flags {flags:#04x}")
        if flags & FLAG_SERDE_CIPHER and self.serde_cipher is None:
            raise DeploymentMismatchError(
                f"{what}: encrypted by a serializer cipher but the saver's serde has none; "
                "configure the same EncryptedSerializer (serde=) as its writers to read it "
                "(from Python: the command line takes no serializer)"
            )
        type_raw, data = self._payload(blob, identity, what)
        typ = type_raw.decode()
        if flags & FLAG_SERDE_CIPHER:
            typ, data = self._unwrap(typ, data, flags, identity, what)
        elif (
            self.serde_cipher is not None
            and not flags & FLAG_KEYRING
            and not self.allow_plaintext_read
        ):
            raise PlaintextRefusedError(
                f"{what}: stored unencrypted while the serde encrypts; pass "
                "allow_plaintext_read=True to read it during a migration"
            )
        data = self._inflated(data, flags, dictionary, what)
        telemetry.opened(len(blob), len(data))
        return typ, data

    def _payload(self, blob: bytes, identity: bytes, what: str) -> tuple[bytes, bytes]:
        """The type and data after the header: decrypted and authenticated under the
        keyring key the header names, or, unsealed, as they are (where allowed)."""
        flags, pos = blob[1], 3 + blob[2]
        if flags & FLAG_KEYRING:
            key = self._opening_key(blob[3:pos].decode("ascii", "replace"), what)
            if len(blob) < pos + NONCE_SIZE + TAG_SIZE:
                raise IntegrityError(f"{what}: envelope is truncated ({len(blob)} bytes)")
            return self._decrypt(blob, pos, key, identity, what)
        if self.keyring is not None and not self.allow_plaintext_read:
            raise PlaintextRefusedError(
                f"{what}: stored without keyring encryption while encryption is on; "
                "pass allow_plaintext_read=True to read it during a migration"
            )
        if len(blob) <= pos or len(blob) < pos + 1 + blob[pos]:
            raise IntegrityError(f"{what}: envelope payload is truncated")
        type_end = pos + 1 + blob[pos]
        return blob[pos + 1 : type_end], blob[type_end:]

    def _opening_key(self, key_id: str, what: str) -> bytes:
        """The key a blob names: the keyring's, or a data subject's."""
        keyring = self.keyring
        missing = keyring is not None and key_id not in keyring.keys
        if missing and self.holding is not None and not is_subject_key(key_id):
            keyring = self.holding(key_id)
        if keyring is not None and key_id in keyring.keys:
            return keyring.keys[key_id]
        if key_id.startswith(SUBJECT_KEY_MARK) and self.subject_keys is not None:
            return self.subject_keys(key_id, what)
        held = sorted(keyring.keys) if keyring else []
        raise KeyNotFoundError(
            f"{what}: sealed under key id {key_id!r}, which the keyring does not "
            f"hold (it holds {held}); add that key to the keyring to read it"
        )

    def _unwrap(
        self, typ: str, data: bytes, flags: int, identity: bytes, what: str
    ) -> tuple[str, bytes]:
        """What the serializer's cipher sealed, decrypted and checked against the
        identity it was bound to (`open` refused it without a cipher)."""
        assert self.serde_cipher is not None
        typ, _, cipher_name = typ.rpartition("+")
        try:
            data = self.serde_cipher.decrypt(cipher_name, data)
        except Exception as exc:
            raise IntegrityError(f"{what}: the serializer cipher refused it: {exc}") from exc
        bound, data = data[:BINDING_SIZE], data[BINDING_SIZE:]
        if not hmac.compare_digest(
            bound, _binding(typ, flags & (FLAG_ZSTD | FLAG_DELTA), identity)
        ):
            raise IntegrityError(
                f"{what}: the blob belongs to another thread, checkpoint, channel or "
                "version (identity check failed)"
            )
        return typ, data

    def _inflated(self, data: bytes, flags: int, dictionary: bytes | None, what: str) -> bytes:
        """Decompressed, a delta against its `dictionary`; as it is when stored raw."""
        if flags & FLAG_DELTA:
            if dictionary is None:
                raise IntegrityError(
                    f"{what}: stored as a delta, but the version it was made against was "
                    "not supplied"
                )
            used, broken = dictionary, "delta does not apply"
        elif flags & FLAG_ZSTD:
            used, broken = NO_DICTIONARY, "compressed data is corrupt"
        else:
            return data
        _check_inflated_size(data, what)
        try:
            with self._decompressors.lend(used) as decompressor:
                inflated: bytes = decompressor.decompress(
                    data, max_output_size=MAX_DECOMPRESSED_SIZE
                )
                return inflated
        except zstandard.ZstdError as exc:
            raise IntegrityError(f"{what}: {broken}: {exc}") from exc

    def _decrypt(
        self, blob: bytes, pos: int, key: bytes, identity: bytes, what: str
    ) -> tuple[bytes, bytes]:
        """Authenticate and decrypt the payload after the header (`pos` bytes): its type
        and its data. The sealed part is read through a view, not sliced: a slice would
        copy it whole."""
        nonce = blob[pos : pos + NONCE_SIZE]
        key = _message_key(key, nonce)
        sealed = memoryview(blob)[pos + NONCE_SIZE :]
        associated = blob[:pos] + identity
        try:
            if len(sealed) > CHUNK_SIZE:
                head, type_raw, data = _decrypt_in_parts(key, nonce[:12], sealed, associated)
            else:
                payload = AESGCM(key).decrypt(nonce[:12], sealed, associated)
                type_end = 1 + (payload[0] if payload else 0)
                head, type_raw, data = payload[:1], payload[1:type_end], payload[type_end:]
        except InvalidTag:
            raise IntegrityError(
                f"{what}: authentication failed: the blob was altered, truncated, or "
                "belongs to another thread, checkpoint, channel or version"
            ) from None
        if not head or len(type_raw) < head[0]:
            raise IntegrityError(f"{what}: envelope payload is truncated")
        return type_raw, data

    def key_id_of(self, blob: bytes) -> str | None:
        """The keyring key id a blob is sealed under, or None if not keyring-sealed."""
        return key_id(blob)

    @staticmethod
    def compressed(blob: bytes) -> bool:
        """Whether a blob's data was compressed: one sealed again keeps it so, and one
        stored uncompressed (padded) stays uncompressed."""
        return len(blob) >= 2 and bool(blob[1] & FLAG_ZSTD)

    def _new_compressor(self, dictionary: bytes) -> zstandard.ZstdCompressor:
        return zstandard.ZstdCompressor(
            level=self.compression_level, dict_data=_raw_dictionary(dictionary)
        )


def _message_key(key: bytes, nonce: bytes) -> bytes:
    return hmac.new(key, MESSAGE_KEY_LABEL + nonce, "sha256").digest()


def _decrypt_in_parts(
    key: bytes, nonce: bytes, sealed: memoryview, associated: bytes
) -> tuple[bytes, bytes, bytes]:
    """AES-GCM decryption of `sealed` (ciphertext, then tag) as the payload's three parts:
    the type's length, the type and the data. Decrypted whole and then sliced, the data
    would be copied once more, as large as the value; here it is decrypted into a bytes
    object of its own. Raises `InvalidTag`; nothing decrypted is returned before the tag
    is checked (`finalize`)."""
    body, tag = sealed[:-TAG_SIZE], bytes(sealed[-TAG_SIZE:])
    decryptor = Cipher(algorithms.AES(key), modes.GCM(nonce, tag)).decryptor()
    decryptor.authenticate_additional_data(associated)
    head = decryptor.update(body[:1])
    type_end = 1 + (head[0] if head else 0)
    parts = head, decryptor.update(body[1:type_end]), decryptor.update(body[type_end:])
    decryptor.finalize()
    return parts


def _check_inflated_size(frame: bytes, what: str) -> None:
    """Refuse a frame that declares more than `MAX_DECOMPRESSED_SIZE`: zstandard applies
    `max_output_size` only to frames that declare no size, and every frame written here
    declares one, so a forged frame in an unsealed store could otherwise ask for any
    amount of memory."""
    try:
        declared = zstandard.frame_content_size(frame)
    except zstandard.ZstdError as exc:
        raise IntegrityError(f"{what}: compressed data is corrupt: {exc}") from exc
    if declared > MAX_DECOMPRESSED_SIZE:
        raise IntegrityError(
            f"{what}: the compressed data declares {declared} bytes, more than the "
            f"{MAX_DECOMPRESSED_SIZE} a stored value may inflate to"
        )


def _new_decompressor(dictionary: bytes) -> zstandard.ZstdDecompressor:
    return zstandard.ZstdDecompressor(dict_data=_raw_dictionary(dictionary))


def _raw_dictionary(dictionary: bytes) -> zstandard.ZstdCompressionDict | None:
    """A delta base as zstd's raw-content dictionary; None for plain contexts."""
    if dictionary == NO_DICTIONARY:
        return None
    return zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


class ContextLender(Generic[Context]):
    """zstd contexts for reuse, each lent to one caller at a time (a context is not
    thread-safe, and waves and async graphs seal in parallel).

    Building one costs more than using it: loading a 40 KB delta base as a dictionary
    costs about fifteen times compressing a turn's delta against it, and even a plain
    context costs several small compressions; LangGraph runs checkpoint writes on
    short-lived threads, so contexts kept per thread would be rebuilt on every call.
    Contexts are kept by dictionary (the base's bytes: consecutive deltas share one, and
    a bytes object hashes once), for the last `DELTA_DICTIONARIES` dictionaries of at
    most `DELTA_COMPRESSOR_MAX_DICT` bytes, and for no dictionary."""

    def __init__(self, make: Callable[[bytes], Context]) -> None:
        self._make = make
        self._idle: OrderedDict[bytes, list[Context]] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def lend(self, dictionary: bytes) -> Iterator[Context]:
        with self._lock:
            idle = self._idle.get(dictionary)
            context = idle.pop() if idle else None
        if context is None:
            context = self._make(dictionary)
        yield context  # not given back if the caller raised: a failed frame is dropped
        if len(dictionary) > DELTA_COMPRESSOR_MAX_DICT:
            return
        with self._lock:
            idle = self._idle.setdefault(dictionary, [])
            self._idle.move_to_end(dictionary)
            if len(idle) < (IDLE_PLAIN_CONTEXTS if dictionary == NO_DICTIONARY else 1):
                idle.append(context)
            while len(self._idle) > DELTA_DICTIONARIES + 1:  # + the plain contexts
                oldest = next(iter(self._idle))
                if oldest == NO_DICTIONARY:
                    self._idle.move_to_end(oldest)
                    continue
                del self._idle[oldest]


def _binding(typ: str, flags: int, ident: bytes) -> bytes:
    return hashlib.sha256(SERDE_BINDING_LABEL + bytes([flags]) + typ.encode() + ident).digest()


def identity(*parts: Any) -> bytes:
    """Associated data for a blob: its kind and identity, length-prefixed."""
    out: list[bytes] = []
    for part in parts:
        raw = str(part).encode("utf-8", "surrogatepass")
        out += (len(raw).to_bytes(4, "big"), raw)
    return b"".join(out)
