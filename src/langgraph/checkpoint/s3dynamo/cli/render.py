"""Pure formatting for the command line: values as JSON, diffs of two states, what a
checkpoint will run next, monthly cost, sizes, and `--filter` options read.

No I/O and no click or rich here, so all of it is unit-tested on plain values.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Prices used by `stats` (USD, AWS us-east-1, on-demand list prices, free tiers ignored):
# DynamoDB Standard table class storage, plus the 100 bytes DynamoDB adds to every item;
# S3 Standard storage, first 50 TB. A GB here is 2**30 bytes, as AWS bills storage.
PRICES_AS_OF = "2026-11-30"
PRICE_REGION = "us-east-1"
DYNAMODB_GB_MONTH = 0.25
DYNAMODB_ITEM_OVERHEAD = 100
S3_GB_MONTH = 0.023
GB = 1 << 30

# LangGraph's reserved channel names this module reads.
INTERRUPT = "__interrupt__"
TASKS = "__pregel_tasks"
START = "__start__"
BRANCH_TO = "branch:to:"
JOIN = "join:"  # a node after several: `join:<source>+<source>:<node>` (LangGraph's naming)


# --------------------------------------------------------------------- values


def is_message(value: Any) -> bool:
    """A LangChain message (duck-typed: a pydantic model with `type` and `content`)."""
    return (
        isinstance(getattr(value, "type", None), str)
        and hasattr(value, "content")
        and hasattr(value, "model_dump")
    )


def is_message_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(map(is_message, value))


def message_json(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": message.type, "content": jsonable(message.content)}
    if getattr(message, "id", None):
        out["id"] = message.id
    if getattr(message, "name", None):
        out["name"] = message.name
    calls = getattr(message, "tool_calls", None)
    if calls:
        out["tool_calls"] = jsonable(calls)
    if getattr(message, "tool_call_id", None):
        out["tool_call_id"] = message.tool_call_id
    return out


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of a stored value: messages as {type, content, id, ...}, pydantic
    models and dataclasses as dicts, bytes as base64, sets as sorted lists, datetimes as
    ISO text, anything else unknown as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if is_message(value):
        return message_json(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=repr)
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if hasattr(value, "_asdict"):
        return jsonable(value._asdict())
    return repr(value)


def message_line(message: Mapping[str, Any], width: int = 72) -> str:
    """One message (as `message_json` makes it) on one line: `type: content`."""
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if message.get("tool_calls"):
        names = ", ".join(str(c.get("name", "?")) for c in message["tool_calls"])
        text = f"{text} [calls {names}]".strip()
    return f"{message.get('type', '?')}: {shorten(text, width)}"


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def summary(value: Any, width: int = 60) -> str:
    """A JSON-ready value on one line if it fits `width` characters, else a description
    of it (keys, length, size)."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= width:
        return text
    if isinstance(value, dict):
        if set(value) == {"base64"}:
            return f"{len(base64.b64decode(value['base64']))} bytes"
        keys = ", ".join(map(str, list(value)[:4])) + (", …" if len(value) > 4 else "")
        return shorten(f"{{{keys}}} ({len(value)} keys, {size_of(value)})", width)
    if isinstance(value, list):
        return f"list of {len(value)} ({size_of(value)})"
    return shorten(text, width)


def size_of(value: Any) -> str:
    return human_bytes(len(json.dumps(value, ensure_ascii=False).encode()))


