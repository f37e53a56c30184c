"""Storage for one test on either backend, savers on it, and the requests it received:
the in-memory twins (`memory_backend`) or the DynamoDB and S3 adapters on the tier's AWS
endpoints (`aws_backend`: moto in process, or the integration tiers' servers). A test
that takes the `backend` fixture (tests/conftest.py) runs once on each."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.format.schema import PARTITION_KEY, SORT_KEY
from tests.support.memory_index import MemoryIndex
from tests.support.savers import Clients, RequestCounter, make_saver
from tests.support.unchanged import Contents, aws_contents, memory_contents, unobserved

# Requests that only read, by the names either backend counts them under.
READS = frozenset(
    {
        "objects.get",
        "objects.list",
        "dynamodb.Query",
        "dynamodb.GetItem",
        "dynamodb.BatchGetItem",
        "dynamodb.Scan",
        "dynamodb.DescribeTable",
        "s3.GetObject",
        "s3.ListObjectsV2",
        "s3.HeadBucket",
        "s3.HeadObject",
    }
)


class Backend:
    """One deployment's storage (a table and a bucket, or their twins) and its keys."""

    def __init__(
        self,
        name: str,
        bucket: str,
        make: Callable[..., S3DynamoSaver],
        calls: Callable[[], Counter[str]],
        reset: Callable[[], None],
        contents: Callable[[], Contents],
        watch: Callable[[Watch | None], None],
    ) -> None:
        self.name, self.bucket = name, bucket
        self.keys = {"k1": os.urandom(32)}
        self.secret = os.urandom(16)
        self._make, self._calls, self._reset = make, calls, reset
        self._contents, self._watch = contents, watch

    def saver(self, *, setup: bool = True, **kwargs: Any) -> S3DynamoSaver:
        """A saver on this storage with this deployment's keys and secret (override
        either, or `bucket=` for a saver pointed at another bucket); `setup()` run first
        unless `setup=False`. The request count is reset after it."""
        kwargs.setdefault("keys", self.keys)
        kwargs.setdefault("secret", self.secret)
        saver = self._make(**kwargs)
        if setup:
            saver.setup()
        self._reset()
        return saver

    def calls(self) -> Counter[str]:
        """Requests received since the last reset, as `service.Operation` (the in-memory table
        counts as DynamoDB's) or `objects.method` (the in-memory bucket)."""
        return self._calls()

    def reset(self) -> None:
        self._reset()

    def writes(self) -> dict[str, int]:
        """The requests since the last reset that may have changed something."""
        return {k: n for k, n in self._calls().items() if k not in READS}

    def contents(self) -> Contents:
        """Every item of the table and object of the bucket, with what each holds
        (`tests/support/unchanged.py`, which compares two of them)."""
        return self._contents()

    @contextlib.contextmanager
    def before_request(
        self, when: Callable[[list[ItemKey]], bool], act: Callable[[], object]
    ) -> Iterator[None]:
        """Run `act` once, inside the block, before the first table request for which
        `when` holds, given the keys the request writes (none for a read): a race put at
        a point of a protocol that its requests show. Requests `act` sends are not seen."""
        fired = False

        def see(keys: list[ItemKey]) -> None:
            nonlocal fired
            if not fired and when(keys):
                fired = True
                act()

        self._watch(see)
        try:
            yield
        finally:
            self._watch(None)
        assert fired, "no request of the block matched"

    @contextlib.contextmanager
    def watching(self, see: Watch) -> Iterator[None]:
        """Call `see` before every table request inside the block, from whichever thread
        sends it, given the keys the request writes (none for a read)."""
        self._watch(see)
        try:
            yield
        finally:
            self._watch(None)

    def __repr__(self) -> str:
        return f"<{self.name} backend>"


# Called before each table request with the keys it writes (none for a read).
Watch = Callable[[list[ItemKey]], None]

# The operations that write, and where each request names its items or their keys.
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


def _written(operation: str, params: dict[str, Any]) -> list[ItemKey]:
    """The keys a DynamoDB request (as its caller's parameters) writes."""
    if operation not in _WRITES:
        return []
    if operation == "TransactWriteItems":
        found = [next(iter(t.values())) for t in params["TransactItems"]]
    elif operation == "BatchWriteItem":
        found = [
            next(iter(r.values())) for requests in params["RequestItems"].values() for r in requests
        ]
    else:
        found = [params]
    items = [f.get("Item") or f["Key"] for f in found]
    return [ItemKey(i[PARTITION_KEY]["S"], i[SORT_KEY]["S"]) for i in items]


def memory_backend() -> Backend:
    index = MemoryIndex()
    stores: dict[str, MemoryObjects] = {}
    bucket = "checkpoints-bucket"

    def objects(name: str) -> MemoryObjects:
        # A store carries its bucket's name, as S3Objects does: the deployment record
        # keeps it and refuses a saver on another.
        return stores.setdefault(name, MemoryObjects(name=name))

    def make(bucket: str = bucket, **kwargs: Any) -> S3DynamoSaver:
        return S3DynamoSaver(index=index, object_store=objects(bucket), **kwargs)

    def calls() -> Counter[str]:
        # The in-memory table counts requests by DynamoDB's names.
        out = Counter({f"dynamodb.{k}": n for k, n in index.calls.items()})
        for store in stores.values():
            out.update({f"objects.{k}": n for k, n in store.calls.items()})
        return out

    def reset() -> None:
        index.calls.clear()
        for store in stores.values():
            store.calls.clear()

    def watch(see: Watch | None) -> None:
        index.watch = see

    objects(bucket)
    return Backend(
        "memory", bucket, make, calls, reset, lambda: memory_contents(index, stores), watch
    )


def aws_backend(clients: Clients) -> Backend:
    counter = RequestCounter()
    for client in clients:
        counter.hook(client)

    def make(**kwargs: Any) -> S3DynamoSaver:
        return make_saver(clients, **kwargs)

    # Clients of their own, so that looking changes no request count.
    lookers: list[Any] = []

    def contents() -> Contents:
        if not lookers:
            lookers.extend(unobserved(c) for c in clients)
        return aws_contents(*lookers, clients.table, clients.bucket)

    watching: list[Watch] = []

    def before(params: dict[str, Any], model: Any, **_: Any) -> None:
        for see in watching:
            see(_written(model.name, params))

    clients[0].meta.events.register("before-parameter-build.dynamodb", before)

    def watch(see: Watch | None) -> None:
        watching[:] = [see] if see else []

    return Backend(
        "aws", clients.bucket, make, lambda: Counter(counter.calls), counter.reset, contents, watch
    )
