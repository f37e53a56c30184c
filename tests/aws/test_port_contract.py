"""The port contract (`testing.contract`) on the DynamoDB, S3 and KMS adapters, and the
memory format's on the DynamoDB table, on moto in process or the
integration tiers' servers; the in-memory twins run the same in
`tests/unit/test_port_contract.py`. And what only an adapter has: items
DynamoDB leaves unprocessed in a batch, sent again."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable
from langgraph.checkpoint.s3dynamo.backends.kms import KmsKeys
from langgraph.checkpoint.s3dynamo.backends.s3 import S3Objects
from langgraph.checkpoint.s3dynamo.errors import StorageError
from langgraph.checkpoint.s3dynamo.table import ItemKey, every_item, key_of, keyed
from langgraph.checkpoint.s3dynamo.testing.contract import (
    KeyServiceTests,
    ObjectStoreTests,
    TableTests,
)
from tests.support.port_contract import MemoryFormatContract
from tests.support.savers import BACKEND, REGION, Clients


def _table(clients: Clients) -> DynamoTable:
    table = DynamoTable(clients[0], clients.table)
    table.create_if_missing()
    return table


class TestDynamoTable(TableTests):
    transactions = BACKEND != "real"  # dynalite serves none
    returns_refused_items = BACKEND != "real"  # nor the item a condition refused

    @pytest.fixture
    def table(self, clients: Clients) -> DynamoTable:
        return _table(clients)

    @pytest.fixture
    def missing_table(self, clients: Clients) -> DynamoTable:
        return DynamoTable(clients[0], f"{clients.table}-missing")

    def test_items_left_unprocessed_are_sent_again(self, table: DynamoTable) -> None:
        client = _Unprocessing(table.client, table.table, rounds=2)
        table.client = client
        items = [keyed(ItemKey("p", f"ns#{i:02}")) for i in range(30)]
        table.batch(items)
        assert len(every_item(table, "p")) == 30
        table.batch(deletes=[key_of(i) for i in items])
        assert every_item(table, "p") == []
        assert client.held == 8  # each of the four batches: its last item held back twice

    def test_items_never_processed_are_named(
        self, table: DynamoTable, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("time.sleep", lambda _: None)
        table.client = _Unprocessing(table.client, table.table, rounds=99)
        with pytest.raises(StorageError, match=r"still unprocessed after .* retry the operation"):
            table.batch([keyed(ItemKey("p", "1")), keyed(ItemKey("p", "2"))])


class _Unprocessing:
    """A DynamoDB client whose BatchWriteItem leaves the last item of every batch
    unprocessed for its first `rounds` answers, as DynamoDB does when throttled."""

    def __init__(self, client: Any, table: str, rounds: int) -> None:
        self.client, self.table, self.rounds = client, table, rounds
        self.seen: dict[str, int] = {}
        self.held = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        items = RequestItems[self.table]
        last = repr(items[-1])
        tries = self.seen[last] = self.seen.get(last, 0) + 1
        if tries > self.rounds:
            return dict(self.client.batch_write_item(RequestItems=RequestItems))
        self.held += 1
        out: dict[str, Any] = {}
        if items[:-1]:
            out = dict(self.client.batch_write_item(RequestItems={self.table: items[:-1]}))
        out["UnprocessedItems"] = {self.table: [items[-1]]}
        return out


class TestS3Objects(ObjectStoreTests):
    refuses_missing_buckets = BACKEND != "real"  # SeaweedFS creates a missing one

    @pytest.fixture
    def objects(self, clients: Clients) -> S3Objects:
        store = S3Objects(clients[1], clients.bucket)
        store.create_if_missing()
        # moto (and SeaweedFS) delete a key whatever ETag DeleteObjects names; S3 refuses
        # one whose ETag changed (PreconditionFailed) or that is gone (NoSuchKey).
        store.client = _ConditionalDeletes(clients[1])
        return store

    @pytest.fixture
    def missing_objects(self, clients: Clients) -> S3Objects:
        return S3Objects(clients[1], f"{clients.bucket}-missing")


@pytest.mark.unsupported_on("real", reason="no KMS beside dynalite and SeaweedFS")
class TestKmsKeys(KeyServiceTests):
    @pytest.fixture
    def keys(self, aws: None) -> KmsKeys:
        import boto3

        # moto server serves KMS on its one endpoint; in process, moto intercepts.
        endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") if BACKEND != "moto" else None
        client = boto3.client("kms", region_name=REGION, endpoint_url=endpoint)
        key_id = client.create_key(Description=f"contract {uuid.uuid4()}")["KeyMetadata"]["KeyId"]
        return KmsKeys(client, key_id)


class TestMemoryFormatOnDynamo(MemoryFormatContract):
    @pytest.fixture
    def table(self, clients: Clients) -> DynamoTable:
        table = DynamoTable(clients[0], clients.table)
        table.create_if_missing()
        return table


class _ConditionalDeletes:
    """An S3 client whose DeleteObjects honours each key's ETag condition, as S3 does
    and the local servers do not: the adapter's side of the contract is then checked."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def delete_objects(self, Bucket: str, Delete: dict[str, Any]) -> dict[str, Any]:
        listed = self.client.list_objects_v2(Bucket=Bucket).get("Contents", [])
        tags = {o["Key"]: o["ETag"] for o in listed}
        send, errors = [], []
        for obj in Delete["Objects"]:
            tag = tags.get(obj["Key"])
            if "ETag" in obj and tag is None:
                errors.append({"Key": obj["Key"], "Code": "NoSuchKey", "Message": "gone"})
            elif "ETag" in obj and tag != obj["ETag"]:
                errors.append({"Key": obj["Key"], "Code": "PreconditionFailed", "Message": "tag"})
            else:
                send.append({"Key": obj["Key"]})
        out = {}
        if send:
            sent = {**Delete, "Objects": send}
            out = dict(self.client.delete_objects(Bucket=Bucket, Delete=sent))
        out["Errors"] = out.get("Errors", []) + errors
        return out
