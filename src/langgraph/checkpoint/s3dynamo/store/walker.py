"""The one walk over a checkpoint's blobs: every sealed thing its records hold or point
at, and how each opens. Decoding, history, verification, statistics, copying and
re-encryption all walk a checkpoint this way; none of them knows the record layout.

A checkpoint's blobs:

- a channel value per channel with a version: inline in the checkpoint record, or an
  object; an inline value may be a delta, which opens only against its base, an object
  of its own (the record lists the base among its objects);
- a pending write per (task, index): inline in the task's writes record, or an object
  (the record keeps a reference `<leaf>.<channel tag>`);
- a bundle per task with more regular writes than one update may carry: one object
  holding them all, each sealed on its own.

A copy shares its source's blobs (`copy_thread`): a shared value or write opens under
the identity of the thread it was written for, its owner, which the checkpoint's sealed
body names (`shared`: channel -> owner; `shared_writes`: shared leaf -> owner), so a
reference to another thread's blob is as authenticated as the blob itself. A shared
object lives under its owner's key prefix, named by its whole key in the record.

`walk` opens only what says where things are (the checkpoint body and each task's
reference); opening a value or a write is the caller's step, with `value_data`,
`write_data`, `bundle_blobs` and `bundle_writes`, once the objects are fetched. These
take the checkpoint as an `Entry` or, for what was walked before (history's kept
skeletons), as a `CheckpointAt`. `kept_chains` walks back along parents: which ancestors
DeltaChannel needs to read the newest checkpoints back, what a prune and a copy of the
latest keep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from langgraph.checkpoint.s3dynamo.blobs.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.format.layout import shared_leaf, split_shared, split_write_ref
from langgraph.checkpoint.s3dynamo.format.records import WritesRecord, unpack_bundle
from langgraph.checkpoint.s3dynamo.keys.codec import Codec
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt, WriteAt
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.finder import Entry

# What the store keeps in a checkpoint's sealed body beside LangGraph's own keys: where
# each value is and whose it is. Never taken from a caller's checkpoint, never shown.
STORE_KEYS = frozenset({"parent", "stored", "bases", "shared", "shared_writes"})

Typed = tuple[str, bytes]


class Located(Protocol):
    """The checkpoint a blob belongs to, which its sealing is bound to: an `Entry`, or a
    `CheckpointAt` where the records are no longer at hand."""

    @property
    def tid(self) -> str: ...
    @property
    def ns(self) -> str: ...
    @property
    def checkpoint_id(self) -> str: ...
    @property
    def what(self) -> str: ...


class StoredValue(NamedTuple):
    """Where one channel's value at one checkpoint is kept: inline (`blob`) or as an
    object (`leaf`). With `base`, the inline blob is a delta against that version of the
    channel, which is an object of its own. With `owner`, it is another thread's value
    that this thread shares (a copy's): sealed for that thread, its objects under that
    thread's prefix (`leaf` is then a shared leaf)."""

    version: str
    blob: bytes | None
    leaf: str | None
    base: str | None = None
    owner: str | None = None


StoredValues = dict[str, StoredValue]


class ValueBlob(NamedTuple):
    """A channel value to open: `blob` inline, or the object `key`; with `base`, the
    inline blob is a delta against (base version, key of its object); `owner` as in
    `StoredValue`."""

    channel: str
    version: str
    blob: bytes | None
    key: str | None
    base: tuple[str, str] | None
    owner: str | None = None

    def object_keys(self) -> list[str]:
        """The objects it opens from: its own, or a delta's base."""
        return [k for k in (self.key, self.base[1] if self.base else None) if k is not None]


class WriteBlob(NamedTuple):
    """A pending write to open: `blob` inline, or the object `key` (with the channel's
    keyed `tag`, so a reader can pick a channel's writes without fetching the others);
    `owner`: the thread it was written for, when a copy shares it."""

    record: WritesRecord
    task_id: str
    task_path: str
    idx: int
    blob: bytes | None
    key: str | None
    tag: str | None
    owner: str | None = None


class BundleBlob(NamedTuple):
    """The object holding one task's bundled regular writes (`owner` as above)."""

    record: WritesRecord
    task_id: str
    task_path: str
    key: str
    owner: str | None = None


class Blobs(NamedTuple):
    """Everything sealed that one checkpoint holds or references."""

    entry: Entry
    body: dict[str, Any]
    stored: StoredValues
    values: list[ValueBlob]
    writes: list[WriteBlob]
    bundles: list[BundleBlob]
    # Channels the sealed body lists as stored that the record no longer holds.
    lost: frozenset[str]
    # Writes record sort key -> (task id, task path).
    tasks: dict[str, tuple[str, str]]

    def keys(self) -> dict[str, str]:
        """Object key -> the checkpoint needing it: values, delta bases, writes, bundles;
        an object of another thread it shares as a copy is named as such."""
        keys = {key: self._what(v.owner) for v in self.values for key in v.object_keys()}
        keys.update({w.key: self._what(w.owner) for w in self.writes if w.key is not None})
        keys.update({b.key: self._what(b.owner) for b in self.bundles})
        return keys

    def _what(self, owner: str | None) -> str:
        if owner is None or owner == self.entry.tid:
            return self.entry.what
        return (
            f"{self.entry.what} (an object of thread {owner!r}, which this copy shares: "
            "that thread's loan to the copy keeps it)"
        )


class Walker:
    def __init__(self, namer: Namer, codec: Codec, objects: ObjectIO) -> None:
        self.namer = namer
        self.codec = codec
        self.objects = objects

    def object_key(self, tid: str, leaf: str) -> str:
        """Where a thread's object of this leaf lives."""
        return self.objects.key(self.namer.thread(tid), leaf)

    def open_body(self, entry: Entry) -> dict[str, Any]:
        at = CheckpointAt(entry.tid, entry.ns, entry.checkpoint_id)
        return self.codec.open_body(at, entry.record.body, entry.what)

    def open_metadata(self, entry: Entry) -> Any:
        if entry.metadata is None:
            at = CheckpointAt(entry.tid, entry.ns, entry.checkpoint_id)
            entry.metadata = self.codec.open_metadata(at, entry.record.metadata, entry.what)
        return entry.metadata

    def open_task(self, writes: WritesRecord, what: str) -> tuple[str, str]:
        """(task id, task path) of a writes record."""
        task_id, task_path = self.codec.open_ref(writes.pk, writes.sk, writes.task_ref, what)
        return task_id, task_path

    def stored_values(self, entry: Entry, body: Mapping[str, Any]) -> StoredValues:
        """Where each channel's value at this checkpoint is kept: inline in the record,
        in an object, or (channels absent here) nowhere."""
        tid, ns, rec = entry.tid, entry.ns, entry.record
        bases: Mapping[str, str] = body.get("bases") or {}
        shared: Mapping[str, str] = body.get("shared") or {}
        out: StoredValues = {}
        for channel, raw_version in body.get("channel_versions", {}).items():
            version = str(raw_version)
            owner = shared.get(channel)
            blob = rec.inline.get(self.namer.channel(tid, ns, channel))
            if blob is not None:
                out[channel] = StoredValue(version, blob, None, bases.get(channel), owner)
                continue
            leaf = self.value_leaf(ValueAt(owner or tid, ns, channel, version), owner)
            if leaf in rec.objects:
                out[channel] = StoredValue(version, None, leaf, None, owner)
        return out

    def value_leaf(self, at: ValueAt, owner: str | None) -> str:
        """How a record names the object of a value: its leaf, or, shared from `owner`
        (`at.tid`), its whole key."""
        leaf = self.namer.value(at)
        return leaf if owner is None else shared_leaf(self.namer.thread(owner), leaf)

    def leaf_key(self, tid: str, leaf: str) -> str:
        """The key of the object a record of thread `tid` names by `leaf`."""
        return leaf if split_shared(leaf) is not None else self.object_key(tid, leaf)

    def write_owner(self, body: Mapping[str, Any], leaf: str, what: str) -> str | None:
        """The thread a write object named by `leaf` was written for: None for this
        thread's own, else the owner the sealed body names for that shared leaf."""
        if split_shared(leaf) is None:
            return None
        owner = (body.get("shared_writes") or {}).get(leaf)
        if owner is None:
            raise IntegrityError(
                f"{what}: a pending write names another thread's object that the sealed "
                "checkpoint does not list as shared; the item was altered"
            )
        return str(owner)

    def walk(
        self,
        entry: Entry,
        body: dict[str, Any] | None = None,
        tasks: Mapping[str, tuple[str, str]] | None = None,
    ) -> Blobs:
        """Every blob of the checkpoint (`body`: its opened body, and `tasks`: its writes
        records' (task id, task path) by sort key, where opened already)."""
        tid, ns, what = entry.tid, entry.ns, entry.what
        if body is None:
            body = self.open_body(entry)
        stored = self.stored_values(entry, body)
        values: list[ValueBlob] = []
        for channel, value in stored.items():
            owner = value.owner
            if value.blob is None:
                key = self.leaf_key(tid, value.leaf or "")
                values.append(ValueBlob(channel, value.version, None, key, None, owner))
                continue
            base = None
            if value.base is not None:
                base_leaf = self.value_leaf(ValueAt(owner or tid, ns, channel, value.base), owner)
                if base_leaf not in entry.record.objects:
                    raise IntegrityError(
                        f"{what}: channel value is a delta whose base is not among the "
                        "item's objects; the item was altered"
                    )
                base = (value.base, self.leaf_key(tid, base_leaf))
            values.append(ValueBlob(channel, value.version, value.blob, None, base, owner))
        writes: list[WriteBlob] = []
        bundles: list[BundleBlob] = []
        opened_tasks: dict[str, tuple[str, str]] = {}
        for w in entry.writes:
            task_id, task_path = tasks[w.sk] if tasks is not None else self.open_task(w, what)
            opened_tasks[w.sk] = (task_id, task_path)
            for idx, stored_write in w.writes.items():
                if isinstance(stored_write, str):
                    leaf, tag = split_write_ref(stored_write)
                    key, owner = self.leaf_key(tid, leaf), self.write_owner(body, leaf, what)
                    writes.append(WriteBlob(w, task_id, task_path, idx, None, key, tag, owner))
                else:
                    writes.append(WriteBlob(w, task_id, task_path, idx, stored_write, None, None))
            if w.bundle is not None:
                key, owner = self.leaf_key(tid, w.bundle), self.write_owner(body, w.bundle, what)
                bundles.append(BundleBlob(w, task_id, task_path, key, owner))
        lost = frozenset(body.get("stored") or ()) - set(stored)
        return Blobs(entry, body, stored, values, writes, bundles, lost, opened_tasks)

    # ------------------------------------------------------------- opening

    def value_data(
        self,
        entry: Located,
        value: ValueBlob,
        fetched: Mapping[str, bytes],
        bases: dict[str, Typed] | None = None,
    ) -> Typed:
        """A channel value opened (authenticated, decompressed) but not deserialized.
        `bases` keeps opened delta bases by key: many deltas share one base."""
        tid = value.owner or entry.tid
        at = ValueAt(tid, entry.ns, value.channel, value.version)
        where = f"{entry.what}, channel value"
        blob = value.blob if value.blob is not None else fetched[value.key or ""]
        if value.base is None:
            return self.codec.value_data(at, blob, where)
        base_version, key = value.base
        base = (bases or {}).get(key)
        if base is None:
            base_at = ValueAt(tid, entry.ns, value.channel, base_version)
            base = self.codec.value_data(base_at, fetched[key], f"{where} (delta base)")
            if bases is not None:
                bases[key] = base
        return self.codec.delta_data(at, blob, base_version, base, where)

    def write_data(
        self, entry: Located, write: WriteBlob, fetched: Mapping[str, bytes]
    ) -> tuple[str, Typed]:
        """A pending write opened but not deserialized: (channel, (type, data))."""
        blob = write.blob if write.blob is not None else fetched[write.key or ""]
        return self.write_blob_data(entry, write.task_id, write.idx, blob, write.owner)

    def write_blob_data(
        self, entry: Located, task_id: str, idx: int, blob: bytes, owner: str | None = None
    ) -> tuple[str, Typed]:
        """A sealed write opened, as written for `owner` (a copy's source) or this thread."""
        at = WriteAt(owner or entry.tid, entry.ns, entry.checkpoint_id, task_id, idx)
        return self.codec.write_data(at, blob, f"{entry.what}, pending write")

    def bundle_blobs(
        self, entry: Located, key: str, fetched: Mapping[str, bytes]
    ) -> dict[int, bytes]:
        """The sealed writes the bundle object `key` holds, by index."""
        try:
            return unpack_bundle(fetched[key])
        except ValueError as exc:
            raise IntegrityError(f"{entry.what}: writes bundle {key!r}: {exc}") from exc

    def bundle_writes(
        self,
        entry: Located,
        task_id: str,
        key: str,
        fetched: Mapping[str, bytes],
        owner: str | None = None,
    ) -> dict[int, tuple[str, Typed]]:
        """A task's bundled writes opened but not deserialized: index -> (channel, data)."""
        return {
            idx: self.write_blob_data(entry, task_id, idx, blob, owner)
            for idx, blob in self.bundle_blobs(entry, key, fetched).items()
        }

    # ------------------------------------------ what DeltaChannel reads back

    def kept_chains(self, entries: Sequence[Entry], keep_last: int = 1) -> dict[str, list[Entry]]:
        """Namespace -> what a prune keeps there: its `keep_last` newest checkpoints and
        the ancestors DeltaChannel reconstruction of each needs (oldest first)."""
        by_ns: dict[str, dict[str, Entry]] = {}
        for e in entries:
            by_ns.setdefault(e.ns, {})[e.checkpoint_id] = e
        kept: dict[str, list[Entry]] = {}
        for ns, chain in by_ns.items():
            newest = sorted(chain, reverse=True)[:keep_last]
            needed = {
                e.checkpoint_id: e for cid in newest for e in self._needed(chain[cid], chain)[0]
            }
            kept[ns] = [needed[cid] for cid in sorted(needed)]
        return kept

    def missing_ancestor(self, chain: dict[str, Entry], keep_last: int) -> str | None:
        """For checkpoints of one namespace read newest first: the id of an ancestor the
        `keep_last` newest need (DeltaChannel reconstruction) that was not read yet, or
        None when they are complete."""
        newest = sorted(chain, reverse=True)[:keep_last]
        missing = [m for cid in newest if (m := self._needed(chain[cid], chain)[1]) is not None]
        return max(missing) if missing else None

    def _needed(self, latest: Entry, chain: dict[str, Entry]) -> tuple[list[Entry], str | None]:
        """The checkpoint plus its ancestors back to the nearest stored value of every
        DeltaChannel (the channels named in `counters_since_delta_snapshot`), and the id
        of the next one needed that `chain` lacks (None: none)."""
        metadata: dict[str, Any] = self.open_metadata(latest) or {}
        remaining = set(metadata.get("counters_since_delta_snapshot") or {})
        needed = [latest]
        cursor: Entry | None = latest
        while cursor is not None and remaining:
            body = self.open_body(cursor)
            remaining -= set(self.stored_values(cursor, body))
            parent = body.get("parent")
            cursor = chain.get(parent) if parent and remaining else None
            if cursor is not None:
                needed.append(cursor)
            elif parent and remaining:
                return needed, str(parent)
        return needed, None
