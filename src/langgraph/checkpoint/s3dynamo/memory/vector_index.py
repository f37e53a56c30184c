"""A Store namespace's vector index, sealed, beside its items (`layout.py`: the manifest
`~i`, log entries `~v...`; segments are objects `<pk>/<leaf>`): what lets
`search(query=...)` read what it returns, not what the namespace holds.

- A put with embeddings writes a log entry (its batch's rows, `vectors.pack`, sealed)
  before its items; the items keep their vectors too, so the index can always be rebuilt.
- The manifest names the namespace's segments, sealed objects of rows built from items,
  each immutable under a name of its own (so a process caches them decoded for good).
- A search reads the manifest and the log in one Query, the segments from the engine's
  decoded cache (a GET only the first time a process meets one), and scores every row.
- A search that finds the log over `LOG_MAX` bytes compacts it into a segment (merged with
  the newest while that is at most `MERGE_RATIO` times larger; an item with versions to
  choose from read back consistently), written as one engine plan: the segment, then the
  manifest replaced on its generation; then the folded log entries are deleted, and the
  replaced segments are named for incremental collection.
- A namespace without a manifest (written before the index existed) is ranked from its
  items; that search builds its index from them.
- A namespace's vectors keep their dimensions (the manifest names them): a put or query
  of others is a `VectorDimensionsError` before anything is written or scored, as is an
  embedding of other dimensions than the IndexConfig's (`placed`, `queried`).

Why a search never misses a committed item and never returns a changed one:
docs/RELIABILITY.md, "The Store's vector index".
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.blobs.steps import Batch as BatchStep
from langgraph.checkpoint.s3dynamo.blobs.steps import Fetch, Steps, each
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    InvalidConfigError,
    VectorDimensionsError,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    DESCENDANTS_SK,
    LOG_MARK,
    MANIFEST_SK,
    VECTOR_SK_RANGE,
    is_log_sk,
    log_sk,
    object_key,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory import format, reads
from langgraph.checkpoint.s3dynamo.memory.items import Items
from langgraph.checkpoint.s3dynamo.memory.recent import fingerprint
from langgraph.checkpoint.s3dynamo.memory.rows import Batch, Found, IndexItem, Namespace
from langgraph.checkpoint.s3dynamo.memory.vectors import (
    Marker,
    Pack,
    Row,
    best_first,
    encode,
    pack,
    packs,
    rows_of,
)
from langgraph.checkpoint.s3dynamo.table import Written

# Log bytes a search reads before it compacts them into a segment: 24 KiB keep the
# manifest and log Query within 3.5 read units (eventually consistent, 4 KB a half unit).
LOG_MAX = 24 << 10
# A new segment absorbs the newest one while that holds at most this many times its rows:
# segments stay few (about log2 of the rows over the log's), each row rewritten about as
# often.
MERGE_RATIO = 2
SEGMENT_TYPE = "vectors"
MANIFEST_TYPE = "json"
# Items read back per BatchGetItem when a compaction resolves the log's keys.
RESOLVE_BATCH = 100

# The payload of an item, opened and deserialized by the Store: {"value", "vectors"}.
OpenBody = Callable[[Found], Mapping[str, Any]]
# An item's vectors by field path.
Vectors = dict[str, list[float]]


@dataclass
class View:
    """What a search reads of one namespace's index: its manifest (None: the namespace
    has none yet), its segments opened (oldest first) and its log entries opened."""

    namespace: Namespace
    pk: str
    manifest: IndexItem | None
    # Whether the partition holds the descendants mark (namespaces may lie below).
    marked: bool = False
    segments: list[tuple[str, Pack]] = field(default_factory=list)
    log: list[tuple[IndexItem, Pack]] = field(default_factory=list)
    # Log entries of deletes (`format.tombstones`), folded as the rest is: the sealed
    # ones stand (their rows are in `log` as markers); the item sort keys of those
    # without a seal, hints that hide nothing until a compaction reads the item back.
    tombstones: list[IndexItem] = field(default_factory=list)
    unverified: set[str] = field(default_factory=set)

    @property
    def log_bytes(self) -> int:
        return sum(len(item.blob or b"") for item, _ in self.log) + sum(
            len(item.blob or b"") + 60 for item in self.tombstones
        )


class VectorIndex:
    """The vector indexes of one space's namespaces (module docstring), each read and
    write a protocol (`blobs/steps.py`): its `items`, the engine's decoded segments
    (`opened`) and the Store's opener of payloads."""

    def __init__(
        self, items: Items, opened: Lru[str, tuple[object, int]], open_body: OpenBody
    ) -> None:
        self.items = items
        self.names = items.names
        self.sealer = items.sealer
        self.opened = opened
        self.open_body = open_body
        # The dimensions of each namespace's vectors (by partition) this store checked or
        # wrote: its later puts there read nothing to check them.
        self.known_dims: dict[str, int] = {}

    # ------------------------------------------------------------ sealing

    def _aad(self, namespace: Namespace, what: str, name: str) -> bytes:
        return format.vector_aad(self.names.space, namespace, what, name)

    def _seal(self, namespace: Namespace, what: str, name: str, payload: bytes) -> bytes:
        sealer = self.items.sealer_for(namespace)
        return sealer.seal(SEGMENT_TYPE, payload, self._aad(namespace, what, name))

    def _open(self, namespace: Namespace, what: str, name: str, blob: bytes) -> bytes:
        label = f"vector {what} {name!r} of namespace {namespace!r}"
        _typ, data = self.sealer.open(blob, self._aad(namespace, what, name), label)
        return data

    # ------------------------------------------------------------ writing

    def log_entries(
        self, batch: Batch, vectors: Sequence[Mapping[str, Sequence[float]]]
    ) -> list[IndexItem]:
        """The log entries of a put: one row per vector of each item of `batch`, stamped
        with the item's version and write time (a search gathers an item's from all)."""
        rows = [
            Row(row.key.sk, version, row.updated_ms, path, encode(values))
            for row, version, item in zip(batch.rows, batch.versions, vectors, strict=True)
            for path, values in item.items()
        ]
        at_ms, pk = batch.at_ms, batch.pk
        return [self._log_item(batch.namespace, pk, at_ms, p) for p in packs(rows)]

    def _log_item(self, namespace: Namespace, pk: str, at_ms: int, payload: bytes) -> IndexItem:
        sk = log_sk(at_ms, os.urandom(4).hex())
        item = IndexItem(ItemKey(pk, sk), self._seal(namespace, "log", sk, payload))
        self.items.state().wrote(item.key, fingerprint(item))
        return item

    # ------------------------------------------------------------ reading

    def view(self, namespace: Namespace, *, segments: bool = True) -> Steps[View]:
        """The manifest and the log of one namespace, and whether namespaces lie below it
        (one Query, eventually consistent; again consistently if it misses what this
        process wrote, or a mark it knows of), and its segments (a GET for each this
        process has not opened yet, in one wave) unless told not to."""
        pk, state = self.names.pk(namespace), self.items.state()
        items = yield from reads.index_items(pk, VECTOR_SK_RANGE)
        mine = [k for k in state.written_in(pk) if k.sk.startswith((MANIFEST_SK, LOG_MARK))]
        if state.stale(items, mine) or (
            state.has_marked(pk) and not any(i.key.sk == DESCENDANTS_SK for i in items)
        ):
            items = yield from reads.index_items(pk, VECTOR_SK_RANGE, consistent=True)
        manifest = next((i for i in items if i.key.sk == MANIFEST_SK), None)
        marked = any(i.key.sk == DESCENDANTS_SK for i in items)
        view = View(namespace, pk, manifest, marked)
        tombs: list[Marker] = []
        for item in items:
            if not is_log_sk(item.key.sk):
                continue
            if (tomb := format.tombstone_of(item)) is not None:
                view.tombstones.append(item)
                if format.verified_tombstone(item, self.sealer, self.names.space):
                    tombs.append(Marker(tomb[0], "", tomb[1]))
                else:
                    view.unverified.add(tomb[0])
                continue
            if item.blob is None:
                continue
            payload = self._open(namespace, "log", item.key.sk, item.blob)
            view.log.append((item, Pack(payload, f"vector log of {namespace!r}")))
        if tombs:
            view.log.append((IndexItem(ItemKey(pk, "")), Pack(pack([], tombs), "tombstones")))
        if manifest is not None and segments:
            leaves = [leaf for leaf, _ in self.listing(namespace, manifest)[0]]
            view.segments = yield from self._segments(namespace, pk, leaves)
        return view

    def listing(
        self, namespace: Namespace, manifest: IndexItem
    ) -> tuple[list[tuple[str, int]], set[int] | None]:
        """The segments a manifest names, oldest first, with their rows, and the
        dimensions of their vectors (None from a manifest of an earlier release)."""
        data = self._open(namespace, "manifest", MANIFEST_SK, manifest.blob or b"")
        try:
            listed = json.loads(data)
            segments = [(str(leaf), int(rows)) for leaf, rows in listed["segments"]]
            dims = {int(d) for d in listed["dims"]} if "dims" in listed else None
        except (ValueError, KeyError, TypeError) as exc:
            raise IntegrityError(
                f"vector manifest of {namespace!r} does not parse ({exc})"
            ) from exc
        return segments, dims

    # ------------------------------------------------------------ dimensions

    def check_puts(
        self, embedded: Mapping[tuple[Namespace, str], Mapping[str, Any]]
    ) -> Steps[None]:
        """Refuse, before anything is written, puts whose vectors have other dimensions
        than those their namespace's index holds (written under another IndexConfig): a
        namespace this store has not checked or written is read once (`stored_dims`)."""
        first: dict[Namespace, tuple[str, int]] = {}
        for (ns, key), vectors in embedded.items():
            for vector in vectors.values():
                first.setdefault(ns, (key, len(vector)))
        known = self.known_dims
        unknown = [ns for ns, (_, d) in first.items() if known.get(self.names.pk(ns)) != d]
        found = yield from each([self.stored_dims(ns) for ns in unknown])
        for ns, stored in zip(unknown, found, strict=True):
            key, dims = first[ns]
            if stored - {dims}:
                subject = f"store item {key!r} in namespace {ns!r}"
                raise VectorDimensionsError(subject, dims, stored, ns)
        for ns, (_, dims) in first.items():
            known[self.names.pk(ns)] = dims

    def stored_dims(self, namespace: Namespace) -> Steps[set[int]]:
        """The dimensions of the vectors a namespace's index holds: its log's and its
        manifest's (one Query, as a search's); under a manifest of an earlier release,
        which names none, those of its smallest segment (a GET unless this process has
        opened it)."""
        view = yield from self.view(namespace, segments=False)
        dims = {p.dims for _, p in view.log if len(p)}
        if view.manifest is not None:
            segments, listed = self.listing(namespace, view.manifest)
            if listed is None and (filled := [s for s in segments if s[1]]):
                leaf = min(filled, key=lambda s: s[1])[0]
                opened = yield from self._segments(namespace, view.pk, [leaf])
                listed = {p.dims for _, p in opened}
            dims |= listed or set()
        return dims

    def check_query(self, view: View, query: Sequence[float], found: Sequence[Found]) -> None:
        """Refuse a query of other dimensions than the vectors a namespace holds (its
        index's, and its items' where it has none yet) before any is scored."""
        stored = {p.dims for _, p in [*view.segments, *view.log] if len(p)}
        stored |= {len(r.vec.data) for f in found for r in self._item_rows(f)}
        if stored - {len(query)}:
            raise VectorDimensionsError("search by query", len(query), stored, view.namespace)

    def _segments(
        self, namespace: Namespace, pk: str, leaves: list[str]
    ) -> Steps[list[tuple[str, Pack]]]:
        keys = [object_key(pk, leaf) for leaf in leaves]
        opened = {k: hit[0] for k in keys if (hit := self.opened.get(k)) is not None}
        missing = [k for k in keys if k not in opened]
        bodies = yield Fetch({k: f"vector segment of {namespace!r}" for k in missing})
        for leaf, key in zip(leaves, keys, strict=True):
            if key in bodies:
                data = self._open(namespace, "segment", leaf, bodies[key])
                segment = Pack(data, f"vector segment of {namespace!r}")
                self.opened.put(key, (segment, segment.weight))
                opened[key] = segment
        return [(leaf, opened[key]) for leaf, key in zip(leaves, keys, strict=True)]  # type: ignore[misc]

    def candidates(self, view: View, query: Sequence[float]) -> Iterator[tuple[float, str, str]]:
        """(score, item key, version) of every vector the index holds for the namespace,
        best first: rows of a newer segment stand for their item over an older one's, the
        log's all stand, and an item deleted (a marker) has none written before."""
        gone: dict[str, int] = {}
        for _, p in view.log:
            for m in p.markers:
                gone[m.key] = max(gone.get(m.key, 0), m.at_ms)
        streams = []
        owned: set[str] = set()
        for _, p in reversed(view.segments):
            streams.append(self._ranked(p, query, gone, frozenset(owned)))
            owned.update(p.keys)
            owned.update(m.key for m in p.markers)
        for _, p in view.log:
            streams.append(self._ranked(p, query, gone, frozenset()))
        return heapq.merge(*streams, key=lambda c: (-c[0], c[1]))

    @staticmethod
    def _ranked(
        p: Pack, query: Sequence[float], gone: Mapping[str, int], owned: frozenset[str]
    ) -> Iterator[tuple[float, str, str]]:
        # Rows are checked as they come, best first: a search reading ten looks at ten.
        # Equal scores go in the order of their items' keys, whichever pack holds them, so
        # pages of one search (by offset) never overlap when a compaction moves rows.
        scores = p.scores(query)
        ranked = ((float(scores[i]), p.keys[i], i) for i in best_first(scores))
        for _, tied in itertools.groupby(ranked, key=lambda r: r[0]):
            for score, key, i in sorted(tied, key=lambda r: r[1]):
                if key not in owned and p.times[i] > gone.get(key, -1):
                    yield score, key, p.versions[i]

    # ------------------------------------------------------------ maintenance

    def build(self, namespace: Namespace, found: Sequence[Found], view: View) -> Steps[bool]:
        """Build a namespace's first segment from its items (all of them, read by the
        caller), replacing what the log held when `view` was read. False if another
        process built it first (nothing changed)."""
        rows = [r for f in found for r in self._item_rows(f)]
        return (yield from self._commit(view, rows, [], replaced=[]))

    def compact_if_due(self, view: View) -> Steps[bool]:
        """Compact the log a search read when it holds more than `LOG_MAX` bytes."""
        if view.manifest is None or view.log_bytes <= LOG_MAX:
            return False
        return (yield from self.compact(view))

    def compact(self, view: View) -> Steps[bool]:
        """Fold the log into a segment (module docstring); False if another process
        changed the manifest first (nothing of this one is referenced).

        An item the log holds one version of, and no segment another, keeps its logged
        rows as they are (a put that never committed leaves rows no read will match).
        Only an item with versions to choose from, or named by a tombstone without a
        seal, is read back (consistently): its current version stands, or a marker where
        it is gone."""
        if view.manifest is None or not (view.log or view.tombstones):
            return False
        gone: dict[str, int] = {}
        logged: dict[str, list[Row]] = {}
        for _, p in view.log:
            for m in p.markers:
                gone[m.key] = max(gone.get(m.key, 0), m.at_ms)
            for i in range(len(p)):
                logged.setdefault(p.keys[i], []).append(p.row(i))
        in_segments: dict[str, set[str]] = {}
        for _, seg in view.segments:
            for key, version in zip(seg.keys, seg.versions, strict=True):
                in_segments.setdefault(key, set()).add(version)
        rows: list[Row] = []
        doubted = view.unverified
        markers = [Marker(k, "", at) for k, at in gone.items() if k not in {*logged, *doubted}]
        doubtful: list[str] = sorted(view.unverified)
        for key, found in logged.items():
            if key in view.unverified:
                continue
            alive = [r for r in found if r.at_ms > gone.get(key, -1)]
            versions = {r.version for r in alive} | in_segments.get(key, set())
            if not alive and key in gone:
                markers.append(Marker(key, "", gone[key]))  # deleted since logged
            elif len(versions) > 1:
                doubtful.append(key)
            else:
                rows += alive
        markers += yield from self._resolve(view, doubtful, rows)
        # The newest segments absorb into the new one while they are not much larger.
        merged: list[tuple[str, Pack]] = []
        for leaf, older in reversed(view.segments):
            if len(older) > MERGE_RATIO * max(len(rows), 1):
                break
            merged.append((leaf, older))
            taken = {r.key for r in rows} | {m.key for m in markers}
            rows += [
                older.row(i)
                for i in range(len(older))
                if older.keys[i] not in taken and older.times[i] > gone.get(older.keys[i], -1)
            ]
            markers += [m for m in older.markers if m.key not in taken]
        if len(merged) == len(view.segments):
            markers = []  # nothing older left for a marker to stand over
        return (yield from self._commit(view, rows, markers, replaced=[leaf for leaf, _ in merged]))

    def _resolve(self, view: View, keys: list[str], rows: list[Row]) -> Steps[list[Marker]]:
        """The rows of the items at `keys` as they are now (added to `rows`), read
        consistently; a marker for each one gone or expired."""
        items, namespace = self.items, view.namespace
        batches = [keys[i : i + RESOLVE_BATCH] for i in range(0, len(keys), RESOLVE_BATCH)]
        read = yield from each(
            [reads.items_at([ItemKey(view.pk, k) for k in b], consistent=True) for b in batches]
        )
        now = items.now_ms()
        live = [(namespace, r) for got in read for r in got if items.live(r, now)]
        found = yield from items.open(live)
        rows += [r for f in found for r in self._item_rows(f)]
        return [Marker(k, "", now) for k in sorted(set(keys) - {f.row.key.sk for f in found})]

    def rows(self, found: Found) -> list[Row]:
        """An item's rows, from the vectors its payload keeps."""
        return self._item_rows(found)

    def _item_rows(self, found: Found) -> list[Row]:
        vectors = self.open_body(found).get("vectors") or {}
        return rows_of(found.row.key.sk, found.version, found.updated_ms, vectors)

    def _commit(
        self, view: View, rows: list[Row], markers: list[Marker], replaced: list[str]
    ) -> Steps[bool]:
        names, namespace = self.names, view.namespace
        kept = [leaf for leaf, _ in view.segments if leaf not in replaced]
        segments: list[tuple[str, int]] = [
            (leaf, len(p)) for leaf, p in view.segments if leaf in kept
        ]
        uploads: list[tuple[str, bytes]] = []
        if rows or markers:
            leaf = names.namer.memory_segment(names.space, namespace, os.urandom(16).hex())
            uploads.append(
                (
                    object_key(view.pk, leaf),
                    self._seal(namespace, "segment", leaf, pack(rows, markers)),
                )
            )
            segments.append((leaf, len(rows)))
        # The dimensions its segments' vectors have, which a put checks its own against.
        dims = {p.dims for leaf, p in view.segments if leaf in kept and len(p)}
        dims |= {len(r.vec.data) for r in rows}
        body = json.dumps({"segments": segments, "dims": sorted(dims)}).encode()
        manifest = IndexItem(
            ItemKey(view.pk, MANIFEST_SK),
            self._seal(namespace, "manifest", MANIFEST_SK, body),
            os.urandom(6).hex(),
            frozenset(leaf for leaf, _ in segments),
        )
        expected = view.manifest.generation if view.manifest is not None else None
        plan = format.compaction(view.pk, uploads, manifest, expected, replaced)
        written: list[Written] = yield plan
        if not written[0].applied:
            return False
        state = self.items.state()
        state.wrote(manifest.key, fingerprint(manifest))
        folded = [item.key for item, _ in view.log if item.key.sk] + [
            item.key for item in view.tombstones
        ]
        yield BatchStep(deletes=folded)
        for key in folded:
            state.wrote(key, None)
        return True


