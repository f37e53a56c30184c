"""What the upload journal adds to W1: per invoke of the 40-turn chat, how many calls
upload objects (each writes one intent first and deletes it with its commit), how many
objects each uploads, and the write units that adds.

    .venv/bin/python benchmarks/upload_intents.py [--no-detection]

Runs W1 (benchmarks/workloads.py) once on the in-memory ports with a sealed saver at the
default settings; the ports count every request as the AWS adapters would send it, and
items are sized as DynamoDB bills them (`backends/dynamodb_items.py`).
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import workloads

from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.backends.memory import MemoryObjects
from langgraph.checkpoint.s3dynamo.backends.memory_table import MemoryTable
from langgraph.checkpoint.s3dynamo.format.layout import JOURNAL_MARK
from langgraph.checkpoint.s3dynamo.format.records import UploadIntent, intent_from, intent_item
from langgraph.checkpoint.s3dynamo.table import Delete, Put, Write, item_size, keyed


def _is_intent(key: Any) -> bool:
    return JOURNAL_MARK in key.pk


def main() -> None:
    detect = "--no-detection" not in sys.argv[1:]
    index, objects = MemoryTable(), MemoryObjects()
    table = index
    written: list[UploadIntent] = []
    # Commits that close an intent: (kind, size of the item they write).
    closing: list[tuple[str, int]] = []
    write, transact = table.write, table.transact

    def recording(change: Write, **options: Any) -> Any:
        if isinstance(change, Put) and _is_intent(change.key):
            written.append(intent_from(change.item))
        return write(change, **options)

    def committing(changes: Any) -> None:
        if any(isinstance(c, Delete) and _is_intent(c.key) for c in changes):
            first = changes[0]
            if isinstance(first, Put):
                closing.append(("put", item_size(first.item)))
            else:
                item = {**keyed(first.key), **first.set, **first.keep}
                closing.append(("put_writes", item_size(item)))
        transact(changes)

    table.write = recording  # type: ignore[method-assign]
    table.transact = committing  # type: ignore[method-assign]
    saver = S3DynamoSaver(
        index=index,
        object_store=objects,
        keys={"k1": os.urandom(32)},
        secret=os.urandom(32),
        detect_concurrent_runs=detect,
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
    # Detection on: a PutItem of the intent (1 unit per KB) and its Delete inside the
    # commit's transaction (2 per KB); a put's commit was a transaction already, a
    # put_writes' UpdateItem becomes one, which bills its item twice. Detection off: the
    # intent's PutItem and a BatchWriteItem deleting it after the plain commit (1 each).
    per_kb = [math.ceil(size / 1024) for size in sizes]
    units = sum(per_kb) * (3 if detect else 2)
    doubled = sum(math.ceil(size / 1024) for kind, size in closing if kind == "put_writes")
    kinds = {k: sum(1 for c in closing if c[0] == k) for k in ("put", "put_writes")}
    # Each intent's PutItem, and with detection off the BatchWriteItem deleting it.
    requests = len(written) + (0 if detect else index.calls["BatchWriteItem"])
    print(f"concurrent-run detection: {'on' if detect else 'off'}")
    print(f"invokes: {invokes}")
    print(f"PutObject: {uploads} ({uploads / invokes:.3f} per invoke)")
    print(f"intents: {len(written)} ({len(written) / invokes:.3f} per invoke)")
    print(f"objects per intent: {sorted({len(i.leaves) for i in written})}")
    print(f"intent item bytes: at most {max(sizes, default=0)}")
    print(f"commits closing an intent in their own request: {kinds}")
    print(f"requests added per invoke: {requests / invokes:.3f}")
    print(
        f"write units added per invoke: {units / invokes:.3f} for the intents, "
        f"{doubled / invokes:.3f} for put_writes made transactions"
    )
    left = [i for i in index.items() if JOURNAL_MARK in str(i["pk"])]
    print(f"intents left after the run: {len(left)}")


if __name__ == "__main__":
    main()
