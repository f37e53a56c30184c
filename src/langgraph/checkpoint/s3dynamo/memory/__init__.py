"""The storage protocol of long-term memory, beside the thread store's (`store/`), on the
same blob engine (`blobs/`), behind one API: `core.Space`, one memory space, whose parts
(its items, writes, namespace directory, search indexes, and what a process knows of
them) write their reads and writes as protocols the Space runs; their stored format is
written once (`rows.py`, `format.py`), what they read of the table is `reads.py`'s.
LangGraph's Store and node cache over it are `memory_store.py` and `memory_cache.py`;
their maintenance is `ops/memory.py`. Layout and costs: docs/ARCHITECTURE.md, "Long-term
memory"."""
