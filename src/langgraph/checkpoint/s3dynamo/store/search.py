"""Searching threads through the catalog (`store/catalog.py`): `search_threads`, newest
activity first, and `list(None, filter=...)` on a declared field, each at the cost of the
threads the catalog names, whatever else the table holds.

A search reads the threads filed under one token (the first declared field the filter
asks a value of, else the deployment's), then their root namespaces' heads, which name
each thread's newest checkpoint id (one BatchGetItem per 100 threads, eventually
consistent); a thread without a head (concurrent-run detection off, heads a
`delete_for_runs` dropped, threads from before heads) or whose head is a tombstone (a
removal by retention under way) is read to learn it (one Query each, in one wave), and
passed over when it has no checkpoint left. Threads are ordered by that id, newest
first, then by name. The latest checkpoint of each
thread to return is read (one Query each, in one wave) and kept if its metadata holds
every pair the filter asks: an entry left by a value that changed since, or a thread
being deleted, costs its Query and is passed over, and the next threads are read until
`limit` are kept or none is left. Why this way, and the request budgets:
docs/ARCHITECTURE.md, "The thread catalog".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.blobs.steps import Steps, each
from langgraph.checkpoint.s3dynamo.identities import checkpoint_time
from langgraph.checkpoint.s3dynamo.layout import SEPARATOR, tombstone_time
from langgraph.checkpoint.s3dynamo.records import head_key
from langgraph.checkpoint.s3dynamo.runnable_config import make_config
from langgraph.checkpoint.s3dynamo.store.catalog import EVERY_THREAD, Catalog, Catalogued
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder, Skipped, newest_first
from langgraph.checkpoint.s3dynamo.store.walker import Walker

ROOT = ""


@dataclass(frozen=True)
class ThreadSummary:
    """One thread as `search_threads` returns it: its id, the config of its latest
    checkpoint (root namespace), when that checkpoint was made (UTC, from its id, else
    when its record was written), the checkpoint's metadata, and `cursor`, which
    `before=` takes to continue after this thread."""

    thread_id: str
    config: dict[str, Any]
    updated_at: datetime
    metadata: dict[str, Any]
    cursor: str

    @property
    def checkpoint_id(self) -> str:
        return str(self.config["configurable"]["checkpoint_id"])

    def to_dict(self) -> dict[str, Any]:
        """As the command line's `--json` shows it."""
        return {
            "thread_id": self.thread_id,
            "checkpoint_id": self.checkpoint_id,
            "updated_at": self.updated_at.isoformat(),
            "metadata": self.metadata,
            "cursor": self.cursor,
        }


# Where a search continues: after a thread it returned, or its `cursor`.
Before = ThreadSummary | str | None
# What a search returns (a name for it where `list` is a method's).
ThreadSummaries = list[ThreadSummary]


class Placed(NamedTuple):
    """A thread in search order: the newest checkpoint id its head (or its latest
    record) names, its name, its id, and its latest checkpoint once read."""

    order: str
    name: str
    tid: str
    entry: Entry | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.order, self.name


def cursor_of(before: object) -> tuple[str, str] | None:
    """The position `before` names: a summary (or any object with its `cursor`, as
    `arguments.search_position` takes it), its cursor, or a bare checkpoint id (then every
    thread whose newest checkpoint is that one or newer is passed over)."""
    if before is None:
        return None
    text = str(getattr(before, "cursor", before))
    order, _, name = text.partition(SEPARATOR)
    return order, name


