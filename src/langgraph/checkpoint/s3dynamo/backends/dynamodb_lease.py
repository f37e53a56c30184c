"""A thread's lease on DynamoDB (`ControlItems.acquire_lease`, `renew_lease`,
`release_lease`), mixed into the table's control-items adapter (`dynamodb.py`): one
conditional UpdateItem each on the item `<thread>!`/`lease`, whose fencing token only
grows (`store/fences.py`, docs/RELIABILITY.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.s3dynamo.backends.aws_errors import Outcome
from langgraph.checkpoint.s3dynamo.backends.dynamodb_items import (
    LEASE_EXPIRES,
    LEASE_OWNER,
    LEASE_TOKEN,
)
from langgraph.checkpoint.s3dynamo.errors import LeaseLostError
from langgraph.checkpoint.s3dynamo.records import ItemKey, Lease


class DynamoLeases:
    """Leases in the threads' control partitions; the host holds the client."""

    client: Any
    _conditional: Callable[..., Outcome]

    def acquire_lease(self, key: ItemKey, owner: str, now_ms: int, ttl_ms: int) -> Lease | None:
        out = self._conditional(
            self.client.update_item,
            key,
            UpdateExpression="SET #o = :owner, #x = :expires ADD #k :one",
            ConditionExpression="attribute_not_exists(#x) OR #x < :now",
            ExpressionAttributeNames={"#o": LEASE_OWNER, "#x": LEASE_EXPIRES, "#k": LEASE_TOKEN},
            ExpressionAttributeValues={
                ":owner": {"S": owner},
                ":expires": {"N": str(now_ms + ttl_ms)},
                ":now": {"N": str(now_ms)},
                ":one": {"N": "1"},
            },
            ReturnValues="ALL_NEW",
        )
        if out.refused is not None:
            return None
        token = int(out.value["Attributes"][LEASE_TOKEN]["N"])
        return Lease(key, owner, token, now_ms + ttl_ms)

    def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        if not self._set_expiry(lease, now_ms + ttl_ms):
            raise LeaseLostError("the lease was taken over; it cannot be renewed")
        return lease._replace(expires_ms=now_ms + ttl_ms)

    def release_lease(self, lease: Lease) -> None:
        self._set_expiry(lease, 0)

    def _set_expiry(self, lease: Lease, expires_ms: int) -> bool:
        out = self._conditional(
            self.client.update_item,
            lease.key,
            UpdateExpression="SET #x = :expires",
            ConditionExpression="#k = :token",
            ExpressionAttributeNames={"#x": LEASE_EXPIRES, "#k": LEASE_TOKEN},
            ExpressionAttributeValues={
                ":expires": {"N": str(expires_ms)},
                ":token": {"N": str(lease.token)},
            },
        )
        return out.refused is None
