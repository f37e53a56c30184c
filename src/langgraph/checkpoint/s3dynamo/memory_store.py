"""`S3DynamoStore`: LangGraph's `BaseStore` on the saver's table and bucket, sealed with
its keys (`memory/` holds the storage; this module is LangGraph's contract).

Filters, namespace match conditions and TTLs mean here what they mean in `InMemoryStore`
(LangGraph's own helpers). A search costs what it returns where an index says which items
those are: by query, the namespaces' sealed vector indexes; by an equality on a field the
store declares (`filter_fields`), their keyed-hash tokens; anything else reads the
namespaces (`memory/search.py`; costs in docs/ARCHITECTURE.md, "Long-term memory").

Async methods run the sync core in the saver's worker pool (`executor.py`): one I/O path.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, cast

from langgraph.store.base import (
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
from langgraph.store.memory import _does_match

from langgraph.checkpoint.s3dynamo import executor, telemetry
from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.boundary import public, twin
from langgraph.checkpoint.s3dynamo.compose import memory_space
from langgraph.checkpoint.s3dynamo.config import arguments, memory_arguments
from langgraph.checkpoint.s3dynamo.config.keywords import refuse_unknown, taken
from langgraph.checkpoint.s3dynamo.config.memory_arguments import Prefix, StoreOps
from langgraph.checkpoint.s3dynamo.config.settings import FROM_ENV_ARGUMENTS
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.errors import (
    ArgumentTypeError,
    IntegrityError,
    InvalidConfigError,
)
from langgraph.checkpoint.s3dynamo.format.layout import STORE_SPACE
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.keys.codec import serializing
from langgraph.checkpoint.s3dynamo.memory.core import (
    Found,
    Indexes,
    Namespace,
    NewItem,
    checked_ttl,
)
from langgraph.checkpoint.s3dynamo.memory.format import MEMORY_PUT_MAX
from langgraph.checkpoint.s3dynamo.memory.vector_index import Vectors, placed, queried
from langgraph.checkpoint.s3dynamo.memory.vectors import encode, to_payload
from langgraph.checkpoint.s3dynamo.memory_boundary import CheckedStore
from langgraph.checkpoint.s3dynamo.waves import parallel

# Opened item bodies kept, by (item, version): a search checks a filter on the same
# value it then returns.
BODIES = 1024

# The keywords the Store takes itself; the rest are the saver's.
STORE_OWN = {"the Store's": ("index", "ttl", "filter_fields")}


class S3DynamoStore(CheckedStore):
    """LangGraph's Store (long-term memory) on an `S3DynamoSaver`'s table, bucket, keys,
    naming secret and prefix.

    Args:
        saver: The saver whose configuration and clients the store shares; built from
            `saver_options` (the saver's keyword arguments) when not given.
        index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`) for semantic search,
            through each namespace's sealed vector index; ranked with numpy where it is
            installed (the `vectors` extra), in pure Python otherwise.
        ttl: LangGraph's `TTLConfig` (`default_ttl` minutes, `refresh_on_read`); expired
            items are left out of every read whatever `omit_expired` says.
        filter_fields: Fields (dotted paths into values) whose equality filters find
            their items through keyed-hash tokens instead of reading the namespace; one
            token write more per put and field. Every process writing a namespace must
            declare the same fields.

    Example:
        ```python
        saver = S3DynamoSaver.from_env()
        store = S3DynamoStore.from_saver(saver, filter_fields=["kind"])
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
        filter_fields: Sequence[str] = (),
        **saver_options: Any,
    ) -> None:
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        # Configuration checked when the store is built: no put fails on it later.
        if saver_options:
            refuse_unknown(
                "S3DynamoStore", saver_options, {**STORE_OWN, "the saver's": taken(S3DynamoSaver)}
            )
        fields = arguments.texts("filter_fields", filter_fields, each="field paths")
        index_config = checked_index("index", index)
        ttl_config = checked_ttl_config("ttl", ttl)
        self.saver: S3DynamoSaver = arguments.saver_of(saver, saver_options, S3DynamoSaver)
        parts = self.saver.parts
        self._parts = parts
        self.ttl_config = cast("TTLConfig | None", ttl_config)
        self.index_config: dict[str, Any] | None = index_config
        self.embeddings = None
        self._dims: int | None = None
        if index_config:
            self._dims = index_config["dims"]
            self.embeddings = ensure_embeddings(index_config["embed"])
            index_config["__tokenized_fields"] = [
                (p, tokenize_path(p)) if p != "$" else (p, p)
                for p in (index_config.get("fields") or ["$"])
            ]
        self._bodies: Lru[tuple[ItemKey, str, int], dict[str, Any]] = Lru(BODIES)
        indexes = Indexes(fields, self._body, vectors=self.embeddings is not None)
        self.space = memory_space(parts, STORE_SPACE, indexes)
        self._checked = threading.Event()

    @classmethod
    def from_saver(
        cls,
        saver: Any,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        filter_fields: Sequence[str] = (),
    ) -> S3DynamoStore:
        """A store on the saver's table, bucket, keys and clients."""
        return cls(saver, index=index, ttl=ttl, filter_fields=filter_fields)

    @classmethod
    def from_env(
        cls,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        filter_fields: Sequence[str] = (),
        **overrides: Any,
    ) -> S3DynamoStore:
        """A store configured as `S3DynamoSaver.from_env` configures a saver."""
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        refuse_unknown(
            "S3DynamoStore.from_env", overrides, {**STORE_OWN, "the saver's": FROM_ENV_ARGUMENTS}
        )
        saver = S3DynamoSaver.from_env(**overrides)
        return cls(saver, index=index, ttl=ttl, filter_fields=filter_fields)

    @public("store.setup")
    def setup(self) -> None:
        """Create the table and bucket if missing, and record the deployment (as
        `S3DynamoSaver.setup`). For development and tests; production infrastructure
        comes from terraform/."""
        self.saver.setup()
        self._checked.set()
        # Entries written before descendants marks existed get theirs (one directory
        # Query when none lacks one).
        self.saver.ops.memory.mark_ancestors(self.space)

    @public("store.sweep_ttl")
    def sweep_ttl(self) -> int:
        """Remove the store's expired items now (as LangGraph's SQL stores' `sweep_ttl`);
        the number removed. The scheduled retention job does this for the Store and the
        node cache (`saver.ops.memory.expire`); reads never return an expired item
        either way."""
        return int(self.saver.ops.memory.expire_space(self.space)[0])

    @public("store.delete_namespace")
    def delete_namespace(self, prefix: Prefix) -> int:
        """Remove every item of the namespace `prefix` and of every namespace below it
        (what LangGraph's `BaseStore` has no call for: a user's memories purged), with
        their objects, search tokens, vector indexes and directory entries, so that no
        `get`, `search` or `list_namespaces` shows anything of them; the number of items
        removed (expired ones not yet swept included). Costs what the prefix holds: one
        DeleteItem per item, a few requests per namespace, and a Query of the directory
        when namespaces lie below it (docs/ARCHITECTURE.md, "Request budgets"). An empty
        prefix is refused; a put that lands during the delete is either removed with the
        rest or kept whole (docs/RELIABILITY.md, "Deleting a namespace of the Store")."""
        self._check(write=True)
        with guarded(self._parts.deployment):
            return self.space.delete_namespace(prefix)

    def async_workers(self) -> int:
        """Threads of the process's pool the async methods run in (`executor.py`)."""
        return int(self._parts.settings.async_workers)

    asweep_ttl = twin(sweep_ttl)
    adelete_namespace = twin(delete_namespace)
    asetup = twin(setup)

    # ------------------------------------------------------------ the contract

    @public()
    def batch(self, ops: StoreOps) -> list[Result]:
        ops = _validated(ops)
        puts = _last_puts(ops)
        queries = {op.query for op in ops if isinstance(op, SearchOp) and op.query}
        vectors = queried(self._embed_queries(queries), self._dims)
        texts = self._texts(puts)
        embedded = self.embeddings.embed_documents(list(texts)) if texts and self.embeddings else []
        return self._run(ops, puts, vectors, placed(texts, embedded, self._dims))

    @public()
    async def abatch(self, ops: StoreOps) -> list[Result]:
        ops = _validated(ops)
        puts = _last_puts(ops)
        queries = {op.query for op in ops if isinstance(op, SearchOp) and op.query}
        vectors: dict[str, list[float]] = {}
        if queries and self.embeddings:
            for q in queries:
                vectors[q] = await self.embeddings.aembed_query(q)
        texts = self._texts(puts)
        embedded = (
            await self.embeddings.aembed_documents(list(texts)) if texts and self.embeddings else []
        )
        found = placed(texts, embedded, self._dims)
        queried(vectors, self._dims)
        return await executor.run(
            self._parts.settings.async_workers, self._run, ops, puts, vectors, found
        )

    # ------------------------------------------------------------ execution

    @telemetry.operation("store.batch")
    def _run(
        self,
        ops: list[Op],
        puts: dict[tuple[Namespace, str], PutOp],
        vectors: dict[str, list[float]],
        embedded: dict[tuple[Namespace, str], Vectors],
    ) -> list[Result]:
        # Every value serialized before the first request: a value the serializer cannot
        # store is refused naming its item, and nothing of the batch is written.
        writes, deletes = self._writes_of(puts, embedded)
        self._check(write=bool(puts))
        with guarded(self._parts.deployment):
            self.space.check_dimensions(embedded)
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
            listed: list[Namespace] | None = None
            for i, other in enumerate(ops):
                if isinstance(other, SearchOp):
                    results[i] = self._search(other, vectors)
                elif isinstance(other, ListNamespacesOp):
                    if listed is None:
                        listed = self.space.list_namespaces()
                    results[i] = _list_namespaces(other, listed)
            self.space.put(writes)
            self.space.delete(deletes)
        return results

    def _check(self, *, write: bool) -> None:
        # Before the first request of a process: a store on other keys or another naming
        # secret than the deployment's is refused here, never shown as empty.
        if not self._checked.is_set():
            self._parts.deployment.verify(write=write)
            if write or self._parts.deployment.state == "ok":
                self._checked.set()

    def _writes_of(
        self,
        puts: dict[tuple[Namespace, str], PutOp],
        embedded: dict[tuple[Namespace, str], Vectors],
    ) -> tuple[dict[Namespace, list[NewItem]], dict[Namespace, list[str]]]:
        """The items the puts write, by namespace, each payload serialized: its value and
        its vectors (kept in the item too, so the index can be rebuilt from items); and
        the keys the puts of None delete, by namespace."""
        serde = self._parts.serde()
        writes: dict[Namespace, list[NewItem]] = defaultdict(list)
        deletes: dict[Namespace, list[str]] = defaultdict(list)
        for (ns, key), op in puts.items():
            if op.value is None:
                deletes[ns].append(key)
                continue
            vectors = embedded.get((ns, key), {})
            body = {
                "value": op.value,
                "vectors": {p: to_payload(encode(v)) for p, v in vectors.items()},
            }
            with serializing(f"store item {key!r} in namespace {ns!r}", op.value):
                typed = serde.dumps_typed(body)
            writes[ns].append(NewItem(key, typed, op.ttl, op.value, vectors))
        return writes, deletes

    # ------------------------------------------------------------ reading

    def _body(self, found: Found) -> dict[str, Any]:
        key = (found.row.key, found.version, found.updated_ms)
        cached = self._bodies.get(key)
        if cached is not None:
            return cached
        body = self._parts.serde().loads_typed(found.typed)
        if not isinstance(body, dict) or "value" not in body:
            raise IntegrityError(
                f"store item {found.key!r} in {found.namespace!r}: expected a value, got "
                f"{type(body).__name__}"
            )
        self._bodies.put(key, body)
        return body

    def _value(self, found: Found) -> Any:
        return self._body(found)["value"]

    def _item(self, found: Found) -> Item:
        return Item(
            value=self._value(found),
            key=found.key,
            namespace=found.namespace,
            created_at=_time(found.created_ms),
            updated_at=_time(found.updated_ms),
        )

    def _search(self, op: SearchOp, vectors: dict[str, list[float]]) -> list[SearchItem]:
        query = vectors.get(op.query) if op.query else None
        hits = self.space.search(
            tuple(op.namespace_prefix),
            query=query,
            filter=op.filter,
            offset=op.offset,
            limit=op.limit,
        )
        if op.refresh_ttl:
            self.space.touch([f for f, _ in hits])
        return [
            SearchItem(
                namespace=f.namespace,
                key=f.key,
                value=self._value(f),
                created_at=_time(f.created_ms),
                updated_at=_time(f.updated_ms),
                # int8 vectors round a cosine by up to about 0.01: kept within [-1, 1].
                score=None if score is None else min(1.0, max(-1.0, score)),
            )
            for f, score in hits
        ]

    # ------------------------------------------------------------ embeddings

    def _embed_queries(self, queries: set[str]) -> dict[str, list[float]]:
        if not queries or self.embeddings is None:
            return {}
        return dict(zip(queries, parallel(self.embeddings.embed_query, list(queries)), strict=True))

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


