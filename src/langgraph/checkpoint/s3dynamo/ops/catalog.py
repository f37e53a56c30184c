"""The thread catalog's maintenance, as `saver.ops.catalog`: building it for the threads
a deployment already holds (written before a field was declared, or by a process that
declared none).

`plan_build` reads every checkpoint record once (one Scan, through `store/scope.py`) and
opens each one's metadata; `CatalogPlan.execute` files every thread under the declared
values its checkpoints hold and under the deployment's token (full batches: an entry and
its back-reference each; a thread filed already gets the same items again), then records,
beside the deployment record, that the catalog of each declared field is complete. An
interrupted build records nothing, and a repeat files every thread again: until then a
search by the field raises `CatalogNotBuiltError` and `list(None, filter=...)` scans, as
before the field was declared. A thread whose records do not open is skipped and named
with why ("other keys" or "tampered", as `verify` tells them), and the catalog is then
not recorded complete (`Catalog.mark_complete`). The catalog: `store/catalog.py`,
docs/OPERATIONS.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo.arguments import Function
from langgraph.checkpoint.s3dynamo.boundary import public
from langgraph.checkpoint.s3dynamo.catalog_records import CatalogEntry
from langgraph.checkpoint.s3dynamo.compose import Components
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.store import Skipped, ThreadStore, warn_skipped

log = logging.getLogger(__name__)

# Called with the threads done so far and their total, None while the Scan still finds
# threads: the command line's progress bar.
Progress = Callable[[int, int | None], None]


def no_progress(done: int, total: int | None) -> None:
    return None


@dataclass
class CatalogPlan:
    """What building the catalog writes: the entries of every thread (`execute()`
    writes them, then the completeness records)."""

    store: ThreadStore
    threads: int
    entries: list[CatalogEntry] = field(repr=False)
    skipped: list[Skipped] = field(default_factory=list)
    executed: bool = False
    # Whether execute() recorded the catalog complete: only with every thread filed.
    complete: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "fields": list(self.store.catalog_fields),
            "threads": self.threads,
            "entries": len(self.entries),
            "skipped_threads": len(self.skipped),
            "skipped": [
                {"partition": s.partition, "key_id": s.key_id, "kind": s.kind, "reason": s.reason}
                for s in self.skipped
            ],
            "executed": self.executed,
            "complete": self.complete,
        }

    def execute(self) -> CatalogPlan:
        self.store.file(self.entries)
        self.complete = self.store.mark_catalog_complete(self.skipped)
        self.executed = True
        warn_skipped("catalog build", self.skipped)
        log.info("catalog build: %d threads, %d entries", self.threads, len(self.entries))
        return self


def plan_build(store: ThreadStore, progress: Progress = no_progress) -> CatalogPlan:
    """Every thread's entries, from one Scan of the deployment's records (nothing is
    written). `progress` hears of the threads the Scan has found so far (no total yet),
    then of those whose metadata is open, out of all of them."""
    skipped: list[Skipped] = []
    threads, entries = store.catalog_entries(skipped, progress)
    return CatalogPlan(store, threads, entries, skipped)


class CatalogOperations:
    """`saver.ops.catalog` (module docstring)."""

    def __init__(self, parts: Components) -> None:
        self.parts = parts
        self.store = parts.store

    @public()
    def plan_build(self, progress: Function = None) -> CatalogPlan:
        """What building the catalog files (one Scan; nothing written): every thread
        under its declared values; `.execute()` writes it. `progress(done, total)`: the
        threads read, total None while the Scan still finds them."""
        with guarded(self.parts.deployment):
            self.parts.deployment.verify(write=False)
            return plan_build(self.store, progress or no_progress)

    def build(self) -> CatalogPlan:
        """File every thread the deployment holds, then record that the catalog of each
        declared field is complete; returns the executed plan. Run it once after
        declaring a field on a deployment that has threads (module docstring)."""
        return self.plan_build().execute()
