"""Names that reveal nothing: keyed hashes for partition keys, sort keys and object keys.

With a secret, every name is HMAC-SHA-256 under a naming key derived from it, so someone
holding the bucket cannot even test a guessed thread id. Without one, names are plain
SHA-256 with a domain label: still opaque and uniform, but guessable. The naming key is
never rotated (renaming every object would be a full rewrite); sealing keys are.

Layout inside one thread's partition (`pk` = thread name):

    sk = <ns>#<checkpoint_id>              checkpoint item
    sk = <ns>#<checkpoint_id>#<task>       pending writes of one task at that checkpoint

Control items (a namespace's head, the thread's lease) live in a partition of their own,
`<pk>!`, so queries over a thread's partition never meet them:

    pk = <thread>!  sk = head#<ns>         id of the namespace's newest checkpoint
    pk = <thread>!  sk = lease             the thread's lease: holder, expiry, fencing token

Checkpoint ids are time-ordered, so a descending Query over `<ns>#` meets the newest
checkpoint (after its own writes) first. Objects live at `<prefix><pk>/<leaf>`, so a
thread's objects share one key prefix.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import threading
from collections.abc import Callable

NAMING_LABEL = b"s3dynamo/v1/naming"
UNKEYED_LABEL = b"s3dynamo/v1/unkeyed/"
FINGERPRINT_LABEL = "fingerprint"
SEPARATOR = "#"
# Thread names are base64url, which never contains "!": control partitions never collide.
CONTROL_SUFFIX = "!"
HEAD_PREFIX = "head#"
LEASE_SK = "lease"
# Names computed lately, kept: a checkpoint names its thread, namespace and channels
# again and again, and a history walk names the same channels at every checkpoint.
NAMES_CACHED = 4096


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

    def __init__(self, secret: bytes | Callable[[], bytes] | None) -> None:
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

    def thread(self, thread_id: str) -> str:
        """Partition key of a thread (128 bits)."""
        return _b64(self._digest("thread", thread_id)[:16])

    def namespace(self, thread_id: str, checkpoint_ns: str) -> str:
        """Sort-key prefix of a namespace within its thread (72 bits; unique per thread)."""
        return _b64(self._digest("ns", thread_id, checkpoint_ns)[:9])

    def task(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, task_id: str) -> str:
        """Sort-key suffix of one task's writes item."""
        return _b64(self._digest("task", thread_id, checkpoint_ns, checkpoint_id, task_id)[:12])

    def channel(self, thread_id: str, checkpoint_ns: str, channel: str) -> str:
        """Key of an inline value inside a checkpoint item (48 bits; unique per item)."""
        return _b64(self._digest("channel", thread_id, checkpoint_ns, channel)[:6])

    def value(self, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> str:
        """Object leaf of a channel value: one per (thread, ns, channel, version)."""
        return _b64(self._digest("value", thread_id, checkpoint_ns, channel, version)[:16])

    def write(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        task_id: str,
        idx: int,
        nonce: str,
    ) -> str:
        """Object leaf of a large pending write. The nonce keeps objects immutable even
        when a special write (error, interrupt, ...) is replaced by a later one."""
        return _b64(
            self._digest(
                "write", thread_id, checkpoint_ns, checkpoint_id, task_id, str(idx), nonce
            )[:16]
        )

    def run(self, run_id: str) -> str:
        """Key of the run index, so `delete_for_runs` needs no scan."""
        return _b64(self._digest("run", run_id)[:16])


def checkpoint_sk(ns_name: str, checkpoint_id: str) -> str:
    return f"{ns_name}{SEPARATOR}{checkpoint_id}"


def writes_sk(ns_name: str, checkpoint_id: str, task_name: str) -> str:
    return f"{ns_name}{SEPARATOR}{checkpoint_id}{SEPARATOR}{task_name}"


def parse_sk(sk: str) -> tuple[str, str, str | None]:
    """Split a sort key into (namespace name, checkpoint id, task name or None)."""
    parts = sk.split(SEPARATOR)
    if len(parts) == 2:
        return parts[0], parts[1], None
    return parts[0], parts[1], parts[2]


def object_key(prefix: str, thread_name: str, leaf: str) -> str:
    return f"{prefix}{thread_name}/{leaf}"


def control_pk(thread_name: str) -> str:
    """Partition of a thread's control items (heads and lease)."""
    return thread_name + CONTROL_SUFFIX


def is_control_pk(pk: str) -> bool:
    return pk.endswith(CONTROL_SUFFIX)


def head_sk(ns_name: str) -> str:
    return HEAD_PREFIX + ns_name
