"""The retries the library makes above botocore's go through one helper and one policy
(`backoff.py`): pauses that double from 0.05 s up to 1 s, with jitter, only between tries,
and an attempt limit by reason. The architecture test keeps other modules from sleeping
or counting attempts of their own."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.s3dynamo import backoff
from langgraph.checkpoint.s3dynamo.backends.dynamodb import DynamoTable
from langgraph.checkpoint.s3dynamo.errors import ConcurrentUpdateError
from langgraph.checkpoint.s3dynamo.format.records import HeadMove
from langgraph.checkpoint.s3dynamo.store.format import commit_checkpoint
from tests.support.raw import HEAD
from tests.support.raw import checkpoint_record as _cp


def test_tries_pause_only_between_tries_doubling_with_jitter_up_to_the_cap() -> None:
    pauses: list[float] = []
    assert list(backoff.tries(8, sleep=pauses.append)) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert len(pauses) == 7
    for n, pause in enumerate(pauses):
        step = min(backoff.FIRST * 2**n, backoff.CAP)
        assert step / 2 <= pause <= step
    # A caller that succeeds on its second try paused once.
    pauses.clear()
    for attempt in backoff.tries(5, sleep=pauses.append):
        if attempt == 2:
            break
    assert len(pauses) == 1


class _Conflicting:
    """A DynamoDB client whose every transaction is cancelled by a conflict."""

    def __init__(self) -> None:
        self.sent = 0

    def transact_write_items(self, **_: Any) -> None:
        self.sent += 1
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
            },
            "TransactWriteItems",
        )


def test_a_transaction_in_conflict_is_sent_the_conflict_limit_of_times_with_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(backoff.time, "sleep", pauses.append)
    client = _Conflicting()
    with pytest.raises(ConcurrentUpdateError, match=r"kept changing .* \(5 attempts\)"):
        _commit(DynamoTable(client, "t"), _cp("2"), HeadMove(HEAD, "2", "1", True))
    assert client.sent == backoff.CONFLICT_ATTEMPTS == 5
    assert len(pauses) == 4 and all(p <= backoff.CAP for p in pauses)


def _commit(table: DynamoTable, record: Any, head: Any, fence: Any = None) -> None:
    """A checkpoint's commit, as the thread store hands it to the table."""
    table.transact(commit_checkpoint(record, head, fence, 0))
