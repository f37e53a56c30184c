"""Re-encryption: every blob not sealed under the active key is sealed again under it, so
an old key can leave the keyring. Objects are overwritten in place (same name, same
identity, same value); records are replaced only if unchanged since they were read, and a
thread whose records a concurrent writer changed is read again; then the thread's catalog
entries, each while it exists. Interrupted, nothing
visible changes (some blobs are under the new key, some under the old one, and the
keyring holds both); a repeat re-seals what is left and then finds nothing to do."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.records import Record
from langgraph.checkpoint.s3dynamo.store import Skipped, ThreadStore, warn_skipped

Progress = Callable[[int, int], None]


class ReencryptResult(int):
    """How many blobs `reencrypt` re-sealed (the int itself), and the threads it skipped
    because they do not open with this saver's keys (`skipped`)."""

    skipped: list[Skipped]

    def __new__(cls, resealed: int, skipped: Sequence[Skipped] = ()) -> ReencryptResult:
        out = super().__new__(cls, resealed)
        out.skipped = list(skipped)
        return out


@dataclass
class ReencryptPlan:
    """Which keys the blobs kept in records are sealed under now (objects are checked,
    and re-sealed, when it runs), and the threads it will go through."""

    store: ThreadStore
    thread_ids: list[str]
    active_key: str | None
    item_blobs: dict[str, int]
    table_wide: bool
    skipped: list[Skipped] = field(default_factory=list)
    # Over the whole table: re-seals the Store's items and the node cache's entries
    # (`ops/memory.py`) after the threads; how many it re-sealed.
    memory: Callable[[], int] | None = None

    @property
    def stale_item_blobs(self) -> int:
        return sum(n for k, n in self.item_blobs.items() if k != self.active_key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "active_key": self.active_key,
            "threads": self.thread_ids,
            "item_blobs": dict(sorted(self.item_blobs.items())),
            "stale_item_blobs": self.stale_item_blobs,
        }

    def execute(self, progress: Progress | None = None) -> ReencryptResult:
        total, skipped = 0, list(self.skipped)
        if progress:
            progress(0, len(self.thread_ids))
        for done, tid in enumerate(self.thread_ids, 1):
            total += reencrypt_thread(self.store, tid, skipped if self.table_wide else None)
            if progress:
                progress(done, len(self.thread_ids))
        if self.memory is not None:
            total += self.memory()
        warn_skipped("reencrypt", skipped)
        self.store.forget()
        return ReencryptResult(total, skipped)


def plan_reencrypt(store: ThreadStore, thread_ids: Sequence[str] | None) -> ReencryptPlan:
    """Count the record blobs by key id; over the whole table (`thread_ids` None), the
    threads that do not open with these keys are skipped and listed in the plan."""
    skipped: list[Skipped] = []
    if thread_ids is None:
        records: list[Record] = store.records()
        tids = sorted({e.tid for e in store.group(records, skipped)})
    else:
        tids = list(thread_ids)
        records = [r for tid in tids for r in store.records(tid)]
    by_key = store.key_ids(records)
    return ReencryptPlan(store, tids, store.active_key(), by_key, thread_ids is None, skipped)


def reencrypt_thread(store: ThreadStore, tid: str, skipped: list[Skipped] | None) -> int:
    """Re-seal one thread's stale blobs, its catalog entries too (`ThreadStore.reseal`);
    returns how many. With `skipped` (table-wide), a thread that does not open is listed
    there instead of raising."""
    try:
        return store.reseal(tid)
    except IntegrityError as exc:
        if skipped is None:
            raise
        skipped.append(Skipped.of(store.name_of(tid), None, exc))
        return 0
