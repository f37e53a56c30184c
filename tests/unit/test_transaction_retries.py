"""A TransactWriteItems cancelled for a transient reason (a conflict with another
transaction in flight, or throttling of one of its items) was not applied: the adapter
sends it again with backoff, and gives up with a clear error after a few tries. A
cancellation for a refused condition is never retried."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.s3dynamo import backoff
from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable
from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError, StorageError
from langgraph.checkpoint.s3dynamo.format.records import Fence, HeadMove
from langgraph.checkpoint.s3dynamo.store.format import commit_checkpoint
from tests.support.raw import HEAD, LEASE
from tests.support.raw import checkpoint_record as _cp


class _Cancelling:
    """A DynamoDB client whose TransactWriteItems is cancelled with the given reasons,
    then succeeds; it keeps what each accepted send carried."""

    def __init__(self, *reasons: list[str]) -> None:
        self.reasons, self.sent, self.applied = list(reasons), 0, []

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        self.sent += 1
        if not self.reasons:
            self.applied.append(request["TransactItems"])
            return {}
        codes = self.reasons.pop(0)
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": [{"Code": c} for c in codes],
            },
            "TransactWriteItems",
        )


@pytest.fixture(autouse=True)
def _no_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backoff.time, "sleep", lambda _: None)


HEAD_MOVE, FENCE = HeadMove(HEAD, "2", "1", True), Fence(LEASE, 3)


@pytest.mark.parametrize(
    "reason", ["ThrottlingError", "ProvisionedThroughputExceeded", "TransactionConflict"]
)
def test_a_transiently_cancelled_commit_is_sent_again_and_lands(reason: str) -> None:
    client = _Cancelling(["None", reason, "None"], ["None", "None", reason])
    _commit(DynamoTable(client, "t"), _cp("2"), HEAD_MOVE, FENCE)
    assert client.sent == 3
    assert len(client.applied) == 1 and len(client.applied[0]) == 3


def test_throttling_that_does_not_pass_is_a_storage_error_not_a_conflict() -> None:
    client = _Cancelling(*[["ThrottlingError", "None", "None"]] * backoff.CONFLICT_ATTEMPTS)
    with pytest.raises(StorageError) as raised:
        _commit(DynamoTable(client, "t"), _cp("2"), HEAD_MOVE, FENCE)
    assert not isinstance(raised.value, ConcurrentUpdateError)
    assert client.sent == backoff.CONFLICT_ATTEMPTS and not client.applied


def test_a_refused_condition_beside_throttling_is_not_retried() -> None:
    # The record, the lease's fence, the head.
    client = _Cancelling(["None", "ThrottlingError", "ConditionalCheckFailed"])
    with pytest.raises(ConcurrentUpdateError, match="head moved"):
        _commit(DynamoTable(client, "t"), _cp("2"), HEAD_MOVE, FENCE)
    assert client.sent == 1


def _commit(table: DynamoTable, record: Any, head: Any, fence: Any = None) -> None:
    """A checkpoint's commit, as the thread store hands it to the table."""
    table.transact(commit_checkpoint(record, head, fence, 0))
