"""What each command reads, as plain dicts: these are the `--json` shapes (documented in
README.md, "Command line"), and the text output is drawn from the same dicts.

Everything here builds on `ThreadStore`'s public methods and the saver's public API.
Progress is reported through a `tick(total)` callback so that this module knows nothing
of terminals.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import langgraph.checkpoint.s3dynamo.cli.render as render
from langgraph.checkpoint.s3dynamo import (
    IntegrityError,
    KeyNotFoundError,
    ObjectNotFoundError,
    PlaintextRefusedError,
    S3DynamoSaver,
)
from langgraph.checkpoint.s3dynamo.backends.dynamodb import to_item
from langgraph.checkpoint.s3dynamo.gc import split_key
from langgraph.checkpoint.s3dynamo.maintenance import needed_chain
from langgraph.checkpoint.s3dynamo.ports import ObjectInfo
from langgraph.checkpoint.s3dynamo.records import (
    CheckpointRecord,
    ItemKey,
    Record,
    WritesRecord,
    referenced_leaves,
    split_write_ref,
    unpack_bundle,
)
from langgraph.checkpoint.s3dynamo.thread_store import Entry, ThreadStore

# Called as tick(done, total) while a command works through threads.
Tick = Callable[[int, int], None]


def _no_tick(done: int, total: int) -> None:
    return None


class UnknownThreadError(LookupError):
    """The thread (or checkpoint) named on the command line has nothing stored."""


def item_bytes(record: Record) -> int:
    """Bytes DynamoDB counts for the record's item (without its 100-byte overhead)."""
    return render.item_size(to_item(record))


def item_label(key: ItemKey) -> str:
    return f"{key.pk} {key.sk}"


@dataclass
class Grouped:
    """A set of records, paired up: checkpoints with their writes, each with the thread
    and namespace its sealed reference names. Records that would not open, and writes
    records with no checkpoint record, are kept aside."""

    entries: list[Entry] = field(default_factory=list)
    unopened: list[tuple[CheckpointRecord, Exception]] = field(default_factory=list)
    orphan_writes: list[WritesRecord] = field(default_factory=list)


def group(store: ThreadStore, records: Iterable[Record]) -> Grouped:
    checkpoints: dict[ItemKey, CheckpointRecord] = {}
    writes: dict[ItemKey, list[WritesRecord]] = {}
    for rec in records:
        if isinstance(rec, WritesRecord):
            writes.setdefault(ItemKey(rec.pk, rec.owner_sk), []).append(rec)
        else:
            checkpoints[rec.key] = rec
    out = Grouped()
    for key, rec in checkpoints.items():
        try:
            tid, ns = store.open_thread_ref(rec)
        except Exception as exc:
            out.unopened.append((rec, exc))
            continue
        out.entries.append(Entry(tid, ns, rec, writes.pop(key, [])))
    out.orphan_writes = [w for ws in writes.values() for w in ws]
    return out


def scope_records(store: ThreadStore, thread_id: str | None) -> list[Record]:
    if thread_id is None:
        return list(store.index.scan())
    records = store.thread_records(thread_id)
    return records


def scope_objects(store: ThreadStore, thread_id: str | None) -> list[ObjectInfo]:
    prefix = (
        store.prefix if thread_id is None else store.thread_prefix(store.namer.thread(thread_id))
    )
    return list(store.objects.list(prefix))


def require_thread(store: ThreadStore, thread_id: str) -> list[Entry]:
    entries = store.thread_entries(thread_id)
    if not entries:
        raise UnknownThreadError(
            f"thread {thread_id!r} has no checkpoints in this table; list the threads "
            "with `s3dynamo threads` (or check --table, --prefix and S3DYNAMO_SECRET)"
        )
    return entries


# ---------------------------------------------------------------------- threads