def value_lines(value: Any, width: int, full: bool) -> list[str]:
    """A JSON-ready value as JSON text: one line if it fits `width`, else indented; unless
    `full`, long strings, lists and dicts inside it are cut short (see `clip`)."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= width:
        return [text]
    return json.dumps(value if full else clip(value), ensure_ascii=False, indent=2).splitlines()


def clip(value: Any, max_string: int = 120, max_items: int = 10) -> Any:
    """A copy of a JSON-ready value with strings cut at `max_string` characters and lists
    and dicts at `max_items` entries, each cut marked with what was left out."""
    if isinstance(value, str):
        return value if len(value) <= max_string else value[: max_string - 1] + "…"
    if isinstance(value, list):
        kept = [clip(v, max_string, max_items) for v in value[:max_items]]
        return kept + ([f"… {len(value) - max_items} more"] if len(value) > max_items else [])
    if isinstance(value, dict):
        out = {k: clip(v, max_string, max_items) for k, v in list(value.items())[:max_items]}
        if len(value) > max_items:
            out["…"] = f"{len(value) - max_items} more keys"
        return out
    return value


# What `redact` keeps of a message: its kind and identity, not what it says.
MESSAGE_KEPT = ("type", "id", "tool_call_id")


def redact(value: Any) -> Any:
    """A copy of a JSON-ready value that shows its shape, not its content: keys, lists,
    booleans and nulls are kept; every string becomes `<N chars>` and every number
    `<number>`; a message keeps its type and ids."""
    if isinstance(value, str):
        return f"<{plural(len(value), 'char')}>"
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return "<number>"
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, dict):
        message = "type" in value and "content" in value
        return {k: v if message and k in MESSAGE_KEPT else redact(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------- diffs


def diff_states(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What changed between two states' channel values (both JSON-ready), channel by
    channel, in channel order; unchanged channels are left out.

    Each change is {"channel", "change": "added" | "removed" | "changed", ...}: message
    lists that grew carry "messages_added" (and "messages_removed" if any went), dicts
    carry "keys_added", "keys_removed", "keys_changed", everything carries "before" and
    "after" (null where absent)."""
    out: list[dict[str, Any]] = []
    for channel in sorted(set(before) | set(after)):
        if channel.startswith(BRANCH_TO) or channel == START:
            continue
        old, new = before.get(channel), after.get(channel)
        if channel in before and channel in after and old == new:
            continue
        change = (
            "added" if channel not in before else "removed" if channel not in after else "changed"
        )
        entry: dict[str, Any] = {"channel": channel, "change": change, "before": old, "after": new}
        if _messages(old) or _messages(new):
            old_ids = [_message_key(m) for m in old or []]
            new_ids = [_message_key(m) for m in new or []]
            entry["messages_added"] = [m for m in new or [] if _message_key(m) not in old_ids]
            removed = [m for m in old or [] if _message_key(m) not in new_ids]
            if removed:
                entry["messages_removed"] = removed
        elif isinstance(old, dict) and isinstance(new, dict):
            entry["keys_added"] = sorted(set(new) - set(old))
            entry["keys_removed"] = sorted(set(old) - set(new))
            entry["keys_changed"] = sorted(k for k in set(old) & set(new) if old[k] != new[k])
        out.append(entry)
    return out


def _messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "type" in m and "content" in m for m in value)
    )


def _message_key(message: Mapping[str, Any]) -> str:
    return str(message.get("id") or json.dumps(message, sort_keys=True, ensure_ascii=False))