# ------------------------------------------------------------------ embeddings


def placed(
    texts: dict[str, list[tuple[Namespace, str, str]]],
    embedded: list[list[float]],
    dims: int | None,
) -> dict[tuple[Namespace, str], Vectors]:
    """Each put's vectors by path, from one embedding per distinct text (a text two items
    or paths share is embedded once and goes to each); refused, before anything is
    written, unless there is one per text of the IndexConfig's `dims`."""
    if len(texts) != len(embedded):
        raise InvalidConfigError(
            f"the embedding function returned {len(embedded)} vectors for {len(texts)} "
            "distinct texts; expected one per text, in order"
        )
    out: dict[tuple[Namespace, str], Vectors] = defaultdict(dict)
    for places, vector in zip(texts.values(), embedded, strict=True):
        ns, key, path = places[0]
        subject = f"store item {key!r} in namespace {ns!r}, its field {path!r}"
        if dims is not None and len(vector) != dims:
            raise VectorDimensionsError(subject, len(vector), [dims])
        refuse_unfinite(subject, vector)
        for ns, key, path in places:
            out[(ns, key)][path] = [float(x) for x in vector]
    return out


def queried(vectors: dict[str, list[float]], dims: int | None) -> dict[str, list[float]]:
    """The queries' embeddings, refused before any request unless of the IndexConfig's
    `dims`."""
    for query, vector in vectors.items():
        if dims is not None and len(vector) != dims:
            shown = query if len(query) <= 60 else query[:57] + "..."
            raise VectorDimensionsError(f"the query {shown!r}", len(vector), [dims])
        refuse_unfinite(f"the query {query[:60]!r}", vector)
    return vectors


def refuse_unfinite(subject: str, vector: Sequence[float]) -> None:
    """An embedding with a nan or an infinity ranks nothing: refused, naming what it
    embeds, before anything is written or read."""
    if not all(math.isfinite(x) for x in vector):
        raise InvalidConfigError(
            f"{subject}: the embedding function returned a vector holding nan or infinity; "
            "expected finite numbers (check the model's output). Nothing was written"
        )
