"""The storage protocol of long-term memory, beside the thread store's (`store/`), on the
same blob engine (`blobs/`): one memory space's items, their namespace directory and
what a process knows of them (`core.py`, `directory.py`, `recent.py`), their stored format
written once (`rows.py`, `format.py`) and what they read of the table (`reads.py`).
LangGraph's Store and node cache over it are `memory_store.py` and `memory_cache.py`;
their maintenance is `ops/memory.py`. Layout and costs: docs/ARCHITECTURE.md, "Long-term
memory"."""
