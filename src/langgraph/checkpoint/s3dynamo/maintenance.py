"""Whole-thread operations: copy, prune, delete runs, re-encrypt.

Each reads a thread's records with one paged query, works in memory, and writes in the
commit order of `thread_store.py`: objects first, records last. Objects an operation
leaves unreferenced are deleted at the end when this operation is what orphaned them
(prune), or left to garbage collection (`gc.py`), which only removes objects no record
references.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo.codec import (
    body_id,
    delta_id,
    metadata_id,
    ref_id,
    value_id,
    write_id,
)
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, StorageError, ThreadExistsError
from langgraph.checkpoint.s3dynamo.naming import checkpoint_sk, parse_sk, writes_sk
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ItemKey,
    Record,
    WritesRecord,
    owner_sk,
    pack_bundle,
    referenced_leaves,
    split_write_ref,
    unpack_bundle,
    write_ref,
)
from langgraph.checkpoint.s3dynamo.thread_store import Entry, Skipped, ThreadStore, warn_skipped
from langgraph.checkpoint.s3dynamo.waves import parallel

REENCRYPT_ATTEMPTS = 5


@dataclass
class Rewrite:
    """What rewriting a thread produces: objects to upload, then records to write."""

    objects: list[tuple[str, bytes]] = field(default_factory=list)
    # (record as read, record to write)
    records: list[tuple[Record, Record]] = field(default_factory=list)
    blobs: int = 0


def rewrite_thread(
    store: ThreadStore, src: str, dst: str, entries: Sequence[Entry], *, stale_only: bool
) -> Rewrite:
    """Re-seal every blob of `src` for `dst` (a copy), or, with `stale_only` and
    `src == dst`, only the blobs not sealed under the active key (a rotation)."""
    codec, namer, sealer = store.codec, store.namer, store.sealer
    active = sealer.keyring.active if sealer.keyring else None
    # A rotation must see what is stored, not what this process cached before.
    fetched = store.fetch(store.referenced_keys(entries), cached=not stale_only)
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
        body = store.open_body(e)
        ns_name = namer.namespace(dst, ns)
        sk = checkpoint_sk(ns_name, cid)
        inline: dict[str, bytes] = {}
        leaves: set[str] = set()
        for channel, value in store.stored_values(e, body).items():
            old_id = value_id(src, ns, channel, value.version)
            new_id = value_id(dst, ns, channel, value.version)
            if value.blob is not None and value.base is not None:
                # A delta: its base object goes along, and the delta is bound to both.
                base_old_id = value_id(src, ns, channel, value.base)
                base_key = store.object_key(src, namer.value(src, ns, channel, value.base))
                new_base = namer.value(dst, ns, channel, value.base)
                leaves.add(new_base)
                base_new_id = value_id(dst, ns, channel, value.base)
                put_object(
                    base_key, store.object_key(dst, new_base), base_old_id, base_new_id, what
                )
                inline[namer.channel(dst, ns, channel)] = reseal_delta(
                    value.blob,
                    delta_id(src, ns, channel, value.version, value.base),
                    delta_id(dst, ns, channel, value.version, value.base),
                    base_key,
                    base_old_id,
                    what,
                )
            elif value.blob is not None:
                inline[namer.channel(dst, ns, channel)] = reseal(value.blob, old_id, new_id, what)
            elif value.leaf is not None:
                new_leaf = namer.value(dst, ns, channel, value.version)
                leaves.add(new_leaf)
                old_key, new_key = (
                    store.object_key(src, value.leaf),
                    store.object_key(dst, new_leaf),
                )
                put_object(old_key, new_key, old_id, new_id, what)
        same_ref = stale_only and src == dst and sealer.key_id_of(rec.thread_ref) == active
        new_rec = CheckpointRecord(
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
            # A copy is new activity on its target; re-encryption is none.
            written_at=rec.written_at if src == dst else store.now(),
        )
        if not same_ref:
            out.blobs += 1
        out.records.append((rec, new_rec))
        for w in e.writes:
            task_id, _ = store.open_task(w, what)
            wsk = writes_sk(ns_name, cid, namer.task(dst, ns, cid, task_id))
            new_w = WritesRecord(
                pk=pk,
                sk=wsk,
                task_ref=reseal(w.task_ref, ref_id(w.pk, w.sk), ref_id(pk, wsk), what),
                written_at=w.written_at if src == dst else store.now(),
            )
            for idx, stored in w.writes.items():
                old_id = write_id(src, ns, cid, task_id, idx)
                new_id = write_id(dst, ns, cid, task_id, idx)
                if isinstance(stored, bytes):
                    new_w.writes[idx] = reseal(stored, old_id, new_id, what)
                    continue
                old_leaf, _ = split_write_ref(stored)
                old_key = store.object_key(src, old_leaf)
                channel, _ = codec.open_write(src, ns, cid, task_id, idx, fetched[old_key], what)
                new_leaf = (
                    old_leaf
                    if src == dst
                    else namer.write(dst, ns, cid, task_id, idx, uuid.uuid4().hex)
                )
                put_object(old_key, store.object_key(dst, new_leaf), old_id, new_id, what)
                new_w.writes[idx] = write_ref(new_leaf, namer.channel(dst, ns, channel))
            if w.bundle:
                old_key = store.object_key(src, w.bundle)
                bundle = unpack_bundle(fetched[old_key])
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
                    out.objects.append((store.object_key(dst, new_leaf), pack_bundle(resealed)))
                new_w.bundle = new_leaf
            out.records.append((w, new_w))
    return out


def copy_keys(store: ThreadStore, src: str, dst: str, entries: Sequence[Entry]) -> set[str]:
    """Sort keys a copy of these entries writes in the target partition."""
    namer, keys = store.namer, set()
    for e in entries:
        ns_name = namer.namespace(dst, e.ns)
        keys.add(checkpoint_sk(ns_name, e.checkpoint_id))
        for w in e.writes:
            task_id, _ = store.open_task(w, e.what)
            keys.add(
                writes_sk(ns_name, e.checkpoint_id, namer.task(dst, e.ns, e.checkpoint_id, task_id))
            )
    return keys


def copy_thread(store: ThreadStore, src: str, dst: str) -> None:
    """Copy `src` to `dst`, resumably. Order: objects, then every writes record (a writes
    record without its checkpoint record is invisible to readers), then the checkpoint
    records one at a time, oldest first. So an interrupted copy leaves the target showing
    a prefix of the source's history, each checkpoint whole with its writes and its
    ancestors: the named intermediate state "partial copy". A repeat sees that the
    target holds only keys this copy writes, skips the checkpoints already there and
    writes the rest; a repeat after a complete copy changes nothing. A target holding any
    other key (its own checkpoints) raises `ThreadExistsError`."""
    entries = store.thread_entries(src)
    present = {r.sk: r for r in store.thread_records(dst)} if src != dst else {}
    if present:
        foreign = set(present) - copy_keys(store, src, dst, entries)
        if foreign:
            raise ThreadExistsError(
                f"copy_thread target {dst!r} already has checkpoints that are not part of a "
                f"copy of {src!r}; expected an empty thread (or an unfinished copy of "
                f"{src!r}, which a repeat completes). Delete it first (delete_thread) or "
                "copy to a new thread id"
            )
    elif src == dst and entries:
        raise ThreadExistsError(f"copy_thread source and target are the same thread {src!r}")
    done = {sk for sk, r in present.items() if isinstance(r, CheckpointRecord)}
    todo = [
        e
        for e in entries
        if checkpoint_sk(store.namer.namespace(dst, e.ns), e.checkpoint_id) not in done
    ]
    if not todo:
        return
    plan = rewrite_thread(store, src, dst, todo, stale_only=False)
    store.upload(plan.objects)
    writes = [new for _, new in plan.records if isinstance(new, WritesRecord)]
    if writes:
        store.index.write_batch(puts=writes)
    checkpoints = [new for _, new in plan.records if isinstance(new, CheckpointRecord)]
    for record in sorted(checkpoints, key=lambda r: r.checkpoint_id):
        # One record per request (a batch applies in no set order); a batch of one, so
        # maintenance needs no permission beyond BatchWriteItem.
        store.index.write_batch(puts=[record])


def reencrypt(store: ThreadStore, thread_ids: Sequence[str] | None) -> tuple[int, list[Skipped]]:
    """Rewrite every blob not sealed under the active key; returns how many, and (over
    the whole table) the threads skipped because they do not open with these keys."""
    skipped: list[Skipped] = []
    table_wide = thread_ids is None
    if thread_ids is None:
        thread_ids = sorted({e.tid for e in store.all_entries(skipped=skipped)})
    total = 0
    for tid in thread_ids:
        for _attempt in range(REENCRYPT_ATTEMPTS):
            entries = store.thread_entries(tid)
            try:
                plan = rewrite_thread(store, tid, tid, entries, stale_only=True)
            except IntegrityError as exc:
                if not table_wide:
                    raise
                skipped.append(Skipped(store.namer.thread(tid), None, str(exc)))
                break
            # Objects are overwritten in place: same name, same identity, same value.
            store.overwrite(plan.objects)
            changed = [(old, new) for old, new in plan.records if old != new]
            applied = parallel(lambda pair: store.index.replace_if_unchanged(*pair), changed)
            total += plan.blobs
            if all(applied):
                break
            # A concurrent writer changed a record between read and update: read again.
        else:
            raise StorageError(
                f"reencrypt of thread {tid!r}: records kept changing under concurrent writes "
                f"for {REENCRYPT_ATTEMPTS} attempts; run it again when the thread is quieter"
            )
    warn_skipped("reencrypt", skipped)
    return total, skipped


def delete_for_runs(store: ThreadStore, run_ids: Sequence[str]) -> None:
    run_keys = [store.namer.run(str(r)) for r in dict.fromkeys(run_ids)]
    found = [key for keys in parallel(store.index.run_checkpoints, run_keys) for key in keys]

    def record_keys(checkpoint: ItemKey) -> list[ItemKey]:
        return [
            k
            for k in store.index.query_keys(checkpoint.pk, prefix=checkpoint.sk)
            if owner_sk(k.sk) == checkpoint.sk
        ]

    doomed = [k for keys in parallel(record_keys, found) for k in keys]
    # Heads first: one may name a checkpoint about to go, and would then hold every later
    # commit there to it. Without a head the next commit is not held to any parent.
    touched: dict[str, set[str]] = {}
    for key in found:
        touched.setdefault(key.pk, set()).add(parse_sk(key.sk)[0])
    for thread_name, ns_names in sorted(touched.items()):
        store.index.drop_heads(thread_name, ns_names)
    if doomed:
        # Interrupted, some of the runs' checkpoints remain, each whole; a repeat finishes.
        store.delete_records(doomed)


def prune_keep_latest(store: ThreadStore, tid: str) -> None:
    """Keep each namespace's latest checkpoint and the ancestors (with their writes)
    that DeltaChannel reconstruction of it still needs; delete the rest."""
    records = store.thread_records(tid)
    by_ns: dict[str, dict[str, Entry]] = {}
    for e in store.group(records, known_tid=tid):
        by_ns.setdefault(e.ns, {})[e.checkpoint_id] = e
    kept_sks: set[str] = set()
    for chain in by_ns.values():
        latest = chain[max(chain)]
        kept_sks |= {e.record.sk for e in needed_chain(store, latest, chain)}
    doomed: list[ItemKey] = []
    dropped_leaves: set[str] = set()
    kept_leaves: set[str] = set()
    for rec in records:
        if owner_sk(rec.sk) in kept_sks:
            kept_leaves |= referenced_leaves(rec)
        else:
            doomed.append(rec.key)
            dropped_leaves |= referenced_leaves(rec)
    if doomed:
        # The kept checkpoints are never touched; of the doomed ones, an interruption
        # leaves the oldest, each with its ancestors and writes. A repeat finishes.
        store.delete_records(doomed)
    orphaned = sorted(dropped_leaves - kept_leaves)
    if orphaned:
        store.objects.delete([store.object_key(tid, leaf) for leaf in orphaned])


def needed_chain(store: ThreadStore, latest: Entry, chain: dict[str, Entry]) -> list[Entry]:
    """The latest checkpoint plus its ancestors back to the nearest stored value of every
    DeltaChannel (the channels named in `counters_since_delta_snapshot`)."""
    metadata: dict[str, Any] = store.open_metadata(latest) or {}
    remaining = set(metadata.get("counters_since_delta_snapshot") or {})
    needed = [latest]
    cursor: Entry | None = latest
    while cursor is not None and remaining:
        body = store.open_body(cursor)
        remaining -= set(store.stored_values(cursor, body))
        parent = body.get("parent")
        cursor = chain.get(parent) if parent and remaining else None
        if cursor is not None:
            needed.append(cursor)
    return needed
