"""What LangGraph hands the saver, validated: thread ids, namespaces, checkpoint ids,
and the key settings. Pure functions; errors say what was expected and how to fix it."""

from __future__ import annotations

import hashlib
import hmac
import os
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from langgraph.checkpoint.s3dynamo.naming import SEPARATOR
from langgraph.checkpoint.s3dynamo.sealing import Keyring

# Documented limits on identities (UTF-8 bytes). Names are hashed, so these bound only
# the sealed copies kept for list(None) and the cost of a hostile id.
MAX_THREAD_ID_BYTES = 1024
MAX_NAMESPACE_BYTES = 2048
MAX_CHECKPOINT_ID_BYTES = 128


def resolve_keys(
    keys: Mapping[str, bytes] | Keyring | None,
    active_key: str | None,
    secret: bytes | str | None,
) -> tuple[Keyring | None, bytes | None]:
    """Decide the keyring and the naming secret from arguments and the environment."""
    keyring, naming, _ = resolve_key_source(keys, active_key, secret)
    return keyring, naming


def resolve_key_source(
    keys: Mapping[str, bytes] | Keyring | None,
    active_key: str | None,
    secret: bytes | str | None,
) -> tuple[Keyring | None, bytes | None, str]:
    """The keyring, the naming secret, and where they came from (for messages)."""
    secret_bytes = secret.encode() if isinstance(secret, str) else secret
    if keys is not None:
        if isinstance(keys, Keyring):
            keyring = keys if active_key is None else Keyring(keys=keys.keys, active=active_key)
        else:
            keyring = Keyring(keys=dict(keys), active=active_key or next(iter(keys), ""))
        if not secret_bytes:
            raise InvalidConfigError(
                "encryption keys were given without a naming secret: expected secret=... "
                "(or S3DYNAMO_SECRET), which names objects and is never rotated, unlike keys"
            )
        return keyring, secret_bytes, "keys/S3DYNAMO_KEYS"
    if lg_key := os.environ.get("LANGGRAPH_AES_KEY"):
        # As on LangGraph's platform: the key alone turns encryption on.
        raw = lg_key.encode()
        if len(raw) not in (16, 24, 32):
            raise InvalidConfigError(
                f"LANGGRAPH_AES_KEY is {len(raw)} bytes; LangGraph requires a raw string of "
                "16, 24 or 32 bytes (it is used as is, not base64-decoded); make one with: "
                "python -c 'import secrets; print(secrets.token_hex(16))'"
            )
        derived = hmac.new(raw, b"s3dynamo/v1/langgraph-aes-key", hashlib.sha256).digest()
        source = "LANGGRAPH_AES_KEY" + (" and secret/S3DYNAMO_SECRET" if secret_bytes else "")
        return Keyring(keys={"lg": derived}, active="lg"), secret_bytes or raw, source
    return None, secret_bytes, "secret/S3DYNAMO_SECRET" if secret_bytes else "no secret"


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
