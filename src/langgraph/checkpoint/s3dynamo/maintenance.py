"""Whole-thread operations: copy, prune, delete runs, re-encrypt.

Each reads a thread's items with one paged Query, works in memory, and writes in the
commit order the saver uses: objects first, index items last. Objects that an operation
leaves unreferenced are deleted at the end when this operation is what orphaned them
(prune), or left to garbage collection (`gc.py`), which only removes objects no item
references.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.s3dynamo import items as it
from langgraph.checkpoint.s3dynamo.codec import body_id, metadata_id, ref_id, value_id, write_id
from langgraph.checkpoint.s3dynamo.config import describe
from langgraph.checkpoint.s3dynamo.errors import StorageError, ThreadExistsError
from langgraph.checkpoint.s3dynamo.naming import checkpoint_sk, writes_sk
from langgraph.checkpoint.s3dynamo.stores import parallel

if TYPE_CHECKING:
    from langgraph.checkpoint.s3dynamo.saver import S3DynamoSaver, _Entry


REENCRYPT_ATTEMPTS = 5


@dataclass
class _Rewrite:
    """What rewriting a thread produces: objects to upload, then items to write."""

    objects: list[tuple[str, bytes]] = field(default_factory=list)
    items: list[tuple[it.Item, it.Item]] = field(default_factory=list)
    blobs: int = 0


def _all_keys(saver: S3DynamoSaver, entries: Sequence[_Entry]) -> list[str]:
    keys: list[str] = []
    for e in entries:
        keys += [saver._key(e.tid, leaf) for leaf in e.record.objects]
        for w in e.writes:
            keys += [
                saver._key(e.tid, it.split_write_ref(v)[0])
                for v in w.writes.values()
                if isinstance(v, str)
            ]
            if w.bundle:
                keys.append(saver._key(e.tid, w.bundle))
    return keys


def rewrite_thread(
    saver: S3DynamoSaver, src: str, dst: str, entries: Sequence[_Entry], *, stale_only: bool
) -> _Rewrite:
    """Re-seal every blob of `src` for `dst` (a copy), or, with `stale_only` and
    `src == dst`, only the blobs not sealed under the active key (a rotation)."""
    codec, namer, sealer = saver.codec, saver.namer, saver.sealer
    active = sealer.keyring.active if sealer.keyring else None
    fetched = saver.objects.get_many(_all_keys(saver, entries))
    out = _Rewrite()
    done_objects: set[str] = set()

    def reseal(blob: bytes, old: bytes, new: bytes, what: str) -> bytes:
        if stale_only and old == new and sealer.key_id_of(blob) == active:
            return blob
        out.blobs += 1
        return codec.reseal(blob, old, new, what)

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
        ns, rec, cid = e.ns, e.record, e.record.checkpoint_id
        what = describe(src, ns, cid)
        body = codec.open_body(src, ns, cid, rec.body, what)
        ns_name = namer.namespace(dst, ns)
        sk = checkpoint_sk(ns_name, cid)
        inline: dict[str, bytes] = {}
        leaves: set[str] = set()
        for channel, raw_version in body.get("channel_versions", {}).items():
            version = str(raw_version)
            old_id, new_id = (
                value_id(src, ns, channel, version),
                value_id(dst, ns, channel, version),
            )
            blob = rec.inline.get(namer.channel(src, ns, channel))
            old_leaf = namer.value(src, ns, channel, version)
            if blob is not None:
                inline[namer.channel(dst, ns, channel)] = reseal(blob, old_id, new_id, what)
            elif old_leaf in rec.objects:
                new_leaf = namer.value(dst, ns, channel, version)
                leaves.add(new_leaf)
                put_object(
                    saver._key(src, old_leaf), saver._key(dst, new_leaf), old_id, new_id, what
                )
        same_ref = stale_only and src == dst and sealer.key_id_of(rec.thread_ref) == active
        new_rec = it.CheckpointRecord(
            pk=pk,
            sk=sk,
            body=reseal(rec.body, body_id(src, ns, cid), body_id(dst, ns, cid), what),
            metadata=reseal(
                rec.metadata, metadata_id(src, ns, cid), metadata_id(dst, ns, cid), what
            ),
            thread_ref=rec.thread_ref if same_ref else codec.seal_ref(pk, sk, dst, ns),
            run_key=rec.run_key,
            objects=frozenset(leaves),
            inline=inline,
        )
        if not same_ref:
            out.blobs += 1
        out.items.append((it.checkpoint_item(rec), it.checkpoint_item(new_rec)))
        for w in e.writes:
            task_id, _ = codec.open_ref(w.pk, w.sk, w.task_ref, what)
            wsk = writes_sk(ns_name, cid, namer.task(dst, ns, cid, task_id))
            new_w = it.WritesRecord(
                pk=pk,
                sk=wsk,
                task_ref=reseal(w.task_ref, ref_id(w.pk, w.sk), ref_id(pk, wsk), what),
            )
            for idx, stored in w.writes.items():
                old_id, new_id = (
                    write_id(src, ns, cid, task_id, idx),
                    write_id(dst, ns, cid, task_id, idx),
                )
                if isinstance(stored, bytes):
                    new_w.writes[idx] = reseal(stored, old_id, new_id, what)
                    continue
                old_leaf, _ = it.split_write_ref(stored)
                old_key = saver._key(src, old_leaf)
                channel, _ = codec.open_write(src, ns, cid, task_id, idx, fetched[old_key], what)
                new_leaf = (
                    old_leaf
                    if src == dst
                    else namer.write(dst, ns, cid, task_id, idx, uuid.uuid4().hex)
                )
                put_object(old_key, saver._key(dst, new_leaf), old_id, new_id, what)
                new_w.writes[idx] = it.write_ref(new_leaf, namer.channel(dst, ns, channel))
            if w.bundle:
                old_key = saver._key(src, w.bundle)
                bundle = it.unpack_bundle(fetched[old_key])
                resealed = {
                    i: reseal(
                        b,
                        write_id(src, ns, cid, task_id, i),
                        write_id(dst, ns, cid, task_id, i),
                        what,
                    )
                    for i, b in bundle.items()
                }
                new_leaf = (
                    w.bundle
                    if src == dst
                    else namer.write(dst, ns, cid, task_id, len(bundle), uuid.uuid4().hex)
                )
                if src != dst or any(resealed[i] is not bundle[i] for i in bundle):
                    out.objects.append((saver._key(dst, new_leaf), it.pack_bundle(resealed)))
                new_w.bundle = new_leaf
            out.items.append((it.writes_item(w), it.writes_item(new_w)))
    return out


def copy_thread(saver: S3DynamoSaver, src: str, dst: str) -> None:
    pk = saver.namer.thread(dst)
    existing, _ = saver.index.query(pk, limit=1, keys_only=True)
    if existing:
        raise ThreadExistsError(
            f"copy_thread target {dst!r} already has checkpoints; expected an empty thread. "
            "Delete it first (delete_thread) or copy to a new thread id"
        )
    entries = saver._thread_entries(src, None)
    if not entries:
        return
    plan = rewrite_thread(saver, src, dst, entries, stale_only=False)
    saver.objects.put_many(plan.objects)
    saver.index.batch_write(puts=[new for _, new in plan.items])


def reencrypt(saver: S3DynamoSaver, thread_ids: Sequence[str] | None) -> int:
    """Rewrite every blob not sealed under the active key; returns how many."""
    if thread_ids is None:
        thread_ids = sorted({e.tid for e in saver._scan_entries(None)})
    total = 0
    for tid in thread_ids:
        for _attempt in range(REENCRYPT_ATTEMPTS):
            entries = saver._thread_entries(tid, None)
            plan = rewrite_thread(saver, tid, tid, entries, stale_only=True)
            # Objects are overwritten in place: same name, same identity, same value.
            parallel(saver.objects.overwrite, plan.objects)
            changed = [(old, new) for old, new in plan.items if old != new]
            applied = parallel(lambda pair: saver.index.update_if_unchanged(*pair), changed)
            total += plan.blobs
            if all(applied):
                break
            # A concurrent writer changed an item between read and update: read again.
        else:
            raise StorageError(
                f"reencrypt of thread {tid!r}: items kept changing under concurrent writes "
                f"for {REENCRYPT_ATTEMPTS} attempts; run it again when the thread is quieter"
            )
    return total


def delete_for_runs(saver: S3DynamoSaver, run_ids: Sequence[str]) -> None:
    run_keys = [saver.namer.run(str(r)) for r in dict.fromkeys(run_ids)]
    found = [key for keys in parallel(saver.index.run_keys, run_keys) for key in keys]

    def item_keys(pk_sk: tuple[str, str]) -> list[it.Item]:
        pk, sk = pk_sk
        return [
            it.item_key(i)
            for i in saver.index.query_all(pk, prefix=sk, keys_only=True)
            if it.owner_sk(i["sk"]["S"]) == sk
        ]

    doomed = [k for keys in parallel(item_keys, found) for k in keys]
    if doomed:
        saver.index.batch_write(deletes=doomed)


def prune_keep_latest(saver: S3DynamoSaver, tid: str) -> None:
    """Keep each namespace's latest checkpoint and the ancestors (with their writes)
    that DeltaChannel reconstruction of it still needs; delete the rest."""
    pk = saver.namer.thread(tid)
    raw = list(saver.index.query_all(pk))
    entries = saver._group(raw, known_tid=tid)
    by_ns: dict[str, dict[str, _Entry]] = {}
    for e in entries:
        by_ns.setdefault(e.ns, {})[e.record.checkpoint_id] = e
    kept_sks: set[str] = set()
    for chain in by_ns.values():
        latest = chain[max(chain)]
        kept_sks |= {e.record.sk for e in _needed_chain(saver, latest, chain)}
    doomed: list[it.Item] = []
    dropped_leaves: set[str] = set()
    kept_leaves: set[str] = set()
    for item in raw:
        sk = item["sk"]["S"]
        if it.owner_sk(sk) in kept_sks:
            kept_leaves |= it.referenced_leaves(item)
        else:
            doomed.append(it.item_key(item))
            dropped_leaves |= it.referenced_leaves(item)
    if doomed:
        saver.index.batch_write(deletes=doomed)
    orphaned = sorted(dropped_leaves - kept_leaves)
    if orphaned:
        saver.objects.delete_many([saver._key(tid, leaf) for leaf in orphaned])


def _needed_chain(saver: S3DynamoSaver, latest: _Entry, chain: dict[str, _Entry]) -> list[_Entry]:
    """The latest checkpoint plus its ancestors back to the nearest stored value of every
    DeltaChannel (the channels named in `counters_since_delta_snapshot`)."""
    tid, ns = latest.tid, latest.ns
    metadata: dict[str, Any] = saver._open_metadata(latest) or {}
    remaining = set(metadata.get("counters_since_delta_snapshot") or {})
    needed = [latest]
    cursor: _Entry | None = latest
    while cursor is not None and remaining:
        rec = cursor.record
        body = saver.codec.open_body(
            tid, ns, rec.checkpoint_id, rec.body, describe(tid, ns, rec.checkpoint_id)
        )
        remaining -= set(saver.stored_values(tid, ns, rec, body))
        parent = body.get("parent")
        cursor = chain.get(parent) if parent and remaining else None
        if cursor is not None:
            needed.append(cursor)
    return needed
