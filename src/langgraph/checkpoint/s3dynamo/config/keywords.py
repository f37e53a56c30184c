"""A keyword argument that a constructor or `from_env` of the saver, the Store or the node
cache does not take (`S3DynamoStore.from_env(indx=...)`): an `ArgumentTypeError` naming
the closest one it does take and listing what it takes, its own and the saver's apart,
before anything is built. Python's own TypeError names neither. And an `S3DYNAMO_`
variable `from_env` does not read, which would be ignored (`refuse_unread`)."""

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


def refuse_unread(
    env: Mapping[str, str], variables: Collection[str], arguments: Collection[str]
) -> None:
    """An S3DYNAMO_ variable `from_env` does not read (`variables` are those it reads), near
    one it reads (S3DYNAMO_BUKET, S3DYNAMO_TABLE_NAME) or named after one of its
    `arguments` that has none (S3DYNAMO_ALLOW_PLAINTEXT_READ), would be ignored without a
    word: an error says what to do. Other tools' variables (S3DYNAMO_DEBUG) are neither."""
    for name in sorted(n for n in env if n.startswith("S3DYNAMO_") and n not in variables):
        near = difflib.get_close_matches(name, variables, n=1, cutoff=0.85)
        near = near or _wordwise(name, variables)
        argument = name[len("S3DYNAMO_") :].lower()
        if near or argument in arguments:
            fix = (
                f"{argument} has no variable: pass S3DynamoSaver.from_env({argument}=...)"
                if argument in arguments
                else f"did you mean {near[0]}? Rename it (the README's Configuration lists them)"
            )
            raise InvalidConfigError(
                f"{name} is set, but s3dynamo reads no such variable, so its value would be "
                f"ignored; {fix}"
            )


def _wordwise(name: str, variables: Collection[str]) -> list[str]:
    """The variable whose words hold all of `name`'s, or are all in it (S3DYNAMO_KEEP_LAST:
    S3DYNAMO_RETENTION_KEEP_LAST; S3DYNAMO_TABLE_NAME: S3DYNAMO_TABLE), the closest first."""
    words = set(name.split("_")[1:]) - {""}
    close = [
        v
        for v in variables
        if words and (words <= set(v.split("_")) or set(v.split("_")[1:]) <= words)
    ]
    return sorted(close, key=lambda v: (len(set(v.split("_")) ^ words), v))[:1]


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
