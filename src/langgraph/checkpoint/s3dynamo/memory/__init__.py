"""Long-term memory on the saver's table and bucket: LangGraph's Store (`store.py`) and
node cache (`cache.py`) over one core (`core.py`); stats and expiry in `admin.py`.
Layout and costs: docs/ARCHITECTURE.md, "Long-term memory"."""
