"""Peak memory of one huge channel value through `put`, `put_writes` and `get_tuple`, as
the resident set of a fresh process grows (`benchmarks/memory.py`, which
docs/RELIABILITY.md quotes): what zstd and OpenSSL allocate in C counts, unlike with
`tracemalloc`.

Bounds are multiples of the value's size over the process before the call, on the
in-memory ports. Measured at 64 MB, bytes / text: put 1.0 / 1.75, get 1.0 / 2.0,
put_writes 1.0 / 1.75, get_writes 2.0 / 2.0, the same in every run to about 0.01.
Sealing values whole, as before, measured put 4.0 / 4.0, get 2.0 / 2.5, put_writes
5.0 / 4.0. A whole copy of the value more crosses each bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory.py"
MB = 64


@pytest.mark.skipif(
    not os.access("/proc/self/clear_refs", os.W_OK),
    reason="resetting the peak resident set needs Linux's /proc/self/clear_refs",
)
@pytest.mark.parametrize(
    ("kind", "op", "bound"),
    [
        # bytes pass through the serializer; random, they are stored uncompressed: the
        # envelope is the one copy (the in-memory store keeps it).
        ("bytes", "put", 1.25),
        ("bytes", "put_writes", 1.25),
        ("bytes", "get", 1.25),
        # A write's data is its channel, then the value: opened, it is sliced off.
        ("bytes", "get_writes", 2.25),
        # A str is copied by msgpack (1x), then compressed and encrypted (0.75x); read
        # back, it is decompressed (1x), then deserialized into a new str (1x).
        ("text", "put", 2.25),
        ("text", "put_writes", 2.25),
        ("text", "get", 2.25),
        ("text", "get_writes", 2.25),
    ],
)
def test_a_huge_value_costs_at_most_a_bound_times_its_size(
    kind: str, op: str, bound: float
) -> None:
    cmd = [sys.executable, str(SCRIPT), "--child", op, "--kind", kind, "--mb", str(MB)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    ratio = measured["peak"] / measured["size"]
    assert ratio <= bound, f"{op} of a {MB} MB {kind} value peaked at {ratio:.2f}x its size"
