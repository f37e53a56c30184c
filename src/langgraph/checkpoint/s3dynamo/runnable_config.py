"""What LangGraph hands the saver, validated: thread ids, namespaces and checkpoint ids
from a config. Pure functions; errors say what was expected and how to fix it. (The
saver's own settings are `settings.py`.)"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig

from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from langgraph.checkpoint.s3dynamo.layout import SEPARATOR

# Documented limits on identities (UTF-8 bytes). Names are hashed, so these bound only
# the sealed copies kept for list(None) and the cost of a hostile id.
MAX_THREAD_ID_BYTES = 1024
MAX_NAMESPACE_BYTES = 2048
MAX_CHECKPOINT_ID_BYTES = 128


def thread_id_of(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, uuid.UUID)):
        raise TypeError(
            f"thread_id must be a str (or an int, the same thread as its decimal string), "
            f"got {type(value).__name__}: {value!r}"
        )
    tid = str(value)
    if len(tid.encode("utf-8", "surrogatepass")) > MAX_THREAD_ID_BYTES:
        raise InvalidConfigError(
            f"thread_id is {len(tid.encode('utf-8', 'surrogatepass'))} bytes; the limit is "
            f"{MAX_THREAD_ID_BYTES}. Use a shorter id, e.g. a hash of it"
        )
    return tid


def checkpoint_id_of(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidConfigError(
            f"checkpoint id must be a non-empty str (LangGraph makes uuid6 ids), got {value!r}"
        )
    if SEPARATOR in value or len(value.encode()) > MAX_CHECKPOINT_ID_BYTES:
        raise InvalidConfigError(
            f"checkpoint id {value[:40]!r} must be at most {MAX_CHECKPOINT_ID_BYTES} bytes "
            f"without {SEPARATOR!r}; use the ids LangGraph generates"
        )
    return value


def target(config: RunnableConfig, namespace_optional: bool = False) -> tuple[str, Any, Any]:
    """(thread id, namespace, checkpoint id) from a config, validated."""
    configurable = (config or {}).get("configurable") or {}
    if "thread_id" not in configurable:
        raise InvalidConfigError(
            "config has no thread_id: expected config={'configurable': {'thread_id': ...}}, "
            f"got configurable keys {sorted(configurable)}; pass it when you invoke the "
            "graph, e.g. graph.invoke(inputs, {'configurable': {'thread_id': 'user-42'}})"
        )
    tid = thread_id_of(configurable["thread_id"])
    ns = configurable.get("checkpoint_ns")
    if ns is None and not namespace_optional:
        ns = ""
    if ns is not None:
        if not isinstance(ns, str):
            raise TypeError(f"checkpoint_ns must be a str, got {type(ns).__name__}")
        if len(ns.encode("utf-8", "surrogatepass")) > MAX_NAMESPACE_BYTES:
            raise InvalidConfigError(
                f"checkpoint_ns is longer than the {MAX_NAMESPACE_BYTES}-byte limit; "
                "nest subgraphs less deeply or shorten node names"
            )
    cid = configurable.get("checkpoint_id")
    return tid, ns, checkpoint_id_of(cid) if cid else None


def make_config(tid: str, ns: str, cid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}}


def describe(tid: str, ns: str, cid: str) -> str:
    where = f"thread {tid!r}" + (f" namespace {ns!r}" if ns else "")
    return f"{where} checkpoint {cid}"
