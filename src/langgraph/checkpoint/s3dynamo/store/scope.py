"""A deployment's share of a table that other deployments (tenants, each with its own
prefix and keys) may share: the partitions `layout.scope_of` maps to its prefix.

Every table-wide read (a Scan: `list(None)`, statistics, re-encryption, retention) goes
through here, so it keeps exactly this deployment's partitions whatever the table holds,
and notes the other deployments it passed, by prefix. A Scan reads, and is billed for,
the whole table whichever deployment asks (`TableScan`): N tenants sweeping one by one
read the table N times; retention's `scope="*"` sweeps every deployment in one Scan.
"""

from __future__ import annotations

import threading
from collections import Counter

from langgraph.checkpoint.s3dynamo.blobs.steps import Emit, Scan, Steps, scan_items
from langgraph.checkpoint.s3dynamo.format.layout import (
    catalog_scope,
    is_control_pk,
    is_deployment_pk,
    is_memory_pk,
    journal_scope,
    scope_of,
)
from langgraph.checkpoint.s3dynamo.format.records import (
    STAMP_ATTRIBUTES,
    Record,
    Stamp,
    is_mark,
    record_from,
    stamp_from,
)
from langgraph.checkpoint.s3dynamo.format.schema import PARTITION_KEY
from langgraph.checkpoint.s3dynamo.table import Item, When, begins

# The scope of a sweep over every deployment of the table (retention's delete strategy,
# which reads keys and stamps only, so needs nobody's keys).
EVERY_DEPLOYMENT = "*"


class Scope:
    """This deployment's partitions of the table (module docstring)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        # Items of other deployments that scans passed, by their prefix.
        self.others: Counter[str] = Counter()
        self._lock = threading.Lock()

    def note(self, scope: str | None) -> None:
        """An item of the deployment with this prefix was passed (None: nobody's)."""
        if scope is not None and scope != self.prefix:
            with self._lock:
                self.others[scope] += 1

    def _keep(self, pk: str, every: bool = False) -> bool:
        scope = scope_of(pk)
        if scope == self.prefix or (every and scope is not None):
            return True
        self.note(scope)
        return False

    def records(self, control: list[Item] | None = None) -> Steps[list[Record]]:
        """Every record of this deployment's threads (a Scan); with `control`, the items
        of its threads' control partitions, of its catalog's partitions and of its upload
        journal the same Scan read are added to it (what `verify` checks them against:
        `store/audit.py`, and what intents name)."""
        kept = begins(PARTITION_KEY, self.prefix) if self.prefix else None
        out: list[Record] = []
        for items in (yield from scan_items(filter=kept)):
            for item in items:
                # Control items (heads, leases; the deployments' records), memory items
                # and marks are no records.
                pk = str(item[PARTITION_KEY])
                if is_control_pk(pk) or is_deployment_pk(pk) or is_memory_pk(pk):
                    ours = self.prefix in (scope_of(pk), catalog_scope(pk), journal_scope(pk))
                    if control is not None and ours and not is_deployment_pk(pk):
                        control.append(item)
                    continue
                if not is_mark(item) and self._keep(pk):
                    out.append(record_from(item))
        return out

    def thread_stamps(self) -> Steps[list[Stamp]]:
        """Key and write time of every record and mark of this deployment's threads (a
        Scan, as `stamps` reads it): what `finder.leftover_writes` takes."""
        out: list[Stamp] = []
        for items in (yield from scan_items(filter=self._filter(), attributes=STAMP_ATTRIBUTES)):
            for stamp in (stamp_from(i) for i in items):
                pk = stamp.key.pk
                if is_control_pk(pk) or is_memory_pk(pk) or is_deployment_pk(pk):
                    continue
                if self._keep(pk):
                    out.append(stamp)
        return out

    def _filter(self) -> When | None:
        return begins(PARTITION_KEY, self.prefix) if self.prefix else None

    def stamps(self, segment: int = 0, segments: int = 1, every: bool = False) -> Steps[None]:
        """One segment of a Scan of this deployment's items as retention reads them, a
        page of stamps handed out (`Emit`) at a time; with `every`, every deployment's."""
        kept = begins(PARTITION_KEY, self.prefix) if self.prefix and not every else None
        cursor: Item | None = None
        while True:
            page = yield Scan(
                segment, segments, cursor=cursor, filter=kept, attributes=STAMP_ATTRIBUTES
            )
            yield Emit(
                [
                    stamp_from(i)
                    for i in page.items
                    if not is_deployment_pk(pk := str(i[PARTITION_KEY])) and self._keep(pk, every)
                ]
            )
            if page.cursor is None:
                return
            cursor = page.cursor

    def other_prefixes(self) -> list[str]:
        """The prefixes of the other deployments scans passed so far, sorted."""
        with self._lock:
            return sorted(self.others)
