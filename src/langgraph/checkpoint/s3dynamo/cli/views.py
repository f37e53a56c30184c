"""What each reading command shows, as plain dicts: the `--json` shapes (documented in
README.md, "Command line"), from which the text output is drawn too.

Everything comes from the saver: `saver.ops` reports (threads, history, stats, verify)
and `get_tuple` (show, diff). Nothing here reads the store or opens a blob itself.
`threads` pages its rows with tokens of its own (`row_token`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

import langgraph.checkpoint.s3dynamo.cli.render as render
from langgraph.checkpoint.s3dynamo import S3DynamoSaver, ThreadNotFoundError
from langgraph.checkpoint.s3dynamo.ops.inspect import Progress, no_progress


def threads(
    saver: S3DynamoSaver,
    *,
    limit: int,
    page_token: str | None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """{"threads": [{"thread_id", "checkpoints", "namespaces", "last_checkpoint_id",
    "last_step", "last_updated"}], "next_page_token", "unreadable_records"}: one page,
    most recently updated first; with `metadata`, the threads whose latest checkpoint
    matches it ("checkpoints" and "namespaces" are null when the thread catalog answered:
    it reads no thread whole)."""
    report = saver.ops.threads(metadata or None)
    rows = sorted((t.to_dict() for t in report.threads), key=thread_order)
    rest = after_token(rows, page_token)
    page = [dict(r) for r in rest[:limit]]
    more = len(rest) > limit
    return {
        "threads": page,
        "next_page_token": (
            row_token(page[-1]["last_updated"], page[-1]["thread_id"]) if more and page else None
        ),
        "unreadable_records": report.unreadable_records,
    }


def history(saver: S3DynamoSaver, thread_id: str, ns: str | None) -> dict[str, Any]:
    """{"thread_id", "checkpoint_ns", "checkpoints": [{"checkpoint_id", "checkpoint_ns",
    "parent_checkpoint_id", "step", "source", "created_at", "next", "interrupts",
    "pending_writes", "item_bytes", "stored_bytes", "referenced_bytes"}]}, newest first."""
    rows = []
    for item in saver.ops.history(thread_id, ns):
        t = item.tuple
        metadata = t.metadata or {}
        rows.append(
            {
                "checkpoint_id": item.entry.checkpoint_id,
                "checkpoint_ns": item.entry.ns,
                "parent_checkpoint_id": (
                    t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
                ),
                "step": metadata.get("step"),
                "source": metadata.get("source"),
                "created_at": t.checkpoint.get("ts"),
                "next": render.next_nodes(t.checkpoint),
                "interrupts": render.interrupts(t.pending_writes or []),
                "pending_writes": len(t.pending_writes or []),
                "item_bytes": item.item_bytes,
                "stored_bytes": item.stored_bytes,
                "referenced_bytes": item.referenced_bytes,
            }
        )
    return {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoints": rows}


def resolve_checkpoint(
    saver: S3DynamoSaver, thread_id: str, ns: str | None, given: str | None
) -> tuple[str, str | None]:
    """(namespace, full checkpoint id) from a full id or any unique start or end of one
    (`history` shows the last 12 characters): in namespace `ns`, or with `ns` None in the
    root namespace, else in whichever one namespace holds it (`history --ns '*'` lists
    them all). ValueError if several match."""
    if given is None:
        return ns or "", None
    every = saver.ops.checkpoints(thread_id)

    def matching(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        exact = [p for p in pairs if p[1] == given]
        return exact or [p for p in pairs if p[1].startswith(given) or p[1].endswith(given)]

    found = matching([p for p in every if p[0] == (ns or "")])
    if not found and ns is None:
        found = matching(every)
    if len(found) == 1:
        return found[0]
    if not found:
        elsewhere = sorted({where for where, _ in matching(every)})
        hint = (
            f"; it is in namespace {elsewhere[0]!r}: pass --ns {elsewhere[0]!r}"
            if elsewhere
            else ""
        )
        raise ThreadNotFoundError(
            f"thread {thread_id!r} has no checkpoint {given!r} in namespace {ns or ''!r}{hint}; "
            f"`s3dynamo history {thread_id} --ns '*'` lists them"
        )
    places = sorted({where or "(root)" for where, _ in found})
    raise ValueError(
        f"{given!r} matches {len(found)} checkpoints"
        + (f" in namespaces {places}" if len(places) > 1 else "")
        + "; give more of the id"
        + (", or --ns" if len(places) > 1 else "")
    )


def state(
    saver: S3DynamoSaver,
    thread_id: str,
    checkpoint_id: str | None,
    ns: str,
    *,
    redacted: bool = False,
) -> dict[str, Any]:
    """{"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
    "created_at", "step", "source", "metadata", "next", "values", "internal_channels",
    "pending_writes": [{"task_id", "channel", "value"}], "interrupts"}. With `redacted`,
    metadata and every value show their shape only (`render.redact`)."""
    configurable = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    t = saver.get_tuple({"configurable": configurable})
    if t is None:
        if checkpoint_id is None:
            saver.ops.checkpoint_ids(thread_id, ns)  # names an unknown thread
            raise ThreadNotFoundError(f"thread {thread_id!r} has no checkpoint in namespace {ns!r}")
        raise ThreadNotFoundError(
            f"thread {thread_id!r} has no checkpoint {checkpoint_id!r} in namespace {ns!r}; "
            f"`s3dynamo history {thread_id}` lists them"
        )
    values = t.checkpoint.get("channel_values", {})
    internal = {k for k in values if k.startswith(render.BRANCH_TO) or k.startswith("__")}
    metadata = t.metadata or {}
    shown = render.redact if redacted else _as_is
    interrupts = render.interrupts(t.pending_writes or [])
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
        "metadata": shown(render.jsonable(metadata)),
        "next": render.next_nodes(t.checkpoint),
        "values": {k: shown(render.jsonable(v)) for k, v in values.items() if k not in internal},
        "internal_channels": {k: shown(render.jsonable(values[k])) for k in sorted(internal)},
        "pending_writes": [
            {"task_id": task, "channel": ch, "value": shown(render.jsonable(v))}
            for task, ch, v in t.pending_writes or []
        ],
        "interrupts": [{**i, "value": shown(i["value"])} for i in interrupts],
    }


def _as_is(value: Any) -> Any:
    return value


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


def stats(
    saver: S3DynamoSaver, thread_id: str | None, progress: Progress = no_progress
) -> dict[str, Any]:
    """The stats report (README.md, "Command line") with its monthly cost."""
    data = saver.ops.stats(thread_id, progress).to_dict()
    data["cost"] = render.monthly_cost(
        data["items"]["count"], data["items"]["bytes"], data["objects"]["bytes"]
    )
    return data


def verify(
    saver: S3DynamoSaver, thread_id: str | None, progress: Progress = no_progress
) -> dict[str, Any]:
    """{"thread_id", "ok", "checked": {"items", "objects", "blobs", "opened"},
    "leftover_writes", "awaiting_collection", "memory":
    {"store" | "cache": {"namespaces", "items", "index items", "objects", "blobs",
    "opened"}} (the whole store only), "problems": [{"kind": "missing" | "unreferenced" |
    "tampered" | "unopenable" | "erased subject" | "unbacked loan" | ... (docs/CLI.md),
    "where": "item" | "object" | "store item" | "store directory" | "store vector index" |
    "cache item" | "cache directory", "key", "thread_id", "checkpoint_ns", "checkpoint_id",
    "detail"}], "hint": what to do about them, null when there are none}"""
    data = saver.ops.verify(thread_id, progress).to_dict()
    data["hint"] = render.verify_hint(data["problems"])
    return data


# ----------------------------------------------------------------- paging


def row_token(last_updated: str | None, thread_id: str) -> str:
    """An opaque token naming the last row of a page of `threads`."""
    raw = json.dumps([last_updated or "", thread_id], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_page_token(token: str) -> tuple[str, str]:
    """(last updated, thread id) from `row_token`; ValueError if it is not one."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        last, tid = json.loads(raw)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ValueError(f"--page-token {token!r} is not a token this command printed") from exc
    if not isinstance(last, str) or not isinstance(tid, str):
        raise ValueError(f"--page-token {token!r} is not a token this command printed")
    return last, tid


def thread_order(row: Mapping[str, Any]) -> tuple[bool, str, str]:
    """Sort key of `threads` rows: most recently updated first (rows without a time
    last), then by thread id."""
    return _order(row.get("last_updated") or "", row["thread_id"])


def _order(last: str, tid: str) -> tuple[bool, str, str]:
    return (not last, _invert(last), tid)


def _invert(text: str) -> str:
    return "".join(chr(0x10FFFF - ord(ch)) for ch in text)


def after_token(rows: Sequence[Mapping[str, Any]], token: str | None) -> list[Mapping[str, Any]]:
    """The rows (sorted by `thread_order`) after the row the token names."""
    if token is None:
        return list(rows)
    mark = _order(*parse_page_token(token))
    return [r for r in rows if thread_order(r) > mark]
