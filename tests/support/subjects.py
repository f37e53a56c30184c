"""Savers with data subjects on in-memory ports, and a small world of two users, for the
subjects and erasure tests: each has threads (a chat graph whose `user_id` LangGraph
copies into every checkpoint's metadata) and Store namespaces under ("users", user)."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import HumanMessage

from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from tests.support import chats
from tests.support.memory_index import MemoryIndex
from tests.support.savers import MemorySaver, memory_saver

SECRET = os.urandom(16)
KEYS = {"k1": os.urandom(32)}


def subject_saver(
    index: Any = None,
    objects: Any = None,
    keys: Any = None,
    **kwargs: Any,
) -> tuple[MemorySaver, Any]:
    """A saver whose threads' subject is their `user_id` (and, with `subject_label`, a
    Store namespace's), on in-memory ports; pass another's to share its storage (another
    process of the same deployment)."""
    keys = keys if keys is not None else MemoryIndex()
    kwargs.setdefault("subject_field", "user_id")
    saver = memory_saver(index, objects, keys=KEYS, secret=SECRET, key_index=keys, **kwargs)
    return saver, keys


def key_ids(saver: MemorySaver) -> dict[str, set[str]]:
    """Every sealed blob stored (items' bytes, inline values, objects), by the id of the
    key that sealed it: {key id: {where}}."""
    ids: dict[str, set[str]] = {}

    def note(blob: object, where: str) -> None:
        if isinstance(blob, bytes) and blob[:1] == b"\x01":
            ids.setdefault(Sealer().key_id_of(blob) or "-", set()).add(where)

    for item in saver.index.items():
        for name, value in item.items():
            where = f"{item['pk']} {item['sk']} {name}"
            for blob in value.values() if isinstance(value, dict) else [value]:
                note(blob, where)
    for key, (body, _) in saver.objects.blobs.items():
        note(body, key)
    return ids


def talk(saver: Any, tid: str, user: str | None, turns: int = 3) -> Any:
    """`turns` turns of the chat graph on thread `tid` as `user` (None: nobody's)."""
    g = chats.graph(saver)
    configurable = {"thread_id": tid, **({"user_id": user} if user else {})}
    for i in range(turns):
        message = HumanMessage(chats.prose(i, 60), id=f"h-{i}")
        g.invoke({"messages": [message]}, {"configurable": configurable})
    return g


def world(**kwargs: Any) -> tuple[MemorySaver, Any, Any]:
    """alice and bob, two threads and two Store namespaces each: (saver, key table,
    Store)."""
    from langgraph.store.s3dynamo import S3DynamoStore

    saver, keys = subject_saver(subject_label=1, **kwargs)
    store = S3DynamoStore.from_saver(saver, filter_fields=["kind"])
    for user in ("alice", "bob"):
        for n in (1, 2):
            talk(saver, f"{user}-{n}", user, turns=2)
            store.put(("users", user, f"notes-{n}"), "m", {"kind": "pref", "text": f"{user} {n}"})
    return saver, keys, store


def another(saver: MemorySaver, keys: Any, index: Any = None, objects: Any = None) -> Any:
    """A saver of another process of the same deployment (on `index` and `objects`, by
    default the same storage), and its Store."""
    from langgraph.store.s3dynamo import S3DynamoStore

    other, _ = subject_saver(
        index if index is not None else saver.index,
        objects if objects is not None else saver.objects,
        keys,
        subject_label=1,
    )
    return other, S3DynamoStore.from_saver(other, filter_fields=["kind"])
