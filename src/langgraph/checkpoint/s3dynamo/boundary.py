"""The boundary every public method crosses, declared once, on the method (`public`): its
arguments checked before it runs, each by the check its type hint carries (the vocabulary
of `arguments.py`: `ThreadId`, `Config`, ...), so a method's signature is the one place
that says what it takes; then a span and figures as one operation (`telemetry.py`). An
async twin (`twin`) runs the sync method in the process's async pool (`executor.py`):
one code path, one set of request budgets. A facade declares nothing else about it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from typing import Annotated, Any, TypeVar, get_origin

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.config.arguments import Check

_F = TypeVar("_F", bound=Callable[..., Any])
_R = TypeVar("_R")


def public(span: str | None = None) -> Callable[[_F], _F]:
    """Check the method's arguments by their type hints before it runs (a default is the
    method's own and is not checked), then count it as the operation `span`."""

    def wrap(fn: _F) -> _F:
        run: Callable[..., Any] = telemetry.operation(span)(fn) if span else fn
        signature = inspect.signature(fn)
        checks: dict[str, Check] = {}

        def bound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
            if not checks:  # read once, at the first call: every name is defined by then
                checks.update(checks_of(fn) or {"": lambda _n, v: v})
            arguments = signature.bind(*args, **kwargs)
            for name, value in arguments.arguments.items():
                if name in checks:
                    arguments.arguments[name] = checks[name](name, value)
            return arguments

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def checked_coroutine(*args: Any, **kwargs: Any) -> Any:
                arguments = bound(args, kwargs)
                return await run(*arguments.args, **arguments.kwargs)

            return checked_coroutine  # type: ignore[return-value]

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            arguments = bound(args, kwargs)
            return run(*arguments.args, **arguments.kwargs)

        return checked  # type: ignore[return-value]

    return wrap


def twin(method: Callable[..., _R]) -> Callable[..., Coroutine[Any, Any, _R]]:
    """The async twin of a sync method of a facade (whose `async_workers()` says how
    many workers its pool has): the method, run in that pool, in the caller's context."""

    @functools.wraps(method)
    async def run(self: Any, *args: Any, **kwargs: Any) -> _R:
        from langgraph.checkpoint.s3dynamo import executor  # a sync caller never needs it

        return await executor.run(self.async_workers(), method, self, *args, **kwargs)

    run.__name__ = run.__qualname__ = f"a{method.__name__}"
    return run


def stream_twin(method: Callable[..., Iterator[_R]]) -> Callable[..., AsyncIterator[_R]]:
    """The async twin of a sync method that returns an iterator: its arguments checked
    as the call is made, each item then taken in the facade's pool."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[_R]:
        from langgraph.checkpoint.s3dynamo import executor

        return executor.pulled(self.async_workers(), method(self, *args, **kwargs))

    run.__name__ = run.__qualname__ = f"a{method.__name__}"
    return run


def checks_of(fn: Callable[..., Any]) -> Mapping[str, Check]:
    """Each parameter's check, from its type hint (`Annotated[type, check]`; a twin's
    are its sync method's); a hint naming no check, or a name only a type checker
    imports, checks nothing."""
    fn = inspect.unwrap(fn)
    found: dict[str, Check] = {}
    namespace = getattr(fn, "__globals__", {})
    for name, parameter in inspect.signature(fn).parameters.items():
        hint = parameter.annotation
        if isinstance(hint, str):
            try:
                hint = eval(hint, namespace)
            except Exception:  # a name only a type checker imports: no check there
                continue
        if get_origin(hint) is Annotated:
            checks = [m for m in hint.__metadata__ if callable(m)]
            if checks:
                found[name] = checks[0]
    return found
