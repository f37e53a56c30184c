"""The store's ports, built on first use: constructing a store makes no request, and a
turn that never touches S3 never builds its client."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from langgraph.checkpoint.s3dynamo.ports import ControlItems, ObjectStore, RecordIndex, TableScan


class Ports:
    """Factories of the four ports, each called once, on first use (two threads racing
    there at worst build one spare client)."""

    def __init__(
        self,
        *,
        records: Callable[[], RecordIndex],
        control: Callable[[], ControlItems],
        scans: Callable[[], TableScan],
        objects: Callable[[], ObjectStore],
    ) -> None:
        self._make_records = records
        self._make_control = control
        self._make_scans = scans
        self._make_objects = objects

    @cached_property
    def records(self) -> RecordIndex:
        return self._make_records()

    @cached_property
    def control(self) -> ControlItems:
        return self._make_control()

    @cached_property
    def scans(self) -> TableScan:
        return self._make_scans()

    @cached_property
    def objects(self) -> ObjectStore:
        return self._make_objects()

    def built(self, name: str) -> bool:
        """Whether the port `name` has been built (no request is made to tell)."""
        return name in vars(self)
