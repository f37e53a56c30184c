"""The text a keyed-hash token stands for: one spelling for values Python's `==` holds
equal, shared by the Store's filter tokens (`memory/tokens.py`) and the thread catalog
(`catalog_records.py`), so that an equality filter finds through a token what comparing
the values would find. Pure."""

from __future__ import annotations

import json
import math
from typing import Any


def canonical(value: Any) -> str | None:
    """Text equal for values Python's `==` holds equal (1, 1.0 and True alike), as the
    filter compares them; None for a value a token cannot stand for (a dict, matched
    partially; None, which an item without the field matches too; a type JSON has not)."""
    if isinstance(value, bool | int | float):
        try:
            number = float(value)
        except OverflowError:  # an int no float equals: its own text
            return f"n:{value}"
        if math.isnan(number):
            return None
        return f"n:{number!r}" if number == value else f"n:{value}"
    if isinstance(value, str):
        return "s:" + value
    if isinstance(value, list | tuple):
        parts = [canonical(v) for v in value]
        return None if any(p is None for p in parts) else "l:" + json.dumps(parts)
    return None
