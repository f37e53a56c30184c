"""The one plan value every `saver.ops.plan_*` returns: what an operation that changes
stored data would do, read without changing anything, and how to carry it out.

A plan is named (`gc`, `expiry`, `delete`, ...: its span is `ops.<name>.execute`, and the
command line shows it by that name, `cli/plans.py`); its `counts` are plain data (the
command line's `--json` "plan"); `execute()` runs it once and keeps what it did, as plain
data, for `result()`. What the plan read beyond its counts and keeps for its run (the
sweep of retention, the threads of an import, the candidates of garbage collection) is
its `state`, whose attributes read as the plan's own (`plan.removed`, `plan.objects`).
A plan over the whole table reads its saver's prefix only, or says why not (`table_wide`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo import telemetry
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError, ScopeNotNamedError
from langgraph.checkpoint.s3dynamo.store import EVERY_DEPLOYMENT, ThreadStore

# Told the work done so far and its total (None while not known yet): the command
# line's progress bar.
Progress = Callable[[int, int | None], None]


def no_progress(done: int, total: int | None) -> None:
    return None


@dataclass(eq=False)
class Plan:
    """What an operation would do (`counts`) and how to do it (`execute`); module
    docstring."""

    name: str
    counts: dict[str, Any]
    # Carries the plan out; returns what it did as plain data (None: nothing to tell).
    run: Callable[..., Any] = field(repr=False)
    # False: nothing to do (the command line then says so, and runs nothing).
    work: bool = True
    state: Any = field(default=None, repr=False)
    # The figure of the result `execute()` returns (gc: "deleted"); None: the plan.
    gives: str | None = None
    executed: bool = False
    outcome: Any = None

    def to_dict(self) -> dict[str, Any]:
        return self.counts

    def result(self) -> Any:
        """What the executed plan did, as plain data (None before it ran)."""
        return self.outcome

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Carry the plan out, counted as the operation `ops.<name>.execute`; returns the
        plan (or, with `gives`, that figure of what it did)."""
        run = telemetry.operation(f"ops.{self.name}.execute")(self.run)
        self.outcome = run(*args, **kwargs)
        self.executed = True
        return self if self.gives is None else self.outcome[self.gives]

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__.get("state")
        if name.startswith("__") or state is None:
            raise AttributeError(f"the plan {self.__dict__.get('name')!r} has no {name!r}")
        return getattr(state, name)


@contextmanager
def table_wide(
    store: ThreadStore, what: str, scope: str | None, *, every: bool = False
) -> Iterator[None]:
    """Around the planning of a table-wide destructive operation. A saver acts on its
    own prefix's threads only (`store/scope.py`); `scope` names that prefix (or, where
    `every` allows, "*": every deployment of the table). Without a prefix, on a table
    that also holds tenants, the scope must be named: a sweep of "the table" would
    otherwise be taken to cover them. Raised once the plan's reads show it, before
    anything is written."""
    prefix = store.prefix
    allowed = {prefix, EVERY_DEPLOYMENT} if every else {prefix}
    if scope == EVERY_DEPLOYMENT and every and prefix:
        raise InvalidConfigError(
            f"{what}: scope '*' acts on every tenant of the table, and this saver is tenant "
            f"{prefix!r}'s, which acts on its own threads only; run it from a saver without "
            "a prefix (the table's operator), or pass scope=None for this tenant's"
        )
    if scope is not None and scope not in allowed:
        raise InvalidConfigError(
            f"{what}: scope {scope!r} is not this saver's; it acts on its own prefix "
            f"{prefix!r} only"
            + (" or, with '*', on every deployment" if every else "")
            + "; use that tenant's prefix and keys"
        )
    store.other_deployments(reset=True)
    yield
    others = store.other_deployments()
    if scope is None and not prefix and others:
        shown = ", ".join(repr(p) for p in others[:5]) + (", ..." if len(others) > 5 else "")
        raise ScopeNotNamedError(
            f"{what}: the table or bucket also holds deployments under other prefixes "
            f"({shown}), "
            "and a saver without a prefix acts only on the threads written without "
            "one. Say that is meant with scope='' (command line: --scope ''), or run it "
            "with each tenant's prefix and keys"
            + ("; scope='*' expires idle threads of every tenant in one sweep" if every else "")
        )
