"""Mark and sweep of unreferenced objects, for any owner: a thread, a Store or node-cache
namespace. The owner's side says which leaves its items reference (`LiveLeaves`, read
consistently); this module holds the three steps every collection takes, whatever found
its candidates (a listing, or upload intents):

    L  list (or HEAD) the candidates again: one written since is young now;
    M  mark again, after L: the leaves the owner's items reference now;
    D  delete each old unreferenced candidate only while it still carries the tag L saw.

Why that never deletes an object a committed item references, or one a writer is about
to reference: docs/RELIABILITY.md, "Garbage collection: why a referenced object is never
deleted" and "Garbage collection: the upload journal".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from langgraph.checkpoint.s3dynamo.blobs.journal import Journal
from langgraph.checkpoint.s3dynamo.blobs.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.format.layout import journal_scope, owner_prefix
from langgraph.checkpoint.s3dynamo.format.records import ItemKey, UploadIntent, intent_from
from langgraph.checkpoint.s3dynamo.format.schema import PARTITION_KEY
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.table import Item

# The leaves an owner's items reference now, read consistently; None: it has no item.
LiveLeaves = Callable[[str], "set[str] | None"]


def unreferenced(
    objects: Iterable[ObjectInfo], owner: str, live: set[str], cutoff: datetime
) -> list[ObjectInfo]:
    """Those of an owner's objects older than `cutoff` whose leaf `live` lacks."""
    start = len(owner_prefix(owner))
    return [o for o in objects if o.key[start:] not in live and o.modified < cutoff]


def by_owner(intents: Iterable[UploadIntent]) -> dict[str, list[UploadIntent]]:
    grouped: dict[str, list[UploadIntent]] = {}
    for intent in intents:
        grouped.setdefault(intent.owner, []).append(intent)
    return grouped


class Collector:
    """The three steps over one deployment's objects (module docstring), and the upload
    journal they settle."""

    def __init__(self, objects: ObjectIO, journal: Journal, prefix: str) -> None:
        self._objects = objects
        self._journal = journal
        self._prefix = prefix

    def sweep(
        self, owner: str, live_of: LiveLeaves, cutoff: datetime, planned: set[str] | None = None
    ) -> int:
        """L, M and D over an owner's objects (those in `planned`, or all it has); how
        many were deleted."""
        old = [
            o
            for o in self._objects.list_owner(owner)
            if (planned is None or o.key in planned) and o.modified < cutoff
        ]
        if not old:
            return 0
        doomed = unreferenced(old, owner, live_of(owner) or set(), cutoff)
        return len(self._objects.delete_unchanged(doomed)) if doomed else 0

    def expired(self, before_ms: int) -> list[UploadIntent]:
        """The deployment's intents written before `before_ms` (one Query per shard)."""
        return self._journal.expired(self._prefix, before_ms)

    def named(self, owner: str | None, read: Iterable[Item] = ()) -> set[str]:
        """The object keys upload intents name, whatever their age: those of `owner` (one
        Query of its journal shard), else those of every intent among items `read` (by a
        Scan of the deployment)."""
        if owner is not None:
            intents = self._journal.of(owner)
        else:
            journal = [i for i in read if journal_scope(str(i[PARTITION_KEY])) is not None]
            intents = [intent_from(i) for i in journal]
        return {key for intent in intents for key in intent.object_keys}

    def close(self, intents: Sequence[ItemKey]) -> None:
        """Delete settled intents."""
        self._journal.close(intents)

    def examine(
        self, owner: str, intents: list[UploadIntent], live_of: LiveLeaves, cutoff: datetime
    ) -> tuple[dict[str, ObjectInfo | None], set[str], list[ObjectInfo]]:
        """L and M for the keys some intents of one owner name: what each key is now
        (None: absent), the leaves the owner's items reference (read after the HEADs, and
        only if a key is old enough to go), and the old unreferenced keys."""
        keys = sorted({k for i in intents for k in i.object_keys})
        found = dict(zip(keys, self._objects.stat(keys), strict=True))
        old = [o for o in found.values() if o is not None and o.modified < cutoff]
        if not old:
            return found, set(), []
        # An owner with no item: its first write crashed. The intent says this deployment
        # wrote the keys, so they go even at the bucket root (unlike a listing's unindexed).
        live = live_of(owner) or set()
        return found, live, unreferenced(old, owner, live, cutoff)

    def settle(
        self, owner: str, intents: list[UploadIntent], live_of: LiveLeaves, cutoff: datetime
    ) -> tuple[int, list[UploadIntent]]:
        """L, M and D for one owner's intents: (objects deleted, the intents whose keys
        are all settled: gone, deleted, or referenced). An intent naming a key that is
        young again or changed stays for the next run."""
        found, live, doomed = self.examine(owner, intents, live_of, cutoff)
        gone = set(self._objects.delete_unchanged(doomed)) if doomed else set()
        start = len(owner_prefix(owner))
        settled = {
            key for key, info in found.items() if info is None or key in gone or key[start:] in live
        }
        return len(gone), [i for i in intents if all(k in settled for k in i.object_keys)]
