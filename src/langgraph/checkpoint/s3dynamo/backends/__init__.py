"""Adapters for the ports in `ports.py`: DynamoDB and S3 (`dynamodb.py`, `s3.py`, the
only code that knows botocore), and in-memory twins (`memory.py`)."""
