"""Peak memory of putting and of getting one huge channel value, by resident set size.

    .venv-bench/bin/python benchmarks/memory.py                       # 300 MB, both kinds
    .venv-bench/bin/python benchmarks/memory.py --mb 64 --kind bytes
    .venv-bench/bin/python benchmarks/memory.py --store moto-server   # S3 over HTTP

Each measurement runs in a fresh process of its own: it builds a sealed saver, warms it
up with a 2 MB value (imports, zstd contexts, clients), prepares what the operation
needs, resets the kernel's high-water mark of its resident set (`/proc/self/clear_refs`)
and takes the resident set then as the baseline; the figure is the high-water mark after
the operation (VmHWM, the process's own `ru_maxrss`) less that baseline. RSS counts what
zstd, OpenSSL and ormsgpack allocate in C, which `tracemalloc` does not see. Linux only.

- put: the value (built before the baseline, so not counted) as a channel value of a
  new checkpoint, through `put`.
- get: `get_tuple` of that checkpoint by a fresh saver (no cache), the caller's value
  dropped first. On the in-memory store the stored object stays resident and is in the
  baseline; on moto server the download is part of the figure.
- put_writes, get_writes: the same with the value as a task's pending write (how a
  node's output is saved before the next checkpoint), `put_writes` and `get_tuple`.

Kinds: `bytes` (random: LangGraph's serializer passes bytes through, and as zstd does not
shrink them they are stored uncompressed) and `text` (a `str` of random base64: msgpack
copies it, zstd shrinks it by about a quarter). Stores: `memory` (the in-memory ports,
no copies but ours) and `moto-server` (moto in a subprocess over HTTP: botocore's costs,
not moto's).
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

MB = 1024 * 1024
OPS = ("put", "get", "put_writes", "get_writes")


def make_value(kind: str, size: int) -> Any:
    if kind == "bytes":
        return os.urandom(size)
    # Random base64: msgpack copies a str; zstd keeps about three quarters of it.
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_since_reset() -> int:
    """The high-water mark of this process's resident set (VmHWM). Not `ru_maxrss`: on
    Linux that is at least the parent's peak when the process was started (exec hands
    the old address space's mark over), so a child of a big test run would report
    the parent's size."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak() -> None:
    """Lower the high-water mark to the current resident set (Linux 4.0+), so what the
    preparation allocated and freed does not count."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def child(op: str, kind: str, mb: int, endpoint: str | None) -> dict[str, Any]:
    from langgraph.checkpoint.base import empty_checkpoint

    from langgraph.checkpoint.s3dynamo import S3DynamoSaver
    from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
    from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable

    keys, secret = {"k1": os.urandom(32)}, os.urandom(16)
    sandbox = None
    if endpoint:
        from langgraph.checkpoint.s3dynamo.testing import Sandbox

        sandbox = Sandbox(endpoint_url=endpoint)
    ports = (MemoryTable(), MemoryObjects())

    def new_saver() -> Any:
        if sandbox is not None:
            return sandbox.saver(keys=keys, secret=secret)
        saver = S3DynamoSaver(index=ports[0], object_store=ports[1], keys=keys, secret=secret)
        saver.setup()
        return saver

    def store(saver: Any, tid: str, value: Any, writes: bool) -> Any:
        """Put `value` as a channel value of a new checkpoint, or with `writes` as a
        pending write on one; the config that reads it back."""
        config = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
        cp = empty_checkpoint()
        if writes:
            stored = saver.put(config, cp, {}, {})
            saver.put_writes(stored, [("blob", value)], "task")
            return stored
        cp["channel_values"] = {"blob": value}
        cp["channel_versions"] = {"blob": saver.get_next_version(None, None)}
        return saver.put(config, cp, {}, cp["channel_versions"])

    writes = op.endswith("_writes")
    saver = new_saver()
    warm = store(saver, "warm", make_value(kind, 2 * MB), writes)  # chunked too
    assert saver.get_tuple(warm) is not None
    gc.collect()
    process = rss_now()  # the warmed-up process, before the value exists
    value = make_value(kind, mb * MB)
    size = len(value)
    digest = hashlib.sha256(value if kind == "bytes" else value.encode()).hexdigest()
    if op.startswith("get"):
        stored = store(saver, "huge", value, writes)
        del value
        saver = new_saver()  # nothing cached: as a new process would read it
    gc.collect()
    reset_peak()
    base = rss_now()
    began = time.perf_counter()
    if op.startswith("put"):
        store(saver, "huge", value, writes)
    else:
        got = saver.get_tuple(stored)
    took = time.perf_counter() - began
    peak = peak_since_reset() - base
    if op.startswith("get"):
        value = got.pending_writes[0][2] if writes else got.checkpoint["channel_values"]["blob"]
        data = value if kind == "bytes" else value.encode()
        assert hashlib.sha256(data).hexdigest() == digest, "value did not round-trip"
    return {"op": op, "kind": kind, "size": size, "peak": peak, "process": process, "seconds": took}


def measure(op: str, kind: str, mb: int, endpoint: str | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", op, "--kind", kind, "--mb", str(mb)]
    if endpoint:
        cmd += ["--endpoint", endpoint]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--kind", choices=["bytes", "text", "both"], default="both")
    parser.add_argument("--store", choices=["memory", "moto-server"], default="memory")
    parser.add_argument("--child", choices=OPS, help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.kind, args.mb, args.endpoint)))
        return
    kinds = ["bytes", "text"] if args.kind == "both" else [args.kind]
    print(f"{args.mb} MB value, sealed, {args.store} store; peak RSS over the baseline")
    print(f"{'kind':6} {'op':10} {'peak MB':>8} {'x value':>8} {'seconds':>8} {'process MB':>11}")

    def run(endpoint: str | None) -> None:
        for kind in kinds:
            for op in OPS:
                r = measure(op, kind, args.mb, endpoint)
                print(
                    f"{kind:6} {op:10} {r['peak'] / MB:8.0f} {r['peak'] / r['size']:8.2f} "
                    f"{r['seconds']:8.1f} {r['process'] / MB:11.0f}",
                    flush=True,
                )

    if args.store == "memory":
        run(None)
    else:
        from langgraph.checkpoint.s3dynamo.testing import moto_server

        with moto_server() as url:
            os.environ.update(
                AWS_ACCESS_KEY_ID="testing",
                AWS_SECRET_ACCESS_KEY="testing",
                AWS_DEFAULT_REGION="us-east-1",
            )
            run(url)


if __name__ == "__main__":
    main()
