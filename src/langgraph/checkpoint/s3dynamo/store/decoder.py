"""Turning entries into LangGraph's checkpoint tuples: one parallel wave of object reads
for every checkpoint being decoded, then each tuple's values deserialized as it is taken.

Listing newest first, a checkpoint named as a parent by one listed before it has a child,
so nothing of it can change any more: it is kept opened (`Skeleton`) for the history
walks of `get_delta_channel_history`, which then read nothing again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, PendingWrite, writes_sort_key

from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.config.runnable_config import make_config
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.store.finder import Entry
from langgraph.checkpoint.s3dynamo.store.handoff import Handoff
from langgraph.checkpoint.s3dynamo.store.walker import STORE_KEYS, Blobs, Typed, ValueBlob, Walker

if TYPE_CHECKING:
    from langgraph.checkpoint.s3dynamo.list_reuse import GrowingLists

# Checkpoints whose values are fetched in one S3 wave while listing.
LIST_PAGE = 32
# Checkpoints a history walk keeps opened: a few long threads' worth.
SKELETONS = 4096


class KeptWrite(NamedTuple):
    """One pending write of a kept checkpoint: opened (channel and serialized data) when
    it was inline, else where its object is (`key`) and its channel tag."""

    order: tuple[str, str, int]
    task_id: str
    idx: int
    channel: str | None
    typed: Typed | None
    key: str | None = None
    tag: str | None = None
    # The thread it was written for, when a copy shares it.
    owner: str | None = None


class KeptBundle(NamedTuple):
    task_id: str
    task_path: str
    key: str
    owner: str | None = None


class Skeleton(NamedTuple):
    """A checkpoint that has a child, opened: its parent, its values as the walk placed
    them, and its writes, inline ones decrypted and decompressed but not deserialized. None of
    it changes once a child exists (the writes that produced the child are all in), so a
    history walk keeps it and never reads, decrypts or decompresses it again; each walk
    deserializes only the writes it returns, into objects of its own."""

    parent: str | None
    values: tuple[ValueBlob, ...]
    writes: tuple[KeptWrite, ...]
    bundles: tuple[KeptBundle, ...] = ()


class Decoder:
    def __init__(
        self,
        walker: Walker,
        handoff: Handoff,
    ) -> None:
        self.walker = walker
        # Where the values of checkpoints read lately are stored: the parent of the next
        # put, so unchanged values are never uploaded again (see `handoff.py`).
        self.handoff = handoff
        self.skeletons: Lru[tuple[str, str, str], Skeleton] = Lru(SKELETONS)

    def tuples(
        self, entries: Iterable[Entry], filter: Mapping[str, Any] | None, limit: int | None
    ) -> Iterator[CheckpointTuple]:
        """Decode entries page by page: metadata first (filtering costs no object
        request), then one wave per page for the survivors' values."""
        from langgraph.checkpoint.s3dynamo.list_reuse import GrowingLists  # listings only

        remaining = limit
        page: list[Entry] = []
        parents: set[tuple[str, str, str]] = set()
        lists = GrowingLists(self.walker.codec.serde)
        for entry in entries:
            if filter:
                md = self.walker.open_metadata(entry)
                if not all(md.get(k) == v for k, v in filter.items()):
                    continue
            page.append(entry)
            if remaining is not None:
                remaining -= 1
                if remaining == 0:
                    break
            if len(page) >= LIST_PAGE:
                yield from self.decode(page, parents=parents, lists=lists)
                page = []
        if page:
            yield from self.decode(page, parents=parents, lists=lists)

    def decode(
        self,
        entries: Sequence[Entry],
        *,
        remember: bool = False,
        parents: set[tuple[str, str, str]] | None = None,
        lists: GrowingLists | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Turn entries into checkpoint tuples with one parallel wave for all of them.
        With `remember`, where their values are stored is kept for the next put. With
        `parents` (listing newest first), the parents of these entries are added to it,
        and every entry found there is kept opened for history walks (`Skeleton`). With
        `lists`, a list value that begins the one listed before it is copied from that
        one rather than deserialized again (`list_reuse.py`).

        The wave is sent before the first tuple is yielded; each tuple's values are then
        deserialized as it is taken, so a caller walking a history holds the objects of
        the snapshot it is at, not those of a whole page."""
        walks = [self.walker.walk(entry) for entry in entries]
        opened: dict[tuple[str, int], tuple[str, Typed]] = {}
        if parents is not None:
            for blobs in walks:
                if (parent := blobs.body.get("parent")) is not None:
                    parents.add((blobs.entry.tid, blobs.entry.ns, parent))
            for blobs in walks:
                e = blobs.entry
                key = (e.tid, e.ns, e.checkpoint_id)
                if key in parents and self.skeletons.get(key) is None:
                    kept = self.skeleton_of(blobs)
                    self.skeletons.put(key, kept)
                    # Its inline writes are now open: the tuple deserializes those.
                    opened.update(
                        {
                            (_task_key(e, k.task_id), k.idx): (k.channel, k.typed)
                            for k in kept.writes
                            if k.channel is not None and k.typed is not None
                        }
                    )
        if remember:
            for blobs in walks:
                e = blobs.entry
                self.handoff.keep(e.tid, e.ns, e.checkpoint_id, blobs.stored)
        needed: dict[str, str] = {}
        for blobs in walks:
            needed.update(blobs.keys())
        fetched = self.walker.objects.fetch(needed) if needed else {}
        bases: dict[str, Typed] = {}  # many deltas share one base
        return (self._assemble(blobs, fetched, bases, lists, opened) for blobs in walks)

    def _assemble(
        self,
        blobs: Blobs,
        fetched: Mapping[str, bytes],
        bases: dict[str, Typed],
        lists: GrowingLists | None,
        opened: Mapping[tuple[str, int], tuple[str, Typed]],
    ) -> CheckpointTuple:
        entry, body = blobs.entry, dict(blobs.body)
        walker = self.walker
        channel_values: dict[str, Any] = {}
        for value in blobs.values:
            typed = walker.value_data(entry, value, fetched, bases)
            channel_values[value.channel] = (
                lists.load(value.channel, typed) if lists else self.walker.codec.load(typed)
            )
        found: list[tuple[tuple[str, str, int], str, str, Any]] = []
        for w in blobs.writes:
            order = writes_sort_key(w.task_path, w.task_id, w.idx)
            kept = opened.get((_task_key(entry, w.task_id), w.idx)) if w.blob else None
            channel, typed = kept or walker.write_data(entry, w, fetched)
            found.append((order, w.task_id, channel, typed))
        for b in blobs.bundles:
            for idx, (channel, typed) in walker.bundle_writes(
                entry, b.task_id, b.key, fetched, b.owner
            ).items():
                found.append(
                    (writes_sort_key(b.task_path, b.task_id, idx), b.task_id, channel, typed)
                )
        pending: list[PendingWrite] = [
            (task_id, channel, self.walker.codec.load(typed))
            for _, task_id, channel, typed in sorted(found, key=lambda f: f[0])
        ]
        if blobs.lost:
            raise IntegrityError(
                f"{entry.what}: {len(blobs.lost)} stored channel value(s) are missing from "
                "its index item; the item was altered"
            )
        parent = body.get("parent")
        tid, ns, cid = entry.tid, entry.ns, entry.checkpoint_id
        shown = {k: v for k, v in body.items() if k not in STORE_KEYS}
        checkpoint: Checkpoint = {**shown, "channel_values": channel_values}  # type: ignore[typeddict-item]
        return CheckpointTuple(
            config=make_config(tid, ns, cid),
            checkpoint=checkpoint,
            metadata=walker.open_metadata(entry),
            parent_config=make_config(tid, ns, parent) if parent else None,
            pending_writes=pending,
        )

    # -------------------------------------------------------- history walks

    def skeleton_of(self, blobs: Blobs) -> Skeleton:
        """Open a checkpoint that has a child (see `Skeleton`)."""
        entry = blobs.entry
        writes: list[KeptWrite] = []
        for w in blobs.writes:
            order = writes_sort_key(w.task_path, w.task_id, w.idx)
            if w.blob is None:
                writes.append(KeptWrite(order, w.task_id, w.idx, None, None, w.key, w.tag, w.owner))
                continue
            channel, typed = self.walker.write_data(entry, w, {})
            writes.append(KeptWrite(order, w.task_id, w.idx, channel, typed))
        bundles = tuple(KeptBundle(b.task_id, b.task_path, b.key, b.owner) for b in blobs.bundles)
        return Skeleton(blobs.body.get("parent"), tuple(blobs.values), tuple(writes), bundles)

    def skeleton(self, tid: str, ns: str, cid: str) -> Skeleton | None:
        return self.skeletons.get((tid, ns, cid))

    def keep_skeleton(self, tid: str, ns: str, cid: str, skeleton: Skeleton) -> None:
        self.skeletons.put((tid, ns, cid), skeleton)


def _task_key(entry: Entry, task_id: str) -> str:
    return f"{entry.checkpoint_id}/{task_id}"
