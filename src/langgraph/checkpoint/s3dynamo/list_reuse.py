"""A listing deserializes a growing list once, not once per snapshot.

A chat's message list grows by appending, so in a history listing (newest first) each
snapshot's list is the first items of the one listed before it. LangGraph's serializer
builds every message again from its bytes, and for a long chat that is most of what a
full history read costs. Here a listing deserializes the newest list of a chain once and
gives each older snapshot its own copy of the first items of it.

Only msgpack arrays LangGraph's `JsonPlusSerializer` wrote are considered, and an older
list is served from the newer one only when its item bytes are, byte for byte, the start
of the newer list's; each snapshot gets objects of its own (rebuilt from a pickle made in
this process). Why the result is what deserializing each value would give, why no two
snapshots share an object, and the memory it takes: docs/RELIABILITY.md, "Listings: a
growing list deserialized once".
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, NamedTuple

from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer


def array_items(data: bytes) -> tuple[int, int] | None:
    """(item count, offset of the first item) of a msgpack array; None for anything else."""
    if not data:
        return None
    head = data[0]
    if 0x90 <= head <= 0x9F:  # fixarray
        return head & 0x0F, 1
    if head == 0xDC and len(data) >= 3:  # array 16
        return int.from_bytes(data[1:3], "big"), 3
    if head == 0xDD and len(data) >= 5:  # array 32
        return int.from_bytes(data[1:5], "big"), 5
    return None


# Items per pickle: an older snapshot unpickles only the pieces its items are in.
PIECE = 16


class _Held(NamedTuple):
    serde: Any  # the serializer that deserialized it
    data: bytes  # the serialized list
    start: int  # where its items begin
    length: int
    pieces: list[bytes]  # the deserialized items, pickled PIECE at a time


class GrowingLists:
    """Per channel, the newest list of one listing; see the module docstring."""

    def __init__(self, serde: Callable[[], Any]) -> None:
        self._serde = serde
        self._held: dict[str, _Held] = {}
        self._refused: set[str] = set()  # channels with a list pickle would not take

    def load(self, channel: str, typed: tuple[str, bytes]) -> Any:
        serde = self._serde()
        typ, data = typed
        if typ != "msgpack" or type(serde).loads_typed is not JsonPlusSerializer.loads_typed:
            return serde.loads_typed(typed)
        shape = array_items(data)
        held = self._held.get(channel)
        if shape is not None and held is not None and held.serde is serde:
            count, start = shape
            if count <= held.length and held.data.startswith(data[start:], held.start):
                try:
                    copy: list[Any] = []
                    for piece in held.pieces[: -(-count // PIECE)]:
                        copy += pickle.loads(piece)
                    del copy[count:]
                    return copy
                except Exception:
                    del self._held[channel]
        self._held.pop(channel, None)
        if shape is None or channel in self._refused:
            return serde.loads_typed(typed)
        reported: list[SerdeEvent] = []
        unregister = register_serde_event_listener(reported.append)
        try:
            value = serde.loads_typed(typed)
        finally:
            unregister()
        if isinstance(value, list) and not reported:
            try:
                pieces = [
                    pickle.dumps(value[i : i + PIECE], protocol=pickle.HIGHEST_PROTOCOL)
                    for i in range(0, len(value), PIECE)
                ]
            except Exception:
                self._refused.add(channel)
                return value
            self._held[channel] = _Held(serde, data, shape[1], shape[0], pieces)
        return value
