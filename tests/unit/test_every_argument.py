"""Every argument of every public method given a wrong type once (issue 49): the saver's
LangGraph methods and their async twins, `saver.ops`, `saver.ops.memory`, the Store and
the node cache, and the constructors. Each call gets valid arguments but one, which is
`object()` (a type no parameter takes), or, where a list is taken, one string: the error
is an `InvalidConfigError` (or LangGraph's `InvalidNamespaceError`) that names the
parameter, raised before any request, and nothing is written. A second test holds the
tables of `arguments.py` to every public method's parameters, so that a new one cannot
be left out."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, NamedTuple

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import GetOp, InvalidNamespaceError

from langgraph.cache.s3dynamo import S3DynamoCache
from langgraph.checkpoint.s3dynamo import InvalidConfigError, S3DynamoSaver
from langgraph.checkpoint.s3dynamo.boundary import checks_of
from langgraph.checkpoint.s3dynamo.ops import Operations
from langgraph.checkpoint.s3dynamo.ops.catalog import CatalogOperations
from langgraph.checkpoint.s3dynamo.ops.memory import MemoryOperations
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.backends import Backend, memory_backend
from tests.support.unchanged import nothing_written

NS = ("users", "ada")
WRONG = object()


class World(NamedTuple):
    backend: Backend
    saver: S3DynamoSaver
    config: dict[str, Any]  # of thread "t"'s checkpoint
    store: S3DynamoStore
    cache: S3DynamoCache[Any]


@pytest.fixture(scope="module")
def world() -> World:
    """One deployment for every case (none writes): thread "t", a Store item, a cache
    entry, on the in-memory twins."""
    backend = memory_backend()
    saver = backend.saver()
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notes": "hello"}
    checkpoint["channel_versions"] = {"notes": "1"}
    cp = saver.put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {}, {"notes": "1"}
    )
    store = S3DynamoStore.from_saver(saver)
    store.put(NS, "k", {"v": 1})
    cache: S3DynamoCache[Any] = S3DynamoCache.from_saver(saver)
    cache.set({(("node",), "k"): (1, 60)})
    return World(backend, saver, cp, store, cache)


def _put(w: World) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    return {"config": w.config, "checkpoint": checkpoint, "metadata": {}, "new_versions": {}}


# Valid arguments of each method, by surface; a case replaces one of them.
SAVER: dict[str, Callable[[World], dict[str, Any]]] = {
    "get_tuple": lambda w: {"config": w.config},
    "list": lambda w: {"config": w.config, "filter": {}, "before": None, "limit": 2},
    "put": _put,
    "put_writes": lambda w: {
        "config": w.config,
        "writes": [("notes", "x")],
        "task_id": "task",
        "task_path": "",
    },
    "delete_thread": lambda w: {"thread_id": "t"},
    "delete_for_runs": lambda w: {"run_ids": ["run"]},
    "copy_thread": lambda w: {"source_thread_id": "t", "target_thread_id": "t2"},
    "prune": lambda w: {"thread_ids": ["t"], "strategy": "keep_latest", "keep_last": 1},
    "get_delta_channel_history": lambda w: {"config": w.config, "channels": ["notes"]},
    "get_next_version": lambda w: {"current": None, "channel": None},
    "search_threads": lambda w: {"metadata": None, "limit": 10, "before": None},
}
_expiry = {
    "older_than": "30d",
    "strategy": "delete",
    "keep_last": None,
    "deadline": None,
    "scope": None,
    "full": False,
}
_lock = {"thread_id": "t", "ttl": 10, "wait": 0, "context": None, "heartbeat": False}
OPERATIONS: dict[str, Callable[[World], dict[str, Any]]] = {
    "check": lambda w: {"raise_on_problem": True},
    "plan_reencrypt": lambda w: {"thread_ids": ["t"], "scope": None},
    "reencrypt": lambda w: {"thread_ids": ["t"], "scope": None},
    "plan_garbage_collection": lambda w: {
        "thread_ids": ["t"],
        "grace": timedelta(hours=1),
        "scope": None,
    },
    "plan_incremental_garbage_collection": lambda w: {"grace": timedelta(hours=1), "now": None},
    "plan_expiry": lambda w: dict(_expiry),
    "expire_idle_threads": lambda w: {**_expiry, "dry_run": True},
    "plan_delete": lambda w: {"thread_id": "t"},
    "plan_copy": lambda w: {"source": "t", "target": "t2"},
    "plan_prune": lambda w: {"thread_ids": ["t"], "strategy": "keep_latest", "keep_last": 1},
    "plan_import": lambda w: {"source": InMemorySaver(), "thread_ids": None},
    "import_threads": lambda w: {"source": InMemorySaver(), "thread_ids": None},
    "plan_delete_runs": lambda w: {"run_ids": ["run"]},
    "thread_lock": lambda w: dict(_lock),
    "athread_lock": lambda w: dict(_lock),
    "threads": lambda w: {"metadata": None},
    "history": lambda w: {"thread_id": "t", "ns": None},
    "checkpoint_ids": lambda w: {"thread_id": "t", "ns": ""},
    "checkpoints": lambda w: {"thread_id": "t"},
    "stats": lambda w: {"thread_id": "t", "progress": None},
    "verify": lambda w: {"thread_id": "t", "progress": None},
}
MEMORY_OPERATIONS: dict[str, Callable[[World], dict[str, Any]]] = {
    "expire": lambda w: {"dry_run": True},
    "expire_space": lambda w: {"space": w.store.space},
    "collect_garbage": lambda w: {"grace": timedelta(hours=1)},
    "mark_ancestors": lambda w: {"space": w.store.space},
    "expired_at": lambda w: {"namespace": NS, "key": "k"},
    "plan_namespace_delete": lambda w: {"prefix": NS},
}
STORE: dict[str, Callable[[World], dict[str, Any]]] = {
    "get": lambda w: {"namespace": NS, "key": "k", "refresh_ttl": None},
    "search": lambda w: {
        "namespace_prefix": NS,
        "query": None,
        "filter": None,
        "limit": 10,
        "offset": 0,
        "refresh_ttl": None,
    },
    "put": lambda w: {"namespace": NS, "key": "k", "value": {"v": 1}, "index": None, "ttl": None},
    "delete": lambda w: {"namespace": NS, "key": "k"},
    "list_namespaces": lambda w: {
        "prefix": None,
        "suffix": None,
        "max_depth": None,
        "limit": 100,
        "offset": 0,
    },
    "batch": lambda w: {"ops": [GetOp(NS, "k")]},
    "delete_namespace": lambda w: {"prefix": NS},
}
CACHE: dict[str, Callable[[World], dict[str, Any]]] = {
    "get": lambda w: {"keys": [(("node",), "k")]},
    "set": lambda w: {"pairs": {(("node",), "k"): (1, 60)}},
    "clear": lambda w: {"namespaces": None},
}

# Async twins that run their sync core (the core's table checks them): the saver's and
# the cache's. The Store's async methods are paths of their own, in its table.
TWINS = {"saver": SAVER, "cache": CACHE}
SURFACES: dict[str, tuple[type, dict[str, Callable[[World], dict[str, Any]]]]] = {
    "saver": (S3DynamoSaver, SAVER),
    "ops": (Operations, OPERATIONS),
    "ops.memory": (MemoryOperations, MEMORY_OPERATIONS),
    "ops.catalog": (
        CatalogOperations,
        {"plan_build": lambda w: {"progress": None}, "build": lambda w: {}},
    ),
    "store": (S3DynamoStore, {**STORE, **{f"a{m}": b for m, b in STORE.items()}}),
    "cache": (S3DynamoCache, CACHE),
}
# Parameters that take a list, which a string must not stand for.
LISTS = {
    ("saver", "prune", "thread_ids"),
    ("saver", "delete_for_runs", "run_ids"),
    ("saver", "get_delta_channel_history", "channels"),
    ("saver", "put_writes", "writes"),
    ("ops", "plan_reencrypt", "thread_ids"),
    ("ops", "reencrypt", "thread_ids"),
    ("ops", "plan_garbage_collection", "thread_ids"),
    ("ops", "plan_prune", "thread_ids"),
    ("ops", "plan_import", "thread_ids"),
    ("ops", "import_threads", "thread_ids"),
    ("ops", "plan_delete_runs", "run_ids"),
    ("store", "put", "index"),
    ("store", "batch", "ops"),
    ("store", "delete_namespace", "prefix"),
    ("ops.memory", "plan_namespace_delete", "prefix"),
    ("cache", "get", "keys"),
    ("cache", "clear", "namespaces"),
}
# LangGraph passes `channel` as None and the saver does not read it; a Store key of any
# type is its str, as LangGraph's `BaseStore` takes it (None is refused:
# `test_arguments.py`).
NOT_READ = {
    ("saver", "get_next_version", "channel"),
    *(("store", m, "key") for m in ("get", "put", "delete", "aget", "aput", "adelete")),
}


def target(w: World, surface: str) -> Any:
    return {
        "saver": w.saver,
        "ops": w.saver.ops,
        "ops.memory": w.saver.ops.memory,
        "ops.catalog": w.saver.ops.catalog,
        "store": w.store,
        "cache": w.cache,
    }[surface]


def cases() -> Iterator[Any]:
    for surface, (cls, baselines) in SURFACES.items():
        methods = dict(baselines)
        if surface in TWINS:
            methods.update({f"a{m}": b for m, b in baselines.items() if hasattr(cls, f"a{m}")})
        for method in sorted(methods):
            core = method[1:] if method not in baselines else method
            for param in inspect.signature(getattr(cls, method)).parameters:
                if param == "self" or (surface, core, param) in NOT_READ:
                    continue
                yield pytest.param(
                    surface, method, core, param, WRONG, id=f"{surface}.{method}.{param}"
                )
                if (
                    surface,
                    core.removeprefix("a") if surface == "store" else core,
                    param,
                ) in LISTS:
                    yield pytest.param(
                        surface, method, core, param, "ab", id=f"{surface}.{method}.{param}-str"
                    )


def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call as a user would (positional-only parameters by position), to the end: a
    generator is drained, a coroutine run, a context manager entered."""
    params = inspect.signature(fn).parameters
    args = [kwargs.pop(n) for n, p in params.items() if p.kind is p.POSITIONAL_ONLY and n in kwargs]
    result = fn(*args, **kwargs)
    if inspect.iscoroutine(result):
        return asyncio.run(result)
    if inspect.isasyncgen(result):

        async def drain() -> list[Any]:
            return [x async for x in result]

        return asyncio.run(drain())
    if inspect.isgenerator(result):
        return list(result)
    if hasattr(result, "__aenter__"):

        async def enter() -> None:
            async with result:
                pass

        return asyncio.run(enter())
    if hasattr(result, "__enter__"):
        with result:
            pass
    return result