def diff_lines(changes: Sequence[Mapping[str, Any]], width: int = 78) -> list[str]:
    """The changes of `diff_states` as text lines: `+`/`-` for messages and keys,
    `before -> after` for small values."""
    if not changes:
        return ["no channel changed"]
    lines: list[str] = []
    for c in changes:
        name, change = c["channel"], c["change"]
        if "messages_added" in c:
            added, removed = c["messages_added"], c.get("messages_removed", [])
            head = f"{name}: {plural(len(added), 'message')} added"
            if removed:
                head += f", {len(removed)} removed"
            lines.append(head)
            lines += ["  + " + message_line(m, width - 4) for m in added]
            lines += ["  - " + message_line(m, width - 4) for m in removed]
        elif "keys_changed" in c:
            lines.append(f"{name}: {summary(c['before'], 30)} -> {summary(c['after'], 30)}")
            for sign, key in (("+", "keys_added"), ("-", "keys_removed"), ("~", "keys_changed")):
                for k in c[key]:
                    value = c["after" if sign != "-" else "before"][k]
                    lines.append(f"  {sign} {k}: {summary(value, width - len(str(k)) - 6)}")
        elif change == "added":
            lines.append(f"{name}: added {summary(c['after'], width - len(name) - 8)}")
        elif change == "removed":
            lines.append(f"{name}: removed (was {summary(c['before'], width - len(name) - 15)})")
        else:
            half = max((width - len(name) - 6) // 2, 10)
            lines.append(f"{name}: {summary(c['before'], half)} -> {summary(c['after'], half)}")
    return lines


# ------------------------------------------------------------- graph progress


def next_nodes(checkpoint: Mapping[str, Any]) -> list[str]:
    """The nodes a checkpoint will run next, read from the checkpoint alone (no graph):
    nodes whose trigger channel (`branch:to:<node>`, `__start__`, or a join
    `join:<a>+<b>:<node>` every one of whose sources has written) holds a value written
    after the node last saw it, plus the targets of pending `Send` packets. This is what
    `graph.get_state(config).next` shows for graphs built with LangGraph 0.3 or later."""
    versions = checkpoint.get("channel_versions", {}) or {}
    seen = checkpoint.get("versions_seen", {}) or {}
    values = checkpoint.get("channel_values", {}) or {}
    found: list[str] = []
    for channel, version in versions.items():
        if channel not in values:
            continue  # consumed: a trigger channel's value goes once a node has read it
        if channel.startswith(BRANCH_TO):
            node = channel[len(BRANCH_TO) :]
        elif channel.startswith(JOIN) and channel.count(":") == 2:
            sources, node = channel[len(JOIN) :].split(":")
            seen_by, ready = values[channel], True
            if isinstance(seen_by, list | tuple) and len(seen_by) == 2:
                seen_by, ready = seen_by  # a deferred node's join: (seen, the rest finished)
            if not ready or not set(sources.split("+")) <= set(seen_by or ()):
                continue  # a source has yet to write: the join does not trigger
        elif channel == START:
            node = START
        else:
            continue
        last = (seen.get(node) or {}).get(channel)
        if last is None or _version_key(last) < _version_key(version):
            found.append(node)
    for packet in values.get(TASKS, []) or []:
        node = getattr(packet, "node", None)
        if isinstance(node, str):
            found.append(node)
    return sorted(set(found), key=found.index)


def _version_key(version: Any) -> tuple[float, str]:
    text = str(version)
    try:
        return float(text.split(".")[0]), text
    except ValueError:
        return 0.0, text


def interrupts(pending_writes: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Interrupts raised at a checkpoint: the `__interrupt__` pending writes, each
    interrupt as {"task_id", "id", "value"}."""
    out: list[dict[str, Any]] = []
    for task_id, channel, value in pending_writes:
        if channel != INTERRUPT:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            out.append(
                {
                    "task_id": task_id,
                    "id": getattr(item, "id", None),
                    "value": jsonable(getattr(item, "value", item)),
                }
            )
    return out


# ------------------------------------------------------------- sizes and cost


def monthly_cost(items: int, item_bytes: int, object_bytes: int) -> dict[str, Any]:
    """What storing this costs a month at the list prices above (USD)."""
    dynamodb = (item_bytes + DYNAMODB_ITEM_OVERHEAD * items) / GB * DYNAMODB_GB_MONTH
    s3 = object_bytes / GB * S3_GB_MONTH
    return {
        "currency": "USD",
        "region": PRICE_REGION,
        "prices_as_of": PRICES_AS_OF,
        "dynamodb_gb_month": DYNAMODB_GB_MONTH,
        "dynamodb_item_overhead_bytes": DYNAMODB_ITEM_OVERHEAD,
        "s3_gb_month": S3_GB_MONTH,
        "dynamodb_monthly": dynamodb,
        "s3_monthly": s3,
        "total_monthly": dynamodb + s3,
    }


def usd(amount: float) -> str:
    if amount == 0:
        return "$0"
    if amount < 0.01:
        return f"${amount:.6f}"
    return f"${amount:,.2f}"


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def outcome(result: Any) -> str:
    """What an executed plan did, as a line: its figures by name ("deleted 3"; a nested
    mapping as "items: store 2, cache 0"), not a Python repr."""
    if result is None:
        return "done"
    if not isinstance(result, Mapping):
        return f"done: {result}"

    def said(name: str, value: Any) -> str:
        label = name.replace("_", " ")
        if isinstance(value, Mapping):
            return f"{label}: " + ", ".join(said(str(k), v) for k, v in value.items())
        return f"{label} {value}"

    parts = [said(str(k), v) for k, v in result.items() if k != "dry_run"]
    return "done: " + "; ".join(parts) if parts else "done"


# What to do about each kind of problem `verify` reports, in the order they are told.
VERIFY_FIXES = {
    "missing": "missing: reading its checkpoint raises ObjectNotFoundError; restore it "
    '(docs/SCALE.md, "Disaster recovery") or remove that checkpoint (`s3dynamo prune` or '
    "`delete`)",
    "tampered": "tampered: the stored bytes were altered; restore them from a backup and "
    "check who can write the table and bucket (docs/SECURITY.md)",
    "unopenable": "unopenable: sealed under a key not given here; add it to S3DYNAMO_KEYS "
    "as the writers have it",
    "erased subject": "erased subject: of a data subject whose key an erasure destroyed, "
    "brought back by a restore or left by an erasure under way; it never opens again: "
    "`s3dynamo erase-subject` of that subject (again) removes it",
    "unreferenced": "unreferenced: no reader uses it; `s3dynamo gc --full` removes it once "
    "older than the grace period (a younger one may be a write under way)",
    "unbacked loan": "unbacked loan: no copy wrote it and it keeps nothing; delete the item",
    "orphaned catalog entry": "orphaned catalog entry: a search passes over it; delete the item",
    "dangling back-reference": "dangling back-reference: a search by its value misses the "
    "thread; `s3dynamo catalog build` files it again",
    "unfiled thread": "unfiled thread: search_threads misses it; `s3dynamo catalog build` files it",
    "forged tombstone": "forged tombstone: no delete set it and the next run puts it back; "
    'check who can write the table (docs/SECURITY.md, "Tombstones")',
    "unfinished delete": "unfinished delete: new runs of the thread are refused as deleted; "
    "`s3dynamo delete` it again",
    "unfinished copy": "unfinished copy: it never showed and its source is gone; delete the "
    "target (its detail says which thread, and how)",
}


def verify_hint(problems: Sequence[Mapping[str, Any]]) -> str | None:
    """`verify`'s "hint": what to do about the kinds of problem found, one clause per
    kind; None when there are none."""
    kinds = {p["kind"] for p in problems}
    fixes = [fix for kind, fix in VERIFY_FIXES.items() if kind in kinds]
    fixes += sorted(f"{kind}: see its detail" for kind in kinds - VERIFY_FIXES.keys())
    return "; ".join(fixes) or None


def shown_id(text: str) -> str:
    """An id as a table shows it: as it is when that is unambiguous, else quoted as
    Python writes it (`'user 42 '`, `''`, `'a\\nb'`): one that is empty, has spaces at
    either end, holds a character that does not print, or starts with a quote."""
    plain = text and text == text.strip() and text.isprintable() and text[0] not in "'\""
    return text if plain else repr(text)


def span(delta: dt.timedelta) -> str:
    """A duration in its largest whole unit, as --older-than takes it: 30d, 12h, 90m, 45s."""
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{delta.total_seconds():g}s"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def short_time(iso: str | None) -> str:
    """`2026-11-30T09:15:02.123456+00:00` -> `2026-11-30 09:15:02`."""
    if not iso:
        return "-"
    return iso.replace("T", " ")[:19]


def metadata_filter(
    given: Sequence[str], example: str = "user_id=ada", json_example: str = '{"user_id": 42}'
) -> dict[str, Any]:
    """`--filter` options as one filter, every one applying, by one rule for `threads`
    and `memory search`: KEY=VALUE (the value is text), or a JSON object of keys and
    values, for a value of another type (`{"user_id": 42}`). ValueError naming an option
    that is neither, or a key given twice (a field has one value)."""
    out: dict[str, Any] = {}
    for text in given:
        if text.lstrip().startswith("{"):
            try:
                found = json.loads(text)
            except ValueError:
                found = None
            if not isinstance(found, dict):
                raise ValueError(
                    f"expected a JSON object of field values, got {text!r}; for example "
                    f"--filter '{json_example}', or --filter {example}"
                )
        else:
            key, eq, value = text.partition("=")
            if not eq or not key:
                raise ValueError(
                    f"expected KEY=VALUE, such as {example}, got {text!r}; or a JSON object "
                    f"of field values, for a value that is no text: --filter '{json_example}'"
                )
            found = {key: value}
        for key, value in found.items():
            if key in out:
                raise ValueError(
                    f"{key!r} is given twice (as {out[key]!r} and as {value!r}); a field has "
                    "one value: give it once"
                )
            out[key] = value
    return out


def written(namespace: Sequence[str]) -> str:
    """A namespace as the command line writes it: `/` between labels, and a `/` or `\\`
    inside a label escaped with `\\`, so that `cli/memory._namespace` reads it back."""
    return "/".join(label.replace("\\", "\\\\").replace("/", "\\/") for label in namespace)
