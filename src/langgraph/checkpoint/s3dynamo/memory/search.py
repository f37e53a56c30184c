"""How the Store answers a search: from what it returns, wherever an index can say which
items those are, and from what the namespaces hold only where none can.

- By query (an `IndexConfig`): each namespace's vector index (`vector_index.py`) ranks
  every vector it holds; the best items are read back (one BatchGetItem) and kept only
  while their version is the one the index named and they pass the filter, reading more
  until `offset + limit` are kept. A namespace without an index yet is ranked from its
  items, and indexed by that search.
- By an equality on a declared field (`tokens.py`): each namespace's tokens of that value,
  newest first, then the items, checked against the whole filter.
- Otherwise (other operators, undeclared fields, no filter): every live item of the
  namespaces, filtered and ordered newest first.

Namespaces below a prefix are searched too: its partition's descendants mark (read with
the index in the same Query) sends the search to the directory.

A search runs the protocols of the space's parts one after the other (`run`): which to
read next depends on what the last one found, down to each page of a value's tokens.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.store.memory import _compare_values

from langgraph.checkpoint.s3dynamo.blobs.steps import Steps, each
from langgraph.checkpoint.s3dynamo.format.layout import DESCENDANTS_SK
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.memory import reads
from langgraph.checkpoint.s3dynamo.memory.items import Items
from langgraph.checkpoint.s3dynamo.memory.rows import Found, Namespace
from langgraph.checkpoint.s3dynamo.memory.tokens import FilterTokens, at_path
from langgraph.checkpoint.s3dynamo.memory.vector_index import VectorIndex, View
from langgraph.checkpoint.s3dynamo.memory.vectors import unit

# The value of an opened item (its payload deserialized), for filters.
ValueOf = Callable[[Found], Any]
Hit = tuple[Found, "float | None"]


class Candidate(NamedTuple):
    """An item an index names: where, which version (None: any), how it ranks; a filter
    token also says when the item was written (`written`), which the item's sealed time
    must match (a token of an older put, or one forged, stands for nothing)."""

    rank: float
    namespace: Namespace
    key: str
    version: str | None
    found: Found | None = None
    written: int | None = None


def matches(value: Any, filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter semantics (`InMemoryStore`'s), keys read as dotted paths."""
    return not filter or all(_compare_values(at_path(value, k), v) for k, v in filter.items())


def newest_first(found: list[Found]) -> list[Found]:
    return sorted(found, key=lambda f: (-f.updated_ms, f.namespace, f.key))


