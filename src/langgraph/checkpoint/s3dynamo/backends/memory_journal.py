"""The upload journal in memory (`ControlItems.put_intent`, `intents_before`), mixed into
the in-memory index (`memory.py`), which deletes intents with `delete_items` and with
the commits that close them."""

from __future__ import annotations

import threading
from collections.abc import Callable

from langgraph.checkpoint.s3dynamo.records import ItemKey, UploadIntent


class JournalTwin:
    """Upload intents by key; the host holds the lock and counts requests."""

    _lock: threading.Lock
    _count: Callable[[str], None]
    intents: dict[ItemKey, UploadIntent]

    def put_intent(self, intent: UploadIntent) -> None:
        with self._lock:
            self._count("put_intent")
            self.intents[intent.key] = intent

    def intents_before(self, pk: str, upper_sk: str) -> list[UploadIntent]:
        with self._lock:
            self._count("query")
            found = [i for k, i in self.intents.items() if k.pk == pk and k.sk < upper_sk]
        return sorted(found, key=lambda i: i.key.sk)

    def _close(self, intent: ItemKey | None) -> None:
        """A commit's delete of its intent (the caller holds the lock)."""
        if intent is not None:
            self.intents.pop(intent, None)
