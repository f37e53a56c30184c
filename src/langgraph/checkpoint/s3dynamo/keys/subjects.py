"""Data subjects: whose data a thread or a Store namespace is, and the key each subject's
data is sealed under, so that destroying the key erases the data everywhere it was copied,
backups included (crypto-erasure; docs/SECURITY.md, "Erasing a data subject").

A deployment names its subjects by a metadata field of its checkpoints (`subject_field`,
such as `user_id`, which LangGraph copies from `config["configurable"]`) and by a
position in its Store namespaces (`subject_label`: 1 in `("users", uid, "memories")`).
A subject's key is made on its first write: random, wrapped by the deployment's keyring
(`subject_records.key_item`), kept in the key table, a table of its own whose backups are
not the data's; its fence, in the index, names it. A process keeps the keys it used or
read, as it keeps the keyring: a write costs no request more once the subject's key is
known, and the first write of a subject in a process costs two (its fence, its key).

Which key seals a blob is decided here and nowhere else: a checkpoint's, by its metadata
(else by the thread's key as this process knows it); a task's writes, by the checkpoint's
key as this process knows it, else by `config["configurable"]`; a Store item's, by its
namespace. Everything else keeps the deployment's keys.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine
from langgraph.checkpoint.s3dynamo.blobs.sealing import SealingKey
from langgraph.checkpoint.s3dynamo.blobs.steps import Apply, Batch, Get, every_item, scan_items
from langgraph.checkpoint.s3dynamo.equality import canonical
from langgraph.checkpoint.s3dynamo.errors import (
    InvalidConfigError,
    KeyNotFoundError,
    SubjectErasedError,
    SubjectKeyChangedError,
    ThreadDeletedError,
)
from langgraph.checkpoint.s3dynamo.format.subject_records import (
    ACTIVE,
    ERASING,
    KEY_SIZE,
    Erasure,
    Fence,
    SubjectKey,
    erasing_error,
    erasure_from,
    erasure_record,
    erasures_pk,
    fence_check,
    fence_erased,
    fence_erasing,
    fence_found,
    fence_from,
    fence_key,
    fence_made,
    key_address,
    key_erased,
    key_from,
    key_item,
    key_rewrapped,
    key_token,
    keys_pk,
    linked_partition,
    namespace_link,
    new_key_id,
    subject_pk,
)
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.table import Put, Write, key_of

__all__ = ["SubjectKey", "Subjects", "sealing_key"]

# Locks a process's first writers of a subject take while one finds its key (striped:
# a few subjects share one).
FINDING_LOCKS = 16


def sealing_key(key: SubjectKey | None) -> SealingKey | None:
    """What seals a subject's blobs: its key under its id."""
    return None if key is None else SealingKey(key.kid, key.key)