def threads(store: ThreadStore, *, limit: int, page_token: str | None) -> dict[str, Any]:
    """{"threads": [{"thread_id", "checkpoints", "namespaces", "last_checkpoint_id",
    "last_step", "last_updated"}], "next_page_token", "unreadable_records"}: one page,
    most recently updated first, from a scan of the table."""
    grouped = group(store, (r for r in store.index.scan() if isinstance(r, CheckpointRecord)))
    counts: dict[str, int] = {}
    namespaces: dict[str, set[str]] = {}
    latest: dict[str, Entry] = {}
    for e in grouped.entries:
        counts[e.tid] = counts.get(e.tid, 0) + 1
        namespaces.setdefault(e.tid, set()).add(e.ns)
        best = latest.get(e.tid)
        # The root namespace's newest checkpoint stands for the thread.
        if best is None or (e.ns == "", e.checkpoint_id) > (best.ns == "", best.checkpoint_id):
            latest[e.tid] = e
    rows: list[dict[str, Any]] = []
    for tid, e in latest.items():
        step, ts = None, None
        try:
            metadata = store.open_metadata(e) or {}
            step = metadata.get("step")
            ts = store.open_body(e).get("ts")
        except Exception:
            pass  # `verify` reports it; the listing goes on
        rows.append(
            {
                "thread_id": tid,
                "checkpoints": counts[tid],
                "namespaces": len(namespaces[tid]),
                "last_checkpoint_id": e.checkpoint_id,
                "last_step": step,
                "last_updated": ts,
            }
        )
    rows.sort(key=render.thread_order)
    rest = render.after_token(rows, page_token)
    page = [dict(r) for r in rest[:limit]]
    more = len(rest) > limit
    return {
        "threads": page,
        "next_page_token": (
            render.page_token(page[-1]["last_updated"], page[-1]["thread_id"])
            if more and page
            else None
        ),
        "unreadable_records": len(grouped.unopened),
    }


# ---------------------------------------------------------------------- history


