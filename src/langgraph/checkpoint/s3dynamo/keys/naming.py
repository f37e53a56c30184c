"""Names that reveal nothing: keyed hashes for partition keys, sort keys and object keys.

With a secret, every name is HMAC-SHA-256 under a naming key derived from it, so someone
holding the bucket cannot even test a guessed thread id. Without one, names are plain
SHA-256 with a domain label: still opaque and uniform, but guessable. The naming key is
never rotated (renaming every object would be a full rewrite); sealing keys are.

Where each name goes (sort keys, control items, object keys) is `layout.py`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import threading
from collections.abc import Callable

from langgraph.checkpoint.s3dynamo.format.layout import sealed_tombstone, tombstone, tombstone_parts
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt, WriteAt

NAMING_LABEL = b"s3dynamo/v1/naming"
UNKEYED_LABEL = b"s3dynamo/v1/unkeyed/"
FINGERPRINT_LABEL = "fingerprint"
# Names computed lately, kept: a checkpoint names its thread, namespace and channels
# again and again, and a history walk names the same channels at every checkpoint.
NAMES_CACHED = 4096
# What a secret typed or copied by hand most often gains on its way to the variable: a
# newline (a file read whole), a space, quotes of a .env file (`secret_slip`).
SLIP_ENDS = (b"\n", b" ", b"\r\n")
QUOTES = (b'"', b"'")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _encode_parts(label: str, parts: tuple[str, ...]) -> bytes:
    # Length-prefixed, so ("ab", "c") and ("a", "bc") never collide.
    out = bytearray(label.encode())
    for part in parts:
        raw = part.encode("utf-8", "surrogatepass")
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


class Namer:
    """Derives every stored name from the identities it stands for."""

    def __init__(self, secret: bytes | Callable[[], bytes] | None, prefix: str = "") -> None:
        # Thread partitions and run keys start with the deployment's prefix, so that
        # deployments sharing a table (tenants) never share one (`layout.py`).
        self.prefix = prefix
        # A callable secret (one unwrapped by KMS) is resolved on first use, so building a
        # saver makes no request.
        self._source = secret
        self._resolved = not callable(secret)
        self._key = self._derive(secret) if not callable(secret) else None
        self._lock = threading.Lock()
        self._cached_digest = functools.lru_cache(maxsize=NAMES_CACHED)(self._compute)

    @staticmethod
    def _derive(secret: bytes | None) -> bytes | None:
        return hmac.new(secret, NAMING_LABEL, hashlib.sha256).digest() if secret else None

    @property
    def keyed(self) -> bool:
        return self._naming_key() is not None

    def _naming_key(self) -> bytes | None:
        if not self._resolved:
            with self._lock:
                if not self._resolved and callable(self._source):
                    self._key = self._derive(self._source())
                    self._resolved = True
        return self._key

    def _digest(self, label: str, *parts: str) -> bytes:
        return self._cached_digest(label, parts)

    def _compute(self, label: str, parts: tuple[str, ...]) -> bytes:
        message = _encode_parts(label, parts)
        key = self._naming_key()
        if key is None:
            return hashlib.sha256(UNKEYED_LABEL + message).digest()
        # Not hmac.digest: it lets go of the GIL for even a few bytes, and getting it back
        # from a busy thread costs far more than the hash.
        return hmac.new(key, message, "sha256").digest()

    def fingerprint(self) -> str:
        """A public fingerprint of the naming key (an HMAC of a constant under it, or the
        unkeyed hash of that constant): equal fingerprints, equal names. Safe to store and
        print; it reveals nothing about the key."""
        return _b64(self._digest(FINGERPRINT_LABEL)[:12])

    def slip(self, recorded: str) -> str | None:
        """Why this naming secret's fingerprint may differ from the `recorded` one when
        the secret was given (not KMS's): `secret_slip`."""
        return secret_slip(self._source, recorded) if isinstance(self._source, bytes) else None

    def thread(self, thread_id: str) -> str:
        """Partition key of a thread: the prefix, then 128 bits."""
        return self.prefix + _b64(self._digest("thread", thread_id)[:16])

    def namespace(self, thread_id: str, checkpoint_ns: str) -> str:
        """Sort-key prefix of a namespace within its thread (72 bits; unique per thread)."""
        return _b64(self._digest("ns", thread_id, checkpoint_ns)[:9])

    def task(self, at: CheckpointAt, task_id: str) -> str:
        """Sort-key suffix of one task's writes item."""
        return _b64(self._digest("task", *at, task_id)[:12])

    def channel(self, thread_id: str, checkpoint_ns: str, channel: str) -> str:
        """Key of an inline value inside a checkpoint item (48 bits; unique per item)."""
        return _b64(self._digest("channel", thread_id, checkpoint_ns, channel)[:6])

    def value(self, at: ValueAt) -> str:
        """Object leaf of a channel value: one per (thread, ns, channel, version)."""
        return _b64(self._digest("value", *at)[:16])

    def write(self, at: WriteAt, nonce: str) -> str:
        """Object leaf of a large pending write. The nonce keeps objects immutable even
        when a special write (error, interrupt, ...) is replaced by a later one."""
        tid, ns, checkpoint_id, task_id, idx = at
        return _b64(self._digest("write", tid, ns, checkpoint_id, task_id, str(idx), nonce)[:16])

    def run(self, run_id: str) -> str:
        """Key of the run index, so `delete_for_runs` needs no scan."""
        return self.prefix + _b64(self._digest("run", run_id)[:16])

    def catalog(self, field: str, value: str) -> str:
        """A catalog token: which threads have had one value of a declared metadata field
        (128 bits; `value` is the value's canonical text, `equality.canonical`). The
        field alone (`value` "") names the field's catalog; neither, every thread."""
        return _b64(self._digest("catalog", field, value)[:16])

    def subject(self, value: str) -> str:
        """A data subject's token (`subjects.py`): 128 bits of the value's canonical text."""
        return _b64(self._digest("subject", value)[:16])

    def sealing_key(self, purpose: str) -> bytes | None:
        """A 32-byte key, derived from the naming key for one `purpose`, that seals what
        the deployment keeps about itself (its declared catalog fields): the naming key is
        never rotated, so every process of the deployment holds it, whatever sealing keys
        it has; None without a secret (unkeyed names)."""
        return self._compute("key", (purpose,)) if self.keyed else None

    def tombstone(self, pk: str, sk: str, at: float) -> str:
        """The tombstone a delete sets on the head at (pk, sk) at time `at`: its time
        text (`layout.tombstone`, so tombstones sort as their times) and a MAC (96 bits)
        under the naming key over the head's keys and that text, so one made without the
        key, or moved to another head, is told apart (`genuine_tombstone`)."""
        text = tombstone(at)
        return sealed_tombstone(text, self._tombstone_mac(pk, sk, text))

    def genuine_tombstone(self, pk: str, sk: str, head: str | None) -> bool:
        """Whether a head is a tombstone a delete of this deployment set there; False for
        a checkpoint id, and for a tombstone without its MAC (an earlier release's, or
        forged) or with another one."""
        if head is None or tombstone_parts(head)[1] is None:
            return False
        text, mac = tombstone_parts(head)
        return hmac.compare_digest(str(mac), self._tombstone_mac(pk, sk, text))

    def _tombstone_mac(self, pk: str, sk: str, text: str) -> str:
        return _b64(self._digest("tombstone", pk, sk, text)[:12])

    def memory_namespace(self, space: str, namespace: tuple[str, ...]) -> str:
        """A Store (or node cache) namespace's partition name: 128 bits."""
        return _b64(self._digest("memory-ns", space, *namespace)[:16])

    def memory_key(self, space: str, namespace: tuple[str, ...], key: str) -> str:
        """An item's sort key within its namespace's partition: 128 bits."""
        return _b64(self._digest("memory-key", space, key, *namespace)[:16])

    def memory_leaf(self, space: str, namespace: tuple[str, ...], key: str, nonce: str) -> str:
        """Object leaf of a large item; the nonce keeps objects immutable across puts."""
        return _b64(self._digest("memory-leaf", space, key, nonce, *namespace)[:16])

    def memory_token(self, space: str, namespace: tuple[str, ...], field: str, value: str) -> str:
        """A filter token: which items of a namespace share a value of a declared field,
        and nothing else (128 bits; `value` is the value's canonical text)."""
        return _b64(self._digest("memory-token", space, field, value, *namespace)[:16])

    def memory_segment(self, space: str, namespace: tuple[str, ...], nonce: str) -> str:
        """Object leaf of one of a namespace's vector segments (immutable: a nonce each)."""
        return _b64(self._digest("memory-segment", space, nonce, *namespace)[:16])


def _unwrapped(secret: bytes) -> bytes:
    """`secret` without the whitespace around it, and without one pair of quotes around
    what is left (and the whitespace inside them)."""
    bare = secret.strip()
    if len(bare) > 1 and bare[:1] in QUOTES and bare[-1:] == bare[:1]:
        bare = bare[1:-1].strip()
    return bare


def _wrapping(secret: bytes, bare: bytes) -> str:
    """What `secret` holds around `bare`, as a message says it (never the secret)."""
    start = secret.index(bare) if bare else len(secret)
    head, tail = secret[:start], secret[start + len(bare) :]
    ends = [f"{part.decode(errors='replace')!r} {where}" for part, where in
            ((head, "before it"), (tail, "after it")) if part]  # fmt: skip
    return " and ".join(ends)


def secret_slip(secret: bytes, recorded: str) -> str | None:
    """A likely cause, as a message says it, when a naming secret given as text names
    another fingerprint than the deployment's `recorded` one: whitespace or quotes around
    it (and whether the secret without them is the deployment's), or, for a secret without
    them, the deployment's being this secret with a newline, a space or quotes around it.
    None for a secret that is no text, or when nothing explains the difference."""
    try:
        secret.decode()
    except UnicodeDecodeError:
        return None
    bare = _unwrapped(secret)
    if bare != secret:
        around = _wrapping(secret, bare)
        if bare and Namer(bare).fingerprint() == recorded:
            return (
                f"the secret given has {around}, and without it, it is the deployment's "
                "naming secret: remove it from S3DYNAMO_SECRET (secret=)"
            )
        return (
            f"the secret given has {around}, a likely slip (a .env file's quotes, a "
            "copied trailing space): if the deployment's writers give it without them, "
            "remove them from S3DYNAMO_SECRET (secret=)"
        )
    for variant in (*(secret + end for end in SLIP_ENDS), *(q + secret + q for q in QUOTES)):
        if Namer(variant).fingerprint() == recorded:
            why = " (a file read whole keeps its last newline)" if variant[-1:] == b"\n" else ""
            return (
                f"the deployment's naming secret is this one with {_wrapping(variant, secret)}"
                f": its writers read the secret with that slip{why}; give the secret here "
                "exactly as they do, since a naming secret is never changed"
            )
    return None
