"""Adapters for the ports in `ports.py`: DynamoDB, S3 and KMS (`dynamodb.py`, `s3.py`,
`kms.py`, with `aws_errors.py` and `aws_clients.py` the only code that knows botocore),
and in-memory twins (`memory.py`)."""
