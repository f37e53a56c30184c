"""What the read path hands the write path. A run reads a checkpoint (`get_tuple`) and
then commits its child (`put`); two things pass between them, kept here and nowhere else:

- where the values of checkpoints read or written lately are stored (inline, an object,
  a delta of one): the child points at its parent's unchanged values instead of
  uploading them again, and learns which objects can serve as delta bases;
- the run key under which concurrent-run detection (`runs.py`) records what a run
  loaded and what it committed, so a put continuing the latest it loaded commits only
  if nothing else moved the namespace meanwhile.

The decoder fills it when a read is remembered, the committer reads it and fills it
after each commit, and `ThreadStore.forget` clears it after anything rewrote records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langgraph.checkpoint.s3dynamo import runs
from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.records import ItemKey
from langgraph.checkpoint.s3dynamo.store.walker import StoredValues

# Checkpoints whose stored values are kept for the next put on them.
CARRY_CACHE_SIZE = 256


@dataclass
class Made:
    """A checkpoint this store wrote to lately: whether it committed the checkpoint (or
    is committing it), the writes records it wrote for it, and whether a commit found
    its namespace deleted since."""

    ours: bool = False
    writes: list[ItemKey] = field(default_factory=list)
    dead: bool = False


class Handoff:
    """The read-to-write hand-off of one thread store (module docstring). `store_id`
    tells stores apart in the process-wide run records and leases."""

    def __init__(self, namer: Namer, store_id: int) -> None:
        self.namer = namer
        self.store_id = store_id
        self.carry: Lru[tuple[str, str, str], StoredValues] = Lru(CARRY_CACHE_SIZE)
        # Checkpoints this store wrote to lately: a task's writes to one it committed go
        # without a check on the thread's head (the commit found it alive), and a run
        # refused as deleted takes back the writes it made.
        self.made: Lru[tuple[str, str, str], Made] = Lru(CARRY_CACHE_SIZE)

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

    def deleted(self, tid: str, ns: str, upto: str) -> list[ItemKey]:
        """A commit of checkpoint `upto` found the namespace deleted: it and every
        earlier checkpoint of the namespace this store wrote to are dead (writes to one
        are refused from now on), and the writes records written for them are to be
        deleted. A writer that wrote before it saw its checkpoint dead finds its key here
        or, after its write, `dead` set (`Committer.commit_writes`)."""
        keys: list[ItemKey] = []
        for (t, n, cid), made in self.made.items():
            if (t, n) == (tid, ns) and cid <= upto:
                made.dead = True
                keys.extend(made.writes)
        return keys

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
        self.made.clear()
