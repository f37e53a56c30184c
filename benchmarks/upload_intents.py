"""What the upload journal adds to W1: per invoke of the 40-turn chat, how many calls
upload objects (each writes one intent first and deletes it with its commit), how many
objects each uploads, and the write units that adds.

    .venv/bin/python benchmarks/upload_intents.py

Runs W1 (benchmarks/workloads.py) once on the in-memory ports with a sealed saver at the
default settings; the ports count every request as the AWS adapters would send it, and
items are sized as DynamoDB bills them (`backends/dynamodb_items.py`).
"""

from __future__ import annotations

import math
import os
from typing import Any

import workloads

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.dynamodb_items import (
    intent_item,
    item_size,
    record_size,
)
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryIndex, MemoryObjects
from langgraph.checkpoint.s3dynamo.records import UploadIntent


def main() -> None:
    index, objects = MemoryIndex(), MemoryObjects()
    written: list[UploadIntent] = []
    put_intent = index.put_intent

    def recording(intent: UploadIntent) -> None:
        written.append(intent)
        put_intent(intent)

    index.put_intent = recording  # type: ignore[method-assign]
    # Commits that close an intent: (kind, size of the item they write).
    closing: list[tuple[str, int]] = []
    put_checkpoint, merge_writes = index.put_checkpoint, index.merge_writes

    def checkpoint(record: Any, head: Any, fence: Any = None, intent: Any = None) -> None:
        if intent is not None:
            closing.append(("put", record_size(record)))
        put_checkpoint(record, head, fence, intent)

    def writes(record: Any, last_wins: Any, fence: Any = None, intent: Any = None) -> None:
        if intent is not None:
            closing.append(("put_writes", record_size(record)))
        merge_writes(record, last_wins, fence, intent)

    index.put_checkpoint = checkpoint  # type: ignore[method-assign]
    index.merge_writes = writes  # type: ignore[method-assign]
    saver = S3DynamoSaver(
        index=index, object_store=objects, keys={"k1": os.urandom(32)}, secret=os.urandom(32)
    )
    saver.setup()
    index.calls.clear()
    objects.calls.clear()
    scale = workloads.Scale()
    [scenario] = [s for s in workloads.SCENARIOS if s.name == "W1"]
    phases, _ = scenario.build(saver, scale)
    invokes = 0
    for phase in phases:
        if phase.kind != "invoke":
            continue
        for op in phase.ops:
            op()
            invokes += 1
    uploads = objects.calls["put"]
    sizes = [item_size(intent_item(i)) for i in written]
    # A PutItem bills 1 write unit per KB started; a Delete inside a transaction 2.
    units = sum(math.ceil(size / 1024) * 3 for size in sizes)
    # A put_writes commit was one UpdateItem; closing an intent makes it a transaction,
    # which bills its item twice. A put's commit is a transaction already (detection on).
    doubled = sum(math.ceil(size / 1024) for kind, size in closing if kind == "put_writes")
    kinds = {k: sum(1 for c in closing if c[0] == k) for k in ("put", "put_writes")}
    print(f"invokes: {invokes}")
    print(f"PutObject: {uploads} ({uploads / invokes:.3f} per invoke)")
    print(f"intents: {len(written)} ({len(written) / invokes:.3f} per invoke)")
    print(f"objects per intent: {sorted({len(i.leaves) for i in written})}")
    print(f"intent item bytes: at most {max(sizes, default=0)}")
    print(f"commits closing an intent: {kinds}")
    print(
        "write units added per invoke: intents (PutItem 1 + transactional Delete 2 per KB) "
        f"{units / invokes:.3f}, put_writes made transactions {doubled / invokes:.3f}"
    )
    print(f"intents left after the run: {len(index.intents)}")


if __name__ == "__main__":
    main()
