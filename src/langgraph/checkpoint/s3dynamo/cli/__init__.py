"""The `s3dynamo` command line, for people on call: threads, history, state, diffs,
storage figures and cost, integrity checks, and the maintenance operations (plan first,
nothing changes without `--yes`).

Installed with the package as a console script; its libraries (click, rich) come with
the `cli` extra, so the Lambda path never imports them::

    pip install "langgraph-checkpoint-s3dynamo[cli]"
    s3dynamo --help

Modules: `app.py` (the entry point and error handling), `common.py` (the group, the
store options, opening a saver), `reading.py`, `maintenance.py`, `memory.py` and
`subjects.py` (the commands), `plans.py` (how every plan is shown), `views.py` (the
`--json` shapes, from `saver.ops` reports), `render.py` (pure formatting: values, diffs,
sizes, costs, page tokens), `demo.py` (`s3dynamo demo`), `sources.py` (the checkpointers
`s3dynamo import --from` reads).
"""

from __future__ import annotations

import sys

# The second form until the package is on PyPI (README, "Install").
INSTALL_HINT = (
    'pip install "langgraph-checkpoint-s3dynamo[cli]" (from a clone: pip install ".[cli]")'
)


def main() -> None:
    """Entry point of the `s3dynamo` console script."""
    try:
        import click  # noqa: F401
        import rich  # noqa: F401
    except ImportError as exc:
        sys.stderr.write(
            f"s3dynamo: the command line needs {exc.name or 'its libraries'}, which is not "
            f"installed; install it with: {INSTALL_HINT}\n"
        )
        raise SystemExit(2) from None
    from langgraph.checkpoint.s3dynamo.cli.app import run

    run()
