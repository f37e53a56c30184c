"""Rewriting a thread's records for another thread id: a copy's (`share`).

A copy shares its source's blobs instead of re-sealing them: every value (inline or an
object) and every write object stays as it is, sealed for the thread it was written
for, and the copy's checkpoint body, sealed for the copy, names that owner
(`store/walker.py`); only what is bound to the copy's own keys is sealed again (body,
metadata, references, inline writes). So a copy fetches and uploads no object; its
records name the source's objects by their whole keys, which the copy protocol lends
and writes (`copying.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP

from langgraph.checkpoint.s3dynamo.format.layout import (
    checkpoint_sk,
    shared_leaf,
    split_shared,
    split_write_ref,
    write_ref,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    Record,
    WritesRecord,
)
from langgraph.checkpoint.s3dynamo.keys.codec import (
    metadata_id,
    ref_id,
    write_id,
)
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder
from langgraph.checkpoint.s3dynamo.store.walker import Blobs, Walker

# Channels a pending write may go to that no checkpoint body lists.
SPECIAL_CHANNELS = ("__pregel_tasks", *WRITES_IDX_MAP)


@dataclass
class Rewrite:
    """What rewriting a thread produces: objects to upload, then records to write."""

    objects: list[tuple[str, bytes]] = field(default_factory=list)
    # (record as read, record to write)
    records: list[tuple[Record, Record]] = field(default_factory=list)
    blobs: int = 0


class Rewriter:
    def __init__(self, walker: Walker, finder: Finder, now: Callable[[], int]) -> None:
        self.walker = walker
        self.finder = finder
        self.now = now

    def target_keys(self, dst: str, e: Entry) -> set[str]:
        """Sort keys `rewrite` writes for one entry in `dst`'s partition: its checkpoint
        record and its writes records."""
        namer = self.walker.namer
        ns_name = namer.namespace(dst, e.ns)
        keys = {checkpoint_sk(ns_name, e.checkpoint_id)}
        for w in e.writes:
            task_id, _ = self.walker.open_task(w, e.what)
            task = namer.task(CheckpointAt(dst, e.ns, e.checkpoint_id), task_id)
            keys.add(writes_sk(ns_name, e.checkpoint_id, task))
        return keys

    # ------------------------------------------------------------------ copy

    def share(self, src: str, dst: str, entries: Sequence[Entry]) -> Rewrite:
        """`src`'s checkpoints as records of `dst` that share every value and write
        object of `src` (or of the thread `src` itself shares it from): no object is
        fetched or written, except where a write object's channel is known from no
        checkpoint body (then it is fetched to tell its channel's tag)."""
        walker = self.walker
        walked = [walker.walk(e) for e in entries]
        # Every channel the thread's checkpoints name: a write object's tag is one's.
        channels = {*SPECIAL_CHANNELS}
        for blobs in walked:
            channels.update(blobs.body.get("channel_versions", {}))
            for seen in (blobs.body.get("versions_seen") or {}).values():
                channels.update(seen)
        out = Rewrite()
        for e, blobs in zip(entries, walked, strict=True):
            out.records += self._share_one(src, dst, e, blobs, channels)
        return out

    def _share_one(
        self, src: str, dst: str, e: Entry, blobs: Blobs, channels: set[str]
    ) -> list[tuple[Record, Record]]:
        codec, namer = self.walker.codec, self.walker.namer
        ns, rec, cid = e.ns, e.record, e.checkpoint_id
        old_at, new_at = CheckpointAt(src, ns, cid), CheckpointAt(dst, ns, cid)
        pk, sk = namer.thread(dst), checkpoint_sk(namer.namespace(dst, ns), cid)
        body: dict[str, Any] = {k: v for k, v in blobs.body.items() if k != "shared"}
        inline, leaves, owners = self._values(src, dst, ns, blobs)
        if owners:
            body["shared"] = owners
        writes = self._writes(src, dst, e, blobs, channels)
        body.pop("shared_writes", None)
        if writes.owners:
            body["shared_writes"] = writes.owners
        new_rec = replace(
            rec,
            pk=pk,
            sk=sk,
            body=codec.seal_body(new_at, body),
            metadata=codec.reseal(rec.metadata, metadata_id(old_at), metadata_id(new_at), e.what),
            thread_ref=codec.seal_ref(pk, sk, dst, ns),
            objects=frozenset(leaves),
            inline=inline,
            # A copy is new activity on its target.
            written_at=self.now(),
        )
        return [(rec, new_rec), *writes.records]

    def _values(
        self, src: str, dst: str, ns: str, blobs: Blobs
    ) -> tuple[dict[str, bytes], set[str], dict[str, str]]:
        """The copy's inline values (as they are), the objects it names (whole keys of
        the source's), and each channel's owner."""
        namer, src_name = self.walker.namer, self.walker.namer.thread(src)
        inline: dict[str, bytes] = {}
        leaves: set[str] = set()
        owners: dict[str, str] = {}
        for channel, v in blobs.stored.items():
            owner = owners[channel] = v.owner or src
            if v.blob is not None:
                inline[namer.channel(dst, ns, channel)] = v.blob
            else:
                leaves.add(_shared(src_name, v.leaf or ""))
            if v.base is not None:
                leaves.add(self.walker.value_leaf(ValueAt(owner, ns, channel, v.base), owner))
        return inline, leaves, owners

    def _writes(
        self, src: str, dst: str, e: Entry, blobs: Blobs, channels: set[str]
    ) -> _SharedWrites:
        """The copy's writes records: references re-bound to it, inline writes sealed
        for it, write objects and bundles shared (a whole key of the source's each)."""
        walker, codec, namer = self.walker, self.walker.codec, self.walker.namer
        ns, cid, what, src_name = e.ns, e.checkpoint_id, e.what, namer.thread(src)
        old_at, new_at = CheckpointAt(src, ns, cid), CheckpointAt(dst, ns, cid)
        pk, ns_name = namer.thread(dst), namer.namespace(dst, ns)
        out = _SharedWrites()
        by_record: dict[str, WritesRecord] = {}
        for old_w in e.writes:
            task_id, _ = blobs.tasks[old_w.sk]
            wsk = writes_sk(ns_name, cid, namer.task(new_at, task_id))
            ref = codec.reseal(old_w.task_ref, ref_id(old_w.pk, old_w.sk), ref_id(pk, wsk), what)
            # Every field carried (one a later release adds too), as its writes are below.
            by_record[old_w.sk] = new_w = replace(
                old_w, pk=pk, sk=wsk, task_ref=ref, writes={}, bundle=None, written_at=self.now()
            )
            out.records.append((old_w, new_w))
        tag_of = {namer.channel(src, ns, ch): ch for ch in channels}
        for w in blobs.writes:
            new_w, task_id, idx = by_record[w.record.sk], w.task_id, w.idx
            if w.blob is not None:
                old, new = (
                    write_id(old_at.write(task_id, idx)),
                    write_id(new_at.write(task_id, idx)),
                )
                new_w.writes[idx] = codec.reseal(w.blob, old, new, what)
                continue
            leaf, _ = split_write_ref(str(w.record.writes[idx]))
            # Every record tags a write object for its own thread: `src` here.
            target = tag_of.get(w.tag or "")
            if target is None:
                # A channel no checkpoint body names: the write itself says which.
                target, _ = walker.write_data(e, w, walker.objects.fetch({w.key or "": what}))
            new_leaf = _shared(src_name, leaf)
            out.owners[new_leaf] = w.owner or src
            new_w.writes[idx] = write_ref(new_leaf, namer.channel(dst, ns, target))
        for b in blobs.bundles:
            new_w = by_record[b.record.sk]
            new_w.bundle = _shared(src_name, b.record.bundle or "")
            out.owners[new_w.bundle] = b.owner or src
        return out


@dataclass
class _SharedWrites:
    """A copy's writes records (as read, as written) and the owner of each leaf they
    share."""

    records: list[tuple[Record, Record]] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)


def _shared(src_name: str, leaf: str) -> str:
    """How a copy names an object of its source: its whole key (a leaf the source shares
    already is one)."""
    return leaf if split_shared(leaf) is not None else shared_leaf(src_name, leaf)
