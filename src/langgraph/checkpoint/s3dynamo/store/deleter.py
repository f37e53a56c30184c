"""Deleting a thread's records and objects so that no reader ever sees a wrong state in
between (the named intermediate states are in docs/RELIABILITY.md)."""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.checkpoint.s3dynamo.layout import is_writes_key, parse_sk
from langgraph.checkpoint.s3dynamo.naming import Namer
from langgraph.checkpoint.s3dynamo.records import ItemKey
from langgraph.checkpoint.s3dynamo.store.finder import Finder
from langgraph.checkpoint.s3dynamo.store.objects import ObjectIO
from langgraph.checkpoint.s3dynamo.store.ports import Ports
from langgraph.checkpoint.s3dynamo.waves import parallel


class Deleter:
    def __init__(self, ports: Ports, finder: Finder, objects: ObjectIO, namer: Namer) -> None:
        self._ports = ports
        self.finder = finder
        self.objects = objects
        self.namer = namer

    def delete_thread(self, tid: str) -> int:
        """Delete every record and object of a thread (all namespaces), in the order of
        `delete_records`, objects last. Interrupted, the thread reads as an earlier
        checkpoint of its history (never a checkpoint without its ancestors or its
        writes) until the call is repeated; a repeat finishes it. Returns how many records
        and objects it found."""
        thread_name = self.namer.thread(tid)
        # Heads first: an interruption then leaves records without heads, which only
        # relaxes the next commit's check, never blocks it.
        self._ports.control.drop_heads(thread_name)
        keys = self.finder.thread_keys(tid)
        if keys:
            self.delete_records(keys)
        leftover = [o.key for o in self.objects.list_thread(thread_name)]
        self.objects.delete(leftover)
        return len(keys) + len(leftover)

    def delete_records(self, keys: Iterable[ItemKey]) -> None:
        """Delete records so that no reader ever sees a wrong state in between.

        Checkpoint records go first, each namespace's newest first, one request each
        (namespaces in parallel): a batch applies its items in no set order, so two
        checkpoints of one namespace in one batch could leave the newer without its
        parent. Whatever survives an interruption is therefore each namespace's history
        cut from the newest end: every surviving checkpoint keeps all its ancestors (which
        DeltaChannel rebuilds from) and all its writes. Writes records go last, in bulk:
        by then no checkpoint record shows them."""
        chains: dict[tuple[str, str], list[ItemKey]] = {}
        writes: list[ItemKey] = []
        for key in keys:
            if is_writes_key(key.sk):
                writes.append(key)
            else:
                chains.setdefault((key.pk, parse_sk(key.sk)[0]), []).append(key)
        records = self._ports.records

        def newest_first(chain: list[ItemKey]) -> None:
            for key in sorted(chain, key=lambda k: k.sk, reverse=True):
                records.write_batch(deletes=[key])

        parallel(newest_first, list(chains.values()))
        if writes:
            records.write_batch(deletes=writes)
