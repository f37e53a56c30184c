"""Every argument of a public method, checked where it is given: one vocabulary for the
saver's settings (`settings.py`) and methods, the Store, the node cache and `saver.ops`,
and, as type hints (`ThreadId`, `Config`, ...), what each parameter of a public method
takes: `boundary.public` checks each argument with the check its hint carries.

A boolean is True or False, a size or count an int, and a setting's text is read as its
variable is (`plaintext="no"`, `inline_max="8192"`); a thread id is a str; a list (of
thread ids, of channels) any iterable but one str, which would be taken for the list of
its characters (the Store's and the node cache's own arguments: `memory_arguments.py`).

A method gets what each check returns (a yes/no word as a bool, a generator of thread
ids as a list). A wrong type is an `ArgumentTypeError` (an `InvalidConfigError` and a
`TypeError`), a value out of range an `InvalidConfigError`; each names the argument, what
came and what it accepts, before any request. Pure.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
import reprlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.s3dynamo.config.runnable_config import thread_id_of
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


def whole(
    name: str, value: object, *, minimum: int | None = None, unit: str = "", spelled: bool = False
) -> int:
    """An int (numpy's too), at least `minimum` if given; `unit` says what it counts.
    `spelled` (a setting): text too, read as its variable is (`int`, spaces ignored)."""
    of = f" of {unit}" if unit else ""
    if spelled and isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise InvalidConfigError(f"{name} must be a whole number{of}, got {value!r}") from None
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


def number(
    name: str, value: object, *, minimum: float | None = None, unit: str = "", finite: bool = False
) -> float:
    """An int or a float (a count of seconds or minutes); at least `minimum` (so not NaN)
    if given, and not infinite if `finite`."""
    of = f" of {unit}" if unit else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a number{of}, got {came(value)}")
    amount = float(value)
    too_small = minimum is not None and not amount >= minimum  # NaN is never large enough
    if too_small or (finite and not math.isfinite(amount)):
        least = f", at least {minimum:g}" if minimum is not None else ""
        kind = "a finite number" if finite else "a number"
        raise InvalidConfigError(f"{name} must be {kind}{of}{least}, got {value}")
    return amount


def positive(name: str, value: object, *, unit: str) -> float:
    if not 0 < (amount := number(name, value, unit=unit)) < math.inf:  # NaN is neither
        raise InvalidConfigError(f"{name} must be a positive, finite number of {unit}, got {value}")
    return amount


def text(name: str, value: object, *, what: str = "") -> str:
    """A str; `what` says what it names (the DynamoDB table, a key id)."""
    if not isinstance(value, str):
        named = f" ({what})" if what else ""
        raise ArgumentTypeError(f"{name} must be a str{named}, got {came(value)}")
    return value


def many(name: str, value: object, *, each: str) -> list[Any]:
    """The values of a list argument: any iterable but one str or bytes (iterated, it
    would stand for the list of its characters) or a mapping."""
    if isinstance(value, (str, bytes)):
        raise ArgumentTypeError(
            f"{name} must be a list of {each}, got {came(value)}, which would be taken for "
            f"the list of its characters; pass [{value!r}] for one"
        )
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise ArgumentTypeError(f"{name} must be a list of {each}, got {came(value)}")
    return list(value)


def texts(name: str, value: object, *, each: str) -> list[str]:
    """A list of str, such as channel names or field paths."""
    values = many(name, value, each=f"{each} (str)")
    return [text(f"{name}[{i}]", v) for i, v in enumerate(values)]


# A metadata key as LangGraph and its users write them (`user_id`, `x-tenant`, `org.id`).
FIELD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")


def field_names(name: str, value: object, *, each: str = "metadata fields") -> tuple[str, ...]:
    """Names of fields: a list of names, or one str of them separated by commas (as a
    variable spells them: "user_id,graph_id"; an empty or blank one declares none). Each
    a metadata key: letters, digits, `_`, `-`, `.` and `:`, so an empty name (`a,,b`, `,`)
    or what is no name (`["user_id"]`, `user id`) is refused, named."""
    spelled = value if isinstance(value, str) else None
    if spelled is not None:
        value = [part.strip() for part in spelled.split(",")] if spelled.strip() else []
    names = texts(name, value, each=each)
    for i, one in enumerate(names):
        where = f"{name} ({spelled!r})" if spelled is not None else f"{name}[{i}]"
        if not one:
            raise InvalidConfigError(
                f"{where} must be a field name, got an empty "
                + ("one (a comma with no name before or after it): write user_id,graph_id"
                   if spelled is not None else "str")
            )  # fmt: skip
        if not FIELD_NAME.fullmatch(one):
            raise InvalidConfigError(
                f"{where}: {one!r} cannot be a metadata field name: expected a key of a "
                "checkpoint's metadata, of letters, digits, '_', '-', '.' and ':', such as "
                "user_id"
                + (", the names separated by commas (user_id,graph_id), not JSON"
                   if spelled is not None else "")
            )  # fmt: skip
    return tuple(names)


def thread_id(name: str, value: object) -> str:
    return thread_id_of(value, name)  # as a config's is checked


def thread_ids(name: str, value: object) -> list[str]:
    """A list of thread ids (never one str), each checked as a config's thread id is."""
    ids = many(name, value, each="thread ids (str)")
    return [thread_id_of(tid, f"{name}[{i}]") for i, tid in enumerate(ids)]


def run_ids(name: str, value: object) -> list[str]:
    """A list of run ids (never one str), each a str or a UUID."""
    values = many(name, value, each="run ids (str)")
    for i, one in enumerate(values):
        if not isinstance(one, (str, uuid.UUID)):
            raise ArgumentTypeError(f"{name}[{i}] must be a str (a run id), got {came(one)}")
    return [str(one) for one in values]


def mapping(name: str, value: object, *, what: str = "a dict") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"{name} must be {what}, got {came(value)}")
    return value


