"""`S3DynamoStore`: LangGraph's `BaseStore` on the saver's table and bucket, sealed with
its keys (`memory/core.py` holds the storage; this module is LangGraph's contract).

Filters, namespace match conditions and cosine similarity are LangGraph's own
(`langgraph.store.memory`'s helpers), so they mean here what they mean in
`InMemoryStore`. A search reads its prefix's partition, and the directory and the
partitions below only when that partition is marked as having namespaces below it;
list_namespaces reads the directory. Both filter and rank client-side: they cost what the
matching namespaces hold (docs/ARCHITECTURE.md, "Long-term memory").

Async methods run the sync core in the saver's worker pool (`executor.py`): one I/O path.
"""

from __future__ import annotations

import array
import sys
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)
from langgraph.store.memory import _compare_values, _cosine_similarity, _does_match

from langgraph.checkpoint.s3dynamo import executor, telemetry
from langgraph.checkpoint.s3dynamo.compose import memory_space
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.memory.core import Found, Namespace
from langgraph.checkpoint.s3dynamo.waves import parallel

STORE_SPACE = "m"


class S3DynamoStore(BaseStore):
    """LangGraph's Store (long-term memory) on an `S3DynamoSaver`'s table, bucket, keys,
    naming secret and prefix.

    Args:
        saver: The saver whose configuration and clients the store shares; built from
            `saver_options` (the saver's keyword arguments) when not given.
        index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`) for semantic search.
        ttl: LangGraph's `TTLConfig` (`default_ttl` minutes, `refresh_on_read`).

    Example:
        ```python
        saver = S3DynamoSaver.from_env()
        store = S3DynamoStore.from_saver(saver)
        graph = builder.compile(checkpointer=saver, store=store)
        ```
    """

    supports_ttl = True

    def __init__(
        self,
        saver: Any = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        **saver_options: Any,
    ) -> None:
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        if saver is None:
            saver = S3DynamoSaver(**saver_options)
        self.saver: S3DynamoSaver = saver
        parts = saver.parts
        self._parts = parts
        self.space = memory_space(parts, STORE_SPACE)
        self.ttl_config = ttl
        self.index_config: dict[str, Any] | None = None
        self.embeddings = None
        if index:
            self.index_config = dict(index)
            self.embeddings = ensure_embeddings(index.get("embed"))
            self.index_config["__tokenized_fields"] = [
                (p, tokenize_path(p)) if p != "$" else (p, p)
                for p in (index.get("fields") or ["$"])
            ]
        self._checked = threading.Event()

    @classmethod
    def from_saver(
        cls, saver: Any, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> S3DynamoStore:
        """A store on the saver's table, bucket, keys and clients."""
        return cls(saver, index=index, ttl=ttl)

    @classmethod
    def from_env(
        cls, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None, **overrides: Any
    ) -> S3DynamoStore:
        """A store configured as `S3DynamoSaver.from_env` configures a saver."""
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        return cls(S3DynamoSaver.from_env(**overrides), index=index, ttl=ttl)

    def setup(self) -> None:
        """Create the table and bucket if missing, and record the deployment (as
        `S3DynamoSaver.setup`). For development and tests; production infrastructure
        comes from terraform/."""
        self.saver.setup()
        self._checked.set()
        # Entries written before descendants marks existed get theirs (one directory
        # Query when none lacks one).
        self.saver.ops.memory.mark_ancestors(self.space)

    def sweep_ttl(self) -> int:
        """Remove the store's expired items now (as LangGraph's SQL stores' `sweep_ttl`);
        the number removed. The scheduled retention job does this for the Store and the
        node cache (`saver.ops.memory.expire`); reads never return an expired item
        either way."""
        return int(self.saver.ops.memory.expire_space(self.space)[0])

    async def asweep_ttl(self) -> int:
        return await executor.run(self._parts.settings.async_workers, self.sweep_ttl)

    async def asetup(self) -> None:
        """`setup`, from async code."""
        await executor.run(self._parts.settings.async_workers, self.setup)

    # ------------------------------------------------------------ the contract

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _validated(ops)
        queries = {op.query for op in ops if isinstance(op, SearchOp) and op.query}
        vectors = self._embed_queries(queries)
        puts = self._last_puts(ops)
        texts = self._texts(puts)
        embedded = self.embeddings.embed_documents(list(texts)) if texts and self.embeddings else []
        return self._run(ops, puts, vectors, texts, embedded)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _validated(ops)
        queries = {op.query for op in ops if isinstance(op, SearchOp) and op.query}
        vectors: dict[str, list[float]] = {}
        if queries and self.embeddings:
            for q in queries:
                vectors[q] = await self.embeddings.aembed_query(q)
        puts = self._last_puts(ops)
        texts = self._texts(puts)
        embedded = (
            await self.embeddings.aembed_documents(list(texts)) if texts and self.embeddings else []
        )
        return await executor.run(
            self._parts.settings.async_workers, self._run, ops, puts, vectors, texts, embedded
        )

    # ------------------------------------------------------------ execution

    def _run(
        self,
        ops: list[Op],
        puts: dict[tuple[Namespace, str], PutOp],
        vectors: dict[str, list[float]],
        texts: dict[str, list[tuple[Namespace, str, str]]],
        embedded: list[list[float]],
    ) -> list[Result]:
        self._check(write=bool(puts))
        with guarded(self._parts.deployment):
            results: list[Result] = [None] * len(ops)
            # Reads see the store as it was before this batch's writes, as InMemoryStore's do.
            gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
            if gets:
                found = self.space.get(
                    [(op.namespace, op.key) for _, op in gets],
                    refresh=[(op.namespace, op.key) for _, op in gets if op.refresh_ttl],
                )
                for i, op in gets:
                    f = found.get((op.namespace, op.key))
                    results[i] = self._item(f) if f else None
            directory: list[tuple[Namespace, Any]] | None = None
            for i, other in enumerate(ops):
                if isinstance(other, SearchOp):
                    results[i] = self._search(other, vectors)
                elif isinstance(other, ListNamespacesOp):
                    if directory is None:
                        directory = self.space.namespaces()
                    results[i] = _list_namespaces(other, self._listed(directory))
            self._write(puts, texts, embedded)
        return results

    def _listed(self, directory: list[tuple[Namespace, Any]]) -> list[Namespace]:
        # An entry a delete marked emptied is listed only if its namespace has items
        # again (one Query each; docs/RELIABILITY.md, "The Store's namespace directory").
        marked = [ns for ns, entry in directory if entry.emptied]
        live = dict(zip(marked, parallel(self.space.has_live, marked), strict=True))
        return [ns for ns, entry in directory if not entry.emptied or live[ns]]

    def _check(self, *, write: bool) -> None:
        # Before the first request of a process: a store on other keys or another naming
        # secret than the deployment's is refused here, never shown as empty.
        if not self._checked.is_set():
            self._parts.deployment.verify(write=write)
            if write or self._parts.deployment.state == "ok":
                self._checked.set()

    def _write(
        self,
        puts: dict[tuple[Namespace, str], PutOp],
        texts: dict[str, list[tuple[Namespace, str, str]]],
        embedded: list[list[float]],
    ) -> None:
        if not puts:
            return
        vecs: dict[tuple[Namespace, str], dict[str, bytes]] = defaultdict(dict)
        flat = [where for where_list in texts.values() for where in where_list]
        if len(flat) != len(embedded):
            raise ValueError(
                f"the embedding function returned {len(embedded)} vectors for {len(flat)} texts; "
                "expected one per text"
            )
        for (ns, key, path), vec in zip(flat, embedded, strict=True):
            vecs[(ns, key)][path] = pack_vector(vec)
        serde = self._parts.codec.serde()
        # Puts grouped by namespace: one writer per namespace, namespaces in parallel.
        writes: dict[Namespace, list[tuple[str, tuple[str, bytes], float | None]]] = {}
        deletes: list[tuple[Namespace, str]] = []
        for (ns, key), op in puts.items():
            if op.value is None:
                deletes.append((ns, key))
            else:
                body = {"value": op.value, "vectors": vecs.get((ns, key), {})}
                writes.setdefault(ns, []).append((key, serde.dumps_typed(body), op.ttl))
        parallel(lambda nw: self.space.put_many(*nw), list(writes.items()))
        parallel(lambda nk: self.space.delete(*nk), deletes)

    def _item(self, found: Found) -> Item:
        body = self._body(found)
        return Item(
            value=body["value"],
            key=found.key,
            namespace=found.namespace,
            created_at=_time(found.row.created_ms),
            updated_at=_time(found.row.updated_ms),
        )

    def _body(self, found: Found) -> dict[str, Any]:
        body = self._parts.codec.serde().loads_typed(found.typed)
        if not isinstance(body, dict) or "value" not in body:
            raise IntegrityError(
                f"store item {found.key!r} in {found.namespace!r}: expected a value, got "
                f"{type(body).__name__}"
            )
        return body

    def _search(self, op: SearchOp, vectors: dict[str, list[float]]) -> list[SearchItem]:
        found = self.space.search(tuple(op.namespace_prefix))
        candidates: list[tuple[Found, dict[str, Any]]] = []
        for f in found:
            body = self._body(f)
            value = body["value"]
            if op.filter and not all(
                _compare_values(_at_path(value, k), v) for k, v in op.filter.items()
            ):
                continue
            candidates.append((f, body))
        # Newest first, as LangGraph's SQL stores order a search without a query.
        candidates.sort(key=lambda c: (-c[0].row.updated_ms, c[0].namespace, c[0].key))
        if op.query and op.query in vectors:
            kept = _rank(vectors[op.query], candidates, op.offset, op.limit)
        else:
            kept = [(None, c) for c in candidates[op.offset : op.offset + op.limit]]
        if op.refresh_ttl:
            self.space.touch([c[0].row for _, c in kept])
        return [
            SearchItem(
                namespace=f.namespace,
                key=f.key,
                value=body["value"],
                created_at=_time(f.row.created_ms),
                updated_at=_time(f.row.updated_ms),
                score=score,
            )
            for score, (f, body) in kept
        ]

    # ------------------------------------------------------------ embeddings

    def _embed_queries(self, queries: set[str]) -> dict[str, list[float]]:
        if not queries or self.embeddings is None:
            return {}
        return dict(zip(queries, parallel(self.embeddings.embed_query, list(queries)), strict=True))

    @staticmethod
    def _last_puts(ops: Sequence[Op]) -> dict[tuple[Namespace, str], PutOp]:
        # The last put of a key in a batch wins, as in LangGraph's stores.
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op
        return puts

    def _texts(
        self, puts: dict[tuple[Namespace, str], PutOp]
    ) -> dict[str, list[tuple[Namespace, str, str]]]:
        """Text to embed -> where each goes (namespace, key, path), as InMemoryStore does."""
        if not puts or self.index_config is None or self.embeddings is None:
            return {}
        to_embed: dict[str, list[tuple[Namespace, str, str]]] = defaultdict(list)
        for op in puts.values():
            if op.value is None or op.index is False:
                continue
            paths = (
                self.index_config["__tokenized_fields"]
                if op.index is None
                else [(ix, tokenize_path(ix)) for ix in op.index]
            )
            for path, field in paths:
                texts = get_text_at_path(op.value, field)
                if len(texts) > 1:
                    for i, text in enumerate(texts):
                        to_embed[text].append((op.namespace, op.key, f"{path}.{i}"))
                elif texts:
                    to_embed[texts[0]].append((op.namespace, op.key, path))
        return to_embed


# A span and figures for each (`telemetry.py`); the async twins run these.
telemetry.instrument(
    S3DynamoStore,
    {"_run": "store.batch", "setup": "store.setup", "sweep_ttl": "store.sweep_ttl"},
)


def _rank(
    query: list[float],
    candidates: list[tuple[Found, dict[str, Any]]],
    offset: int,
    limit: int,
) -> list[tuple[float | None, tuple[Found, dict[str, Any]]]]:
    """Best score of each item's vectors (max pooling), highest first; items without
    vectors follow, unscored, as in InMemoryStore."""
    scored: list[tuple[float, int]] = []
    flat: list[list[float]] = []
    owners: list[int] = []
    scoreless: list[int] = []
    for i, (_f, body) in enumerate(candidates):
        vecs = [unpack_vector(v) for v in (body.get("vectors") or {}).values()]
        if not vecs:
            scoreless.append(i)
        flat += vecs
        owners += [i] * len(vecs)
    best: dict[int, float] = {}
    for owner, score in zip(owners, _cosine_similarity(query, flat) if flat else [], strict=True):
        if owner not in best or score > best[owner]:
            best[owner] = score
    scored = sorted(((s, i) for i, s in best.items()), key=lambda x: -x[0])
    kept: list[tuple[float | None, tuple[Found, dict[str, Any]]]] = [
        (float(s), candidates[i]) for s, i in scored[offset : offset + limit]
    ]
    if len(kept) < limit:
        kept += [(None, candidates[i]) for i in scoreless[: limit - len(kept)]]
    return kept


def pack_vector(vec: Sequence[float]) -> bytes:
    """An embedding as little-endian float32: 4 bytes a dimension, as vector indexes
    keep them, against 9 for a float in msgpack."""
    packed = array.array("f", [float(x) for x in vec])
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def unpack_vector(stored: Any) -> list[float]:
    """`pack_vector`'s bytes, or the list of floats of items of the first layout."""
    if not isinstance(stored, bytes | bytearray):
        return [float(x) for x in stored]
    packed = array.array("f")
    packed.frombytes(bytes(stored))
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tolist()


def _list_namespaces(op: ListNamespacesOp, namespaces: list[Namespace]) -> list[Namespace]:
    if op.match_conditions:
        namespaces = [
            ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions)
        ]
    if op.max_depth is not None:
        namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
    else:
        namespaces = sorted(namespaces)
    return namespaces[op.offset : op.offset + op.limit]


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _validated(ops: Iterable[Op]) -> list[Op]:
    # Ops given straight to batch skip BaseStore's checks; the whole batch is refused
    # before anything is read or written.
    ops = list(ops)
    for op in ops:
        validate_op_namespace(op)
    return ops


def _at_path(value: Any, path: str) -> Any:
    """A filter key's value: the key itself if present, else a dotted path into nested
    dicts (as LangGraph's SQL stores read `"user.level"`)."""
    if not isinstance(value, dict):
        return None
    if path in value:
        return value[path]
    head, dot, rest = path.partition(".")
    return _at_path(value.get(head), rest) if dot else None
