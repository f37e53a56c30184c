"""Searching threads through the catalog (`store/catalog.py`): `search_threads`, newest
activity first, and `list(None, filter=...)` on a declared field, each at the cost of the
threads the catalog names, whatever else the table holds.

A search reads the threads filed under one token (the first declared field the filter
asks a value of, else the deployment's), then their root namespaces' heads (one
BatchGetItem per 100 threads, eventually consistent). A head is a hint: it is in the
clear, so a table writer can set it to anything. A thread's place is the id of its
latest checkpoint, read (one Query each, in waves) and authenticated (its metadata,
opened to check the filter, is sealed for that id), or its head's id where that is
older (a head not yet moved, as an eventually consistent read may show it). Threads are
read in the order of their hints, newest first; a thread placed below its hint (its head
names a newer checkpoint than it has: forged) is held back and the next threads read,
so no head moves a thread ahead of honest ones; one whose head names an older
checkpoint than it has is placed by its head, so none drops out. With honest heads, hint
and place agree and a search reads exactly the threads it returns (and those passed
over). A thread without a usable head (concurrent-run detection off, heads a
`delete_for_runs` dropped, a tombstone, text that is no checkpoint id) is read first;
a thread with no checkpoint left is left out, as is one whose latest checkpoint's
metadata does not hold every pair asked.

Paging is keyset over that order, which moves: a result's `cursor` (opaque: sealed
under a key derived from the naming key, bound to the deployment and the catalog token
searched, base64url) says where the next page starts, and the threads read and held back
below it; a thread written between two pages moves to the top and is on neither.
`before` takes a result or its cursor; anything else, `InvalidCursorError`. Why this
way, and the request budgets: docs/ARCHITECTURE.md, "The thread catalog".
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.blobs.sealing import identity, own_sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import Steps, each
from langgraph.checkpoint.s3dynamo.config.runnable_config import make_config
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, InvalidCursorError
from langgraph.checkpoint.s3dynamo.format.records import head_key
from langgraph.checkpoint.s3dynamo.keys.identities import checkpoint_time
from langgraph.checkpoint.s3dynamo.store.catalog import EVERY_THREAD, Catalog, Catalogued
from langgraph.checkpoint.s3dynamo.store.finder import Entry, Finder, Skipped, newest_first
from langgraph.checkpoint.s3dynamo.store.walker import Walker

ROOT = ""
# A head that names a checkpoint: a UUID in canonical text (what every put writes); any
# other text is no hint (the thread is read).
HINT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Threads read and held back below a page that a cursor carries, at most, and how long a
# cursor may be: a thread id is at most 1 KB, so a cursor stays below 64 KB.
HELD_BACK = 16
CURSOR_MAX = 64 * 1024
CURSOR_PURPOSE = "cursor"
CURSOR = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class ThreadSummary:
    """One thread as `search_threads` returns it: its id, the config of its latest
    checkpoint (root namespace), when that checkpoint was made (UTC, from its id, else
    when its record was written), the checkpoint's metadata, and `cursor`, which
    `before=` takes to continue after this thread: opaque text, sealed for this
    deployment and this search's filter."""

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
    """A thread in search order: its place (the id its head names, until its latest
    checkpoint is read: then the older of the two), its name, its id, the head's id
    (None: no usable head), and its latest checkpoint once read."""

    order: str
    name: str
    tid: str
    hint: str | None = None
    entry: Entry | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.order, self.name

    @property
    def hinted(self) -> tuple[str, str]:
        """Where its head put it: a thread without one is read on every page."""
        return (self.hint or "", self.name)