def checked_index(name: str, value: object) -> dict[str, Any] | None:
    """The Store's `index` (LangGraph's IndexConfig), checked when the store is built so
    that no put fails on it later: `dims`, a positive int, and `embed` (a function, an
    Embeddings, or "provider:model" text), both required; `fields`, a list of field
    paths. None or {} is no index."""
    if value is None or (isinstance(value, Mapping) and not value):
        return None
    form = "an IndexConfig such as {'dims': 1536, 'embed': embed, 'fields': ['text']}"
    index = dict(arguments.mapping(name, value, what=form))
    # A typo is refused; what LangGraph's SQL stores add (their indexes') is taken, unused.
    known = [*IndexConfig.__annotations__, "text_fields", "ann_index_config", "distance_type"]
    refuse_unknown(name, index, {"": known})
    missing = [key for key in ("dims", "embed") if index.get(key) is None]
    if missing:
        raise InvalidConfigError(
            f"{name} has no {' and no '.join(map(repr, missing))}; expected {form}: dims is "
            "what the embedding model returns, embed what makes the vectors"
        )
    arguments.whole(f"{name}['dims']", index["dims"], minimum=1, unit="dimensions")
    embed = index["embed"]
    if not (isinstance(embed, str) or callable(embed) or hasattr(embed, "embed_documents")):
        raise ArgumentTypeError(
            f"{name}['embed'] must be a function of texts to vectors, a LangChain Embeddings, "
            f"or text such as 'openai:text-embedding-3-small', got {arguments.came(embed)}"
        )
    if index.get("fields") is not None:
        arguments.texts(f"{name}['fields']", index["fields"], each="field paths")
    return index


