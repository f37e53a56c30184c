"""The thread catalog's maintenance, as `saver.ops.catalog`: building it for the threads
a deployment already holds (written before a field was declared, or by a process that
declared none).

`plan_build` reads every checkpoint record once (one Scan, through `store/scope.py`) and
opens each one's metadata; its plan's `execute()` files every thread under the declared
values its checkpoints hold and under the deployment's token (full batches: an entry and
its back-reference each; a thread filed already gets the same items again), then records,
beside the deployment record, that the catalog of each declared field is complete. An
interrupted build records nothing, and a repeat files every thread again: until then a
search by the field raises `CatalogNotBuiltError` and `list(None, filter=...)` scans, as
before the field was declared. A thread whose records do not open is skipped and named
with why ("other keys" or "tampered", as `verify` tells them), and the catalog is then
not recorded complete (`Catalog.mark_complete`). Where Store namespaces have a data
subject (`subject_label`), the build also names each one written before as its subject's
(one Query of the Store's directory; a link each), as a namespace's first write since
does, so that an erasure or an export finds it. The catalog: `store/catalog.py`,
docs/OPERATIONS.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from langgraph.checkpoint.s3dynamo.boundary import public
from langgraph.checkpoint.s3dynamo.compose import Components, memory_space
from langgraph.checkpoint.s3dynamo.config.arguments import Function
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.format.layout import STORE_SPACE
from langgraph.checkpoint.s3dynamo.ops.plan import Plan, Progress, no_progress
from langgraph.checkpoint.s3dynamo.store import Skipped, ThreadStore, warn_skipped

log = logging.getLogger(__name__)


# A Store namespace to name as its data subject's: (the subject, the namespace's partition).
Link = tuple[str, str]


def plan_build(
    store: ThreadStore,
    progress: Progress = no_progress,
    links: Sequence[Link] = (),
    link: Callable[[str, str], None] = lambda subject, partition: None,
) -> Plan:
    """Every thread's entries, from one Scan of the deployment's records (nothing is
    written). `progress` hears of the threads the Scan has found so far (no total yet),
    then of those whose metadata is open, out of all of them. `execute()` files them,
    names the Store namespaces `links` holds as their subjects' (`link`), then records
    the catalog complete."""
    skipped: list[Skipped] = []
    threads, entries = store.catalog_entries(skipped, progress)
    counts = {
        "fields": list(store.catalog_fields),
        "threads": threads,
        "entries": len(entries),
        "skipped_threads": len(skipped),
        "namespaces": len(links),
        "skipped": [
            {"partition": s.partition, "key_id": s.key_id, "kind": s.kind, "reason": s.reason}
            for s in skipped
        ],
        "executed": False,
        "complete": False,
    }

    def run() -> dict[str, Any]:
        store.file(entries)
        for subject, partition in links:
            link(subject, partition)
        # Recorded complete only with every thread filed (`Catalog.mark_complete`).
        complete = store.mark_catalog_complete(skipped)
        warn_skipped("catalog build", skipped)
        log.info("catalog build: %d threads, %d entries", threads, len(entries))
        return {**counts, "executed": True, "complete": complete}

    return Plan("catalog", counts, run, state=SimpleNamespace(entries=entries, skipped=skipped))


class CatalogOperations:
    """`saver.ops.catalog` (module docstring)."""

    def __init__(self, parts: Components) -> None:
        self.parts = parts
        self.store = parts.store

    @public()
    def plan_build(self, progress: Function = None) -> Plan:
        """What building the catalog files (one Scan; nothing written): every thread
        under its declared values; `.execute()` writes it. `progress(done, total)`: the
        threads read, total None while the Scan still finds them."""
        with guarded(self.parts.deployment):
            self.parts.deployment.verify(write=False)
            links = self._subjects_namespaces()
            link = self.parts.subjects.link
            return plan_build(self.store, progress or no_progress, links, link)

    def _subjects_namespaces(self) -> list[Link]:
        """Each Store namespace with a data subject, and the subject (one Query of the
        Store's directory); none where namespaces have no subject."""
        subjects = self.parts.subjects
        if subjects.label is None:
            return []
        space = memory_space(self.parts, STORE_SPACE)
        named = [(subjects.of_namespace(ns), space.pk(ns)) for ns, _ in space.namespaces()]
        return [(subject, pk) for subject, pk in named if subject is not None]

    def build(self) -> Plan:
        """File every thread the deployment holds, then record that the catalog of each
        declared field is complete; returns the executed plan. Run it once after
        declaring a field on a deployment that has threads (module docstring)."""
        plan = self.plan_build()
        plan.execute()
        return plan
