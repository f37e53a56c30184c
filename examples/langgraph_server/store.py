"""The Store (long-term memory) the LangGraph server uses instead of its built-in one.

`langgraph.json` names this function under "store" -> "path". The server enters the async
context manager once, serves its store API (`client.store.*`) and every graph's
`get_store()` / `runtime.store` with the store it yields, and leaves it at shutdown.

The server applies its own "index" and "ttl" entries of `langgraph.json` only to its
built-in store, so this store brings its own: both are arguments here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from langgraph.store.base import IndexConfig, TTLConfig

from langgraph.store.s3dynamo import S3DynamoStore

# Items live until deleted unless a put names a TTL (minutes, as LangGraph's Store counts
# them; `client.store.put_item(..., ttl=60)`); a read renews it. "default_ttl": 1440
# would expire every item a day after its last write or read.
TTL: TTLConfig = {"refresh_on_read": True}

# Semantic search (`client.store.search_items(..., query=...)`) needs an embedding model,
# e.g. {"dims": 1536, "embed": "openai:text-embedding-3-small", "fields": ["$"]}
# (LangChain's init_embeddings, with its provider package installed). None: filters and
# prefixes only.
INDEX: IndexConfig | None = None


@contextlib.asynccontextmanager
async def s3dynamo_store() -> AsyncIterator[S3DynamoStore]:
    """Yield a store configured from the environment, as `checkpointer.py`'s saver is:
    the same table, bucket and keys (S3DYNAMO_TABLE, S3DYNAMO_BUCKET, S3DYNAMO_KEYS and
    S3DYNAMO_SECRET, or S3DYNAMO_KMS_KEY_ID). Building it makes no request."""
    yield S3DynamoStore.from_env(index=INDEX, ttl=TTL)