def instance(kind: type, what: str) -> Check:
    """A check that the argument is a `kind` (`what` names it for the message)."""

    def check(name: str, value: object) -> Any:
        if not isinstance(value, kind):
            raise ArgumentTypeError(f"{name} must be {what}, got {came(value)}")
        return value

    return check


def having(name: str, value: object, methods: tuple[str, ...], *, what: str) -> Any:
    """An object with these methods (a port, a serializer, a memory space)."""
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise ArgumentTypeError(
            f"{name} must be {what}, got {came(value)}, which has no {', '.join(missing)}"
        )
    return value


def saver_of(saver: object, options: Mapping[str, Any], kind: type) -> Any:
    """The saver a Store or node cache is built on: the one given (a `kind`), or one made
    from the saver's keyword settings; never both, which would ignore the settings."""
    if saver is None:
        return kind(**options)
    if options:
        raise InvalidConfigError(
            f"pass a saver or the saver's settings ({', '.join(sorted(options))}), not both: "
            "a saver given keeps its own settings, so these would be ignored"
        )
    return instance(kind, f"an {kind.__name__}, or None with its settings as keywords")(
        "saver", saver
    )


# ------------------------------------------------------------ what LangGraph hands over


def config(name: str, value: object) -> Any:
    """A config (or None); what it holds is checked where it is read (`target`)."""
    if value is not None and not isinstance(value, Mapping):
        raise ArgumentTypeError(
            f"{name} must be a config such as {{'configurable': {{'thread_id': 'user-42'}}}}, "
            f"got {came(value)}"
        )
    return value


def writes(name: str, value: object) -> list[tuple[str, Any]]:
    """A task's pending writes: (channel, value) pairs, each channel a str."""
    pairs = many(name, value, each="(channel, value) pairs")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], str)):
            raise ArgumentTypeError(
                f"{name}[{i}] must be a (channel, value) pair, the channel a str, got {came(pair)}"
            )
    return [(channel, value) for channel, value in pairs]


def version_counter(current: object, name: str = "current") -> int:
    """The counter a channel version starts with: None (no version yet: 0), an int or a
    float (LangGraph's savers), or text such as ours ("0...03.0123456789012345") or "3"."""
    if current is None:
        return 0
    if isinstance(current, (int, float)) and not isinstance(current, bool):
        if not math.isfinite(current):
            raise InvalidConfigError(f"{name} must be a finite channel version, got {current}")
        return int(current)
    if isinstance(current, str) and current.split(".")[0].strip().isdigit():
        return int(current.split(".")[0])
    raise ArgumentTypeError(
        f"{name} must be a channel version (None, an int, or text starting with a number, "
        f"as get_next_version returns them), got {came(current)}"
    )