class Position(NamedTuple):
    """Where a page starts: below `after` (place, name), and the threads read and held
    back below it whose heads put them above it (thread id -> place)."""

    after: tuple[str, str]
    held: dict[str, str]


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
        token = token or self.catalog.token(EVERY_THREAD)
        start = self.position(before, token)
        self.catalog.require_complete(field)
        threads = self.catalog.opened_all((yield from self.catalog.listed(token)))
        held = start.held if start else {}
        candidates = []
        for p in (yield from self.placed(threads)):
            if p.tid in held:  # read and held back: placed where it was then
                candidates.append(p._replace(order=min(p.order, held[p.tid])))
            elif start is None or p.key < start.after:
                candidates.append(p)
        pending = sorted(candidates, key=lambda p: p.key, reverse=True)
        shown: list[tuple[Placed, dict[str, Any]]] = []
        known: list[tuple[Placed, dict[str, Any]]] = []
        while len(shown) < limit and (pending or known):
            # Shown in order: a thread read is shown once no thread still to read can
            # come before it (a hint is never below the place it stands for).
            known.sort(key=lambda k: k[0].key, reverse=True)
            while known and len(shown) < limit:
                if pending and known[0][0].key < pending[0].key:
                    break
                shown.append(known.pop(0))
            if len(shown) >= limit or not pending:
                continue
            wave, pending = pending[: limit - len(shown)], pending[limit - len(shown) :]
            for p in (yield from each([self._latest(p) for p in wave])):
                if p.entry is None:
                    continue  # deleted, or being deleted, since it was filed
                md = self.walker.open_metadata(p.entry) or {}  # authenticates its id
                place = p._replace(order=min(p.order, p.entry.checkpoint_id))
                if start is not None and place.key >= start.after:
                    continue  # moved to the top since that page: on neither
                if all(md.get(k) == v for k, v in wanted.items()):
                    known.append((place, md))
        # Threads a later page would not read by their heads: placed below their hints.
        below = [p for p, _ in shown + known] + [p for p in pending if p.tid in held]
        suspects = [p for p in below if p.hinted > p.key]
        summaries, gone = [], set()
        for p, md in shown:
            gone.add(p.tid)
            later = [q for q in suspects if q.tid not in gone and q.key < p.key <= q.hinted]
            summaries.append(self.summary(p, md, token, later))
        return summaries

    def placed(self, threads: Sequence[Catalogued]) -> Steps[list[Placed]]:
        """Threads placed by their root namespace's head (one BatchGetItem per 100), newest
        first, or, without a usable head (none, a tombstone, a forged one, text that is
        no checkpoint id), by their latest record (one Query each, in one wave); a thread
        with none left out."""
        keys = {head_key(t.name, self.finder.namer.namespace(t.tid, ROOT)): t for t in threads}
        heads = (yield from self.finder.heads(list(keys))) if keys else {}
        out: list[Placed] = []
        unknown: list[Placed] = []
        for key, thread in keys.items():
            head = heads.get(key)
            if head is not None and HINT.fullmatch(head):
                out.append(Placed(head, thread.name, thread.tid, head))
            else:
                unknown.append(Placed("", thread.name, thread.tid))
        for p in (yield from each([self._latest(p) for p in unknown])):
            if p.entry is not None:
                out.append(p._replace(order=p.entry.checkpoint_id))
        return sorted(out, key=lambda p: p.key, reverse=True)

    def _latest(self, p: Placed) -> Steps[Placed]:
        if p.entry is not None:
            return p
        return p._replace(entry=(yield from self.finder.read_latest(p.tid, ROOT)))

    def summary(
        self, p: Placed, metadata: Mapping[str, Any], token: str, later: Sequence[Placed]
    ) -> ThreadSummary:
        """A thread shown, with the cursor of the page after it: its place, and the
        threads read (or carried) below it whose heads put them above it."""
        entry = p.entry
        assert entry is not None
        cid = entry.checkpoint_id
        at = checkpoint_time(cid)
        if at is None:
            at = float(entry.record.written_at or 0)
        held = sorted(later, key=lambda q: q.key, reverse=True)[:HELD_BACK]
        return ThreadSummary(
            thread_id=p.tid,
            config=dict(make_config(p.tid, ROOT, cid)),
            updated_at=datetime.fromtimestamp(at, timezone.utc),
            metadata=dict(metadata),
            cursor=self.cursor(Position((p.order, p.tid), {q.tid: q.order for q in held}), token),
        )

    # ------------------------------------------------------------ cursors

    def _sealing(self, token: str) -> tuple[Any, bytes]:
        """The cursor's sealer (a key derived from the naming key) and what a cursor is
        bound to: the deployment and the token searched."""
        sealer = own_sealer(self.finder.namer.sealing_key(CURSOR_PURPOSE))
        return sealer, identity("thread-search", self.catalog.prefix, token)

    def cursor(self, at: Position, token: str) -> str:
        """The opaque text of a position (its `after` names a thread by id, not by its
        stored name)."""
        sealer, bound = self._sealing(token)
        data = json.dumps({"a": list(at.after), "h": sorted(at.held.items())}).encode()
        blob = sealer.seal("json", data, bound, compress=False)
        return base64.urlsafe_b64encode(blob).rstrip(b"=").decode()

    def position(self, before: object, token: str) -> Position | None:
        """Where a page starts: after a result of a search by the same filter (or its
        cursor); `InvalidCursorError` for anything else, before any request."""
        if before is None:
            return None
        text = getattr(before, "cursor", before)
        problem = "not a cursor a search returned (no base64url text of at most 64 KB)"
        if isinstance(text, str) and len(text) <= CURSOR_MAX and CURSOR.fullmatch(text):
            sealer, bound = self._sealing(token)
            try:
                blob = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
                found = json.loads(sealer.open(blob, bound, "cursor")[1])
                order, tid = found["a"]
                held = {str(t): str(o) for t, o in found["h"]}
                return Position((str(order), self.finder.namer.thread(str(tid))), held)
            except IntegrityError:
                problem = "a cursor this search did not return (made up, altered, or of "
                problem += "another filter or deployment)"
            except (binascii.Error, ValueError, KeyError, TypeError):
                problem = "not a cursor a search returned (it does not decode)"
        shown = text if not isinstance(text, str) or len(text) <= 80 else text[:77] + "..."
        raise InvalidCursorError(
            f"search_threads before={shown!r}: {problem}; expected a ThreadSummary a "
            "search by the same filter returned, or its `cursor` (opaque text, sealed for "
            "this deployment and filter; an earlier release's cursor is no longer taken). "
            "Search again without before, then pass the last result or its cursor"
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
        threads = self.catalog.opened_all((yield from self.catalog.listed(usable[1])))
        found = yield from each([self.finder.thread_entries(t.tid, before_id) for t in threads])
        return newest_first([e for entries in found for e in entries], before_id)
