"""A data subject's items, in plain typed values: its fence and its Store namespaces in the
index, its key and its erasure records in the key table. No I/O; where each lives is said
here (its grammar, beside `format/layout.py`'s), what writes them `keys/subjects.py`'s.

The fence names the subject's key and its state: active (its data is sealed under the
key), erasing (an erasure began: no write of the subject commits) or erased (the key is
destroyed; the next write makes a new one). Every commit of a subject's data checks the
fence in its own transaction (`fence_check`), so nothing lands under a key once its
erasure began. A key item holds the key wrapped (AES-GCM) under a key derived from the
deployment keyring's key `by`, bound to the prefix and the key id; an erased one holds the
time instead. What each item reveals: docs/SECURITY.md, "Erasing a data subject".
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from langgraph.checkpoint.s3dynamo.blobs.sealing import SUBJECT_KEY_MARK
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    SubjectErasingError,
    SubjectKeyChangedError,
)
from langgraph.checkpoint.s3dynamo.format.layout import CONTROL_SUFFIX, SEPARATOR
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.table import (
    Check,
    Item,
    ItemKey,
    Put,
    Update,
    Value,
    both,
    either,
    eq,
    key_of,
    keyed,
    missing,
)

# In the index:
#
#   pk = <prefix><token>~s!   sk = subject          a data subject's fence: its key's id,
#                                                   whether an erasure began or ended
#   pk = <prefix><token>~s!   sk = ns#<partition>   one of its Store namespaces
#
# `<token>` is the subject's keyed hash (`Namer.subject`); `~s!` keeps these partitions
# from every thread and memory Scan, as `~t!` does the catalog's (`format/layout.py`).
SUBJECT_MARK = "~s"
SUBJECT_SK = "subject"
SUBJECT_NAMESPACE = "ns#"

# The key table (a table of its own, whose backups are not the data's):
#
#   pk = <prefix><token>      sk = <key id>         a key of the subject <token> names,
#                                                   wrapped by the deployment's keyring;
#                                                   erased: the time, no key
#   pk = <prefix>~erasures    sk = <ms>#<key id>    an erasure record (no personal data)
#
# A key id is `s:<token>.<24 hex digits>`: its subject's partition is read from it (a
# blob names only its key's id), and every key a subject ever had, one a writer made and
# never used included, is one Query away for its erasure.
ERASURES = "~erasures"
TOKEN_LENGTH = 22

WRAP_LABEL = b"s3dynamo/v1/subject-key-wrap"
WRAP_AAD = b"s3dynamo/v1/subject-key"
KEY_SIZE = 32
NONCE_SIZE = 12

# The fence's attributes: the key id, the state, when an erasure began.
KID = "k"
STATE = "st"
SINCE = "at"
ACTIVE, ERASING, ERASED = "active", "erasing", "erased"
# A key item's: the key wrapped, the keyring key that wraps it, the subject's token, when
# made, when erased.
WRAPPED, BY, TOKEN, MADE = "w", "by", "t", "made"
# An erasure record's.
COUNTS = "n"


class Fence(NamedTuple):
    """A subject's fence as read: its key id (None once erased) and state."""

    token: str
    kid: str | None
    state: str
    since_ms: int | None = None
    # What an erasure under way found (threads, Store namespaces), noted once.
    found: dict[str, int] | None = None


@dataclass(frozen=True)
class SubjectKey:
    """A subject's key, unwrapped: what seals its data, and the fence its commits check."""

    token: str
    kid: str
    key: bytes = field(repr=False)


def subject_pk(prefix: str, token: str) -> str:
    """Partition of a data subject's fence and Store namespaces."""
    return f"{prefix}{token}{SUBJECT_MARK}{CONTROL_SUFFIX}"


def subject_namespace_sk(partition: str) -> str:
    return SUBJECT_NAMESPACE + partition


def new_key_id(token: str) -> str:
    return f"{SUBJECT_KEY_MARK}{token}.{os.urandom(12).hex()}"


def key_token(kid: str) -> str | None:
    """The token of the subject a key id belongs to; None for an id no key has."""
    token, dot, rest = kid[len(SUBJECT_KEY_MARK) :].partition(".")
    if not kid.startswith(SUBJECT_KEY_MARK) or not dot or len(token) != TOKEN_LENGTH or not rest:
        return None
    return token


def fence_key(prefix: str, token: str) -> ItemKey:
    return ItemKey(subject_pk(prefix, token), SUBJECT_SK)


def namespace_link(prefix: str, token: str, partition: str) -> Item:
    """The item naming one of the subject's Store namespaces (by its partition)."""
    return keyed(ItemKey(subject_pk(prefix, token), subject_namespace_sk(partition)))


def linked_partition(item: Mapping[str, Value]) -> str | None:
    sk = key_of(item).sk
    return sk[len(SUBJECT_NAMESPACE) :] if sk.startswith(SUBJECT_NAMESPACE) else None