class Searcher:
    """The searches of one space (module docstring)."""

    def __init__(
        self,
        items: Items,
        tokens: FilterTokens,
        vectors: VectorIndex | None,
        value_of: ValueOf,
        run: Callable[[Steps[Any]], Any],
    ) -> None:
        self.items = items
        self.tokens = tokens
        self.vectors = vectors
        self.value_of = value_of
        self._run = run

    def search(
        self,
        prefix: Namespace,
        *,
        query: Sequence[float] | None,
        filter: Mapping[str, Any] | None,
        offset: int,
        limit: int,
    ) -> list[Hit]:
        if query is not None and self.vectors is not None:
            return self._by_query(prefix, unit(query), filter, offset, limit)
        use = self.tokens.usable(filter) if filter else None
        if use is not None:
            return self._by_token(prefix, use, filter, offset, limit)
        scanned = self._run(self.items.scan(prefix))
        kept = [f for f in scanned if matches(self.value_of(f), filter)]
        return [(f, None) for f in newest_first(kept)[offset : offset + limit]]

    # ------------------------------------------------------------ by query

    def _by_query(
        self,
        prefix: Namespace,
        query: list[float],
        filter: Mapping[str, Any] | None,
        offset: int,
        limit: int,
    ) -> list[Hit]:
        assert self.vectors is not None
        views = self._views(prefix)
        streams: list[Iterator[Candidate]] = []
        scanned: list[Found] = []
        for view in views:
            if view.manifest is None:
                found = self._run(self.items.scan_namespace(view.namespace))
                scanned += found
                self.vectors.check_query(view, query, found)
                if found:
                    self._run(self.vectors.build(view.namespace, found, view))
                streams.append(self._exact(view.namespace, found, query))
            else:
                self.vectors.check_query(view, query, ())
                streams.append(_scored(view.namespace, self.vectors.candidates(view, query)))
        hits = self._verify(heapq.merge(*streams, key=_rank), filter, offset + limit)
        # Items without vectors follow, unscored, as in InMemoryStore.
        if len(hits) < offset + limit:
            hits += self._unscored(views, scanned, hits, filter, offset + limit - len(hits))
        for view in views:
            self._run(self.vectors.compact_if_due(view))
        return hits[offset : offset + limit]

    def _views(self, prefix: Namespace) -> list[View]:
        assert self.vectors is not None
        vectors = self.vectors
        views = [self._run(vectors.view(prefix))] if prefix else []
        if not prefix or views[0].marked:
            below = self._run(self.items.below(prefix))
            views += self._run(each([vectors.view(ns) for ns in below]))
        return views

    def _exact(
        self, namespace: Namespace, found: list[Found], query: list[float]
    ) -> Iterator[Candidate]:
        # A namespace without an index: its items' own vectors, scored exactly.
        assert self.vectors is not None
        best: dict[str, tuple[float, Found]] = {}
        for f in found:
            rows = self.vectors.rows(f)
            if rows:
                score = max(_dot(query, r.vec.floats()) for r in rows)
                best[f.key] = (score, f)
        ranked = sorted(best.values(), key=lambda sf: (-sf[0], sf[1].row.key.sk))
        return (Candidate(-s, namespace, f.row.key.sk, f.version, f) for s, f in ranked)

    def _unscored(
        self,
        views: list[View],
        scanned: list[Found],
        hits: list[Hit],
        filter: Mapping[str, Any] | None,
        wanted: int,
    ) -> list[Hit]:
        assert self.vectors is not None
        indexed = [v.namespace for v in views if v.manifest is not None]
        read = self._run(each([self.items.scan_namespace(ns) for ns in indexed]))
        pool = scanned + [f for batch in read for f in batch]
        taken = {(f.namespace, f.key) for f, _ in hits}
        rest = [
            f
            for f in newest_first(pool)
            if (f.namespace, f.key) not in taken
            and not self.vectors.rows(f)
            and matches(self.value_of(f), filter)
        ]
        return [(f, None) for f in rest[:wanted]]

    def _verify(
        self, candidates: Iterator[Candidate], filter: Mapping[str, Any] | None, wanted: int
    ) -> list[Hit]:
        """The first `wanted` candidates whose item is there, live, of the version named
        and passing the filter, read in batches (the first of `wanted` items, each next
        twice as large)."""
        hits: list[Hit] = []
        kept: set[tuple[Namespace, str]] = set()
        seen: set[tuple[Namespace, str]] = set()
        read: dict[tuple[Namespace, str], Found] = {}
        size = max(wanted, 1)
        while len(hits) < wanted:
            batch = _distinct(candidates, seen, size)
            if not batch:
                break
            need = {
                (c.namespace, c.key)
                for c in batch
                if c.found is None and (c.namespace, c.key) not in read
            }
            if need:
                pk = self.items.names.pk
                keys = [(ns, ItemKey(pk(ns), key)) for ns, key in sorted(need)]
                read.update(self._run(self.items.read(keys)))
            for c in batch:
                f = c.found or read.get((c.namespace, c.key))
                if f is None or (c.version is not None and f.version != c.version):
                    continue
                if c.written is not None and f.updated_ms != c.written:
                    continue
                if (f.namespace, f.key) in kept or not matches(self.value_of(f), filter):
                    continue
                kept.add((f.namespace, f.key))
                hits.append((f, -c.rank))
                if len(hits) == wanted:
                    break
            size *= 2
        return hits

    # ------------------------------------------------------------ by token

    def _by_token(
        self,
        prefix: Namespace,
        use: tuple[str, str],
        filter: Mapping[str, Any] | None,
        offset: int,
        limit: int,
    ) -> list[Hit]:
        field, text = use
        namespaces = self._token_namespaces(prefix)
        wanted = offset + limit
        streams: list[Iterator[Candidate]] = []
        for ns in namespaces:
            if self._run(self.tokens.complete(ns, field)):
                streams.append(self._tokens(ns, field, text, wanted))
            else:
                found = self._run(self.items.scan_namespace(ns))
                self._run(self.tokens.backfill(ns, field, [(f, self.value_of(f)) for f in found]))
                kept = [f for f in newest_first(found) if matches(self.value_of(f), filter)]
                streams.append(Candidate(-f.updated_ms, ns, f.row.key.sk, None, f) for f in kept)
        hits = self._verify(heapq.merge(*streams), filter, wanted)
        ordered = sorted(hits, key=lambda h: (-h[0].updated_ms, h[0].namespace, h[0].key))
        return [(f, None) for f, _ in ordered[offset : offset + limit]]

    def _token_namespaces(self, prefix: Namespace) -> list[Namespace]:
        if not prefix:
            return [ns for ns, _ in self._run(self.items.directory.entries())]
        pk = self.items.names.pk(prefix)
        marked = bool(self._run(reads.index_items(pk, (DESCENDANTS_SK, DESCENDANTS_SK))))
        return [prefix, *self._run(self.items.below(prefix))] if marked else [prefix]

    def _tokens(self, ns: Namespace, field: str, text: str, wanted: int) -> Iterator[Candidate]:
        after: str | None = None
        count = wanted + 2
        while True:
            page = self._run(self.tokens.newest(ns, field, text, count, after))
            for at_ms, key, sk in page:
                yield Candidate(-at_ms, ns, key, None, written=at_ms)
                after = sk
            if len(page) < count:
                return
            count *= 2


def _rank(c: Candidate) -> tuple[float, Namespace, str]:
    """Best first; equal scores in the order of namespace and item key (a stable order:
    pages by offset never overlap)."""
    return c.rank, c.namespace, c.key


def _scored(namespace: Namespace, ranked: Iterator[tuple[float, str, str]]) -> Iterator[Candidate]:
    return (Candidate(-score, namespace, key, version) for score, key, version in ranked)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _distinct(
    candidates: Iterator[Candidate], seen: set[tuple[Namespace, str]], size: int
) -> list[Candidate]:
    """The next candidates of `size` items not met before (every version of one item
    is kept: the read says which is current)."""
    out: list[Candidate] = []
    fresh = 0
    for c in candidates:
        out.append(c)
        if (c.namespace, c.key) not in seen:
            seen.add((c.namespace, c.key))
            fresh += 1
            if fresh == size:
                break
    return out
