"""`get_delta_channel_history` straight from the index.

LangGraph's default walks the parent chain with one `get_tuple` per ancestor (a query and
an object wave each). Here one descending query over the namespace, bounded above by the
target, returns the ancestors and their writes together (a 30-turn thread fits one 1 MB
page); the chain is followed in memory, and the seeds and the few writes kept as objects
come back in one parallel wave. Only on-path ancestors count: a fork's other branch
shares the namespace but not the chain.

A full history read (`get_state_history`) asks this for every checkpoint, newest first,
and each walk covers the next one's chain. So every ancestor a walk opens is kept
(`Decoder.keep_skeleton`: a checkpoint with a child never changes), and the walks
after the first read nothing from the index: the index work grows with the history's
length, not its square. A kept ancestor holds its inline writes decrypted and
decompressed, so later walks skip the writes of other channels without opening them, and
only deserialize the ones they return: values are still made per call, so no caller
shares a mutable object.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite, writes_sort_key

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine
from langgraph.checkpoint.s3dynamo.identities import CheckpointAt
from langgraph.checkpoint.s3dynamo.records import CheckpointRecord, Record, WritesRecord
from langgraph.checkpoint.s3dynamo.runnable_config import describe
from langgraph.checkpoint.s3dynamo.store.decoder import Decoder, Skeleton
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder
from langgraph.checkpoint.s3dynamo.store.walker import ValueBlob, Walker


class Parts(NamedTuple):
    """What a history read uses of its thread store."""

    finder: Finder
    walker: Walker
    decoder: Decoder
    engine: BlobEngine


class _Write(NamedTuple):
    """A write found on the chain: opened already (serialized data), or the object key
    to open it from."""

    order: tuple[str, str, int]
    at: str
    typed: tuple[str, bytes] | None
    source: str | None
    owner: str | None = None  # the thread it was written for, when a copy shares it


class _Bundle(NamedTuple):
    at: str
    task_id: str
    task_path: str
    key: str
    channels: frozenset[str]
    owner: str | None = None


class _Seed(NamedTuple):
    at: str
    value: ValueBlob


def delta_channel_history(
    parts: Parts, tid: str, ns: str, cid: str | None, channels: Sequence[str]
) -> Mapping[str, DeltaChannelHistory]:
    if not channels:
        return {}
    finder, walker, decoder, engine = parts
    namer, codec = walker.namer, walker.codec
    records: dict[str, CheckpointRecord] = {}
    writes: dict[str, list[WritesRecord]] = {}
    pages: Iterator[Record] | None = None

    def load(wanted: str | None) -> bool:
        """Read pages until checkpoint `wanted` (None: the newest one) has been seen;
        descending order means all its writes have been seen too. One query per walk,
        from the first checkpoint not kept downwards (parents are older than their
        children); a walk that finds kept skeletons down to its seed reads nothing."""
        nonlocal pages
        if pages is None:
            pages = engine.stream(finder.namespace_records(tid, ns, upper_id=wanted))
        for rec in pages:
            if isinstance(rec, WritesRecord):
                writes.setdefault(rec.checkpoint_id, []).append(rec)
                continue
            records[rec.checkpoint_id] = rec
            if wanted is None or rec.checkpoint_id == wanted:
                return True
            if rec.checkpoint_id < wanted:
                return False
        return wanted in records

    def skeleton(at: str) -> Skeleton | None:
        """The opened checkpoint `at`, kept or read; kept only as an ancestor, whose
        writes are all in (see `Skeleton`)."""
        kept = decoder.skeleton(tid, ns, at)
        if kept is not None:
            return kept
        if at not in records and not load(at):
            return None
        return decoder.skeleton_of(walker.walk(Entry(tid, ns, records[at], writes.get(at, []))))

    if cid is None:
        if not load(None):
            return {ch: {"writes": []} for ch in channels}
        cid = max(records)
    top = skeleton(cid)
    if top is None:
        return {ch: {"writes": []} for ch in channels}
    tag_of = {namer.channel(tid, ns, ch): ch for ch in channels}
    remaining = set(channels)
    collected: dict[str, list[_Write]] = {ch: [] for ch in channels}
    seeds: dict[str, _Seed] = {}
    bundles: list[_Bundle] = []
    cursor = top.parent
    while cursor is not None and remaining:
        link = skeleton(cursor)
        if link is None:
            break
        decoder.keep_skeleton(tid, ns, cursor, link)
        # Writes at an ancestor produced its child, so the seed ancestor's own writes count.
        for kw in link.writes:
            if kw.channel is None:
                channel = tag_of.get(kw.tag or "")
                if channel in remaining:
                    collected[channel].append(_Write(kw.order, cursor, None, kw.key, kw.owner))
            elif kw.channel in remaining:
                collected[kw.channel].append(_Write(kw.order, cursor, kw.typed, None))
        for kb in link.bundles:
            bundles.append(
                _Bundle(cursor, kb.task_id, kb.task_path, kb.key, frozenset(remaining), kb.owner)
            )
        for value in link.values:
            if value.channel in remaining:
                seeds[value.channel] = _Seed(cursor, value)
                remaining.discard(value.channel)
        cursor = link.parent

    needed = {k: describe(tid, ns, s.at) for s in seeds.values() for k in s.value.object_keys()}
    for found in collected.values():
        needed.update({w.source: describe(tid, ns, w.at) for w in found if w.source})
    needed.update({b.key: describe(tid, ns, b.at) for b in bundles})
    fetched = engine.objects.fetch(needed) if needed else {}
    for b in bundles:
        bundle_at = CheckpointAt(tid, ns, b.at)
        bundled = walker.bundle_writes(bundle_at, b.task_id, b.key, fetched, b.owner)
        for idx, (channel, data) in bundled.items():
            if channel in b.channels:
                order = writes_sort_key(b.task_path, b.task_id, idx)
                collected[channel].append(_Write(order, b.at, data, None))

    result: dict[str, DeltaChannelHistory] = {}
    for channel in channels:
        # Oldest checkpoint first; within one, the order live execution applied them in.
        ordered = sorted(collected[channel], key=lambda w: (w.at, w.order))
        pending: list[PendingWrite] = []
        for (_, task_id, idx), at, typed, source, owner in ordered:
            if typed is None:
                blob = fetched[source or ""]
                where = CheckpointAt(tid, ns, at)
                _, typed = walker.write_blob_data(where, task_id, idx, blob, owner)
            pending.append((task_id, channel, codec.load(typed)))
        entry_out: DeltaChannelHistory = {"writes": pending}
        if channel in seeds:
            seed = seeds[channel]
            opened = walker.value_data(CheckpointAt(tid, ns, seed.at), seed.value, fetched)
            entry_out["seed"] = codec.load(opened)
        result[channel] = entry_out
    return result
