"""The key service on AWS KMS: GenerateDataKey to make a data key, Decrypt to unwrap it.

Both bind the wrapped key to an encryption context (the deployment's table), so a
wrapped key copied to another table does not unwrap there. Every botocore error leaves
through `aws_errors`.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.s3dynamo.backends.aws_clients import observe
from langgraph.checkpoint.s3dynamo.backends.aws_errors import attempt, located
from langgraph.checkpoint.s3dynamo.errors import DeploymentMismatchError


class KmsKeys:
    """The `KeyService` port on one KMS key (id, ARN, alias name or alias ARN)."""

    def __init__(self, client: Any, key_id: str) -> None:
        observe(client)
        self.client = client
        self.key_id = key_id
        self.resource = located(f"KMS key {key_id!r}", client)

    def describe(self) -> str:
        return self.resource

    def generate_data_key(self, context: dict[str, str]) -> tuple[bytes, bytes]:
        out = attempt(
            self.resource,
            self.client.generate_data_key,
            KeyId=self.key_id,
            KeySpec="AES_256",
            EncryptionContext=context,
        ).value
        return bytes(out["Plaintext"]), bytes(out["CiphertextBlob"])

    def decrypt(self, wrapped: bytes, context: dict[str, str]) -> bytes:
        out = attempt(
            self.resource,
            self.client.decrypt,
            tolerate=("InvalidCiphertextException", "IncorrectKeyException"),
            CiphertextBlob=wrapped,
            KeyId=self.key_id,
            EncryptionContext=context,
        )
        if out.refused:
            raise DeploymentMismatchError(
                f"{self.resource} cannot unwrap this deployment's keyring ({out.refused}): it "
                f"was wrapped under another KMS key, or for another table (context {context}); "
                "set S3DYNAMO_KMS_KEY_ID to the key the deployment was created with"
            )
        return bytes(out.value["Plaintext"])
