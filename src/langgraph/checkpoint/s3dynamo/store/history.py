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
from langgraph.checkpoint.s3dynamo.config.runnable_config import describe
from langgraph.checkpoint.s3dynamo.format.records import CheckpointRecord, Record, WritesRecord
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt
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
    walk = _Walk(parts, tid, ns)
    if cid is None:
        if not walk.load(None):
            return {ch: {"writes": []} for ch in channels}
        cid = max(walk.records)
    top = walk.skeleton(cid)
    if top is None:
        return {ch: {"writes": []} for ch in channels}
    return walk.history(top.parent, channels)


class _Walk:
    """One walk up a namespace's parent chain (module docstring)."""

    def __init__(self, parts: Parts, tid: str, ns: str) -> None:
        self.parts, self.tid, self.ns = parts, tid, ns
        self.records: dict[str, CheckpointRecord] = {}
        self.writes: dict[str, list[WritesRecord]] = {}
        self.pages: Iterator[Record] | None = None

    def load(self, wanted: str | None) -> bool:
        """Read pages until checkpoint `wanted` (None: the newest one) has been seen;
        descending order means all its writes have been seen too. One query per walk,
        from the first checkpoint not kept downwards (parents are older than their
        children); a walk that finds kept skeletons down to its seed reads nothing."""
        if self.pages is None:
            records = self.parts.finder.namespace_records(self.tid, self.ns, upper_id=wanted)
            self.pages = self.parts.engine.stream(records)
        for rec in self.pages:
            if isinstance(rec, WritesRecord):
                self.writes.setdefault(rec.checkpoint_id, []).append(rec)
                continue
            self.records[rec.checkpoint_id] = rec
            if wanted is None or rec.checkpoint_id == wanted:
                return True
            if rec.checkpoint_id < wanted:
                return False
        return wanted in self.records

    def skeleton(self, at: str) -> Skeleton | None:
        """The opened checkpoint `at`, kept or read; kept only as an ancestor, whose
        writes are all in (see `Skeleton`)."""
        kept = self.parts.decoder.skeleton(self.tid, self.ns, at)
        if kept is not None:
            return kept
        if at not in self.records and not self.load(at):
            return None
        entry = Entry(self.tid, self.ns, self.records[at], self.writes.get(at, []))
        return self.parts.decoder.skeleton_of(self.parts.walker.walk(entry))

    def history(
        self, cursor: str | None, channels: Sequence[str]
    ) -> dict[str, DeltaChannelHistory]:
        """Each channel's writes from the ancestor holding its nearest value (its seed)
        down to `cursor`'s child, and the seed."""
        tag_of = {self.parts.walker.namer.channel(self.tid, self.ns, ch): ch for ch in channels}
        remaining = set(channels)
        collected: dict[str, list[_Write]] = {ch: [] for ch in channels}
        seeds: dict[str, _Seed] = {}
        bundles: list[_Bundle] = []
        while cursor is not None and remaining:
            link = self.skeleton(cursor)
            if link is None:
                break
            self.parts.decoder.keep_skeleton(self.tid, self.ns, cursor, link)
            # Writes at an ancestor produced its child: the seed ancestor's own writes count.
            for kw in link.writes:
                channel = tag_of.get(kw.tag or "") if kw.channel is None else kw.channel
                if channel in remaining:
                    found = _Write(kw.order, cursor, kw.typed, kw.key, kw.owner)
                    collected[channel].append(found)
            bundles += [
                _Bundle(cursor, kb.task_id, kb.task_path, kb.key, frozenset(remaining), kb.owner)
                for kb in link.bundles
            ]
            for value in link.values:
                if value.channel in remaining:
                    seeds[value.channel] = _Seed(cursor, value)
                    remaining.discard(value.channel)
            cursor = link.parent
        fetched = self._fetch(collected, seeds, bundles)
        return {ch: self._opened(ch, collected[ch], seeds.get(ch), fetched) for ch in channels}

    def _fetch(
        self, collected: dict[str, list[_Write]], seeds: dict[str, _Seed], bundles: list[_Bundle]
    ) -> Mapping[str, bytes]:
        """The objects seeds and writes need, in one wave; bundled writes unpacked."""
        tid, ns = self.tid, self.ns
        needed = {k: describe(tid, ns, s.at) for s in seeds.values() for k in s.value.object_keys()}
        for found in collected.values():
            needed.update({w.source: describe(tid, ns, w.at) for w in found if w.source})
        needed.update({b.key: describe(tid, ns, b.at) for b in bundles})
        fetched = self.parts.engine.objects.fetch(needed) if needed else {}
        walker = self.parts.walker
        for b in bundles:
            bundled = walker.bundle_writes(
                CheckpointAt(tid, ns, b.at), b.task_id, b.key, fetched, b.owner
            )
            for idx, (channel, data) in bundled.items():
                if channel in b.channels:
                    order = writes_sort_key(b.task_path, b.task_id, idx)
                    collected[channel].append(_Write(order, b.at, data, None))
        return fetched

    def _opened(
        self, channel: str, found: list[_Write], seed: _Seed | None, fetched: Mapping[str, bytes]
    ) -> DeltaChannelHistory:
        walker, codec = self.parts.walker, self.parts.walker.codec
        pending: list[PendingWrite] = []
        # Oldest checkpoint first; within one, the order live execution applied them in.
        for (_, task_id, idx), at, typed, source, owner in sorted(
            found, key=lambda w: (w.at, w.order)
        ):
            if typed is None:
                where = CheckpointAt(self.tid, self.ns, at)
                _, typed = walker.write_blob_data(where, task_id, idx, fetched[source or ""], owner)
            pending.append((task_id, channel, codec.load(typed)))
        out: DeltaChannelHistory = {"writes": pending}
        if seed is not None:
            seeded = CheckpointAt(self.tid, self.ns, seed.at)
            out["seed"] = codec.load(walker.value_data(seeded, seed.value, fetched))
        return out
