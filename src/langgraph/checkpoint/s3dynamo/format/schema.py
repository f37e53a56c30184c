"""The infrastructure s3dynamo expects, in one place.

`setup()` creates exactly this for development and tests; `terraform/` declares the
same for production, and `tests/e2e/test_terraform.py` keeps the two in agreement.
"""

from __future__ import annotations

from typing import Any

PARTITION_KEY = "pk"
SORT_KEY = "sk"
# Sparse global secondary index: only checkpoint items carry `rk`, a keyed hash of the
# run id, so `delete_for_runs` finds a run's checkpoints across threads without a scan.
RUN_INDEX = "runs"
RUN_KEY = "rk"
# Sparse global secondary index of threads by the day they were last written: head items
# (and, with concurrent-run detection off, checkpoint items) carry `ik`, `<day>#<shard>`,
# so retention Queries the days that expired instead of scanning the table
# (`ops/sweep.py`). Its sort key is the item's own partition key (the thread).
IDLE_INDEX = "idle"
IDLE_KEY = "ik"


def table_definition(table_name: str) -> dict[str, Any]:
    """Keyword arguments for DynamoDB `CreateTable` (on-demand billing)."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
            {"AttributeName": RUN_KEY, "AttributeType": "S"},
            {"AttributeName": IDLE_KEY, "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": RUN_INDEX,
                "KeySchema": [
                    {"AttributeName": RUN_KEY, "KeyType": "HASH"},
                    {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
            {
                "IndexName": IDLE_INDEX,
                "KeySchema": [
                    {"AttributeName": IDLE_KEY, "KeyType": "HASH"},
                    {"AttributeName": PARTITION_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
    }


# The partition and sort key of the table (None) and of each secondary index: what a
# Query of it names and what a page's cursor holds.
INDEX_KEYS: dict[str | None, tuple[str, str]] = {
    None: (PARTITION_KEY, SORT_KEY),
    RUN_INDEX: (RUN_KEY, SORT_KEY),
    IDLE_INDEX: (IDLE_KEY, PARTITION_KEY),
}
