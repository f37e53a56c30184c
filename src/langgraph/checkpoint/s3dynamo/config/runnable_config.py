"""What LangGraph hands the saver, validated: thread ids, namespaces and checkpoint ids
from a config, and the share of a checkpoint's metadata the config makes. Pure functions;
errors say what was expected and how to fix it. (The saver's own settings are
`settings.py`.)"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import get_checkpoint_metadata

from langgraph.checkpoint.s3dynamo.errors import (
    ArgumentTypeError,
    InvalidConfigError,
    ItemTooLargeError,
)

# Documented limits on identities (UTF-8 bytes). Names are hashed, so these bound only
# the sealed copies kept for list(None) and the cost of a hostile id.
MAX_THREAD_ID_BYTES = 1024
MAX_NAMESPACE_BYTES = 2048
# A checkpoint id is a UUID's text; longer text is not parsed.
MAX_CHECKPOINT_ID_BYTES = 128
UUID_EXAMPLE = "1f0c2a8e-5b3d-6e2a-8001-3c5d7e9f1a2b"
# What LangGraph copies from a config into the metadata of every checkpoint of a run (the
# strings and numbers of config["configurable"] and config["metadata"]) may take this
# much sealed: with the rest of the record (body, up to 64 KiB of inline values) the
# checkpoint still fits one 400 KB index item. `put` and `put_writes` check the same
# config the same way, so a task's writes are refused with the checkpoint they belong
# to: LangGraph stores them while that checkpoint's put is still running.
COPIED_METADATA_MAX = 256 * 1024

_At = TypeVar("_At", bound=tuple[str, str, str])  # a checkpoint's identity


def thread_id_of(value: Any, name: str = "thread_id") -> str:
    """A thread id, from a config or an argument (`name` says which): a str, or an int
    or a UUID, the same thread as its string."""
    if isinstance(value, bool) or not isinstance(value, (str, int, uuid.UUID)):
        raise ArgumentTypeError(
            f"{name} must be a str (or an int, the same thread as its decimal string), "
            f"got {type(value).__name__}: {value!r}"
        )
    tid = str(value)
    if len(tid.encode("utf-8", "surrogatepass")) > MAX_THREAD_ID_BYTES:
        raise InvalidConfigError(
            f"{name} is {len(tid.encode('utf-8', 'surrogatepass'))} bytes; the limit is "
            f"{MAX_THREAD_ID_BYTES}. Use a shorter id, e.g. a hash of it"
        )
    return tid


def checkpoint_id_of(value: Any, name: str = "config['configurable']['checkpoint_id']") -> str:
    """A checkpoint id as LangGraph makes them (`langgraph.checkpoint.base.id.uuid6`), or
    any UUID in its canonical text (LangGraph's conformance suite uses uuid4), from a
    config or a checkpoint (`name` says which). Anything else, which no checkpoint can
    have, is refused rather than read as a thread without it."""
    if isinstance(value, uuid.UUID):
        return str(value)
    expected = (
        "a checkpoint id as LangGraph makes them: a UUID in canonical form, such as "
        f"'{UUID_EXAMPLE}'"
    )
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be {expected}, got {type(value).__name__}: {value!r}")
    try:
        canonical = str(uuid.UUID(value)) if len(value) <= MAX_CHECKPOINT_ID_BYTES else None
    except ValueError:
        canonical = None
    if canonical != value:
        hint = f"; pass {canonical!r}" if canonical else ""
        raise InvalidConfigError(
            f"{name} must be {expected}, got {value[:60]!r}{hint}. Pass the checkpoint_id of "
            "a config get_state, get_tuple or list returned, or none for the thread's latest"
        )
    return value


def before_id_of(before: RunnableConfig | None) -> str | None:
    """The checkpoint id of `list`'s `before` config (None: none given)."""
    cid = ((before or {}).get("configurable") or {}).get("checkpoint_id")
    return checkpoint_id_of(cid, "before['configurable']['checkpoint_id']") if cid else None


def target(config: RunnableConfig, namespace_optional: bool = False) -> tuple[str, Any, Any]:
    """(thread id, namespace, checkpoint id) from a config, validated."""
    configurable = (config or {}).get("configurable") if isinstance(config, Mapping) else config
    if not isinstance(configurable or {}, Mapping) or not isinstance(config or {}, Mapping):
        raise ArgumentTypeError(
            f"config must be a dict such as {{'configurable': {{'thread_id': 'user-42'}}}}, "
            f"got {type(config).__name__}: {str(config)[:80]!r}"
        )
    configurable = configurable or {}
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
            raise ArgumentTypeError(
                f'checkpoint_ns must be a str ("" for the root graph), got '
                f"{type(ns).__name__}: {ns!r}"
            )
        if len(ns.encode("utf-8", "surrogatepass")) > MAX_NAMESPACE_BYTES:
            raise InvalidConfigError(
                f"checkpoint_ns is longer than the {MAX_NAMESPACE_BYTES}-byte limit; "
                "nest subgraphs less deeply or shorten node names"
            )
    cid = configurable.get("checkpoint_id")
    return tid, ns, checkpoint_id_of(cid) if cid else None


def put_target(config: RunnableConfig, checkpoint_id: Any) -> tuple[str, str, str, str | None]:
    """A put's (thread id, namespace, checkpoint id, parent id), validated: a checkpoint
    is never its own parent, so every walk up a thread's history ends."""
    tid, ns, parent_id = target(config)
    cid = checkpoint_id_of(checkpoint_id, "checkpoint['id']")
    if cid == parent_id:
        raise InvalidConfigError(
            f"{describe(tid, ns, cid)}: the config names this checkpoint as its own parent; "
            "put a new checkpoint (a new id) with the config of the one it follows, as put() "
            "returned it"
        )
    return tid, ns, cid, parent_id


def writes_target(config: RunnableConfig) -> tuple[str, str, str]:
    """The (thread id, namespace, checkpoint id) pending writes belong to, validated."""
    tid, ns, cid = target(config)
    if cid is None:
        raise InvalidConfigError(
            "put_writes needs the checkpoint the writes belong to: expected "
            "config['configurable']['checkpoint_id'] (the config put() returned), got none"
        )
    return tid, ns, cid


def make_config(tid: str, ns: str, cid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}}