def search_position(name: str, value: object) -> object:
    """Where `search_threads` continues: None, a `ThreadSummary` it returned, its cursor."""
    if value is None or isinstance(value, str) or isinstance(getattr(value, "cursor", None), str):
        return value
    raise ArgumentTypeError(
        f"{name} must be a thread search_threads returned, its cursor (a str), or None, "
        f"got {came(value)}"
    )


def as_read(name: str, value: object) -> object:
    """A parameter checked where it is read (`version_counter`), or one never read."""
    return value


# ---------------------------------------------------------------------- maintenance


def duration_form(name: str, value: object) -> object:
    """A duration as the settings take one (text such as "30d", days, a timedelta); what
    the text says is read where it is used (`settings.duration`)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float, timedelta)):
        raise ArgumentTypeError(
            f"{name} must be a duration: text such as '30d', '12h', '90m' or '3600s', a "
            f"number of days, or a timedelta; got {came(value)}"
        )
    return value


def span(name: str, value: object) -> timedelta:
    if not isinstance(value, timedelta):
        raise ArgumentTypeError(
            f"{name} must be a timedelta, such as timedelta(hours=1), got {came(value)}"
        )
    return value


def function(name: str, value: object) -> Any:
    if not callable(value):
        raise ArgumentTypeError(f"{name} must be a function, got {came(value)}")
    return value


def subject(name: str, value: object) -> str | int:
    """A data subject as a deployment names it: a non-empty string or an integer (its
    user id, as in a thread's metadata or a Store namespace)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise ArgumentTypeError(
            f"{name} must be a data subject, a non-empty string or an integer such as a "
            f"user id, got {came(value)}"
        )
    return value


# ------------------------------------------------------------- the vocabulary as types

# What a public method's parameter takes, as its type hint: the type, and the check that
# makes sure of it before the method runs (`boundary.public` reads it).
Boolean = Annotated[bool, boolean]
MaybeBoolean = Annotated[bool | None, optional(boolean)]
Text = Annotated[str, text]
MaybeText = Annotated[str | None, optional(text)]
Whole = Annotated[int, whole]
MaybeWhole = Annotated[int | None, optional(whole)]
Count = Annotated[int, functools.partial(whole, minimum=0)]
MaybeN = Annotated[int | None, optional(functools.partial(whole, minimum=1))]
Seconds = Annotated[float, functools.partial(number, unit="seconds")]
MaybeSeconds = Annotated[float | None, optional(functools.partial(number, unit="seconds"))]
Deadline = Annotated[float | None, optional(functools.partial(number, minimum=0))]
Span = Annotated[timedelta, span]
Duration = Annotated[str | float | timedelta | None, optional(duration_form)]
Moment = Annotated[datetime | None, optional(instance(datetime, "a datetime"))]
Dict = Annotated[Mapping[str, Any], mapping]
MaybeDict = Annotated[Mapping[str, Any] | None, optional(mapping)]
Function = Annotated[Callable[..., Any] | None, optional(function)]
ThreadId = Annotated[str, thread_id]
MaybeThreadId = Annotated[str | None, optional(thread_id)]
ThreadIds = Annotated[Sequence[str], thread_ids]
MaybeThreadIds = Annotated[Sequence[str] | None, optional(thread_ids)]
RunIds = Annotated[Sequence[str], run_ids]
Subject = Annotated[str | int, subject]
Config = Annotated[RunnableConfig, config]
MaybeConfig = Annotated[RunnableConfig | None, config]
Writes = Annotated[Sequence[tuple[str, Any]], writes]
Channels = Annotated[Sequence[str], functools.partial(texts, each="channel names")]
AsRead = Annotated[Any, as_read]
Position = Annotated[Any, search_position]
Source = Annotated[
    BaseCheckpointSaver[Any],
    instance(BaseCheckpointSaver, "a LangGraph checkpointer (a BaseCheckpointSaver)"),
]
LambdaContext = Annotated[
    Any,
    optional(lambda n, v: having(n, v, ("get_remaining_time_in_millis",), what="a Lambda context")),
]