def fence_from(token: str, item: Mapping[str, Value] | None) -> Fence | None:
    if item is None:
        return None
    kid, state, since = item.get(KID), item.get(STATE), item.get(SINCE)
    if state not in (ACTIVE, ERASING, ERASED) or (kid is not None and not isinstance(kid, str)):
        raise IntegrityError(
            f"the fence of data subject {token!r} holds {dict(item)!r}; it was altered or "
            "written by something else"
        )
    counts = item.get(COUNTS)
    return Fence(
        token,
        kid,
        str(state),
        int(since) if isinstance(since, (int, float)) else None,
        _counts(counts) if isinstance(counts, Mapping) else None,
    )


def fence_found(prefix: str, fence: Fence, counts: Mapping[str, int]) -> Update:
    """What an erasure found when it began, noted on the fence by its first run only, so
    that its record says it whichever run finishes."""
    return Update(fence_key(prefix, fence.token), set={COUNTS: dict(counts)}, when=missing(COUNTS))


def _counts(found: Mapping[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in found.items() if isinstance(v, (int, float))}


def fence_refusal(found: Item | None) -> Exception:
    """What a refused fence means: an erasure began (the run's data is being erased), or
    the key changed (the write is sealed again under the one in force)."""
    if found is not None and found.get(STATE) == ERASING:
        return erasing_error(None, found.get(SINCE), "after this write read its key")
    return SubjectKeyChangedError(
        "the data subject's key changed while this write was sealed (its first key was "
        "made by another process, or an erasure ended); seal it again under the key in force"
    )


def erasing_error(token: str | None, since: Any, when: str = "") -> SubjectErasingError:
    """A write of a subject whose erasure began and has not ended, refused: which
    erasure (the subject's keyed hash, where known, and when it began), and what to do."""
    began = "at an unknown time"
    if isinstance(since, (int, float)) and since > 0:
        at = datetime.datetime.fromtimestamp(since / 1000, datetime.timezone.utc)
        began = at.strftime("at %Y-%m-%d %H:%M:%S UTC")
    subject = "the data subject whose data this is" if token is None else f"data subject {token}"
    return SubjectErasingError(
        f"an erasure of {subject} began {began}{' ' + when if when else ''} and has not "
        "ended: nothing more of the subject is written until it does (if it was "
        "interrupted, run erase_subject again to finish it)"
    )


def fence_check(prefix: str, key: SubjectKey) -> Check:
    """What a commit of the subject's data checks in its transaction: its fence still
    names this key, active."""
    return Check(
        fence_key(prefix, key.token),
        both(eq(KID, key.kid), eq(STATE, ACTIVE)),
        refusal=fence_refusal,
    )


def fence_made(prefix: str, key: SubjectKey, replacing: Fence | None) -> Put:
    """The fence of a subject's first key (none there), or of its next one (the one read
    erased, or naming a key that an erasure destroyed), in every commit sealed under the
    key until one of them lands: two writers with two new keys cannot both win, and the
    commits of one writer's new key all can."""
    item = keyed(fence_key(prefix, key.token), **{KID: key.kid, STATE: ACTIVE})
    when = missing() if replacing is None else eq(STATE, ERASED)
    if replacing is not None and replacing.kid is not None:
        when = eq(KID, replacing.kid)
    return Put(item, when=either(when, eq(KID, key.kid)), refusal=fence_refusal)


def fence_erasing(prefix: str, fence: Fence, at_ms: int) -> Update:
    """An erasure's first write: the subject's writes are refused from here on."""
    when = missing(KID) if fence.kid is None else eq(KID, fence.kid)
    return Update(
        fence_key(prefix, fence.token), set={STATE: ERASING, SINCE: at_ms}, keep={}, when=when
    )


def fence_erased(prefix: str, fence: Fence) -> Put:  # its noted counts go with it
    """An erasure's last write: the key is gone, the subject's next write makes a new one."""
    return Put(keyed(fence_key(prefix, fence.token), **{STATE: ERASED}))


# ------------------------------------------------------------------ the key table


def _wrapping_key(keyring: Keyring, by: str) -> bytes:
    return hmac.new(keyring.keys[by], WRAP_LABEL, hashlib.sha256).digest()


def _aad(prefix: str, kid: str) -> bytes:
    return WRAP_AAD + b"|" + prefix.encode() + b"|" + kid.encode()


def key_item(prefix: str, key: SubjectKey, keyring: Keyring, made_ms: int) -> Put:
    """A new key, wrapped under the keyring's active key; written only where no key of
    that id is (ids are random: one there is another writer's, never replaced)."""
    nonce = os.urandom(NONCE_SIZE)
    wrapped = nonce + AESGCM(_wrapping_key(keyring, keyring.active)).encrypt(
        nonce, key.key, _aad(prefix, key.kid)
    )
    attributes: dict[str, Value] = {
        WRAPPED: wrapped,
        BY: keyring.active,
        TOKEN: key.token,
        MADE: made_ms,
    }
    return Put(keyed(key_address(prefix, key.kid), **attributes), missing())


def key_rewrapped(prefix: str, kid: str, item: Mapping[str, Value], keyring: Keyring) -> Put | None:
    """A key item wrapped again under the keyring's active key (a rotation), replacing
    it only while unchanged; None for one wrapped under it already, or erased."""
    wrapped, made = item.get(WRAPPED), item.get(MADE)
    if item.get(BY) == keyring.active or not isinstance(wrapped, bytes):
        return None
    state = key_from(prefix, kid, item, keyring)
    if state.key is None:
        return None
    made_ms = int(made) if isinstance(made, (int, float)) else 0
    fresh = key_item(prefix, SubjectKey(state.token, kid, state.key), keyring, made_ms)
    return Put(fresh.item, when=eq(WRAPPED, wrapped))


def key_address(prefix: str, kid: str) -> ItemKey:
    """Where a key lives: its subject's partition, by its id (`key_token`)."""
    return ItemKey(keys_pk(prefix, key_token(kid) or "-"), kid)


def keys_pk(prefix: str, token: str) -> str:
    """The partition, in the key table, of every key of one subject."""
    return prefix + token


def erasures_pk(prefix: str) -> str:
    return prefix + ERASURES


class KeyState(NamedTuple):
    """A key item as read: the key (None once erased), its subject's token, when erased."""

    token: str
    key: bytes | None
    erased_ms: int | None

    def __repr__(self) -> str:  # never the key
        return f"KeyState(token={self.token!r}, erased_ms={self.erased_ms!r})"


def key_from(prefix: str, kid: str, item: Mapping[str, Value], keyring: Keyring | None) -> KeyState:
    """A key item opened; one altered, or wrapped by a key the keyring no longer holds, is
    an `IntegrityError` naming it."""
    token = item.get(TOKEN)
    erased = item.get(SINCE)
    if isinstance(erased, (int, float)):
        return KeyState(str(token or ""), None, int(erased))
    wrapped, by = item.get(WRAPPED), item.get(BY)
    if not isinstance(wrapped, bytes) or not isinstance(by, str) or not isinstance(token, str):
        raise IntegrityError(
            f"subject key {kid!r}: its item in the key table holds no wrapped key; it was "
            "altered or written by something else"
        )
    if keyring is None or by not in keyring.keys:
        held = sorted(keyring.keys) if keyring else []
        raise IntegrityError(
            f"subject key {kid!r} is wrapped under keyring key {by!r}, which the keyring "
            f"does not hold (it holds {held}); keep that key in the keyring while subject "
            "keys it wraps exist (s3dynamo reencrypt wraps them again under the active one)"
        )
    try:
        key = AESGCM(_wrapping_key(keyring, by)).decrypt(
            wrapped[:NONCE_SIZE], wrapped[NONCE_SIZE:], _aad(prefix, kid)
        )
    except InvalidTag:
        raise IntegrityError(
            f"subject key {kid!r}: its wrapped key did not open under keyring key {by!r}; "
            "the item was altered, moved, or the keyring key under that id was replaced"
        ) from None
    return KeyState(token, key, None)


def key_erased(prefix: str, kid: str, token: str, at_ms: int) -> Put:
    """The key destroyed: its item keeps the subject's token and the time, no key."""
    attributes: dict[str, Value] = {TOKEN: token, SINCE: at_ms}
    return Put(keyed(key_address(prefix, kid), **attributes))


def erasure_record(
    prefix: str, token: str, kid: str | None, began_ms: int, counts: Mapping[str, int]
) -> Item:
    """What an auditor reads of an erasure: the subject's keyed hash (the catalog's token,
    which only the deployment's naming secret makes from a subject), what went, when, the
    key destroyed. Named by when the erasure began, so a repeat writes the same item."""
    attributes: dict[str, Value] = {TOKEN: token, SINCE: began_ms, COUNTS: dict(counts)}
    if kid is not None:
        attributes[KID] = kid
    sk = f"{began_ms:013d}{SEPARATOR}{kid or '-'}"
    return keyed(ItemKey(erasures_pk(prefix), sk), **attributes)


class Erasure(NamedTuple):
    """An erasure record as read."""

    token: str
    kid: str | None
    began_ms: int
    counts: dict[str, int]


def erasure_from(item: Mapping[str, Value]) -> Erasure:
    counts = item.get(COUNTS)
    kid = item.get(KID)
    began = item.get(SINCE)
    return Erasure(
        str(item.get(TOKEN, "")),
        kid if isinstance(kid, str) else None,
        int(began) if isinstance(began, (int, float)) else 0,
        _counts(counts) if isinstance(counts, Mapping) else {},
    )
