"""What the read path hands the write path. A run reads a checkpoint (`get_tuple`) and
then commits its child (`put`); two things pass between them, kept here and nowhere else:

- where the values of checkpoints read or written lately are stored (inline, an object,
  a delta of one): the child points at its parent's unchanged values instead of
  uploading them again, and learns which objects can serve as delta bases;
- the run key under which concurrent-run detection (`runs.py`) records what a run
  loaded and what it committed, so a put continuing the latest it loaded commits only
  if nothing else moved the namespace meanwhile;
- the catalog tokens (declared metadata values) a thread is known to have entries
  under, from what was read or written of it: a put writes only the others
  (`store/catalog.py`).

The decoder fills it when a read is remembered, the committer reads it and fills it
after each commit, and `ThreadStore.forget` clears it after anything rewrote records.
"""

from __future__ import annotations

from langgraph.checkpoint.s3dynamo import runs
from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.store.walker import StoredValues

# Checkpoints whose stored values are kept for the next put on them.
CARRY_CACHE_SIZE = 256
# Threads whose catalog tokens are kept: a token set is a few hashes.
CATALOGUED_CACHE_SIZE = 4096


class Handoff:
    """The read-to-write hand-off of one thread store (module docstring). `store_id`
    tells stores apart in the process-wide run records and leases."""

    def __init__(self, namer: Namer, store_id: int) -> None:
        self.namer = namer
        self.store_id = store_id
        self.carry: Lru[tuple[str, str, str], StoredValues] = Lru(CARRY_CACHE_SIZE)
        self.catalogued: Lru[str, frozenset[str]] = Lru(CATALOGUED_CACHE_SIZE)

    def keep(self, tid: str, ns: str, cid: str, stored: StoredValues) -> None:
        """Where checkpoint `cid`'s values are stored, for a put whose parent it is."""
        self.carry.put((tid, ns, cid), stored)

    def stored(self, tid: str, ns: str, cid: str) -> StoredValues | None:
        """Where checkpoint `cid`'s values are stored, if read or written lately."""
        return self.carry.get((tid, ns, cid))

    def tokens(self, tid: str) -> frozenset[str]:
        """The catalog tokens thread `tid` is known to have entries under."""
        return self.catalogued.get(tid) or frozenset()

    def keep_tokens(self, tid: str, tokens: frozenset[str]) -> None:
        """Thread `tid` has entries under these tokens (written, or read of a checkpoint
        whose declared values they are)."""
        if not tokens <= self.tokens(tid):
            self.catalogued.put(tid, self.tokens(tid) | tokens)

    def run_key(self, tid: str, ns: str) -> runs.Key:
        return (self.store_id, self.namer.thread(tid), self.namer.namespace(tid, ns))

    def loaded(self, tid: str, ns: str, latest_id: str | None) -> None:
        """This context's run loaded the namespace (`runs.loaded`)."""
        runs.loaded(self.run_key(tid, ns), latest_id)

    def loaded_thread(self, tid: str) -> None:
        """This context's run listed every namespace of the thread."""
        runs.loaded_thread(self.store_id, self.namer.thread(tid))

    def clear(self) -> None:
        self.carry.clear()
        self.catalogued.clear()
