"""Seal and open throughput, and the compression ratio on a realistic chat state.

The state is the `messages` list W1 ends with (40 turns: user messages, assistant
replies, JSON tool results), serialized by LangGraph's own serializer. Each mode seals
that payload the way the saver does and opens it again; throughput is serialized
megabytes per second of CPU on one core. Run:

    .venv-bench/bin/python benchmarks/sealing.py          # writes benchmarks/sealing.md
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import textgen
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer, identity
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring

HERE = Path(__file__).parent
TURNS = 40


def chat_state(turns: int = TURNS) -> list[Any]:
    """W1's final message list, built from the same generators as the workload."""
    messages: list[Any] = []
    for turn in range(1, turns + 1):
        rng = random.Random(f"user-{turn}")
        messages.append(HumanMessage(textgen.prose(rng, 400), id=f"user-{turn}"))
        rng = random.Random(f"assistant-{turn}")
        messages.append(AIMessage(textgen.prose(rng, 1500), id=f"ai-{turn}"))
        if turn % 2 == 0:
            rng = random.Random(f"tool-{turn}")
            messages.append(ToolMessage(textgen.search_results(rng, 4000), tool_call_id=f"c{turn}"))
            rng = random.Random(f"followup-{turn}")
            messages.append(AIMessage(textgen.prose(rng, 1500), id=f"ai2-{turn}"))
    return messages


def modes() -> dict[str, Sealer]:
    lg_cipher = EncryptedSerializer.from_pycryptodome_aes(key=os.urandom(32)).cipher
    keyring = Keyring(keys={"k1": os.urandom(32)}, active="k1")
    return {
        "zstd only (no keys)": Sealer(),
        "zstd + AES-256-GCM (keyring)": Sealer(keyring=keyring),
        "zstd + EncryptedSerializer (AES-EAX)": Sealer(serde_cipher=lg_cipher),
    }


def best_rate(fn: Callable[[], Any], size: int, seconds: float = 1.0) -> float:
    """MB/s of the median run among repeats filling about `seconds` of CPU."""
    runs: list[float] = []
    deadline = time.process_time() + seconds
    while time.process_time() < deadline or len(runs) < 5:
        start = time.process_time()
        fn()
        runs.append(time.process_time() - start)
    return size / statistics.median(runs) / 1e6


def main() -> None:
    typ, data = JsonPlusSerializer().dumps_typed(chat_state())
    ident = identity("value", "thread", "", "messages", "1")
    small_typ, small = JsonPlusSerializer().dumps_typed(chat_state(1)[:2])
    rows = []
    for name, sealer in modes().items():
        blob = sealer.seal(typ, data, ident)
        seal_rate = best_rate(lambda s=sealer: s.seal(typ, data, ident), len(data))
        open_rate = best_rate(lambda s=sealer, b=blob: s.open(b, ident, "bench"), len(data))
        small_blob = sealer.seal(small_typ, small, ident)
        # MB/s is bytes per microsecond, so this is microseconds per seal.
        per_small = len(small) / best_rate(
            lambda s=sealer: s.seal(small_typ, small, ident), len(small)
        )
        rows.append((name, len(blob), seal_rate, open_rate, per_small, len(small_blob)))

    levels = []
    for level in (1, 3, 6, 9, 19):
        sealer = Sealer(compression_level=level)
        size = len(sealer.seal(typ, data, ident))
        rate = best_rate(lambda s=sealer: s.seal(typ, data, ident), len(data), 0.5)
        levels.append((level, size, rate))

    lines = [
        "# Sealing: throughput and compression",
        "",
        "Produced by:",
        "",
        "    .venv-bench/bin/python benchmarks/sealing.py",
        "",
        f"- Python {platform.python_version()}, {os.cpu_count()} cores, one core used",
        f"- payload: W1's final `messages` list ({TURNS} turns), serialized by LangGraph's "
        f"JsonPlusSerializer: {len(data):,} bytes; small payload: one user and one "
        f"assistant message, {len(small):,} bytes",
        "",
        "| mode | stored bytes | ratio | seal MB/s | open MB/s | seal µs, small payload |",
        "|---|---|---|---|---|---|",
    ]
    for name, stored, seal_rate, open_rate, per_small, _ in rows:
        lines.append(
            f"| {name} | {stored:,} | {len(data) / stored:.2f} | {seal_rate:,.0f} | "
            f"{open_rate:,.0f} | {per_small:,.0f} |"
        )
    lines += [
        "",
        "zstd level (the saver's `compression_level`; default 3), no keys:",
        "",
        "| level | stored bytes | ratio | seal MB/s |",
        "|---|---|---|---|",
    ]
    for level, size, rate in levels:
        lines.append(f"| {level} | {size:,} | {len(data) / size:.2f} | {rate:,.0f} |")
    out = "\n".join(lines) + "\n"
    (HERE / "sealing.md").write_text(out)
    sys.stdout.write(out)


if __name__ == "__main__":
    main()