def history(store: ThreadStore, thread_id: str, ns: str | None) -> dict[str, Any]:
    """{"thread_id", "checkpoint_ns", "checkpoints": [{"checkpoint_id", "checkpoint_ns",
    "parent_checkpoint_id", "step", "source", "created_at", "next", "interrupts",
    "pending_writes", "item_bytes", "stored_bytes", "referenced_bytes"}]}, newest first.

    `stored_bytes` is what the checkpoint added (its items plus the objects its parent
    did not reference); `referenced_bytes` is everything it needs (items plus every
    object it references)."""
    entries = require_thread(store, thread_id)
    if ns is not None:
        entries = [e for e in entries if e.ns == ns]
        if not entries:
            raise UnknownThreadError(
                f"thread {thread_id!r} has no checkpoints in namespace {ns!r}; "
                "`--ns '*'` shows every namespace"
            )
    sizes = {o.key: o.size for o in scope_objects(store, thread_id)}
    by_id = {(e.ns, e.checkpoint_id): e for e in entries}
    rows = []
    for e, t in zip(entries, store.tuples(entries, None, None), strict=True):
        parent_id = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        own = set(store.referenced_keys([e]))
        parent = by_id.get((e.ns, parent_id)) if parent_id else None
        inherited = set(store.referenced_keys([parent])) if parent else set()
        items = item_bytes(e.record) + sum(item_bytes(w) for w in e.writes)
        metadata = t.metadata or {}
        rows.append(
            {
                "checkpoint_id": e.checkpoint_id,
                "checkpoint_ns": e.ns,
                "parent_checkpoint_id": parent_id,
                "step": metadata.get("step"),
                "source": metadata.get("source"),
                "created_at": t.checkpoint.get("ts"),
                "next": render.next_nodes(t.checkpoint),
                "interrupts": render.interrupts(t.pending_writes or []),
                "pending_writes": len(t.pending_writes or []),
                "item_bytes": items,
                "stored_bytes": items + sum(sizes.get(k, 0) for k in own - inherited),
                "referenced_bytes": items + sum(sizes.get(k, 0) for k in own),
            }
        )
    return {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoints": rows}


# ------------------------------------------------------------------ show, diff


def state(
    saver: S3DynamoSaver, thread_id: str, checkpoint_id: str | None, ns: str
) -> dict[str, Any]:
    """{"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
    "created_at", "step", "source", "metadata", "next", "values", "internal_channels",
    "pending_writes": [{"task_id", "channel", "value"}], "interrupts"}."""
    configurable = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    t = saver.get_tuple({"configurable": configurable})
    if t is None:
        if checkpoint_id is None:
            require_thread(saver.store, thread_id)
            raise UnknownThreadError(f"thread {thread_id!r} has no checkpoint in namespace {ns!r}")
        raise UnknownThreadError(
            f"thread {thread_id!r} has no checkpoint {checkpoint_id!r} in namespace {ns!r}; "
            f"`s3dynamo history {thread_id}` lists them"
        )
    values = t.checkpoint.get("channel_values", {})
    internal = {k for k in values if k.startswith(render.BRANCH_TO) or k.startswith("__")}
    metadata = t.metadata or {}
    return {
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "checkpoint_id": t.checkpoint["id"],
        "parent_checkpoint_id": (
            t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        ),
        "created_at": t.checkpoint.get("ts"),
        "step": metadata.get("step"),
        "source": metadata.get("source"),
        "metadata": render.jsonable(metadata),
        "next": render.next_nodes(t.checkpoint),
        "values": {k: render.jsonable(v) for k, v in values.items() if k not in internal},
        "internal_channels": {k: render.jsonable(values[k]) for k in sorted(internal)},
        "pending_writes": [
            {"task_id": task, "channel": ch, "value": render.jsonable(v)}
            for task, ch, v in t.pending_writes or []
        ],
        "interrupts": render.interrupts(t.pending_writes or []),
    }


def diff(
    saver: S3DynamoSaver, thread_id: str, a: str | None, b: str | None, ns: str
) -> dict[str, Any]:
    """{"thread_id", "checkpoint_ns", "from": {checkpoint_id, step, created_at}, "to":
    {...}, "changes": [see `render.diff_states`]}. With no ids: the latest against its
    parent; with one: that checkpoint against its parent."""
    if b is None:
        newer = state(saver, thread_id, a, ns)
        parent = newer["parent_checkpoint_id"]
        older = state(saver, thread_id, parent, ns) if parent else None
    else:
        older, newer = state(saver, thread_id, a, ns), state(saver, thread_id, b, ns)

    def side(s: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if s is None:
            return None
        return {k: s[k] for k in ("checkpoint_id", "step", "source", "created_at")}

    return {
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "from": side(older),
        "to": side(newer),
        "changes": render.diff_states(older["values"] if older else {}, newer["values"]),
    }


# ------------------------------------------------------------------------ stats


@dataclass
class _Channel:
    values: int = 0
    references: int = 0
    inline: int = 0
    objects: int = 0
    stored_bytes: int = 0
    logical_bytes: int = 0
    referenced_logical_bytes: int = 0


def stats(store: ThreadStore, thread_id: str | None, tick: Tick = _no_tick) -> dict[str, Any]:
    """Sizes, ratios and monthly cost; see README.md, "Command line", for the shape."""
    if thread_id is not None:
        require_thread(store, thread_id)
    records = scope_records(store, thread_id)
    objects = [o for o in scope_objects(store, thread_id) if split_key(store.prefix, o.key)]
    grouped = group(store, records)
    by_thread: dict[str, list[Entry]] = {}
    for e in grouped.entries:
        by_thread.setdefault(e.tid, []).append(e)
    sizes = {o.key: o.size for o in objects}
    channels: dict[str, _Channel] = {}
    seen: set[tuple[str, str, str, str]] = set()
    referenced: set[str] = set()
    codec = store.codec
    tick(0, len(by_thread))
    for done, (tid, entries) in enumerate(by_thread.items(), 1):
        keys = store.referenced_keys(entries)
        referenced |= set(keys)
        fetched = store.fetch({k: w for k, w in keys.items() if k in sizes})
        for e in entries:
            body = store.open_body(e)
            for channel, value in store.stored_values(e, body).items():
                c = channels.setdefault(channel, _Channel())
                ident = (tid, e.ns, channel, value.version)
                key = store.object_key(tid, value.leaf) if value.leaf else None
                blob = value.blob if value.blob is not None else fetched.get(key or "")
                logical = 0
                if blob is not None and value.base is not None:
                    base_blob = fetched.get(store.base_key(tid, e.ns, channel, value.base))
                    if base_blob is not None:
                        base = codec.value_data(tid, e.ns, channel, value.base, base_blob, e.what)
                        logical = len(codec.delta_data(*ident, blob, value.base, base, e.what)[1])
                elif blob is not None:
                    logical = len(codec.value_data(*ident, blob, e.what)[1])
                c.references += 1
                c.referenced_logical_bytes += logical
                if ident in seen:
                    continue
                seen.add(ident)
                c.values += 1
                c.logical_bytes += logical
                c.stored_bytes += len(blob) if blob is not None else 0
                if value.blob is not None:
                    c.inline += 1
                else:
                    c.objects += 1
            for w in e.writes:
                c = channels.setdefault("(pending writes)", _Channel())
                task_id, _ = store.open_task(w, e.what)
                blobs: list[tuple[int, bytes]] = []
                for idx, stored in w.writes.items():
                    if isinstance(stored, str):
                        got = fetched.get(store.object_key(tid, split_write_ref(stored)[0]))
                        if got is None:
                            continue
                        stored = got
                    blobs.append((idx, stored))
                if w.bundle and (bundle := fetched.get(store.object_key(tid, w.bundle))):
                    blobs += list(unpack_bundle(bundle).items())
                for idx, blob in blobs:
                    _, (_, data) = codec.write_data(
                        tid, e.ns, e.checkpoint_id, task_id, idx, blob, e.what
                    )
                    logical = len(data)
                    c.values += 1
                    c.references += 1
                    c.stored_bytes += len(blob)
                    c.logical_bytes += logical
                    c.referenced_logical_bytes += logical
                    c.inline += not isinstance(w.writes.get(idx), str) and w.bundle is None
                    c.objects += isinstance(w.writes.get(idx), str) or w.bundle is not None
        tick(done, len(by_thread))
    n_items = len(records)
    i_bytes = sum(item_bytes(r) for r in records)
    o_bytes = sum(o.size for o in objects)
    logical = sum(c.logical_bytes for c in channels.values())
    sealed = sum(c.stored_bytes for c in channels.values())
    referenced_logical = sum(c.referenced_logical_bytes for c in channels.values())
    return {
        "thread_id": thread_id,
        "threads": len(by_thread),
        "checkpoints": len(grouped.entries),
        "items": {"count": n_items, "bytes": i_bytes},
        "objects": {
            "count": len(objects),
            "bytes": o_bytes,
            "unreferenced": sum(1 for o in objects if o.key not in referenced),
        },
        "stored_bytes": i_bytes + o_bytes,
        "values": {
            "count": sum(c.values for c in channels.values()),
            "references": sum(c.references for c in channels.values()),
            "sealed_bytes": sealed,
            "logical_bytes": logical,
            "referenced_logical_bytes": referenced_logical,
        },
        "compression_ratio": render.ratio(logical, sealed),
        "reuse_ratio": render.ratio(referenced_logical, logical),
        "channels": [
            {"channel": name, **vars(c)}
            for name, c in sorted(channels.items(), key=lambda kv: -kv[1].stored_bytes)
        ],
        "cost": render.monthly_cost(n_items, i_bytes, o_bytes),
    }


# ----------------------------------------------------------------------- verify


def _kind(exc: Exception) -> str:
    if isinstance(exc, ObjectNotFoundError):
        return "missing"
    if isinstance(exc, (KeyNotFoundError, PlaintextRefusedError)):
        return "unopenable"
    if isinstance(exc, IntegrityError):
        return "tampered"
    return "unopenable"


def _detail(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def verify(store: ThreadStore, thread_id: str | None, tick: Tick = _no_tick) -> dict[str, Any]:
    """Open and authenticate every item and object in scope.

    {"thread_id", "ok", "checked": {"items", "objects", "blobs", "opened"}, "problems":
    [{"kind": "missing" | "unreferenced" | "tampered" | "unopenable", "where": "item" |
    "object", "key", "thread_id", "checkpoint_ns", "checkpoint_id", "detail"}],
    "hint"}"""
    if thread_id is not None:
        records = scope_records(store, thread_id)
        objects = scope_objects(store, thread_id)
        if not records and not objects:
            require_thread(store, thread_id)
    else:
        records = scope_records(store, None)
        objects = scope_objects(store, None)
    listed = {o.key: o for o in objects if split_key(store.prefix, o.key)}
    problems: list[dict[str, Any]] = []
    counts = {"items": len(records), "objects": len(listed), "blobs": 0, "opened": 0}

    def problem(
        kind: str, where: str, key: str, e: Entry | None, detail: str, tid: str | None = None
    ) -> None:
        problems.append(
            {
                "kind": kind,
                "where": where,
                "key": key,
                "thread_id": e.tid if e else tid,
                "checkpoint_ns": e.ns if e else None,
                "checkpoint_id": e.checkpoint_id if e else None,
                "detail": detail,
            }
        )

    def attempt(where: str, key: str, e: Entry | None, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args), counted; None (and a problem recorded) if it raises."""
        counts["blobs"] += 1
        try:
            result = fn(*args)
        except Exception as exc:
            problem(_kind(exc), where, key, e, _detail(exc))
            return None
        counts["opened"] += 1
        return result if result is not None else True

    grouped = group(store, records)
    for rec, exc in grouped.unopened:
        counts["blobs"] += 1
        problem(_kind(exc), "item", item_label(rec.key), None, _detail(exc))
    for w in grouped.orphan_writes:
        problem(
            "unreferenced",
            "item",
            item_label(w.key),
            None,
            "writes item whose checkpoint item is gone (an interrupted delete; "
            "`s3dynamo delete` or prune again removes it)",
        )
    counts["blobs"] += len(grouped.entries)  # the thread references, opened by `group`
    counts["opened"] += len(grouped.entries)

    by_thread: dict[str, list[Entry]] = {}
    for e in grouped.entries:
        by_thread.setdefault(e.tid, []).append(e)
    tick(0, len(by_thread))
    live: dict[str, set[str]] = {}
    for r in records:
        live.setdefault(r.pk, set()).update(referenced_leaves(r))
    for done, (tid, entries) in enumerate(by_thread.items(), 1):
        _verify_thread(store, tid, entries, listed, attempt, problem)
        tick(done, len(by_thread))
    scope_pk = store.namer.thread(thread_id) if thread_id is not None else None
    now = datetime.now(timezone.utc)
    for key, info in sorted(listed.items()):
        parts = split_key(store.prefix, key)
        assert parts is not None
        thread_name, leaf = parts
        if scope_pk is not None and thread_name != scope_pk:
            continue
        if leaf not in live.get(thread_name, set()):
            age = int((now - info.modified).total_seconds())
            problem(
                "unreferenced",
                "object",
                key,
                None,
                f"{info.size} bytes, {age} s old, referenced by no item "
                "(`s3dynamo gc` removes it after the grace period)",
                tid=thread_id,
            )
    hint = None
    if counts["blobs"] and not counts["opened"]:
        hint = (
            "nothing opened: the sealing keys or naming secret differ from the writer's "
            "(check S3DYNAMO_KEYS, S3DYNAMO_SECRET, LANGGRAPH_AES_KEY)"
        )
    return {
        "thread_id": thread_id,
        "ok": not problems,
        "checked": counts,
        "problems": problems,
        "hint": hint,
    }


def _verify_thread(
    store: ThreadStore,
    tid: str,
    entries: Sequence[Entry],
    listed: Mapping[str, ObjectInfo],
    attempt: Callable[..., Any],
    problem: Callable[..., None],
) -> None:
    """Open every blob of one thread's entries; objects are fetched in one wave and each
    opened once, however many checkpoints reference it."""
    codec = store.codec
    keys = store.referenced_keys(entries)
    present = {k: w for k, w in keys.items() if k in listed}
    try:
        fetched = store.fetch(present, cached=False)  # what the bucket holds, not a cache
    except ObjectNotFoundError:  # deleted since the listing: fetch one by one
        fetched = {}
        for k in present:
            with contextlib.suppress(ObjectNotFoundError):
                fetched.update(store.fetch({k: present[k]}, cached=False))
    done: set[str] = set()

    def object_blob(key: str, e: Entry) -> bytes | None:
        blob = fetched.get(key)
        if blob is None and key not in done:
            done.add(key)
            problem("missing", "object", key, e, f"{e.what}: referenced, but not in the bucket")
        return blob

    for e in entries:
        label = item_label(e.record.key)
        body = attempt("item", label, e, store.open_body, e)
        if body is None:
            continue
        attempt("item", label, e, store.open_metadata, e)
        stored = store.stored_values(e, body)
        lost = set(body.get("stored") or ()) - set(stored)
        if lost:
            problem(
                "tampered",
                "item",
                label,
                e,
                f"{len(lost)} stored channel value(s) missing from the item: it was altered",
            )
        for channel, value in stored.items():
            if value.blob is not None and value.base is not None:
                # A delta opens against its base, an object checked like any other.
                base_key = store.base_key(tid, e.ns, channel, value.base)
                base_blob = object_blob(base_key, e)
                if base_blob is None:
                    continue
                base = attempt(
                    "object", base_key, e, codec.value_data,
                    tid, e.ns, channel, value.base, base_blob, e.what,
                )  # fmt: skip
                if base is not None:
                    attempt(
                        "item", label, e, codec.open_value_delta,
                        tid, e.ns, channel, value.version, value.blob, value.base, base, e.what,
                    )  # fmt: skip
                continue
            if value.blob is not None:
                attempt(
                    "item", label, e, codec.open_value,
                    tid, e.ns, channel, value.version, value.blob, e.what,
                )  # fmt: skip
                continue
            key = store.object_key(tid, value.leaf or "")
            if key in done or (blob := object_blob(key, e)) is None:
                continue
            done.add(key)
            attempt(
                "object", key, e, codec.open_value,
                tid, e.ns, channel, value.version, blob, e.what,
            )  # fmt: skip
        for w in e.writes:
            wlabel = item_label(w.key)
            task = attempt("item", wlabel, e, store.open_task, w, e.what)
            if task is None:
                continue
            task_id = task[0]
            for idx, stored_write in w.writes.items():
                where, key, blob_w = "item", wlabel, stored_write
                if isinstance(stored_write, str):
                    where, key = "object", store.object_key(tid, split_write_ref(stored_write)[0])
                    got = object_blob(key, e)
                    if got is None:
                        continue
                    blob_w = got
                attempt(
                    where, key, e, codec.open_write,
                    tid, e.ns, e.checkpoint_id, task_id, idx, blob_w, e.what,
                )  # fmt: skip
            if w.bundle:
                key = store.object_key(tid, w.bundle)
                bundle = object_blob(key, e)
                if bundle is None:
                    continue
                try:
                    parts = unpack_bundle(bundle)
                except ValueError as exc:
                    problem("tampered", "object", key, e, f"writes bundle: {exc}")
                    continue
                for idx, blob_b in parts.items():
                    attempt(
                        "object", key, e, codec.open_write,
                        tid, e.ns, e.checkpoint_id, task_id, idx, blob_b, e.what,
                    )  # fmt: skip


# ------------------------------------------------------------------ maintenance


def delete_plan(store: ThreadStore, thread_id: str) -> dict[str, Any]:
    """{"thread_id", "checkpoints", "items", "objects", "object_bytes"}."""
    keys = store.thread_keys(thread_id)
    objects = scope_objects(store, thread_id)
    if not keys and not objects:
        require_thread(store, thread_id)
    return {
        "thread_id": thread_id,
        "checkpoints": sum(1 for k in keys if k.sk.count("#") == 1),
        "items": len(keys),
        "objects": len(objects),
        "object_bytes": sum(o.size for o in objects),
    }


def copy_plan(store: ThreadStore, source: str, target: str) -> dict[str, Any]:
    """{"source", "target", "checkpoints", "items", "objects", "target_checkpoints"}."""
    entries = require_thread(store, source)
    return {
        "source": source,
        "target": target,
        "checkpoints": len(entries),
        "items": len(entries) + sum(len(e.writes) for e in entries),
        "objects": len(store.referenced_keys(entries)),
        "target_checkpoints": len(store.thread_entries(target)),
    }


def prune_plan(store: ThreadStore, thread_ids: Sequence[str], strategy: str) -> dict[str, Any]:
    """{"strategy", "threads": [{"thread_id", "checkpoints", "kept", "removed"}]}."""
    rows = []
    for tid in thread_ids:
        entries = require_thread(store, tid)
        if strategy == "delete":
            kept = 0
        else:
            by_ns: dict[str, dict[str, Entry]] = {}
            for e in entries:
                by_ns.setdefault(e.ns, {})[e.checkpoint_id] = e
            kept = sum(
                len(needed_chain(store, chain[max(chain)], chain)) for chain in by_ns.values()
            )
        rows.append(
            {
                "thread_id": tid,
                "checkpoints": len(entries),
                "kept": kept,
                "removed": len(entries) - kept,
            }
        )
    return {"strategy": strategy, "threads": rows}


def reencrypt_plan(store: ThreadStore, thread_ids: Sequence[str] | None) -> dict[str, Any]:
    """{"active_key", "threads", "item_blobs": {key id or "(none)": count}, "stale_item_blobs"}:
    which keys the blobs kept in items are sealed under now (objects are checked, and
    re-sealed, when it runs)."""
    sealer = store.sealer
    active = sealer.keyring.active if sealer.keyring else None
    if thread_ids is None:
        records = list(store.index.scan())
    else:
        records = []
        for tid in thread_ids:
            require_thread(store, tid)
            records += store.thread_records(tid)
    by_key: dict[str, int] = {}
    for r in records:
        blobs: list[bytes]
        if isinstance(r, CheckpointRecord):
            blobs = [r.body, r.metadata, r.thread_ref, *r.inline.values()]
        else:
            blobs = [r.task_ref, *(b for b in r.writes.values() if isinstance(b, bytes))]
        for b in blobs:
            kid = sealer.key_id_of(b) or "(none)"
            by_key[kid] = by_key.get(kid, 0) + 1
    tids = (
        sorted({e.tid for e in group(store, records).entries})
        if thread_ids is None
        else list(thread_ids)
    )
    return {
        "active_key": active,
        "threads": tids,
        "item_blobs": dict(sorted(by_key.items())),
        "stale_item_blobs": sum(n for k, n in by_key.items() if k != active),
    }
