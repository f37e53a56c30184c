"""The arguments only the Store and the node cache take, in the vocabulary of
`arguments.py` (which the checkpointer's path loads alone): a namespace is a tuple of
non-empty str labels (else LangGraph's `InvalidNamespaceError`), never a str's
characters; a put's `index` and `ttl`; `batch`'s ops; the cache's (namespace, key)
pairs. Pure."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from langgraph.store.base import (
    NOT_PROVIDED,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)

from langgraph.checkpoint.s3dynamo.config.arguments import (
    came,
    having,
    many,
    mapping,
    number,
    optional,
    text,
    texts,
    whole,
)
from langgraph.checkpoint.s3dynamo.errors import ArgumentTypeError


def namespace(name: str, value: object) -> tuple[str, ...]:
    """A namespace: a tuple (or, as LangGraph's own stores take it, a list) of non-empty
    str labels. Anything else is LangGraph's `InvalidNamespaceError`, naming the tuple to
    pass: a string is one label, never a tuple of its characters."""
    if isinstance(value, str):
        raise InvalidNamespaceError(
            f"{name} must be a tuple of labels, got {came(value)}, which would be taken for "
            f"the labels of its characters; pass ({value!r},) for one label"
        )
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple):
        raise InvalidNamespaceError(
            f"{name} must be a tuple of labels such as ('users', 'ada'), got {came(value)}"
        )
    for label in value:
        if not isinstance(label, str) or not label:
            raise InvalidNamespaceError(
                f"{name} {value!r}: each label must be a non-empty str, got {came(label)}"
            )
    return value


# UTF-8 bytes of a written namespace's labels, all told: its sealed name must fit the
# directory entry's item (400 KB) with room to spare, whatever the seal adds.
NAMESPACE_BYTES_MAX = 200_000


def written_namespace(name: str, value: tuple[str, ...], levels: int | None = None) -> None:
    """A namespace a write may name: at most `NAMESPACE_BYTES_MAX` bytes of labels, and
    `levels` labels where given; else `InvalidNamespaceError`, before any request."""
    size = sum(len(label.encode("utf-8", "surrogatepass")) for label in value)
    if size > NAMESPACE_BYTES_MAX:
        raise InvalidNamespaceError(
            f"{name} holds {size:,} bytes of labels, over the {NAMESPACE_BYTES_MAX:,} a "
            "namespace may hold (its name is kept in one DynamoDB item); keep long text in "
            "the value, or a hash of it in the label"
        )
    if levels is not None and len(value) > levels:
        raise InvalidNamespaceError(
            f"{name} has {len(value)} labels, over the {levels} a Store namespace may have "
            "(a put marks each level above it in one transaction); use a shallower namespace"
        )


def put_namespace(value: tuple[str, ...], key: str, levels: int) -> None:
    """A Store put's namespace: neither empty nor under 'langgraph' (what `BaseStore.put`
    refuses, refused for a put given to `batch` too), and `written_namespace`."""
    if not value or value[0] == "langgraph":
        raise InvalidNamespaceError(
            f"a put's namespace may be neither empty nor under 'langgraph', got {value!r}"
        )
    written_namespace(f"the namespace of store item {key!r}", value, levels)


def store_key(name: str, value: object) -> str:
    """An item's key as LangGraph's `BaseStore` takes it: any value, as its `str` (a UUID,
    an int), so code written for LangGraph's stores keys items alike here; None, which
    would be the key 'None', is refused."""
    if value is None:
        raise ArgumentTypeError(
            f"{name} must be a str, got {came(value)}, which would be the key 'None'; a UUID "
            "or a number is taken as its str, as LangGraph's stores take it"
        )
    return value if isinstance(value, str) else str(value)


def namespace_prefix(name: str, value: object) -> tuple[str, ...]:
    """A namespace prefix a delete takes (`namespace`), never the empty one, which would
    be every namespace of the Store."""
    prefix = namespace(name, value)
    if not prefix:
        raise InvalidNamespaceError(
            f"{name} is empty, which would delete the whole Store; pass a prefix such as "
            "('users', 'ada'). To empty the Store, delete each top-level namespace: for ns "
            "in store.list_namespaces(max_depth=1, limit=10_000): store.delete_namespace(ns)"
        )
    return prefix


def index_fields(name: str, value: object) -> object:
    """A Store put's `index`: None (the IndexConfig's fields), False (none), or a list of
    field paths."""
    if value is None or value is False:
        return value
    return texts(name, value, each="field paths (or False, or None)")


def store_ttl(name: str, value: object) -> object:
    """A Store put's `ttl`: minutes, at least 0, or None (no expiry)."""
    if value is None or value is NOT_PROVIDED:
        return value
    return number(name, value, minimum=0, unit="minutes", finite=True)


