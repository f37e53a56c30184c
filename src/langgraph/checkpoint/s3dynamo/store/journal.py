"""The upload journal: before a commit uploads objects it writes one intent naming them
(`records.UploadIntent`, in a shard of `layout.journal_pk`), and the commit deletes it in
the same request. An intent left behind names what a crash, or a refused commit, can
have orphaned; incremental garbage collection (`ops/gc.py`) reads the shards instead of
listing the bucket. Why that is enough, and safe: docs/RELIABILITY.md, "Garbage
collection: the upload journal"."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from langgraph.checkpoint.s3dynamo.layout import (
    JOURNAL_SHARDS,
    intents_before,
    journal_pk,
    thread_prefix,
)
from langgraph.checkpoint.s3dynamo.records import ItemKey, UploadIntent, upload_intent
from langgraph.checkpoint.s3dynamo.store.lazy_ports import LazyPorts
from langgraph.checkpoint.s3dynamo.waves import parallel


class Journal:
    """Opens intents for the committer and reads them back for the collector."""

    def __init__(self, ports: LazyPorts, clock: Callable[[], float]) -> None:
        self._ports = ports
        self.clock = clock

    def open(self, thread_name: str, keys: Sequence[str]) -> ItemKey | None:
        """Write the intent of an upload of these object keys of one thread (one
        request); None, and no request, when there is nothing to upload."""
        if not keys:
            return None
        start = len(thread_prefix(thread_name))
        intent = upload_intent(
            thread_name, [k[start:] for k in keys], int(self.clock() * 1000), os.urandom(8).hex()
        )
        self._ports.control.put_intent(intent)
        return intent.key

    def close(self, intent: ItemKey) -> None:
        """Delete an intent after a commit that could not carry its delete (one request)."""
        self._ports.control.delete_items([intent])

    def expired(self, prefix: str, before_ms: int) -> list[UploadIntent]:
        """Every intent of the deployment written before `before_ms`: one Query per
        shard (more only past 1 MB of intents)."""
        upper = intents_before(before_ms)
        control = self._ports.control
        shards = parallel(
            lambda shard: control.intents_before(journal_pk(prefix, shard), upper),
            range(JOURNAL_SHARDS),
        )
        return [intent for found in shards for intent in found]
