"""The upload journal: before a write uploads objects it writes one intent naming them
(`records.UploadIntent`, in a shard of `layout.journal_pk`), and its commit deletes it
(in the same request where the commit can carry it, else right after). An intent left
behind names what a crash, or a refused commit, can have orphaned; incremental garbage
collection (`ops/gc.py`) reads the shards instead of listing the bucket. Threads, the
Store and the node cache share it: an intent names its owner, the partition whose items
reference the objects. Why that is enough, and safe: docs/RELIABILITY.md, "Garbage
collection: the upload journal"."""

from __future__ import annotations

import os
from collections.abc import Sequence

from langgraph.checkpoint.s3dynamo.blobs.lazy_ports import LazyPorts
from langgraph.checkpoint.s3dynamo.format.layout import (
    JOURNAL_SHARDS,
    intents_before,
    journal_pk,
    journal_pk_of,
    owner_prefix,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    ItemKey,
    UploadIntent,
    intent_from,
    intent_item,
    orphan_intents,
    upload_intent,
)
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.table import Put, every_item, lt
from langgraph.checkpoint.s3dynamo.waves import parallel


class Journal:
    """Opens intents for writers and reads them back for the collector."""

    def __init__(self, ports: LazyPorts) -> None:
        self._ports = ports

    def open(self, owner: str, keys: Sequence[str], at_ms: int) -> ItemKey | None:
        """Write the intent of an upload of these object keys of one owner, stamped
        `at_ms` (one request); None, and no request, when there is nothing to upload."""
        if not keys:
            return None
        start = len(owner_prefix(owner))
        intent = upload_intent(owner, [k[start:] for k in keys], at_ms, os.urandom(8).hex())
        self._ports.table.write(Put(intent_item(intent)))
        return intent.key

    def name(self, owner: str, keys: Sequence[str], at_ms: int) -> None:
        """Write intents naming these object keys of one owner that a change lets go, in
        parts (`records.orphan_intents`), one request each."""
        start = len(owner_prefix(owner))
        leaves = [k[start:] for k in keys]
        for intent in orphan_intents(owner, leaves, at_ms, os.urandom(8).hex()):
            self._ports.table.write(Put(intent_item(intent)))

    def close(self, intents: Sequence[ItemKey]) -> None:
        """Delete intents after the commits that could not carry their deletes (one
        request per 25)."""
        if intents:
            self._ports.table.batch(deletes=intents)

    def of(self, owner: str) -> list[UploadIntent]:
        """Every intent of one owner: one Query of its shard (more past 1 MB)."""
        found = every_item(self._ports.table, journal_pk_of(owner), consistent=True)
        return [i for i in map(intent_from, found) if i.owner == owner]

    def expired(self, prefix: str, before_ms: int) -> list[UploadIntent]:
        """Every intent of the deployment written before `before_ms`: one Query per
        shard (more only past 1 MB of intents)."""
        before = lt(SORT_KEY, intents_before(before_ms))
        shards = parallel(
            lambda shard: every_item(self._ports.table, journal_pk(prefix, shard), where=before),
            range(JOURNAL_SHARDS),
        )
        return [intent_from(item) for found in shards for item in found]
