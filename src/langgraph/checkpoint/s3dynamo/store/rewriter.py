"""Re-sealing a thread's blobs: for another thread id (a copy, whose blobs must open under
the target's identity) or under the active key (a rotation). It walks each checkpoint
with the walker and builds the records and objects to write, named and bound for the
target; the caller (`ThreadStore.rewrite`'s: copy, re-encryption) writes them in the
commit order: objects first, records last."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langgraph.checkpoint.s3dynamo.codec import (
    body_id,
    delta_id,
    metadata_id,
    ref_id,
    value_id,
    write_id,
)
from langgraph.checkpoint.s3dynamo.identities import CheckpointAt, ValueAt
from langgraph.checkpoint.s3dynamo.layout import (
    checkpoint_sk,
    split_write_ref,
    write_ref,
    writes_sk,
)
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    Record,
    WritesRecord,
    pack_bundle,
)
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder
from langgraph.checkpoint.s3dynamo.store.walker import Walker


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

    def rewrite(self, src: str, dst: str, entries: Sequence[Entry], *, stale_only: bool) -> Rewrite:
        """Re-seal every blob of `src` for `dst` (a copy), or, with `stale_only` and
        `src == dst`, only the blobs not sealed under the active key (a rotation)."""
        walker, objects = self.walker, self.walker.objects
        codec, namer, sealer = walker.codec, walker.namer, walker.codec.sealer
        active = sealer.keyring.active if sealer.keyring else None
        # A rotation must see what is stored, not what this process cached before.
        fetched = objects.fetch(self.finder.referenced_keys(entries), cached=not stale_only)
        out = Rewrite()
        done_objects: set[str] = set()

        def reseal(blob: bytes, old: bytes, new: bytes, what: str) -> bytes:
            if stale_only and old == new and sealer.key_id_of(blob) == active:
                return blob
            out.blobs += 1
            return codec.reseal(blob, old, new, what)

        bases: dict[str, tuple[str, bytes]] = {}

        def reseal_delta(
            blob: bytes, old: bytes, new: bytes, base_key: str, base_id: bytes, what: str
        ) -> bytes:
            if stale_only and old == new and sealer.key_id_of(blob) == active:
                return blob
            if base_key not in bases:
                bases[base_key] = sealer.open(fetched[base_key], base_id, f"{what} (delta base)")
            out.blobs += 1
            return codec.reseal_delta(blob, old, new, bases[base_key], what)

        def put_object(old_key: str, new_key: str, old: bytes, new: bytes, what: str) -> None:
            if new_key in done_objects:
                return
            done_objects.add(new_key)
            blob = fetched[old_key]
            resealed = reseal(blob, old, new, what)
            if resealed is not blob:
                out.objects.append((new_key, resealed))

        pk = namer.thread(dst)
        for e in entries:
            ns, rec, cid, what = e.ns, e.record, e.checkpoint_id, e.what
            old_at, new_at = CheckpointAt(src, ns, cid), CheckpointAt(dst, ns, cid)
            blobs = walker.walk(e)
            ns_name = namer.namespace(dst, ns)
            sk = checkpoint_sk(ns_name, cid)
            inline: dict[str, bytes] = {}
            leaves: set[str] = set()
            for v in blobs.values:
                channel = v.channel
                old_value = ValueAt(src, ns, channel, v.version)
                new_value = ValueAt(dst, ns, channel, v.version)
                old_id, new_id = value_id(old_value), value_id(new_value)
                tag = namer.channel(dst, ns, channel)
                if v.blob is not None and v.base is not None:
                    # A delta: its base object goes along, and the delta is bound to both.
                    base_version, base_key = v.base
                    old_base_at = ValueAt(src, ns, channel, base_version)
                    new_base_at = ValueAt(dst, ns, channel, base_version)
                    base_old_id = value_id(old_base_at)
                    new_base = namer.value(new_base_at)
                    leaves.add(new_base)
                    base_new_id = value_id(new_base_at)
                    new_base_key = walker.object_key(dst, new_base)
                    put_object(base_key, new_base_key, base_old_id, base_new_id, what)
                    inline[tag] = reseal_delta(
                        v.blob,
                        delta_id(old_value, base_version),
                        delta_id(new_value, base_version),
                        base_key,
                        base_old_id,
                        what,
                    )
                elif v.blob is not None:
                    inline[tag] = reseal(v.blob, old_id, new_id, what)
                elif v.key is not None:
                    new_leaf = namer.value(new_value)
                    leaves.add(new_leaf)
                    put_object(v.key, walker.object_key(dst, new_leaf), old_id, new_id, what)
            same_ref = stale_only and src == dst and sealer.key_id_of(rec.thread_ref) == active
            new_rec = CheckpointRecord(
                pk=pk,
                sk=sk,
                body=reseal(rec.body, body_id(old_at), body_id(new_at), what),
                metadata=reseal(rec.metadata, metadata_id(old_at), metadata_id(new_at), what),
                thread_ref=rec.thread_ref if same_ref else codec.seal_ref(pk, sk, dst, ns),
                run_key=rec.run_key,
                objects=frozenset(leaves),
                inline=inline,
                # A copy is new activity on its target; re-encryption is none.
                written_at=rec.written_at if src == dst else self.now(),
            )
            if not same_ref:
                out.blobs += 1
            out.records.append((rec, new_rec))
            by_record: dict[str, WritesRecord] = {}
            for old_w in e.writes:
                task_id, _ = blobs.tasks[old_w.sk]
                wsk = writes_sk(ns_name, cid, namer.task(new_at, task_id))
                by_record[old_w.sk] = new_w = WritesRecord(
                    pk=pk,
                    sk=wsk,
                    task_ref=reseal(
                        old_w.task_ref, ref_id(old_w.pk, old_w.sk), ref_id(pk, wsk), what
                    ),
                    written_at=old_w.written_at if src == dst else self.now(),
                )
                out.records.append((old_w, new_w))
            for w in blobs.writes:
                new_w, task_id, idx = by_record[w.record.sk], w.task_id, w.idx
                old_id = write_id(old_at.write(task_id, idx))
                new_id = write_id(new_at.write(task_id, idx))
                if w.blob is not None:
                    new_w.writes[idx] = reseal(w.blob, old_id, new_id, what)
                    continue
                channel, _ = walker.write_data(e, w, fetched)
                old_leaf, _ = split_write_ref(str(w.record.writes[idx]))
                new_leaf = (
                    old_leaf
                    if src == dst
                    else namer.write(new_at.write(task_id, idx), uuid.uuid4().hex)
                )
                put_object(w.key or "", walker.object_key(dst, new_leaf), old_id, new_id, what)
                new_w.writes[idx] = write_ref(new_leaf, namer.channel(dst, ns, channel))
            for b in blobs.bundles:
                new_w, task_id = by_record[b.record.sk], b.task_id
                bundle = walker.bundle_blobs(e, b.key, fetched)
                resealed = {
                    i: reseal(
                        blob,
                        write_id(old_at.write(task_id, i)),
                        write_id(new_at.write(task_id, i)),
                        what,
                    )
                    for i, blob in bundle.items()
                }
                new_leaf = (
                    b.record.bundle or ""
                    if src == dst
                    else namer.write(new_at.write(task_id, len(bundle)), uuid.uuid4().hex)
                )
                if src != dst or any(resealed[i] is not bundle[i] for i in bundle):
                    out.objects.append((walker.object_key(dst, new_leaf), pack_bundle(resealed)))
                new_w.bundle = new_leaf
        return out
