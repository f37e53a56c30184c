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

from langgraph.checkpoint.s3dynamo.codec import (
    metadata_id,
    ref_id,
    write_id,
)
from langgraph.checkpoint.s3dynamo.identities import CheckpointAt, ValueAt
from langgraph.checkpoint.s3dynamo.layout import (
    checkpoint_sk,
    shared_leaf,
    split_shared,
    split_write_ref,
    write_ref,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.records import (
    Record,
    WritesRecord,
)
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
        walker, codec = self.walker, self.walker.codec
        namer = walker.namer
        ns, rec, cid, what = e.ns, e.record, e.checkpoint_id, e.what
        old_at, new_at = CheckpointAt(src, ns, cid), CheckpointAt(dst, ns, cid)
        src_name, pk = namer.thread(src), namer.thread(dst)
        ns_name = namer.namespace(dst, ns)
        sk = checkpoint_sk(ns_name, cid)

        def shared(leaf: str) -> str:
            return leaf if split_shared(leaf) is not None else shared_leaf(src_name, leaf)

        body: dict[str, Any] = dict(blobs.body)
        owners: dict[str, str] = {}
        inline: dict[str, bytes] = {}
        leaves: set[str] = set()
        for channel, v in blobs.stored.items():
            owner = v.owner or src
            owners[channel] = owner
            if v.blob is not None:
                inline[namer.channel(dst, ns, channel)] = v.blob
            else:
                leaves.add(shared(v.leaf or ""))
            if v.base is not None:
                base = walker.value_leaf(ValueAt(owner, ns, channel, v.base), owner)
                leaves.add(base)
        body.pop("shared", None)
        if owners:
            body["shared"] = owners
        shared_writes: dict[str, str] = {}
        out: list[tuple[Record, Record]] = []
        by_record: dict[str, WritesRecord] = {}
        for old_w in e.writes:
            task_id, _ = blobs.tasks[old_w.sk]
            wsk = writes_sk(ns_name, cid, namer.task(new_at, task_id))
            # Every field carried (one a later release adds too), as its writes are below.
            by_record[old_w.sk] = new_w = replace(
                old_w,
                pk=pk,
                sk=wsk,
                task_ref=codec.reseal(
                    old_w.task_ref, ref_id(old_w.pk, old_w.sk), ref_id(pk, wsk), what
                ),
                writes={},
                bundle=None,
                written_at=self.now(),
            )
            out.append((old_w, new_w))
        tag_of = {namer.channel(src, ns, ch): ch for ch in channels}
        for w in blobs.writes:
            new_w, task_id, idx = by_record[w.record.sk], w.task_id, w.idx
            if w.blob is not None:
                new_w.writes[idx] = codec.reseal(
                    w.blob,
                    write_id(old_at.write(task_id, idx)),
                    write_id(new_at.write(task_id, idx)),
                    what,
                )
                continue
            leaf, _ = split_write_ref(str(w.record.writes[idx]))
            # Every record tags a write object for its own thread: `src` here.
            target = tag_of.get(w.tag or "")
            if target is None:
                # A channel no checkpoint body names: the write itself says which.
                fetched = walker.objects.fetch({w.key or "": what})
                target, _ = walker.write_data(e, w, fetched)
            new_leaf = shared(leaf)
            shared_writes[new_leaf] = w.owner or src
            new_w.writes[idx] = write_ref(new_leaf, namer.channel(dst, ns, target))
        for b in blobs.bundles:
            new_w = by_record[b.record.sk]
            new_w.bundle = shared(b.record.bundle or "")
            shared_writes[new_w.bundle] = b.owner or src
        body.pop("shared_writes", None)
        if shared_writes:
            body["shared_writes"] = shared_writes
        new_rec = replace(
            rec,
            pk=pk,
            sk=sk,
            body=codec.seal_body(new_at, body),
            metadata=codec.reseal(rec.metadata, metadata_id(old_at), metadata_id(new_at), what),
            thread_ref=codec.seal_ref(pk, sk, dst, ns),
            objects=frozenset(leaves),
            inline=inline,
            # A copy is new activity on its target.
            written_at=self.now(),
        )
        return [(rec, new_rec), *out]
