"""A listing deserializes a growing list once, not once per snapshot.

A chat's message list grows by appending, so in a history listing (newest first) each
snapshot's list is the first items of the one listed before it. LangGraph's serializer
builds every message again from its bytes, and for a long chat that is most of what a
full history read costs. Here a listing deserializes the newest list of a chain once and
gives each older snapshot its own copy of the first items of it.

Why the result is what deserializing each value would give:
- Only values LangGraph's `JsonPlusSerializer` wrote as msgpack, and that are msgpack
  arrays, are considered. An array is a header holding the item count, then each item's
  encoding, one after the other. An item's encoding delimits itself and does not depend
  on the items around it (the serializer keeps no references between items).
- So when the item bytes of an older value are, byte for byte, the start of the item bytes
  of the list held here, its items are exactly the first items of that list, and the same
  bytes give the same objects through the same serializer. Anything else (another type,
  not an array, bytes that differ anywhere, another serializer) is deserialized whole.
- A list whose deserialization reported anything to LangGraph's serde event listeners
  (a type its allowlist blocks in strict mode, `LANGGRAPH_STRICT_MSGPACK`, or an
  unregistered type it revives with a warning) is not held: every snapshot holding it
  is deserialized whole, so each logs and reports as LangGraph's serializer does.

Why no two snapshots share an object:
- The list held here is pickled (`PIECE` items to a piece) as soon as it is deserialized,
  before the caller gets it, and every older snapshot gets its own objects from
  `pickle.loads` of the pieces its items are in: a caller changing one snapshot's
  messages changes no other. Pieces lose no shared reference, since the serializer
  builds each item apart. Rebuilding from a pickle takes under a third of the time of
  deserializing: 0.6 against 2.1 ms for the final 120 messages of the benchmark's W1
  chat, each timed in a loop on one list.
- The pickle bytes are made in this process from objects this process deserialized, and
  never leave it. A list that pickle refuses is not held, and neither is any later list
  of that channel in the listing: they are deserialized whole.

Memory: per channel, the newest list's serialized bytes and its pickle, for the length
of one listing.
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
