"""One huge channel value through put and get_tuple, with peak memory measured.

    .venv/bin/python benchmarks/huge_value.py            # 200 MB, sealed
    .venv/bin/python benchmarks/huge_value.py --mb 50 --plain

moto runs in process, so the figures include moto's own copies of the object (it keeps
the bytes it was sent); `tracemalloc` peaks are Python allocations during each call,
mostly moto's, and `ru_maxrss` is the process's high-water mark. For the saver's own
peak memory, by resident set in fresh processes, see `benchmarks/memory.py`. The value
is incompressible (random bytes).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

MB = 1024 * 1024


def measure(label: str, fn: Any) -> Any:
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    began = time.perf_counter()
    out = fn()
    took = time.perf_counter() - began
    peak = tracemalloc.get_traced_memory()[1] - base
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"{label:10} {took:6.1f} s   peak +{peak / MB:7.0f} MB   max RSS {rss:7.0f} MB")
    return out, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--plain", action="store_true", help="no sealing keys")
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    from langgraph.checkpoint.base import empty_checkpoint
    from moto import mock_aws

    from langgraph.checkpoint.s3dynamo.testing import Sandbox, serialize_moto

    serialize_moto()
    with mock_aws():
        saver = Sandbox().saver(sealed=not args.plain)
        value = os.urandom(args.mb * MB)
        cp = empty_checkpoint()
        cp["channel_values"] = {"blob": value}
        cp["channel_versions"] = {"blob": saver.get_next_version(None, None)}
        config = {"configurable": {"thread_id": "huge", "checkpoint_ns": ""}}
        print(f"value: {args.mb} MB, {'plain' if args.plain else 'sealed'}")
        tracemalloc.start()
        (stored, put_peak) = measure(
            "put", lambda: saver.put(config, cp, {}, cp["channel_versions"])
        )
        saver.store.forget()
        (got, get_peak) = measure("get_tuple", lambda: saver.get_tuple(stored))
        tracemalloc.stop()
        assert got is not None and got.checkpoint["channel_values"]["blob"] == value
        size = len(value)
        print(f"peak / value size: put {put_peak / size:.1f}x, get_tuple {get_peak / size:.1f}x")


if __name__ == "__main__":
    main()
