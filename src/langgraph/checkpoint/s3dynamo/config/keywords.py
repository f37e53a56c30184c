"""A keyword argument that a constructor or `from_env` of the saver, the Store or the node
cache does not take (`S3DynamoStore.from_env(indx=...)`): an `ArgumentTypeError` naming
the closest one it does take and listing what it takes, its own and the saver's apart,
before anything is built. Python's own TypeError names neither."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from langgraph.checkpoint.s3dynamo.errors import ArgumentTypeError, InvalidConfigError


def refuse_unknown(where: str, given: Iterable[str], takes: Mapping[str, Collection[str]]) -> None:
    """`ArgumentTypeError` if `given` holds a name none of `takes` does (whose names ->
    the names: "the Store's" -> index, ttl, ...; "" when there is one kind; a name is
    listed under the first kind that takes it): the closest valid name to each
    (difflib), and every kind's names."""
    listed: dict[str, list[str]] = {}
    for whose, names in takes.items():
        seen = {n for kind in listed.values() for n in kind}
        listed[whose] = sorted(set(names) - seen)
    valid = sorted(n for kind in listed.values() for n in kind)
    unknown = sorted(set(given) - set(valid))
    if not unknown:
        return
    near = {u: m[0] for u in unknown if (m := difflib.get_close_matches(u, valid, n=1))}
    if len(unknown) == 1 and near:
        meant = f"; did you mean {near[unknown[0]]}?"
    elif near:
        meant = "; did you mean " + ", ".join(f"{m} for {u!r}" for u, m in near.items()) + "?"
    else:
        meant = "."
    expected = " or ".join(f"{whose} {names}".strip() for whose, names in listed.items())
    raise ArgumentTypeError(
        f"{where}: unknown setting(s) {unknown}{meant} Expected some of {expected}"
    )


def taken(fn: Callable[..., Any]) -> list[str]:
    """The names `fn` takes by keyword (its signature's, `self` and `cls` aside)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(fn).parameters.items()
    return [n for n, p in parameters if p.kind in kinds and n not in ("self", "cls")]


def checked_keywords(cls: type, from_env: Collection[str]) -> None:
    """`cls(...)` and `cls.from_env(...)` (whose `**overrides` take `from_env`) refuse an
    unknown keyword with `refuse_unknown` before they run."""
    init, build = cls.__dict__["__init__"], cls.__dict__["from_env"].__func__
    takes = {"": taken(init)}

    @functools.wraps(init)
    def checked_init(self: Any, *args: Any, **kwargs: Any) -> None:
        refuse_unknown(type(self).__name__, kwargs, takes)
        init(self, *args, **kwargs)

    def checked_from_env(klass: type[Any], /, **overrides: Any) -> Any:
        refuse_unknown(f"{klass.__name__}.from_env", overrides, {"": from_env})
        return build(klass, **overrides)

    functools.update_wrapper(checked_from_env, build)
    setattr(cls, "__init__", checked_init)  # noqa: B010 (mypy: no assigning a method)
    setattr(cls, "from_env", classmethod(checked_from_env))  # noqa: B010


def alone(given: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """`settings=` given: every keyword setting (`given`) must be left at its default."""
    changed = sorted(k for k, v in given.items() if v is not defaults[k] and v != defaults[k])
    if changed:
        raise InvalidConfigError(
            f"pass settings=... or keyword settings, not both (got {changed} beside settings)"
        )
