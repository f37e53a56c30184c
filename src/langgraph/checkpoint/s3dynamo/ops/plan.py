"""The one plan value every `saver.ops.plan_*` returns: what an operation that changes
stored data would do, read without changing anything, and how to carry it out.

A plan is named (`gc`, `expiry`, `delete`, ...: its span is `ops.<name>.execute`, and the
command line shows it by that name, `cli/plans.py`); its `counts` are plain data (the
command line's `--json` "plan"); `execute()` runs it once and keeps what it did, as plain
data, for `result()`. What the plan read beyond its counts and keeps for its run (the
sweep of retention, the threads of an import, the candidates of garbage collection) is
its `state`, whose attributes read as the plan's own (`plan.removed`, `plan.objects`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.s3dynamo import telemetry

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
