"""The store's ports, built on first use: constructing a store makes no request, and a
turn that never touches S3 never builds its client."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from langgraph.checkpoint.s3dynamo.ports import ObjectStore
from langgraph.checkpoint.s3dynamo.table import Table


class LazyPorts:
    """Factories of the table and the object store, each called once, on first use (two
    threads racing there at worst build one spare client)."""

    def __init__(self, *, table: Callable[[], Table], objects: Callable[[], ObjectStore]) -> None:
        self._make_table = table
        self._make_objects = objects

    @cached_property
    def table(self) -> Table:
        return self._make_table()

    @cached_property
    def objects(self) -> ObjectStore:
        return self._make_objects()

    def built(self, name: str) -> bool:
        """Whether the port `name` (`table` or `objects`) has been built: no request is
        made to tell."""
        return name in vars(self)
