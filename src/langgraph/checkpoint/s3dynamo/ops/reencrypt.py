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

from langgraph.checkpoint.s3dynamo.backoff import CONFLICT_ATTEMPTS, tries
from langgraph.checkpoint.s3dynamo.errors import IntegrityError, StorageError
from langgraph.checkpoint.s3dynamo.records import Record, held_blobs
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
    sealer = store.sealer
    skipped: list[Skipped] = []
    if thread_ids is None:
        records: list[Record] = list(store.scope.records())
        tids = sorted({e.tid for e in store.finder.group(records, skipped=skipped)})
    else:
        tids = list(thread_ids)
        records = [r for tid in tids for r in store.finder.thread_records(tid)]
    by_key: dict[str, int] = {}
    for r in records:
        for b in held_blobs(r):
            kid = sealer.key_id_of(b) or "(none)"
            by_key[kid] = by_key.get(kid, 0) + 1
    active = sealer.keyring.active if sealer.keyring else None
    return ReencryptPlan(store, tids, active, by_key, thread_ids is None, skipped)


def reencrypt_thread(store: ThreadStore, tid: str, skipped: list[Skipped] | None) -> int:
    """Re-seal one thread's stale blobs; returns how many. With `skipped` (table-wide), a
    thread that does not open is listed there instead of raising."""
    for _ in tries(CONFLICT_ATTEMPTS):
        entries = store.finder.thread_entries(tid)
        try:
            plan = store.rewriter.rewrite(tid, entries)
        except IntegrityError as exc:
            if skipped is None:
                raise
            skipped.append(Skipped(store.namer.thread(tid), None, str(exc)))
            return 0
        # Objects are overwritten in place: same name, same identity, same value.
        if store.write_rotation(tid, plan):
            return plan.blobs + store.catalog.reseal(tid)  # its catalog entries too
        # A concurrent writer changed a record between read and update: read again.
    raise StorageError(
        f"reencrypt of thread {tid!r}: records kept changing under concurrent writes "
        f"for {CONFLICT_ATTEMPTS} attempts; run it again when the thread is quieter"
    )
