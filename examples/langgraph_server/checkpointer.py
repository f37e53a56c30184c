"""The checkpointer the LangGraph server uses instead of its built-in one.

`langgraph.json` names this function under "checkpointer" -> "path". The server enters
the async context manager once at startup, gives the saver it yields to every graph, and
leaves it at shutdown.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from langgraph.checkpoint.s3dynamo import S3DynamoSaver


@contextlib.asynccontextmanager
async def s3dynamo_checkpointer() -> AsyncIterator[S3DynamoSaver]:
    """Yield a saver configured from the environment.

    S3DYNAMO_TABLE and S3DYNAMO_BUCKET name the storage; S3DYNAMO_KMS_KEY_ID (or
    S3DYNAMO_KEYS and S3DYNAMO_SECRET) the sealing keys, and without one the saver
    refuses to start (S3DYNAMO_PLAINTEXT=1 stores unencrypted, by choice); region,
    credentials and endpoints are the AWS SDK's own variables. Building the saver makes
    no request; the table and bucket come from the Terraform module (or `saver.setup()`
    in development).
    """
    saver = S3DynamoSaver.from_env()
    # The saver holds no connection of its own to close: its clients' connection pools go with it.
    yield saver
