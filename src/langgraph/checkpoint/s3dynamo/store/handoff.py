"""What the read path hands the write path. A run reads a checkpoint (`get_tuple`) and
then commits its child (`put`); what passes between them is kept here and nowhere else:

- where the values of checkpoints read or written lately are stored (inline, an object,
  a delta of one): the child points at its parent's unchanged values instead of
  uploading them again, and learns which objects can serve as delta bases;
- the run record of concurrent-run detection (below): what a run loaded and what it
  committed, so a put continuing the latest it loaded commits only if nothing else
  moved the namespace meanwhile;
- the catalog tokens (declared metadata values) a thread is known to have entries
  under, from what was read or written of it: a put writes only the others
  (`store/catalog.py`);
- the data subject's key a thread's blobs were read or written under (`subjects.py`):
  its task's writes are sealed under it.

The decoder fills it when a read is remembered, the committer reads it and fills it
after each commit, and `ThreadStore.forget` clears it after anything rewrote records.

The run record (below) says which checkpoint a run continues as a namespace's latest,
per execution context: a put on it is held to the namespace's head. Which loads
continue the latest, and why a single writer is never refused: docs/RELIABILITY.md,
"The run record in full".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar, copy_context
from typing import TypeVar

from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.errors import ThreadDeletedError
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.keys.identities import checkpoint_time
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.walker import StoredValues

# The run record. A put is held (its transaction applies only if the namespace's head
# still names its parent) exactly when its run continues that parent as the latest:
# the run loaded the namespace with `get_tuple` and no checkpoint id and got it (or found
# the namespace empty, for a parent of None), or the run committed it last there. A load
# by id (a replay, a fork, a subgraph through `checkpoint_map`) or by position (`list`)
# continues nothing and clears the namespace's entry; any other put moves the head
# without condition. Kept per execution context (`contextvars`): a put sees what its
# own run loaded, nothing another run did.

_T = TypeVar("_T")

# A namespace found empty by a "latest" load: its first put has no parent.
EMPTY = ""
# Namespaces one context remembers; forgetting one only makes a put unheld.
LIMIT = 256

RunKey = tuple[int, str, str]  # (store id, thread name, namespace name)
# What a run continues in a namespace: the checkpoint it holds as the latest, and those
# it committed there since it loaded it, oldest first (what a refusal says is visible).
Continued = tuple[str, tuple[str, ...]]

_CONTINUED: ContextVar[dict[RunKey, Continued] | None] = ContextVar(
    "s3dynamo_continued", default=None
)


def loaded(key: RunKey, latest_id: str | None) -> None:
    """A load of the namespace by this context's run: `latest_id` is the checkpoint it
    got as the latest (`EMPTY` for an empty namespace), or None for a load by id or by
    position, which does not continue the latest."""
    record = dict(_CONTINUED.get() or {})
    record.pop(key, None)
    if latest_id is not None:
        record[key] = (latest_id, ())
        while len(record) > LIMIT:
            del record[next(iter(record))]
    _CONTINUED.set(record)


def loaded_thread(store: int, thread_name: str) -> None:
    """A load of every namespace of a thread by position (``list`` without a namespace)."""
    old = _CONTINUED.get()
    if old and any(k[0] == store and k[1] == thread_name for k in old):
        _CONTINUED.set({k: v for k, v in old.items() if k[:2] != (store, thread_name)})


def continuing(record: Mapping[RunKey, str], run: Callable[[], _T]) -> _T:
    """Run `run` in a copy of this context whose run record holds exactly `record` (the
    checkpoint each namespace is continued from, `EMPTY` for none): a put continuing one
    is held to the head, and the caller's own run record, whatever it loaded, holds
    nothing of it (an import in the process of a run)."""
    context = copy_context()

    def inside() -> _T:
        _CONTINUED.set({key: (latest, ()) for key, latest in record.items()})
        return run()

    return context.run(inside)


def continues_latest(key: RunKey, parent_id: str | None) -> bool:
    """Whether a put on `parent_id` continues what this run holds as the namespace's
    latest: such a put is held to the head."""
    record = _CONTINUED.get()
    held = record.get(key) if record is not None else None
    return held is not None and held[0] == (parent_id or EMPTY)


def committed_by(key: RunKey) -> tuple[str, ...]:
    """The checkpoints this context's run committed in the namespace since it loaded
    it, oldest first: what of a refused run is visible."""
    record = _CONTINUED.get()
    held = record.get(key) if record is not None else None
    return held[1] if held is not None else ()


def run_committed(key: RunKey, checkpoint_id: str) -> None:
    """The run committed `checkpoint_id`: its next put there continues it. In place, so
    the run's other copies of this context see it; nothing if this context never loaded
    (direct use of `put` alone holds nothing)."""
    record = _CONTINUED.get()
    if record is not None:
        earlier = record.pop(key, ("", ()))[1]
        record[key] = (checkpoint_id, (*earlier, checkpoint_id))
        while len(record) > LIMIT:
            del record[next(iter(record))]


# Checkpoints whose stored values are kept for the next put on them.
CARRY_CACHE_SIZE = 256
# Threads whose catalog tokens are kept: a token set is a few hashes.
CATALOGUED_CACHE_SIZE = 4096


class Made:
    """A checkpoint this store loaded or wrote to lately: whether a run loaded it,
    whether this store committed it (or is committing it), the writes records it wrote
    for it, whether a commit found its namespace deleted since, and the error its own
    put was refused with for good (`refused`). One is made per checkpoint a put or a
    read meets: a class with slots, smaller than a dataclass's instance and with no
    methods to compile at import."""

    __slots__ = ("committed", "dead", "loaded", "ours", "refused", "writes")

    def __init__(self) -> None:
        self.loaded = self.ours = self.committed = self.dead = False
        self.writes: list[ItemKey] = []
        self.refused: Exception | None = None


class Handoff:
    """The read-to-write hand-off of one thread store (module docstring). `store_id`
    tells stores apart in the process-wide run records and leases."""

    def __init__(self, namer: Namer, store_id: int) -> None:
        self.namer = namer
        self.store_id = store_id
        self.carry: Lru[tuple[str, str, str], StoredValues] = Lru(CARRY_CACHE_SIZE)
        # Checkpoints this store loaded or wrote to lately: a task's writes to one a run
        # loaded and this store did not commit are checked against the thread's head (a
        # run resumed from what it loaded), and a run refused as deleted takes back the
        # writes it made.
        self.made: Lru[tuple[str, str, str], Made] = Lru(CARRY_CACHE_SIZE)
        # Namespaces a commit of this store found deleted, and when, until one commits
        # there again. Both outlive `clear`: they are what runs did, not cached records.
        self.gone: dict[tuple[str, str], float] = {}
        self.catalogued: Lru[str, frozenset[str]] = Lru(CATALOGUED_CACHE_SIZE)
        self.subject_keys: Lru[str, str] = Lru(CATALOGUED_CACHE_SIZE)

    def keep(self, tid: str, ns: str, cid: str, stored: StoredValues) -> None:
        """Where checkpoint `cid`'s values are stored, for a put whose parent it is."""
        self.carry.put((tid, ns, cid), stored)

    def stored(self, tid: str, ns: str, cid: str) -> StoredValues | None:
        """Where checkpoint `cid`'s values are stored, if read or written lately."""
        return self.carry.get((tid, ns, cid))

    def _made(self, tid: str, ns: str, cid: str) -> Made:
        made = self.made.get((tid, ns, cid))
        if made is None:
            made = Made()
            self.made.put((tid, ns, cid), made)
        return made

    def committing(self, tid: str, ns: str, cid: str) -> None:
        self._made(tid, ns, cid).ours = True

    def writing(self, tid: str, ns: str, cid: str, writes: ItemKey) -> Made:
        """Note a writes record about to be written for checkpoint `cid` (LangGraph may
        send it before, while or after the checkpoint's own put)."""
        made = self._made(tid, ns, cid)
        if writes not in made.writes:
            made.writes.append(writes)
        return made

    def deleted(self, tid: str, ns: str) -> list[ItemKey]:
        """A commit found the namespace deleted: every checkpoint of it this store wrote
        to is dead, and so is any made before now and not committed, until a commit there
        succeeds (writes to one are refused; a run starting the thread afresh makes new
        ones); the writes records written for them are to be deleted. A writer that
        wrote before it saw its checkpoint dead finds its key here or, after its write,
        `is_dead` true (`Committer.commit_writes`)."""
        self.gone[(tid, ns)] = time.time()
        keys: list[ItemKey] = []
        for (t, n, _), made in self.made.items():
            if (t, n) == (tid, ns):
                made.dead = True
                keys.extend(made.writes)
        return keys

    def refused(self, tid: str, ns: str, cid: str, error: Exception) -> list[ItemKey]:
        """The put of checkpoint `cid` was refused for good: until a put of it commits,
        writes to it are refused with `error`; the writes records written for it are to
        be deleted. A writer that wrote before it saw the refusal finds its key here or,
        after its write, `is_dead` true, as for `deleted`."""
        made = self._made(tid, ns, cid)
        made.refused = error
        return list(made.writes)

    def committed(self, tid: str, ns: str, cid: str) -> None:
        made = self._made(tid, ns, cid)
        made.committed, made.refused = True, None
        self.gone.pop((tid, ns), None)

    def is_dead(self, tid: str, ns: str, cid: str, made: Made) -> bool:
        """Whether writes to checkpoint `cid` are refused (`deleted`, `refused`)."""
        if made.dead or made.refused is not None:
            return True
        since = self.gone.get((tid, ns))
        made_at = checkpoint_time(cid)
        return since is not None and not made.committed and (made_at or 0) < since

    def refuse_if_dead(self, tid: str, ns: str, cid: str, made: Made, what: str) -> None:
        """For writes to checkpoint `cid` if they are refused: the error its put was
        refused with, or `ThreadDeletedError`."""
        if made.refused is not None:
            raise made.refused
        if self.is_dead(tid, ns, cid, made):
            deleted = ThreadDeletedError("a commit of this run found the thread deleted")
            deleted.refusing(what)
            raise deleted

    def tokens(self, tid: str) -> frozenset[str]:
        """The catalog tokens thread `tid` is known to have entries under."""
        return self.catalogued.get(tid) or frozenset()

    def keep_tokens(self, tid: str, tokens: frozenset[str]) -> None:
        """Thread `tid` has entries under these tokens (written, or read of a checkpoint
        whose declared values they are)."""
        if not tokens <= self.tokens(tid):
            self.catalogued.put(tid, self.tokens(tid) | tokens)

    def subject_key(self, tid: str) -> str | None:
        """The id of the subject key thread `tid` was last read or written under."""
        return self.subject_keys.get(tid)

    def keep_subject_key(self, tid: str, kid: str | None) -> None:
        if kid is None:
            self.subject_keys.discard([tid])
        else:
            self.subject_keys.put(tid, kid)

    def run_key(self, tid: str, ns: str) -> RunKey:
        return (self.store_id, self.namer.thread(tid), self.namer.namespace(tid, ns))

    def got(self, tid: str, ns: str, asked: str | None, found: str | None) -> None:
        """This context's run read the namespace asking for checkpoint `asked` (None: the
        latest) and got checkpoint `found` (or nothing): it continues the latest it got
        (`loaded`; `EMPTY` for an empty namespace), a load by id nothing."""
        loaded(self.run_key(tid, ns), None if asked else (found or EMPTY))
        if found is not None:
            self._made(tid, ns, found).loaded = True

    def listed(self, tid: str, ns: str | None) -> None:
        """This context's run listed the namespace (every one with `ns` None): a load by
        position, which continues nothing."""
        if ns is None:
            loaded_thread(self.store_id, self.namer.thread(tid))
        else:
            loaded(self.run_key(tid, ns), None)

    def clear(self) -> None:
        self.carry.clear()
        self.catalogued.clear()
        self.subject_keys.clear()
