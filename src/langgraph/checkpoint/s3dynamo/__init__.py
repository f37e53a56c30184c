"""s3dynamo: a LangGraph checkpointer with values in S3 and an index in DynamoDB.

```python
from langgraph.checkpoint.s3dynamo import S3DynamoSaver

saver = S3DynamoSaver.from_env()          # S3DYNAMO_TABLE, S3DYNAMO_BUCKET, ...
graph = builder.compile(checkpointer=saver)
```

Logging goes through `logging` under `langgraph.checkpoint.s3dynamo` (DEBUG: each request
wave; INFO: maintenance operations; WARNING: anything degraded, such as throttling). It is
silent until the application configures logging.
"""

import logging
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.s3dynamo.config.settings import Settings, langgraph_json_ttl
from langgraph.checkpoint.s3dynamo.errors import (
    ArgumentTypeError,
    CatalogNotBuiltError,
    CheckFailedError,
    ConcurrentUpdateError,
    CredentialsNotFoundError,
    DeploymentMismatchError,
    EndpointUnreachableError,
    ForgedTombstoneError,
    IntegrityError,
    InvalidConfigError,
    InvalidCursorError,
    ItemReplacedError,
    ItemTooLargeError,
    KeyNotFoundError,
    KeyringMissingError,
    LeaseLostError,
    LeaseTimeoutError,
    ObjectNotFoundError,
    PlaintextRefusedError,
    RegionNotSetError,
    S3DynamoError,
    ScopeNotNamedError,
    StorageConfigError,
    StorageError,
    StoreMissingError,
    SubjectErasedError,
    SubjectErasingError,
    SubjectKeyChangedError,
    ThreadDeletedError,
    ThreadExistsError,
    ThreadNotFoundError,
    ValueNotSerializableError,
    VectorDimensionsError,
)
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.saver import S3DynamoSaver

# Imported on first use, so a handler's import pays for neither (see `__getattr__`).
_LAZY = {"CheckReport", "Operations", "ReencryptResult"}

if TYPE_CHECKING:
    from langgraph.checkpoint.s3dynamo.store import ThreadSummary


def __getattr__(name: str) -> Any:
    if name == "ThreadSummary":  # what search_threads returns: loaded with the first search
        from langgraph.checkpoint.s3dynamo.store import ThreadSummary

        return ThreadSummary
    if name in _LAZY:
        from langgraph.checkpoint.s3dynamo import ops

        return getattr(ops, name)
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("langgraph-checkpoint-s3dynamo")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "ArgumentTypeError",
    "CatalogNotBuiltError",
    "CheckFailedError",
    "CheckReport",
    "ConcurrentUpdateError",
    "CredentialsNotFoundError",
    "DeploymentMismatchError",
    "EndpointUnreachableError",
    "ForgedTombstoneError",
    "IntegrityError",
    "InvalidConfigError",
    "InvalidCursorError",
    "ItemReplacedError",
    "ItemTooLargeError",
    "KeyNotFoundError",
    "Keyring",
    "KeyringMissingError",
    "LeaseLostError",
    "LeaseTimeoutError",
    "ObjectNotFoundError",
    "Operations",
    "PlaintextRefusedError",
    "ReencryptResult",
    "RegionNotSetError",
    "S3DynamoError",
    "S3DynamoSaver",
    "ScopeNotNamedError",
    "Settings",
    "StorageConfigError",
    "StorageError",
    "StoreMissingError",
    "SubjectErasedError",
    "SubjectErasingError",
    "SubjectKeyChangedError",
    "ThreadDeletedError",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "ThreadSummary",
    "ValueNotSerializableError",
    "VectorDimensionsError",
    "__version__",
    "langgraph_json_ttl",
]
