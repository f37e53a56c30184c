"""Call one of LangGraph's graph tests many times in one process, with this saver or with
LangGraph's InMemorySaver, and count how each run ended: how a test that failed once in
the suite is told apart, a race of the saver from a test bound to the machine's speed.

Usage (after `make test-langgraph` unpacked the suite into .langgraph-suite/):

    .venv-langgraph/bin/python scripts/langgraph_suite/repeat.py \\
        test_pregel test_parent_command_goto '[true, "both"]' --runs 100 [--saver memory]

The test function (sync or async) is called with a fresh checkpointer first, then the
JSON list's values (its other parameters, in order). Prints each failure's type and
message, then the count and the median and longest run. Run it beside a load (two
`python -c "while True: pass"` on a 2-core machine) to see what the loaded suite sees.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import os
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def checkpointer(kind: str) -> AbstractContextManager[Any]:
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return nullcontext(InMemorySaver())
    from langgraph.checkpoint.s3dynamo.testing import moto_saver

    return moto_saver()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("module", help="the suite's test module, e.g. test_pregel")
    parser.add_argument("test", help="the test function, e.g. test_parent_command_goto")
    parser.add_argument("args", nargs="?", default="[]", help="its other parameters, as JSON")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--saver", choices=["s3dynamo", "memory"], default="s3dynamo")
    options = parser.parse_args()
    source = ROOT / ".langgraph-suite" / f"langgraph-{version('langgraph')}"
    os.chdir(source)
    sys.path.insert(0, str(source))
    os.environ.setdefault("NO_DOCKER", "true")
    test = getattr(importlib.import_module(f"tests.{options.module}"), options.test)
    args = json.loads(options.args)
    passed, times = 0, []
    for run in range(options.runs):
        with checkpointer(options.saver) as saver:
            start = time.perf_counter()
            try:
                outcome = test(saver, *args)
                if inspect.iscoroutine(outcome):  # an async test: run it to its end
                    asyncio.run(outcome)
                passed += 1
            except Exception as exc:  # what the run ended with is the measurement
                print(f"run {run}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            times.append(time.perf_counter() - start)
    times.sort()
    print(
        f"{options.test}{args} with {options.saver}: {passed} of {options.runs} passed; "
        f"median {times[len(times) // 2]:.3f} s, longest {times[-1]:.3f} s"
    )
    return 0 if passed == options.runs else 1


if __name__ == "__main__":
    sys.exit(main())
