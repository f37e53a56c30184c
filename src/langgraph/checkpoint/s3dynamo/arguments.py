"""Every argument, checked where it is given, in one vocabulary: the saver's settings
(`settings.py` applies it to each, from keyword arguments and the environment alike) and
the parts a caller injects (`compose.py`).

A boolean is True or False, or a yes/no variable's words, parsed as the variable is; a
size or count an int; a name a str. A wrong type is an `ArgumentTypeError` (an
`InvalidConfigError` and a `TypeError`), a value out of range an `InvalidConfigError`;
each names the argument, what came and what it accepts, before any request. Pure.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.s3dynamo.errors import ArgumentTypeError, InvalidConfigError

# What a yes/no setting or argument accepts as text, in any case (`yes_no`).
YES_WORDS = ("1", "true", "yes", "on")
NO_WORDS = ("0", "false", "no", "off")

# A check: (the argument's name, what came) -> what the method gets, or a named error.
Check = Callable[[str, Any], Any]

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 60


def came(value: object) -> str:
    """What a caller passed, as a message says it: its type and a short repr."""
    if isinstance(value, str):
        return f"the string {_short.repr(value)}"
    return f"{type(value).__name__} {_short.repr(value)}"


def optional(check: Check) -> Check:
    """`check`, with None accepted as it is."""
    return lambda name, value: None if value is None else check(name, value)


# --------------------------------------------------------------------- the vocabulary


def yes_no(name: str, raw: str) -> bool:
    """The value of the yes/no setting `name` (a variable or an argument): 1, true, yes or
    on; 0, false, no or off; in any case, spaces around ignored. Anything else is an error
    that names the setting, what came and what it accepts."""
    word = raw.strip().lower()
    if word in YES_WORDS:
        return True
    if word in NO_WORDS:
        return False
    raise InvalidConfigError(
        f"{name} must be yes or no, got {raw!r}; expected one of {', '.join(YES_WORDS)} "
        f"(yes) or {', '.join(NO_WORDS)} (no), in any case"
    )


def boolean(name: str, value: object) -> bool:
    """True or False; text is read as a yes/no variable is (`yes_no`), so no spelling of
    "false" counts as true. Anything else (1, None, a list) is refused."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return yes_no(name, value)
    raise ArgumentTypeError(
        f"{name} must be True or False, got {came(value)}; text is read as a yes/no "
        f"variable is ({', '.join(YES_WORDS)} or {', '.join(NO_WORDS)})"
    )


def whole(name: str, value: object, *, minimum: int | None = None, unit: str = "") -> int:
    """An int (numpy's too), at least `minimum` if given; `unit` says what it counts."""
    of = f" of {unit}" if unit else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        # 8192.0 or "8192": the int meant is plain to see, so the message says it.
        digits = str(value).strip().removesuffix(".0")
        meant = isinstance(value, (float, str)) and digits.isdigit()
        hint = f"; pass {digits}, not {value!r}" if meant else ""
        raise ArgumentTypeError(
            f"{name} must be a whole number{of} (an int), got {came(value)}{hint}"
        )
    if minimum is not None and value < minimum:
        raise InvalidConfigError(
            f"{name} must be a whole number{of}, at least {minimum}, got {value}"
        )
    return int(value)


def text(name: str, value: object, *, what: str = "") -> str:
    """A str; `what` says what it names (the DynamoDB table, a key id)."""
    if not isinstance(value, str):
        named = f" ({what})" if what else ""
        raise ArgumentTypeError(f"{name} must be a str{named}, got {came(value)}")
    return value


def having(name: str, value: object, methods: tuple[str, ...], *, what: str) -> Any:
    """An object with these methods (a port, a serializer, a memory space)."""
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise ArgumentTypeError(
            f"{name} must be {what}, got {came(value)}, which has no {', '.join(missing)}"
        )
    return value


def version_counter(current: object, name: str = "current") -> int:
    """The counter a channel version starts with: None (no version yet: 0), an int or a
    float (LangGraph's savers), or text such as ours ("0...03.0123456789012345") or "3"."""
    if current is None:
        return 0
    numeric = isinstance(current, (int, float)) and not isinstance(current, bool)
    if isinstance(current, (int, float)) and numeric and math.isfinite(current):
        return int(current)
    if isinstance(current, str) and current.split(".")[0].strip().isdigit():
        return int(current.split(".")[0])
    raise ArgumentTypeError(
        f"{name} must be a channel version (None, an int, or text starting with a number, "
        f"as get_next_version returns them), got {came(current)}"
    )