def store_ops(name: str, value: object) -> list[Any]:
    """What `batch` takes: GetOp, PutOp, SearchOp and ListNamespacesOp, each field as the
    method that makes the op takes it (the key and the TTL: `memory_store._validated`)."""
    ops = many(name, value, each="store operations")
    for i, op in enumerate(ops):
        at = f"{name}[{i}]"
        if isinstance(op, (GetOp, PutOp)):
            namespace(f"{at}.namespace", op.namespace)
        if isinstance(op, PutOp):
            optional(mapping)(f"{at}.value", op.value)
            index_fields(f"{at}.index", op.index)
        elif isinstance(op, SearchOp):
            namespace(f"{at}.namespace_prefix", op.namespace_prefix)
            optional(mapping)(f"{at}.filter", op.filter)
            optional(text)(f"{at}.query", op.query)
            for field in ("limit", "offset"):
                whole(f"{at}.{field}", getattr(op, field), minimum=0)
        elif isinstance(op, ListNamespacesOp):
            for condition in op.match_conditions or ():
                namespace(f"{at}.match_conditions path", condition.path)
            optional(functools.partial(whole, minimum=1))(f"{at}.max_depth", op.max_depth)
            for field in ("limit", "offset"):
                whole(f"{at}.{field}", getattr(op, field), minimum=0)
        elif not isinstance(op, GetOp):
            raise ArgumentTypeError(
                f"{at} must be a GetOp, PutOp, SearchOp or ListNamespacesOp, got {came(op)}"
            )
    return ops


def cache_keys(name: str, value: object) -> list[tuple[tuple[str, ...], str]]:
    """The node cache's keys: (namespace, key) pairs."""
    keys = many(name, value, each="(namespace, key) pairs")
    for i, pair in enumerate(keys):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ArgumentTypeError(
                f"{name}[{i}] must be a (namespace, key) pair, got {came(pair)}"
            )
        namespace(f"{name}[{i}] namespace", pair[0])
        text(f"{name}[{i}] key", pair[1])
    return keys


def cache_pairs(name: str, value: object) -> Mapping[Any, Any]:
    """What the node cache's `set` takes: {(namespace, key): (value, ttl seconds)}."""
    pairs = mapping(name, value, what="a dict of (namespace, key) to (value, ttl seconds)")
    for space, key in cache_keys(f"{name} keys", list(pairs)):
        written_namespace(f"the namespace of cache entry {key!r}", space)
    for key, entry in pairs.items():
        if not (isinstance(entry, tuple) and len(entry) == 2):
            raise ArgumentTypeError(
                f"{name}[{key!r}] must be a (value, ttl) pair, got {came(entry)}"
            )
    return pairs


def namespaces(name: str, value: object) -> list[tuple[str, ...]]:
    values = many(name, value, each="namespaces (tuples of labels)")
    return [namespace(f"{name}[{i}]", ns) for i, ns in enumerate(values)]


# ------------------------------------------------------------- the vocabulary as types

MemorySpace = Annotated[
    Any, functools.partial(having, methods=("item_key", "put_many"), what="a memory space")
]
Labels = Annotated[tuple[str, ...], namespace]
StoreKey = Annotated[str, store_key]
MaybeLabels = Annotated[tuple[str, ...] | None, optional(namespace)]
Prefix = Annotated[tuple[str, ...], namespace_prefix]
LabelsList = Annotated[Sequence[tuple[str, ...]] | None, optional(namespaces)]
Depth = Annotated[int | None, optional(functools.partial(whole, minimum=1))]
IndexFields = Annotated[Literal[False] | list[str] | None, index_fields]
StoreTtl = Annotated[Any, store_ttl]
StoreOps = Annotated[Iterable[Any], store_ops]