def checked_ttl_config(name: str, value: object) -> dict[str, Any] | None:
    """The Store's `ttl` (LangGraph's TTLConfig), checked when the store is built:
    `default_ttl` minutes (at least 0, or None), `refresh_on_read` a yes/no,
    `sweep_interval_minutes` a positive number, an int or a float as LangGraph's own
    stores take it (or None)."""
    if value is None:
        return None
    form = "a TTLConfig such as {'default_ttl': 60, 'refresh_on_read': True}"
    ttl = dict(arguments.mapping(name, value, what=form))
    refuse_unknown(name, ttl, {"": TTLConfig.__annotations__})
    if ttl.get("default_ttl") is not None:
        memory_arguments.store_ttl(f"{name}['default_ttl']", ttl["default_ttl"])
    if "refresh_on_read" in ttl:
        ttl["refresh_on_read"] = arguments.boolean(
            f"{name}['refresh_on_read']", ttl["refresh_on_read"]
        )
    if ttl.get("sweep_interval_minutes") is not None:
        arguments.positive(
            f"{name}['sweep_interval_minutes']", ttl["sweep_interval_minutes"], unit="minutes"
        )
    return ttl


def _last_puts(ops: Sequence[Op]) -> dict[tuple[Namespace, str], PutOp]:
    # The last put of a key in a batch wins, as in LangGraph's stores.
    puts: dict[tuple[Namespace, str], PutOp] = {}
    for op in ops:
        if isinstance(op, PutOp):
            puts[(op.namespace, op.key)] = op
    return puts


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
        if isinstance(op, PutOp):  # BaseStore.put's rules too, and the size ours holds
            memory_arguments.put_namespace(op.namespace, str(op.key), MEMORY_PUT_MAX)
        if isinstance(op, (GetOp, PutOp)) and not isinstance(op.key, str):
            raise InvalidConfigError(
                f"store key in namespace {op.namespace!r}: expected a str, got "
                f"{type(op.key).__name__} {op.key!r}; pass str({op.key!r}) if that is meant"
            )
        if isinstance(op, PutOp) and op.value is not None:
            checked_ttl(op.ttl, "minutes", f"store item {op.key!r} in namespace {op.namespace!r}")
    return ops
