"""The upload journal on DynamoDB (`ControlItems.put_intent`, `intents_before`), mixed
into the table's control-items adapter (`dynamodb.py`), which deletes intents with
`delete_items` and inside the commits that close them (`layout.journal_pk`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from langgraph.checkpoint.s3dynamo.backends.aws_errors import translate_errors
from langgraph.checkpoint.s3dynamo.backends.dynamodb_items import intent_from_item, intent_item
from langgraph.checkpoint.s3dynamo.records import UploadIntent
from langgraph.checkpoint.s3dynamo.schema import PARTITION_KEY, SORT_KEY


class DynamoJournal:
    """Upload intents in the table; the host holds the client and pages Queries."""

    client: Any
    table: str
    resource: str
    _pages: Callable[[str, dict[str, Any]], Iterator[list[dict[str, Any]]]]

    def put_intent(self, intent: UploadIntent) -> None:
        with translate_errors(self.resource):
            self.client.put_item(TableName=self.table, Item=intent_item(intent))

    def intents_before(self, pk: str, upper_sk: str) -> list[UploadIntent]:
        request = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk AND #sk < :upper",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":upper": {"S": upper_sk}},
        }
        return [intent_from_item(i) for items in self._pages("query", request) for i in items]