def describe(tid: str, ns: str, cid: str) -> str:
    where = f"thread {tid!r}" + (f" namespace {ns!r}" if ns else "")
    return f"{where} checkpoint {cid}"


def _size_bound(copied: Mapping[str, Any]) -> int:
    """More than any serializer makes of `copied` (str keys; str, int, float or bool
    values), sealed: 12 bytes a character covers JSON's escapes of astral characters."""
    return 1024 + sum(
        16 + 12 * len(k) + (12 * len(v) if isinstance(v, str) else 32) for k, v in copied.items()
    )


def refuse_copied_metadata(
    config: RunnableConfig,
    at: _At,
    sealed_size: Callable[[_At, Mapping[str, Any]], int],
    task_id: str | None = None,
) -> None:
    """Raise `ItemTooLargeError` if what LangGraph copies from `config` into the metadata
    of checkpoint `at` (thread id, namespace, checkpoint id) would take more than
    `COPIED_METADATA_MAX` sealed (`sealed_size` seals it; asked only when a cheap bound
    does not settle it). With `task_id`, the write refused is that task's writes."""
    copied = get_checkpoint_metadata(config, {})
    if _size_bound(copied) <= COPIED_METADATA_MAX:
        return
    size = sealed_size(at, copied)
    if size <= COPIED_METADATA_MAX:
        return
    what = describe(*at) + ("" if task_id is None else f": the writes of task {task_id!r}")
    sizes = {str(k): len(repr(v)) for k, v in copied.items()}
    key = max(sizes, key=lambda k: sizes[k])
    raise ItemTooLargeError(
        f"{what}: the metadata LangGraph copies from the config into every checkpoint (the "
        f"strings and numbers of config['configurable'] and config['metadata']) is {size} "
        f"bytes sealed, over the {COPIED_METADATA_MAX}-byte limit that keeps a checkpoint "
        f"within one index item; its largest key is {key!r} (about {sizes[key]} characters). "
        "Keep large data in the graph state (or the Store) instead; nothing was written"
    )
