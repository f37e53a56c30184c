"""The Store's requests on DynamoDB (moto): a put into a namespace the process holds a
lease on is one UpdateItem, reads are eventually consistent, and a put racing another
process's delete of the namespace's last item stays listed (docs/RELIABILITY.md, "The
Store's namespace directory")."""

from __future__ import annotations

from typing import Any

import pytest

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.memory.recent import DROP_MARGIN_SECONDS, LEASE_SECONDS
from langgraph.store.s3dynamo import S3DynamoStore
from tests.support.savers import RequestCounter, make_saver

pytestmark = pytest.mark.unsupported_on("real", reason="dynalite has no TransactWriteItems")

NS = ("users", "u1", "memories")


class Consistency:
    """The ConsistentRead flag of every DynamoDB read, in order."""

    def __init__(self, client: Any) -> None:
        self.reads: list[tuple[str, bool]] = []
        client.meta.events.register("provide-client-params.dynamodb.*", self._seen)

    def _seen(self, params: dict[str, Any], event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation == "BatchGetItem":
            for table in params["RequestItems"].values():
                self.reads.append((operation, bool(table.get("ConsistentRead"))))
        elif operation in ("Query", "GetItem"):
            self.reads.append((operation, bool(params.get("ConsistentRead"))))


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_put_is_one_update_and_reads_are_eventually_consistent(
    saver: S3DynamoSaver, clients: Any, counter: RequestCounter
) -> None:
    store = S3DynamoStore.from_saver(saver)
    store.put(NS, "a", {"v": 1})
    assert counter.calls == {"dynamodb.TransactWriteItems": 1}
    counter.reset()
    store.put(NS, "b", {"v": 2})
    assert counter.calls == {"dynamodb.UpdateItem": 1}
    # A fresh process reads eventually consistently and learns the entry from a read.
    other = S3DynamoStore.from_saver(make_saver(clients))
    assert other.get(NS, "none") is None  # after the once-a-process deployment check
    seen = Consistency(clients[0])
    counter.reset()
    assert other.get(NS, "a") is not None
    assert [i.key for i in other.search(("users",), filter={"v": 2})] == ["b"]
    assert other.list_namespaces() == [NS]
    # get; search: the directory, the namespace; list_namespaces: the directory.
    assert seen.reads == [("BatchGetItem", False)] + [("Query", False)] * 3
    counter.reset()
    other.put(NS, "c", {"v": 3})
    assert counter.calls == {"dynamodb.UpdateItem": 1}


def test_a_put_racing_a_delete_of_the_last_item_stays_listed(clients: Any) -> None:
    clock = Clock()
    stores = []
    for _ in range(3):
        store = S3DynamoStore.from_saver(make_saver(clients))
        store.space.clock = clock
        stores.append(store)
    writer, deleter, reader = stores
    writer.setup()
    writer.put(NS, "k1", {"v": 1})
    deleter.delete(NS, "k1")
    assert reader.list_namespaces() == []
    # Within its lease the writer puts without the directory entry, which the delete
    # marked emptied: the namespace is listed and searched all the same.
    writer.put(NS, "k2", {"v": 2})
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(("users",))] == ["k2"]
    assert reader.space.expire() == (0, 0)
    deleter.delete(NS, "k2")
    assert reader.list_namespaces() == []
    # After every lease and its margin the entry goes; the writer's next put, its
    # lease over, writes the entry again.
    clock.now += LEASE_SECONDS + DROP_MARGIN_SECONDS + 1
    assert reader.space.expire() == (0, 1)
    writer.put(NS, "k3", {"v": 3})
    assert reader.list_namespaces() == [NS]
    assert [i.key for i in reader.search(NS)] == ["k3"]
