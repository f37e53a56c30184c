"""What each of LangGraph's `BaseStore` methods takes, as `S3DynamoStore` takes it: the
base class's own methods, overridden only to declare their arguments' checks
(`boundary.public`), so a namespace is a tuple of labels, never a str's characters, and
every argument is refused by name before any request. Each async one is a path of its
own in LangGraph (through `abatch`), checked as the sync one is."""

from __future__ import annotations

from langgraph.store.base import NOT_PROVIDED, BaseStore, Item, SearchItem

from langgraph.checkpoint.s3dynamo.boundary import public
from langgraph.checkpoint.s3dynamo.config.arguments import (
    Count,
    MaybeBoolean,
    MaybeDict,
    MaybeText,
)
from langgraph.checkpoint.s3dynamo.config.memory_arguments import (
    Depth,
    IndexFields,
    Labels,
    MaybeLabels,
    StoreKey,
    StoreTtl,
)


class CheckedStore(BaseStore):
    """`BaseStore` with each method's arguments checked (module docstring)."""

    @public()
    def get(
        self, namespace: Labels, key: StoreKey, *, refresh_ttl: MaybeBoolean = None
    ) -> Item | None:
        return super().get(namespace, key, refresh_ttl=refresh_ttl)

    @public()
    def search(
        self,
        namespace_prefix: Labels,
        /,
        *,
        query: MaybeText = None,
        filter: MaybeDict = None,
        limit: Count = 10,
        offset: Count = 0,
        refresh_ttl: MaybeBoolean = None,
    ) -> list[SearchItem]:
        return super().search(
            namespace_prefix,
            query=query,
            filter=dict(filter) if filter is not None else None,
            limit=limit,
            offset=offset,
            refresh_ttl=refresh_ttl,
        )

    @public()
    def put(
        self,
        namespace: Labels,
        key: StoreKey,
        value: MaybeDict,
        index: IndexFields = None,
        *,
        ttl: StoreTtl = NOT_PROVIDED,
    ) -> None:
        super().put(namespace, key, value, index, ttl=ttl)  # type: ignore[arg-type]

    @public()
    def delete(self, namespace: Labels, key: StoreKey) -> None:
        super().delete(namespace, key)

    @public()
    def list_namespaces(
        self,
        *,
        prefix: MaybeLabels = None,
        suffix: MaybeLabels = None,
        max_depth: Depth = None,
        limit: Count = 100,
        offset: Count = 0,
    ) -> list[tuple[str, ...]]:
        return super().list_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    @public()
    async def aget(
        self, namespace: Labels, key: StoreKey, *, refresh_ttl: MaybeBoolean = None
    ) -> Item | None:
        return await super().aget(namespace, key, refresh_ttl=refresh_ttl)

    @public()
    async def asearch(
        self,
        namespace_prefix: Labels,
        /,
        *,
        query: MaybeText = None,
        filter: MaybeDict = None,
        limit: Count = 10,
        offset: Count = 0,
        refresh_ttl: MaybeBoolean = None,
    ) -> list[SearchItem]:
        return await super().asearch(
            namespace_prefix,
            query=query,
            filter=dict(filter) if filter is not None else None,
            limit=limit,
            offset=offset,
            refresh_ttl=refresh_ttl,
        )

    @public()
    async def aput(
        self,
        namespace: Labels,
        key: StoreKey,
        value: MaybeDict,
        index: IndexFields = None,
        *,
        ttl: StoreTtl = NOT_PROVIDED,
    ) -> None:
        await super().aput(namespace, key, value, index, ttl=ttl)  # type: ignore[arg-type]

    @public()
    async def adelete(self, namespace: Labels, key: StoreKey) -> None:
        await super().adelete(namespace, key)

    @public()
    async def alist_namespaces(
        self,
        *,
        prefix: MaybeLabels = None,
        suffix: MaybeLabels = None,
        max_depth: Depth = None,
        limit: Count = 100,
        offset: Count = 0,
    ) -> list[tuple[str, ...]]:
        return await super().alist_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )
