"""`S3DynamoCache`: LangGraph's node cache (`BaseCache`, for `CachePolicy`) on the saver's
table and bucket, sealed with its keys, so cached results outlive a Lambda sandbox.
Entries are a memory space of their own (`memory/core.py`, space "c"); TTLs are in
seconds, as LangGraph gives them, kept to the millisecond, and an expired entry is never
returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Generic

from langgraph.cache.base import BaseCache, FullKey, Namespace, ValueT
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.s3dynamo.boundary import public, twin
from langgraph.checkpoint.s3dynamo.compose import checked_serde, memory_space
from langgraph.checkpoint.s3dynamo.config import arguments
from langgraph.checkpoint.s3dynamo.config.keywords import refuse_unknown, taken
from langgraph.checkpoint.s3dynamo.config.memory_arguments import (
    LabelsList,
    cache_keys,
    cache_pairs,
)
from langgraph.checkpoint.s3dynamo.config.settings import FROM_ENV_ARGUMENTS
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.format.layout import CACHE_SPACE
from langgraph.checkpoint.s3dynamo.keys.codec import serializing
from langgraph.checkpoint.s3dynamo.memory.core import NewItem, checked_ttl


class S3DynamoCache(BaseCache[ValueT], Generic[ValueT]):
    """LangGraph's node cache on an `S3DynamoSaver`'s table, bucket and keys.

    Example:
        ```python
        saver = S3DynamoSaver.from_env()
        graph = builder.compile(checkpointer=saver, cache=S3DynamoCache.from_saver(saver))
        ```
    """

    def __init__(
        self, saver: Any = None, *, serde: SerializerProtocol | None = None, **saver_options: Any
    ) -> None:
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        if saver_options:
            refuse_unknown(
                "S3DynamoCache",
                saver_options,
                {"the cache's": ("serde",), "the saver's": taken(S3DynamoSaver)},
            )
        super().__init__(serde=checked_serde(serde))
        self.saver: S3DynamoSaver = arguments.saver_of(saver, saver_options, S3DynamoSaver)
        self._parts = self.saver.parts
        self.space = memory_space(self._parts, CACHE_SPACE)
        self._checked = False

    @classmethod
    def from_saver(
        cls, saver: Any, *, serde: SerializerProtocol | None = None
    ) -> S3DynamoCache[Any]:
        """A cache on the saver's table, bucket, keys and clients."""
        return cls(saver, serde=serde)

    @classmethod
    def from_env(cls, **overrides: Any) -> S3DynamoCache[Any]:
        """A cache configured as `S3DynamoSaver.from_env` configures a saver."""
        from langgraph.checkpoint.s3dynamo import S3DynamoSaver

        refuse_unknown("S3DynamoCache.from_env", overrides, {"the saver's": FROM_ENV_ARGUMENTS})
        return cls(S3DynamoSaver.from_env(**overrides))

    def setup(self) -> None:
        """Create the table and bucket if missing, and record the deployment (as
        `S3DynamoSaver.setup`): for a cache used alone in development and tests;
        production infrastructure comes from terraform/."""
        self.saver.setup()
        self._checked = True

    def async_workers(self) -> int:
        """Threads of the process's pool the async methods run in (`executor.py`)."""
        return int(self._parts.settings.async_workers)

    def _check(self, write: bool) -> None:
        if not self._checked:
            self._parts.deployment.verify(write=write)
            self._checked = write or self._parts.deployment.state == "ok"

    @public("cache.get")
    def get(self, keys: Annotated[Sequence[FullKey], cache_keys]) -> dict[FullKey, ValueT]:
        if not keys:
            return {}
        self._check(write=False)
        with guarded(self._parts.deployment):
            found = self.space.get([(tuple(ns), key) for ns, key in keys])
            return {k: self.serde.loads_typed(f.typed) for k, f in found.items()}

    @public("cache.set")
    def set(
        self, pairs: Annotated[Mapping[FullKey, tuple[ValueT, int | None]], cache_pairs]
    ) -> None:
        if not pairs:
            return
        # Grouped by namespace: one writer per namespace, namespaces in parallel; every
        # value serialized first, so one the serializer cannot store writes nothing.
        writes: dict[Namespace, list[NewItem]] = {}
        for (ns, key), (value, ttl) in pairs.items():
            where = f"cache entry {key!r} in namespace {tuple(ns)!r}"
            seconds = checked_ttl(ttl, "seconds", where)
            with serializing(where, value):
                typed = self.serde.dumps_typed(value)
            minutes = None if seconds is None else seconds / 60
            writes.setdefault(tuple(ns), []).append(NewItem(key, typed, minutes))
        self._check(write=True)
        with guarded(self._parts.deployment):
            self.space.put(writes)

    @public("cache.clear")
    def clear(self, namespaces: LabelsList = None) -> None:
        self._check(write=False)
        with guarded(self._parts.deployment):
            self.space.clear(None if namespaces is None else [tuple(ns) for ns in namespaces])

    asetup = twin(setup)
    aget = twin(get)
    aset = twin(set)
    aclear = twin(clear)