@pytest.mark.parametrize(("surface", "method", "core", "param", "wrong"), list(cases()))
def test_every_argument_given_a_wrong_type_is_named_before_any_request(
    world: World, surface: str, method: str, core: str, param: str, wrong: Any
) -> None:
    baselines = SURFACES[surface][1]
    kwargs = baselines.get(method, baselines.get(core))(world)  # type: ignore[misc]
    kwargs[param] = wrong
    world.backend.reset()
    with (
        nothing_written(world.backend),
        pytest.raises((InvalidConfigError, InvalidNamespaceError)) as raised,
    ):
        _call(getattr(target(world, surface), method), kwargs)
    assert param in str(raised.value), str(raised.value)
    assert not world.backend.calls()


def _public(cls: type) -> dict[str, inspect.Signature]:
    out = {}
    for name in dir(cls):
        attr = inspect.getattr_static(cls, name, None)
        if name.startswith("_") or isinstance(attr, (property, classmethod, staticmethod)):
            continue
        if callable(attr) and not isinstance(attr, type):
            out[name] = inspect.signature(getattr(cls, name))
    return out


# LangGraph's own methods the saver inherits unchanged: `get`/`aget` read through
# `get_tuple`/`aget_tuple` (checked), `with_allowlist` hands its list to LangGraph's
# serializer.
INHERITED = {"saver": {"get", "aget", "with_allowlist"}}


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_every_parameter_of_every_public_method_names_its_check(surface: str) -> None:
    """Each parameter's type hint carries its check (`boundary.public`); an async twin's
    are its sync method's."""
    cls, _ = SURFACES[surface]
    missing = []
    for name, signature in _public(cls).items():
        if name in INHERITED.get(surface, ()):
            continue
        params = [p for p in signature.parameters if p != "self"]
        checked = checks_of(getattr(cls, name))
        missing += [f"{name}({p})" for p in params if p not in checked]
    assert missing == [], f"{surface}: parameters no type hint checks: {missing}"


# ------------------------------------------------------------------ constructors


def _constructors() -> Iterator[Any]:
    for param in inspect.signature(S3DynamoSaver).parameters:
        yield pytest.param(S3DynamoSaver, param, id=f"S3DynamoSaver.{param}")
    for cls in (S3DynamoStore, S3DynamoCache):
        for param in inspect.signature(cls.from_saver).parameters:
            yield pytest.param(cls, param, id=f"{cls.__name__}.from_saver.{param}")


@pytest.mark.parametrize(("cls", "param"), list(_constructors()))
def test_every_constructor_argument_given_a_wrong_type_is_named(
    world: World, cls: type, param: str
) -> None:
    if cls is S3DynamoSaver:
        kwargs: dict[str, Any] = {"table": "t", "bucket": "b", "plaintext": True, param: WRONG}
        if param == "settings":  # settings, or keyword settings: not both
            kwargs = {"settings": WRONG}
        make: Callable[..., Any] = cls
    else:
        kwargs = {"saver": world.saver, param: WRONG}
        make = cls.from_saver  # type: ignore[attr-defined]
    with pytest.raises(InvalidConfigError) as raised:
        make(**kwargs)
    assert param in str(raised.value), str(raised.value)
