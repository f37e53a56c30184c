"""LangGraph's Store on s3dynamo's table and bucket, sealed (`S3DynamoStore`)."""

from langgraph.checkpoint.s3dynamo.memory_store import S3DynamoStore

__all__ = ["S3DynamoStore"]
