"""The store's ports, built on first use: constructing a store makes no request, and a
turn that never touches S3 never builds its client."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from langgraph.checkpoint.s3dynamo.ports import (
    ControlItems,
    Index,
    ObjectStore,
    RecordIndex,
    TableScan,
)
from langgraph.checkpoint.s3dynamo.table import Table


class LazyPorts:
    """Factories of the index and the object store, each called once, on first use (two
    threads racing there at worst build one spare client). The index serves as all three
    of its ports (records, control items, scans)."""

    def __init__(self, *, index: Callable[[], Index], objects: Callable[[], ObjectStore]) -> None:
        self._make_index = index
        self._make_objects = objects

    @cached_property
    def index(self) -> Index:
        return self._make_index()

    @property
    def table(self) -> Table:
        """The table itself, under the index's ports."""
        return self.index.table  # type: ignore[attr-defined, no-any-return]

    @property
    def records(self) -> RecordIndex:
        return self.index

    @property
    def control(self) -> ControlItems:
        return self.index

    @property
    def scans(self) -> TableScan:
        return self.index

    @cached_property
    def objects(self) -> ObjectStore:
        return self._make_objects()

    def built(self, name: str) -> bool:
        """Whether the port `name` (`index` or `objects`; `records`, `control` and
        `scans` are the index) has been built: no request is made to tell."""
        return ("index" if name in ("records", "control", "scans") else name) in vars(self)
