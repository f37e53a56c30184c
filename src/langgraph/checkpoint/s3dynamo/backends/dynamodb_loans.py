"""Loans and borrowings on DynamoDB (`ControlItems.lend`, `unlend`, `loans`,
`control_keys`, `put_borrowing`), mixed into the table's control-items adapter
(`dynamodb.py`), which deletes them with `delete_items`. A loan's leaves are a string
set: a repeated `lend` adds nothing (ADD), `unlend` takes leaves out (DELETE), each in
one request per part, so no reader ever finds a leaf missing that a borrower still
shares (docs/RELIABILITY.md, "Copies share objects")."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any

from langgraph.checkpoint.s3dynamo.backends.aws_errors import translate_errors
from langgraph.checkpoint.s3dynamo.backends.dynamodb_items import (
    LOAN_LEAVES,
    key_item,
    loan_from_item,
)
from langgraph.checkpoint.s3dynamo.layout import borrow_sk, control_pk, loans_prefix
from langgraph.checkpoint.s3dynamo.records import ItemKey, Loan, loan_parts
from langgraph.checkpoint.s3dynamo.schema import PARTITION_KEY, SORT_KEY


class DynamoLoans:
    """A lender's loans and a borrower's borrowings, in the threads' control partitions."""

    client: Any
    table: str
    resource: str
    _pages: Callable[[str, dict[str, Any]], Iterator[list[dict[str, Any]]]]

    def _set_leaves(self, key: ItemKey, op: str, leaves: Collection[str]) -> None:
        with translate_errors(self.resource):
            self.client.update_item(
                TableName=self.table,
                Key=key_item(key),
                UpdateExpression=f"{op} #l :l",
                ExpressionAttributeNames={"#l": LOAN_LEAVES},
                ExpressionAttributeValues={":l": {"SS": sorted(leaves)}},
            )

    def lend(self, lender: str, borrower: str, leaves: Collection[str]) -> None:
        for key, part in loan_parts(lender, borrower, leaves):
            self._set_leaves(key, "ADD", part)

    def unlend(self, loan: Loan, leaves: Collection[str]) -> None:
        taken = sorted(set(leaves) & loan.leaves)
        if taken:
            self._set_leaves(loan.key, "DELETE", taken)

    def loans(self, lender: str, borrower: str | None = None) -> list[Loan]:
        request = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {
                ":pk": {"S": control_pk(lender)},
                ":prefix": {"S": loans_prefix(borrower)},
            },
            "ConsistentRead": True,
        }
        return [loan_from_item(i) for items in self._pages("query", request) for i in items]

    def control_keys(self, thread_name: str) -> list[ItemKey]:
        request = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": control_pk(thread_name)}},
            "ProjectionExpression": "#pk, #sk",
            "ConsistentRead": True,
        }
        return [
            ItemKey(i[PARTITION_KEY]["S"], i[SORT_KEY]["S"])
            for items in self._pages("query", request)
            for i in items
        ]

    def put_borrowing(self, borrower: str, lender: str) -> None:
        key = ItemKey(control_pk(borrower), borrow_sk(lender))
        with translate_errors(self.resource):
            self.client.put_item(TableName=self.table, Item=key_item(key))
