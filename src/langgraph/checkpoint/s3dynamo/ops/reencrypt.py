"""Re-encryption: every blob not sealed under the active key is sealed again under it, so
an old key can leave the keyring. Objects are overwritten in place (same name, same
identity, same value); records are replaced only if unchanged since they were read, and a
thread whose records a concurrent writer changed is read again; then the thread's catalog
entries, each while it exists. Interrupted, nothing
visible changes (some blobs are under the new key, some under the old one, and the
keyring holds both); a repeat re-seals what is left and then finds nothing to do."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace

from langgraph.checkpoint.s3dynamo.errors import IntegrityError
from langgraph.checkpoint.s3dynamo.format.records import Record
from langgraph.checkpoint.s3dynamo.ops.plan import Plan, Progress, no_progress
from langgraph.checkpoint.s3dynamo.store import Skipped, ThreadStore, warn_skipped


class ReencryptResult(int):
    """How many blobs `reencrypt` re-sealed (the int itself), and the threads it skipped
    because they do not open with this saver's keys (`skipped`)."""

    skipped: list[Skipped]

    def __new__(cls, resealed: int, skipped: Sequence[Skipped] = ()) -> ReencryptResult:
        out = super().__new__(cls, resealed)
        out.skipped = list(skipped)
        return out


def plan_reencrypt(
    store: ThreadStore,
    thread_ids: Sequence[str] | None,
    memory: Callable[[], int] | None = None,
    subject_keys: Callable[[], int] | None = None,
) -> Plan:
    """Which keys the blobs kept in records are sealed under now (objects are checked,
    and re-sealed, when it runs), and the threads it will go through; over the whole
    table (`thread_ids` None), the threads that do not open with these keys are skipped
    and listed (`.skipped`). `execute(progress)` re-seals each thread's stale blobs,
    then runs `memory` (the Store's and the node cache's re-sealing: how many) and
    `subject_keys` (data subjects' keys wrapped again under the active key: how many)."""
    found = SimpleNamespace(skipped=[])
    if thread_ids is None:
        records: list[Record] = store.records()
        tids = sorted({e.tid for e in store.group(records, found.skipped)})
    else:
        tids = list(thread_ids)
        records = [r for tid in tids for r in store.records(tid)]
    by_key = store.key_ids(records)
    active = store.active_key()

    def run(progress: Progress = no_progress) -> dict[str, int]:
        total = 0
        progress(0, len(tids))
        for done, tid in enumerate(tids, 1):
            total += reencrypt_thread(store, tid, found.skipped if thread_ids is None else None)
            progress(done, len(tids))
        total += memory() if memory is not None else 0
        rewrapped = subject_keys() if subject_keys is not None else 0
        warn_skipped("reencrypt", found.skipped)
        store.forget()
        return {"resealed": total, "subject_keys": rewrapped}

    counts = {
        "active_key": active,
        "threads": tids,
        "item_blobs": dict(sorted(by_key.items())),
        "stale_item_blobs": sum(n for k, n in by_key.items() if k != active),
    }
    return Plan("reencrypt", counts, run, bool(tids), found)


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
