"""`get_delta_channel_history` straight from the index.

LangGraph's default walks the parent chain with one `get_tuple` per ancestor (a Query and
an S3 wave each). Here one descending Query over the namespace, bounded above by the
target, returns the ancestors and their writes together (a 30-turn thread fits one 1 MB
page); the chain is followed in memory, and the seeds and the few writes kept in S3 come
back in one parallel wave. Only on-path ancestors count: a fork's other branch shares
the namespace but not the chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite, writes_sort_key

from langgraph.checkpoint.s3dynamo import items as it
from langgraph.checkpoint.s3dynamo.config import describe
from langgraph.checkpoint.s3dynamo.naming import SEPARATOR, checkpoint_sk

if TYPE_CHECKING:
    from langgraph.checkpoint.s3dynamo.saver import S3DynamoSaver

# Above every checkpoint id, so "latest" needs no id to bound the Query.
_TOP = "\uffff"


def delta_channel_history(
    saver: S3DynamoSaver, tid: str, ns: str, cid: str | None, channels: Sequence[str]
) -> Mapping[str, DeltaChannelHistory]:
    if not channels:
        return {}
    namer, codec = saver.namer, saver.codec
    pk, ns_name = namer.thread(tid), namer.namespace(tid, ns)
    records: dict[str, it.CheckpointRecord] = {}
    writes: dict[str, list[it.WritesRecord]] = {}
    pages = saver.index.query_all(
        pk,
        lower=ns_name + SEPARATOR,
        upper=checkpoint_sk(ns_name, cid) if cid else ns_name + SEPARATOR + _TOP,
        descending=True,
    )

    def load(wanted: str | None) -> bool:
        """Read pages until checkpoint `wanted` (None: the newest one) has been seen;
        descending order means all its writes have been seen too."""
        for item in pages:
            if it.is_writes_item(item):
                w = it.parse_writes(item)
                writes.setdefault(w.checkpoint_id, []).append(w)
                continue
            rec = it.parse_checkpoint(item)
            records[rec.checkpoint_id] = rec
            if wanted is None or rec.checkpoint_id == wanted:
                return True
            if rec.checkpoint_id < wanted:
                return False
        return wanted in records

    if not load(cid):
        return {ch: {"writes": []} for ch in channels}
    target = cid or max(records)
    tag_of = {namer.channel(tid, ns, ch): ch for ch in channels}
    remaining = set(channels)
    # channel -> (sort key, checkpoint, opened value, or the object key to fetch it from)
    collected: dict[str, list[tuple[tuple[str, str, int], str, Any, str | None]]] = {
        ch: [] for ch in channels
    }
    seeds: dict[str, tuple[str, str, bytes | str]] = {}
    bundles: list[tuple[str, str, str, str, frozenset[str]]] = []
    body = codec.open_body(tid, ns, target, records[target].body, describe(tid, ns, target))
    cursor: str | None = body.get("parent")
    while cursor is not None and remaining:
        if cursor not in records and not load(cursor):
            break
        rec = records[cursor]
        what = describe(tid, ns, cursor)
        body = codec.open_body(tid, ns, cursor, rec.body, what)
        # Writes at an ancestor produced its child, so the seed ancestor's own writes count.
        for w in writes.get(cursor, []):
            task_id, task_path = codec.open_ref(w.pk, w.sk, w.task_ref, what)
            for idx, stored in w.writes.items():
                order = writes_sort_key(task_path, task_id, idx)
                if isinstance(stored, str):
                    leaf, tag = it.split_write_ref(stored)
                    channel = tag_of.get(tag or "")
                    if channel in remaining:
                        collected[channel].append((order, cursor, None, saver._key(tid, leaf)))
                    continue
                channel, value = codec.open_write(tid, ns, cursor, task_id, idx, stored, what)
                if channel in remaining:
                    collected[channel].append((order, cursor, value, None))
            if w.bundle:
                key = saver._key(tid, w.bundle)
                bundles.append((cursor, task_id, task_path, key, frozenset(remaining)))
        for channel, (version, blob, seed_leaf) in saver.stored_values(tid, ns, rec, body).items():
            if channel in remaining:
                seeds[channel] = (cursor, version, blob or saver._key(tid, seed_leaf or ""))
                remaining.discard(channel)
        cursor = body.get("parent")

    wanted = [s for _, _, s in seeds.values() if isinstance(s, str)]
    wanted += [k for entries in collected.values() for *_, k in entries if k is not None]
    wanted += [b[3] for b in bundles]
    fetched = saver.objects.get_many(wanted) if wanted else {}
    for at, task_id, task_path, key, open_channels in bundles:
        for idx, blob in it.unpack_bundle(fetched[key]).items():
            channel, value = codec.open_write(
                tid, ns, at, task_id, idx, blob, describe(tid, ns, at)
            )
            if channel in open_channels:
                order = writes_sort_key(task_path, task_id, idx)
                collected[channel].append((order, at, value, None))

    result: dict[str, DeltaChannelHistory] = {}
    for channel in channels:
        # Oldest checkpoint first; within one, the order live execution applied them in.
        ordered = sorted(collected[channel], key=lambda e: (e[1], e[0]))
        pending: list[PendingWrite] = []
        for (_, task_id, idx), at, value, source in ordered:
            if source is not None:
                what = describe(tid, ns, at)
                _, value = codec.open_write(tid, ns, at, task_id, idx, fetched[source], what)
            pending.append((task_id, channel, value))
        entry: DeltaChannelHistory = {"writes": pending}
        if channel in seeds:
            at, version, stored = seeds[channel]
            blob = fetched[stored] if isinstance(stored, str) else stored
            what = describe(tid, ns, at)
            entry["seed"] = codec.open_value(tid, ns, channel, version, blob, what)
        result[channel] = entry
    return result
