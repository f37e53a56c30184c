"""s3dynamo: a LangGraph checkpointer with values in S3 and an index in DynamoDB.

```python
from langgraph.checkpoint.s3dynamo import S3DynamoSaver

saver = S3DynamoSaver.from_env()          # S3DYNAMO_TABLE, S3DYNAMO_BUCKET, ...
graph = builder.compile(checkpointer=saver)
```
"""

from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    InvalidConfigError,
    KeyNotFoundError,
    ObjectNotFoundError,
    PlaintextRefusedError,
    S3DynamoError,
    StorageError,
    StoreMissingError,
    ThreadExistsError,
)
from langgraph.checkpoint.s3dynamo.saver import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.sealing import Keyring

__all__ = [
    "IntegrityError",
    "InvalidConfigError",
    "KeyNotFoundError",
    "Keyring",
    "ObjectNotFoundError",
    "PlaintextRefusedError",
    "S3DynamoError",
    "S3DynamoSaver",
    "StorageError",
    "StoreMissingError",
    "ThreadExistsError",
]
