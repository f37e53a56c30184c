"""LangGraph's node cache on s3dynamo's table and bucket, sealed (`S3DynamoCache`)."""

from langgraph.checkpoint.s3dynamo.memory_cache import S3DynamoCache

__all__ = ["S3DynamoCache"]
