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

from langgraph.checkpoint.s3dynamo.errors import (
    ConcurrentUpdateError,
    DeploymentMismatchError,
    IntegrityError,
    InvalidConfigError,
    ItemTooLargeError,
    KeyNotFoundError,
    LeaseLostError,
    LeaseTimeoutError,
    ObjectNotFoundError,
    PlaintextRefusedError,
    S3DynamoError,
    StorageError,
    StoreMissingError,
    ThreadExistsError,
)
from langgraph.checkpoint.s3dynamo.saver import (
    CheckFailedError,
    CheckReport,
    ReencryptResult,
    S3DynamoSaver,
)
from langgraph.checkpoint.s3dynamo.sealing import Keyring

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "CheckFailedError",
    "CheckReport",
    "ConcurrentUpdateError",
    "DeploymentMismatchError",
    "IntegrityError",
    "InvalidConfigError",
    "ItemTooLargeError",
    "KeyNotFoundError",
    "Keyring",
    "LeaseLostError",
    "LeaseTimeoutError",
    "ObjectNotFoundError",
    "PlaintextRefusedError",
    "ReencryptResult",
    "S3DynamoError",
    "S3DynamoSaver",
    "StorageError",
    "StoreMissingError",
    "ThreadExistsError",
]