class Subjects:
    """A deployment's data subjects and their keys (module docstring). `data` runs the
    fence's requests on the index, `keys` the key table's."""

    def __init__(
        self,
        *,
        field: str | None,
        label: int | None,
        namer: Namer,
        keyring: Callable[[], Keyring | None],
        data: BlobEngine,
        keys: BlobEngine | None,
    ) -> None:
        self.field = field
        self.label = label
        self._namer = namer
        self._keyring = keyring
        self._data = data
        self._keys = keys
        self.prefix = data.prefix
        self._lock = threading.Lock()
        # The key in force per subject token, and every key known per id (None: erased,
        # with when): what this process used or read.
        self._current: dict[str, SubjectKey] = {}
        self._known: dict[str, SubjectKey | int] = {}
        # Keys made and not yet committed, with the fence they make: writers of this
        # process share one, and a key that lost to another process's is destroyed.
        self._pending: dict[str, tuple[SubjectKey, Write]] = {}
        self._finding = [threading.Lock() for _ in range(FINDING_LOCKS)]

    @property
    def declared(self) -> bool:
        return self.field is not None or self.label is not None

    # ------------------------------------------------------------ whose data

    def token(self, subject: Any) -> str:
        return self._namer.subject(self.text(subject))

    @staticmethod
    def text(subject: Any) -> str:
        """A subject as its text: a non-empty string, or an integer's digits (user 42 in
        a thread's metadata and "42" in a Store namespace are one subject)."""
        if isinstance(subject, bool) or not isinstance(subject, (str, int)) or subject == "":
            raise InvalidConfigError(
                f"a data subject is a non-empty string or an integer (a user id); got "
                f"{subject!r} ({type(subject).__name__})"
            )
        return str(subject)

    @staticmethod
    def catalog_values(text: str) -> list[str]:
        """The catalog's texts (`equality.canonical`) of the metadata values that name
        this subject: the string, and the integer where it is one's digits."""
        values = [canonical(text)]
        with contextlib.suppress(ValueError):
            if str(int(text)) == text:  # "007" and "٣" are no integer's digits
                values.append(canonical(int(text)))
        return [v for v in values if v is not None]

    def of_metadata(
        self, metadata: Mapping[str, Any] | None, *, strict: bool = False
    ) -> str | None:
        """The subject a checkpoint's metadata names, if the deployment declares a field
        and the metadata holds a string or integer there. `strict` (a write): a value of
        another type there is refused, never a thread of nobody's that no erasure finds."""
        if self.field is None or not isinstance(metadata, Mapping):
            return None
        value = metadata.get(self.field)
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            if strict:
                raise InvalidConfigError(
                    f"the data subject field {self.field!r} holds {value!r} "
                    f"({type(value).__name__}); a subject is a string or an integer: pass "
                    "str() of it. Nothing was written"
                )
            return None
        return self.text(value)

    def of_namespace(self, namespace: tuple[str, ...]) -> str | None:
        """The subject a Store namespace names at the declared position, if it is that
        deep."""
        if self.label is None or len(namespace) <= self.label or not namespace[self.label]:
            return None
        return self.text(namespace[self.label])

    # ------------------------------------------------------------ keys in force

    def for_writing(self, text: str) -> tuple[SubjectKey, Write]:
        """The key a write of the subject seals under, and what its commit carries: the
        fence checked, or, for the subject's first key (or its first after an erasure),
        the fence made. The first time in a process: the fence read, and the key read
        or made (one request each)."""
        token = self._namer.subject(text)
        with self._lock:
            known = self._current.get(token)
        if known is not None:
            return known, fence_check(self.prefix, known)
        # One writer of the process reads (or makes) it; the others wait for that one.
        with self._finding[hash(token) % len(self._finding)]:
            return self._found(token)

    def _found(self, token: str) -> tuple[SubjectKey, Write]:
        with self._lock:
            known, pending = self._current.get(token), self._pending.get(token)
        if known is not None:
            return known, fence_check(self.prefix, known)
        if pending is not None:
            return pending
        fence = fence_from(token, self._data.do(Get(fence_key(self.prefix, token))))
        if fence is not None and fence.state == ERASING:
            raise erasing_error(token, fence.since_ms)
        if fence is not None and fence.state == ACTIVE and fence.kid is not None:
            key = self._known_key(fence.kid, "the subject's key")
            if key is not None:
                with self._lock:
                    self._current[token] = key
                return key, fence_check(self.prefix, key)
        key = self._make(token)
        made = key, fence_made(self.prefix, key, fence)
        with self._lock:
            self._pending[token] = made
        return made

    def for_thread(
        self,
        tid: str,
        known: str | None,
        metadata: Mapping[str, Any] | None,
        configurable: Mapping[str, Any] | None,
    ) -> tuple[SubjectKey | None, Write | None]:
        """The key a write of thread `tid` seals under, and the fence its commit carries:
        the subject its checkpoint's metadata names; else the key the thread was read or
        written under in this process (`known`); else the subject a task's
        `configurable` names; else none (the deployment's keys)."""
        subject = self.of_metadata(metadata, strict=True)
        if subject is None and known is not None:
            key = self.key_of(known)
            if key is None:
                raise ThreadDeletedError(
                    f"thread {tid!r}: its data subject was erased after this run loaded it; "
                    "nothing of the subject is written under its old key"
                )
            return key, self.check(key)
        subject = subject or self.of_metadata(configurable, strict=True)
        if subject is None:
            return None, None
        return self.for_writing(subject)

    def established(self, text: str) -> SubjectKey:
        """The subject's key, its fence written if it had none (one request more): what
        data sealed before the subject had a key is sealed again under (a build)."""
        for attempt in range(2):
            key, fence = self.for_writing(text)
            if not isinstance(fence, Put):
                return key
            try:
                self._data.do(Apply(fence))
            except SubjectKeyChangedError:  # another writer's key won: use it
                self.forget(key.token)
                if attempt:
                    raise
                continue
            self.committed(key)
            return key
        raise AssertionError("unreachable")

    def link(self, text: str, partition: str) -> None:
        """Name a Store namespace (by its partition) as the subject's (one request)."""
        self._data.do(Apply(Put(namespace_link(self.prefix, self._namer.subject(text), partition))))

    def _make(self, token: str) -> SubjectKey:
        """A new key, wrapped and stored in the key table before anything is sealed under
        it (one request)."""
        keyring = self._require_keyring()
        key = SubjectKey(token, new_key_id(token), os.urandom(KEY_SIZE))
        self._key_table().do(Apply(key_item(self.prefix, key, keyring, self._now_ms())))
        with self._lock:
            self._known[key.kid] = key
        return key

    def check(self, key: SubjectKey) -> Write:
        """The fence a commit sealed under `key` checks."""
        return fence_check(self.prefix, key)

    def committed(self, key: SubjectKey) -> None:
        """A commit carrying the key's fence went through: it is the subject's key."""
        with self._lock:
            self._current[key.token] = key
            if self._pending.get(key.token, (None,))[0] == key:
                del self._pending[key.token]

    def forget(self, token: str | None = None) -> None:
        """Drop what this process knows of a subject's key in force (all with None): a
        commit found it changed. A key it made that never became the subject's is
        destroyed (one request): whatever a losing commit uploaded under it stays
        unreadable, as an erasure leaves what it removes."""
        with self._lock:
            tokens = list(self._current.keys() | self._pending.keys()) if token is None else [token]
            lost = [p[0] for t in tokens if (p := self._pending.pop(t, None)) is not None]
            for t in tokens:
                self._current.pop(t, None)
        for key in lost:
            self._key_table().do(Apply(key_erased(self.prefix, key.kid, key.token, self._now_ms())))
            with self._lock:
                self._known[key.kid] = self._now_ms()

    def for_namespace(
        self, namespace: tuple[str, ...], partition: str
    ) -> tuple[SubjectKey | None, list[Write], bool]:
        """The key a Store namespace's data is sealed under (None: the namespace names no
        subject), what a put into it carries: the subject's fence, and the item naming
        the namespace (by its partition) as the subject's, which its erasure finds; and
        whether the key is new (the put's commit then renews the namespace's entry,
        whose name an erasure left sealed under the key it destroyed)."""
        subject = self.of_namespace(namespace)
        if subject is None:
            return None, [], False
        key, fence = self.for_writing(subject)
        link = Put(namespace_link(self.prefix, key.token, partition))
        return key, [fence, link], isinstance(fence, Put)

    # ------------------------------------------------------------ keys by id

    def key_bytes(self, kid: str, what: str) -> bytes:
        """The key a blob names (the sealer's resolver); one erased is
        `SubjectErasedError`, one the key table does not hold `KeyNotFoundError`."""
        key = self._known_key(kid, what)
        if key is None:
            erased = self._known.get(kid)
            raise SubjectErasedError(
                f"{what}: belongs to a data subject erased at {_when(erased)}: its key "
                f"({kid}) was destroyed, so it can never be read again (where a backup "
                "restored since brought it back: erase the subject again to remove it)"
            )
        return key.key

    def key_of(self, kid: str) -> SubjectKey | None:
        """The subject key of this id (None: erased)."""
        return self._known_key(kid, f"subject key {kid}")

    def _known_key(self, kid: str, what: str) -> SubjectKey | None:
        with self._lock:
            known = self._known.get(kid)
        if isinstance(known, SubjectKey):
            return known
        if known is not None:
            return None
        item = self._key_table().do(Get(key_address(self.prefix, kid)))
        if item is None:
            raise KeyNotFoundError(
                f"{what}: sealed under data subject key {kid!r}, which the key table "
                f"({self._key_table().table_resource()}) does not hold: the key table is not "
                "this deployment's (S3DYNAMO_KEY_TABLE), or it was lost; restore it from "
                "its backup"
            )
        state = key_from(self.prefix, kid, item, self._keyring())
        found: SubjectKey | int
        if state.key is None:
            found = state.erased_ms or 0
        else:
            found = SubjectKey(state.token, kid, state.key)
        with self._lock:
            self._known[kid] = found
        return found if isinstance(found, SubjectKey) else None

    def rewrap(self) -> int:
        """Wrap every subject key of this deployment again under the keyring's active
        key (a rotation's last step, so the old key can leave the keyring): one Scan of
        the key table, one conditional write per key; how many. A key a writer changed
        meanwhile (none does: keys are made once) is left for the next run."""
        if self._keys is None:
            return 0
        keyring = self._require_keyring()
        done = 0
        for page in self._keys.run(scan_items()):
            for item in page:
                kid = str(item.get("sk", ""))
                if not str(item.get("pk", "")).startswith(self.prefix) or key_token(kid) is None:
                    continue
                write = key_rewrapped(self.prefix, kid, item, keyring)
                if write is not None and self._keys.do(Apply(write)).applied:
                    done += 1
        return done

    # ------------------------------------------------------------ erasing

    def fence(self, text: str) -> Fence | None:
        """A subject's fence as it is now (one strongly consistent read)."""
        token = self._namer.subject(text)
        return fence_from(token, self._data.do(Get(fence_key(self.prefix, token))))

    def begin_erasure(self, text: str, fence: Fence | None) -> Fence:
        """Fence the subject (one request): no commit of its data lands from here on.
        A fence already erasing is kept, with when that erasure began."""
        token = self._namer.subject(text)
        if fence is not None and fence.state == ERASING:
            return fence
        at = self._now_ms()
        if fence is None:
            fence = Fence(token, None, ERASING)
        self._data.do(Apply(fence_erasing(self.prefix, fence, at)))
        self.forget(token)
        return Fence(token, fence.kid, ERASING, at)

    def note_found(self, fence: Fence, counts: Mapping[str, int]) -> Fence:
        """Note on the fence what the erasure found (its first run: one request); what
        the fence notes."""
        if fence.found is not None:
            return fence
        if self._data.do(Apply(fence_found(self.prefix, fence, counts))).applied:
            return fence._replace(found=dict(counts))
        return self.fence_of(fence.token) or fence

    def fence_of(self, token: str) -> Fence | None:
        return fence_from(token, self._data.do(Get(fence_key(self.prefix, token))))

    def live_keys(self, token: str) -> list[str]:
        """The ids of the subject's keys not destroyed (one Query of its keys' partition):
        the key in force, and any a writer made and never used."""
        items = self._key_table().run(every_item(keys_pk(self.prefix, token), consistent=True))
        return sorted(str(i["sk"]) for i in items if "w" in i)

    def destroy(self, fence: Fence) -> int:
        """Destroy every key the subject has (one Query of its keys' partition, then one
        request a key: the key in force, and any a writer made and never used): nothing
        sealed under them opens again. How many."""
        at = fence.since_ms or self._now_ms()
        kids = set(self.live_keys(fence.token)) | ({fence.kid} if fence.kid else set())
        for kid in sorted(kids):
            self._key_table().do(Apply(key_erased(self.prefix, kid, fence.token, at)))
            with self._lock:
                self._known[kid] = at
        return len(kids)

    def end_erasure(self, fence: Fence, counts: Mapping[str, int]) -> None:
        """Record the erasure for an auditor, then open the fence to a new key (two
        requests)."""
        began = fence.since_ms or self._now_ms()
        counts = {**counts, **(fence.found or {})}
        record = erasure_record(self.prefix, fence.token, fence.kid, began, counts)
        self._key_table().do(Apply(Put(record)))
        self._data.do(Apply(fence_erased(self.prefix, fence)))
        self.forget(fence.token)

    def erasures(self) -> list[Erasure]:
        """Every erasure recorded, oldest first (one Query, paged)."""
        items = self._key_table().run(every_item(erasures_pk(self.prefix), consistent=True))
        return [erasure_from(i) for i in items]

    # ------------------------------------------------------------ Store namespaces

    def namespaces(self, text: str) -> list[str]:
        """The partitions of the subject's Store namespaces (one Query, paged)."""
        pk = subject_pk(self.prefix, self._namer.subject(text))
        items = self._data.run(every_item(pk, consistent=True))
        return [p for i in items if (p := linked_partition(i)) is not None]

    def unlink(self, text: str, partitions: Sequence[str]) -> None:
        """Forget these Store namespaces as the subject's (full batches)."""
        token = self._namer.subject(text)
        links = [key_of(namespace_link(self.prefix, token, p)) for p in partitions]
        if links:
            self._data.do(Batch(deletes=links))

    # ------------------------------------------------------------ parts

    def _now_ms(self) -> int:
        return int(self._data.clock() * 1000)

    def create_if_missing(self) -> bool:
        """`setup()`: the key table, where subjects are declared; whether it was made."""
        return self._keys is not None and self._keys.create_table_if_missing()

    def probe_key_table(self) -> str:
        """That the key table exists and may be read, by a read every process of the
        deployment may send (one GetItem, of a key id none has); what it is."""
        self._key_table().do(Get(key_address(self.prefix, "-")))
        return self._key_table().table_resource()

    def _key_table(self) -> BlobEngine:
        if self._keys is None:
            raise InvalidConfigError(
                "this is a data subject's data and this saver declares no subjects: declare "
                "them as the deployment that wrote it does, subject_field "
                "(S3DYNAMO_SUBJECT_FIELD) or subject_label (S3DYNAMO_SUBJECT_LABEL)"
            )
        return self._keys

    def _require_keyring(self) -> Keyring:
        keyring = self._keyring()
        if keyring is None:
            raise InvalidConfigError(
                "data subjects' keys are wrapped by the deployment's keyring: set "
                "S3DYNAMO_KEYS or S3DYNAMO_KMS_KEY_ID"
            )
        return keyring


def _when(erased: object) -> str:
    """When an erasure was, as messages say it."""
    if not isinstance(erased, int) or erased <= 0:
        return "an unknown time"
    at = datetime.datetime.fromtimestamp(erased / 1000, datetime.timezone.utc)
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")
