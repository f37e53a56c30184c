"""Adapters for the ports in `ports.py`: DynamoDB, S3 and KMS (`dynamodb.py`, `s3.py`,
`kms.py`; `dynamodb.py`, `s3.py`, `aws_errors.py` and `aws_clients.py` are the only code
that knows botocore), and in-memory twins (`memory_table.py`, the table; `memory.py`, the
bucket and KMS)."""
