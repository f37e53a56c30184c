"""The deployment's own keys: the keyring (`Keyring`: sealing keys by id, the active one
sealing new blobs) and where it and the naming secret come from (`KeySource`: keys given,
KMS, `LANGGRAPH_AES_KEY`, LangGraph's `EncryptedSerializer`, or plaintext chosen). A data
subject's keys are wrapped by these (`subjects.py`); KMS's keyring is `kms_keyring.py`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.errors import ArgumentTypeError, InvalidConfigError

KEY_CHECK_LABEL = b"s3dynamo/v1/key-check"
# How a user makes a sealing key, as messages say it.
MAKE_KEY = "python -c 'import os,base64;print(base64.b64encode(os.urandom(32)).decode())'"
NO_KEY_HINT = (
    "configure a key source: S3DYNAMO_KMS_KEY_ID=<KMS key id, ARN or alias> (kms_key_id=...), "
    "or S3DYNAMO_KEYS=id:base64key with S3DYNAMO_SECRET (keys=..., secret=...), or "
    "LANGGRAPH_AES_KEY; make a key with: python -c 'import os,base64;"
    "print(base64.b64encode(os.urandom(32)).decode())'. To store checkpoints unencrypted, "
    "say so: S3DYNAMO_PLAINTEXT=1 (plaintext=True)"
)
LANGGRAPH_KEY_LABEL = b"s3dynamo/v1/langgraph-aes-key"
# The naming secret keys every name's HMAC: at least 128 bits, as for an AES-128 key.
MIN_SECRET_BYTES = 16
MAKE_SECRET = "python -c 'import secrets;print(secrets.token_urlsafe(32))'"
KEYS_FORMS = (
    "expected keys as 'id:base64key[,id:base64key...]' (S3DYNAMO_KEYS' form), a mapping "
    "of key id to 32 raw bytes, or a Keyring"
)


def keyring_problem(keys: Mapping[str, bytes], active: str) -> str | None:
    """What is wrong with a keyring of `keys` whose `active` one seals, if anything."""
    if not keys:
        return "keyring is empty: pass at least one 32-byte key"
    for key_id, key in keys.items():
        if not key_id or len(key_id.encode()) > 64 or not key_id.isascii():
            return f"key id {key_id!r} must be 1 to 64 ASCII characters"
        if len(key) != 32:
            return (
                f"key {key_id!r} is {len(key)} bytes; AES-256 needs exactly 32 "
                f"(make one with: {MAKE_KEY})"
            )
    if active not in keys:
        return f"active key {active!r} is not in the keyring (ids: {sorted(keys)})"
    return None


class Keyring:
    """Sealing keys by id; `active` seals new blobs, every key opens old ones.

    Rotating is adding a key and making it active; `S3DynamoSaver.reencrypt` then
    rewrites old blobs so the old key can be dropped. Its repr names the ids, never a
    key: settings and savers end up in logs and error reports.
    """

    __slots__ = ("active", "keys")

    def __init__(self, keys: Mapping[str, bytes], active: str) -> None:
        if problem := keyring_problem(keys, active):
            raise InvalidConfigError(problem)
        self.keys, self.active = keys, active

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Keyring):
            return NotImplemented
        return (self.keys, self.active) == (other.keys, other.active)

    __hash__ = None  # type: ignore[assignment]  # its keys are a mapping

    def __repr__(self) -> str:
        return f"Keyring(ids={list(self.keys)}, active={self.active!r})"

    @classmethod
    def parse(cls, spec: str, source: str = "") -> Keyring:
        """Read `id:base64key[,id:base64key...]`; the first entry is the active key.
        `source` names where the text came from, at the start of every message."""
        at = f"{source}: " if source else ""
        keys: dict[str, bytes] = {}
        entries = filter(None, (e.strip() for e in spec.split(",")))
        for n, entry in enumerate(entries, 1):
            key_id, sep, b64 = entry.partition(":")
            key_id = key_id.strip()
            if not sep or not key_id:
                # An entry long enough to hold a key is not shown: messages reach logs.
                if len(entry) < 16:
                    shown, hint = repr(entry), ""
                else:
                    shown = f"{n} ({len(entry)} characters)"
                    hint = ": a key alone? Put an id before it, 'k1:<the key>'"
                raise InvalidConfigError(
                    f"{at}keyring entry {shown} has no id: expected 'id:base64key'{hint}"
                )
            if key_id in keys:
                raise InvalidConfigError(
                    f"{at}key id {key_id!r} appears twice: expected each id once, since a "
                    "blob names the id of the key that sealed it. When rotating, give the new "
                    f"key an id of its own, first, and keep the old one: 'k2:<new>,{key_id}:<old>'"
                )
            try:
                keys[key_id] = base64.b64decode(b64.strip(), validate=True)
            except ValueError as exc:
                raise InvalidConfigError(
                    f"{at}keyring entry {key_id!r}: key is not valid base64; expected 32 "
                    f"random bytes in base64 after the id: make one with: {MAKE_KEY}"
                ) from exc
        if not keys:
            raise InvalidConfigError(f"{at}keyring spec is empty: expected 'id:base64key,...'")
        active = next(iter(keys))
        if problem := keyring_problem(keys, active):
            raise InvalidConfigError(f"{at}{problem}")
        return cls(keys=keys, active=active)

    def fingerprints(self) -> dict[str, str]:
        """Key id -> a public check value of the key (an HMAC of a constant under it):
        two keys under one id differ exactly when their check values do."""
        return {
            key_id: base64.urlsafe_b64encode(
                hmac.new(key, KEY_CHECK_LABEL, hashlib.sha256).digest()[:9]
            ).decode()
            for key_id, key in self.keys.items()
        }


class KeySource(NamedTuple):
    """Where the sealing keys and the naming secret come from: exactly one of a keyring
    with a secret, KMS, `LANGGRAPH_AES_KEY`, LangGraph's `EncryptedSerializer`, or
    plaintext chosen explicitly. Its repr never shows the secret."""

    kind: str  # "keys" | "kms" | "langgraph_aes_key" | "serializer" | "plaintext"
    keyring: Keyring | None = None
    secret: bytes | None = None
    kms_key_id: str | None = None

    def __repr__(self) -> str:
        return f"KeySource({self.describe()}, keyring={self.keyring!r})"

    def describe(self) -> str:
        return {
            "keys": "keys/S3DYNAMO_KEYS",
            "kms": f"KMS key {self.kms_key_id or 'of the key service'}",
            "langgraph_aes_key": "LANGGRAPH_AES_KEY"
            + (" and secret/S3DYNAMO_SECRET" if self.secret else ""),
            "serializer": "EncryptedSerializer"
            + (" and secret/S3DYNAMO_SECRET" if self.secret else ""),
            "plaintext": "plaintext" + (" and secret/S3DYNAMO_SECRET" if self.secret else ""),
        }[self.kind]


def keyring_of(keys: Any, active: str | None = None) -> Keyring:
    """A `Keyring` from the `keys` argument: a `Keyring`, a mapping of key id to 32 raw
    bytes, or the text S3DYNAMO_KEYS holds (parsed as the environment variable is); the
    first key is active unless `active` names another."""
    if isinstance(keys, (bytes, bytearray)):
        keys = bytes(keys).decode("ascii", "replace")
    if isinstance(keys, str):
        keyring = Keyring.parse(keys, source="keys (S3DYNAMO_KEYS' form)")
    elif isinstance(keys, Keyring):
        keyring = keys
    elif isinstance(keys, Mapping):
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not isinstance(key, (bytes, bytearray)):
                raise InvalidConfigError(
                    f"keys[{key_id!r}] is {type(key).__name__}; a mapping must hold raw 32-byte "
                    f"keys (bytes) by text id, e.g. {{'k1': base64.b64decode(...)}}. Base64 "
                    "text goes in the string form instead: keys='k1:<base64>'"
                )
        keyring = Keyring(keys={k: bytes(v) for k, v in keys.items()}, active=next(iter(keys), ""))
    else:
        raise ArgumentTypeError(f"keys is {type(keys).__name__}; {KEYS_FORMS}")
    if active is not None and active != keyring.active:
        keyring = Keyring(keys=keyring.keys, active=active)
    return keyring


def secret_bytes(name: str, value: object) -> bytes | None:
    """The naming secret as bytes (text: its UTF-8 bytes), byte for byte: unlike a key of
    S3DYNAMO_KEYS, spaces or quotes around it are kept, since every name of a deployment
    written with them derives from them (a mismatch names them: `naming.secret_slip`). A
    secret of another type is named by its type only: a message never shows a secret."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (str, bytearray)):
        return value.encode() if isinstance(value, str) else bytes(value)
    raise ArgumentTypeError(
        f"{name} must be text or bytes, at least {MIN_SECRET_BYTES} bytes, got a value of "
        f"type {type(value).__name__}; make one with: {MAKE_SECRET}"
    )