class ThreadSearch:
    """Threads through the catalog, read as the finder reads them (module docstring)."""

    def __init__(self, catalog: Catalog, finder: Finder, walker: Walker) -> None:
        self.catalog = catalog
        self.finder = finder
        self.walker = walker

    def search(
        self, metadata: Mapping[str, Any] | None, limit: int, before: object = None
    ) -> Steps[list[ThreadSummary]]:
        """Up to `limit` threads whose latest root checkpoint's metadata holds every pair
        of `metadata`, newest activity first, after `before` (module docstring)."""
        wanted = dict(metadata or {})
        field, token = self.catalog.usable(wanted) or (EVERY_THREAD, None)
        self.catalog.require_complete(field)
        token = token or self.catalog.token(EVERY_THREAD)
        threads = [self.catalog.opened(e) for e in (yield from self.catalog.listed(token))]
        after = cursor_of(before)
        order = [p for p in (yield from self.placed(threads)) if after is None or p.key < after]
        found: list[ThreadSummary] = []
        while order and len(found) < limit:
            wave, order = order[: limit - len(found)], order[limit - len(found) :]
            for p in (yield from each([self._latest(p) for p in wave])):
                if p.entry is None:
                    continue  # deleted, or being deleted, since it was filed
                md = self.walker.open_metadata(p.entry) or {}
                if all(md.get(k) == v for k, v in wanted.items()):
                    found.append(self.summary(p, md))
        return found

    def placed(self, threads: Sequence[Catalogued]) -> Steps[list[Placed]]:
        """Threads in search order, newest first: by the id their root namespace's head
        names (one BatchGetItem per 100), else, without a head or with a tombstone (a
        removal under way), by their latest record (one Query each, in one wave); a
        thread with none left out."""
        keys = {head_key(t.name, self.finder.namer.namespace(t.tid, ROOT)): t for t in threads}
        heads = (yield from self.finder.heads(list(keys))) if keys else {}
        out: list[Placed] = []
        unknown: list[Placed] = []
        for key, thread in keys.items():
            head = heads.get(key)
            # Any tombstone, a forged one too, is read past: the thread's latest record
            # places it, and a thread with none left is left out.
            if head is None or tombstone_time(head) is not None:
                unknown.append(Placed("", thread.name, thread.tid))
            else:
                out.append(Placed(head, thread.name, thread.tid))
        for p in (yield from each([self._latest(p) for p in unknown])):
            if p.entry is not None:
                out.append(p._replace(order=p.entry.checkpoint_id))
        return sorted(out, key=lambda p: p.key, reverse=True)

    def _latest(self, p: Placed) -> Steps[Placed]:
        if p.entry is not None:
            return p
        return p._replace(entry=(yield from self.finder.read_latest(p.tid, ROOT)))

    def summary(self, p: Placed, metadata: Mapping[str, Any]) -> ThreadSummary:
        entry = p.entry
        assert entry is not None
        cid = entry.checkpoint_id
        at = checkpoint_time(cid)
        if at is None:
            at = float(entry.record.written_at or 0)
        return ThreadSummary(
            thread_id=p.tid,
            config=dict(make_config(p.tid, ROOT, cid)),
            updated_at=datetime.fromtimestamp(at, timezone.utc),
            metadata=dict(metadata),
            cursor=f"{p.order}{SEPARATOR}{p.name}",
        )

    # ------------------------------------------------------------ list(None, filter)

    def listing(
        self, filter: Mapping[str, Any] | None, before_id: str | None, skipped: list[Skipped]
    ) -> Steps[list[Entry]]:
        """What `list(None, filter=...)` lists, newest first (the filter is applied as the
        listing decodes them). When the filter asks a value of a declared field whose
        catalog is complete: every checkpoint of the threads filed under it (one Query
        each, in one wave), whatever else the table holds. Else every checkpoint of the
        deployment (a Scan; threads that do not open are listed in `skipped`)."""
        usable = self.catalog.usable(filter)
        if usable is None or not self.catalog.complete(usable[0]):
            return (yield from self.finder.all_entries(before_id, skipped=skipped))
        threads = [self.catalog.opened(e) for e in (yield from self.catalog.listed(usable[1]))]
        found = yield from each([self.finder.thread_entries(t.tid, before_id) for t in threads])
        return newest_first([e for entries in found for e in entries], before_id)