def aes_key_text(name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ArgumentTypeError(
        f"{name} must be text (LANGGRAPH_AES_KEY's), got a value of type {type(value).__name__}"
    )


def key_source(
    settings: Any, *, serializer_cipher: bool = False, key_service: bool = False
) -> KeySource:
    """The one key source `settings` (a `Settings`) name, or `InvalidConfigError` if there is none
    (and plaintext was not chosen) or more than one. `serializer_cipher`: the saver's
    serializer is LangGraph's `EncryptedSerializer`; `key_service`: a key service was
    injected in place of KMS."""
    if key_service and (settings.keys is not None or settings.secret):
        raise InvalidConfigError(
            "a key service and keys/secret were both given: with a key service the data "
            "keys and the naming secret come from the keyring it wraps in the table; "
            "pass one or the other"
        )
    if settings.kms_key_id is not None or key_service:
        source = KeySource("kms", kms_key_id=settings.kms_key_id)
    elif settings.keys is not None:
        source = KeySource("keys", settings.keys, settings.secret)
    elif settings.langgraph_aes_key is not None:
        raw = settings.langgraph_aes_key.encode()
        derived = hmac.new(raw, LANGGRAPH_KEY_LABEL, hashlib.sha256).digest()
        keyring = Keyring(keys={"lg": derived}, active="lg")
        source = KeySource("langgraph_aes_key", keyring, settings.secret or raw)
    elif serializer_cipher:
        source = KeySource("serializer", secret=settings.secret)
    else:
        source = KeySource("plaintext", secret=settings.secret)
    if settings.plaintext and source.kind != "plaintext":
        raise InvalidConfigError(
            f"plaintext=True (S3DYNAMO_PLAINTEXT) but a key source is configured "
            f"({source.describe()}): drop one"
        )
    if source.kind == "plaintext" and not settings.plaintext:
        raise InvalidConfigError(f"no sealing key is configured; {NO_KEY_HINT}")
    return source
