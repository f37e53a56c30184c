"""How the command line shows a plan (`ops/plan.py`) and carries it out, for every
command that changes the store: one table, by plan name, of the lines that say what it
would do and the line that says what it did. A dry run unless `--yes`; a plan with
nothing to do runs nothing, `--yes` or not; `--json` prints `{"plan", "executed",
"result"}` (docs/CLI.md)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from rich.markup import escape

from langgraph.checkpoint.s3dynamo.cli.common import (
    OK,
    emit_json,
    json_option,
    out,
    progress,
    store_options,
    yes_option,
)
from langgraph.checkpoint.s3dynamo.cli.render import (
    human_bytes,
    outcome,
    plural,
    shown_id,
    span,
    written,
)
from langgraph.checkpoint.s3dynamo.ops import Plan
from langgraph.checkpoint.s3dynamo.store import LEASE_TTL

Data = Mapping[str, Any]


@dataclass(frozen=True)
class Shown:
    """How one kind of plan reads: its lines (from its counts, and what the command
    adds), the line for what it did, and the progress bar's label while it runs (with
    `ticks`, the run reports how far it got)."""

    lines: Callable[[Data], list[str]]
    said: Callable[[Data, Any], str] = lambda _plan, result: outcome(result)
    doing: str = "working"
    ticks: bool = False


def _busy(result: Data) -> str:
    """What to do about threads a sweep left to another's lease: one that died holds them
    until the lease runs out (`ops/retention.py`)."""
    if not result.get("busy_threads"):
        return ""
    return (
        f"; {plural(result['busy_threads'], 'thread')} held under another's lease (a "
        f"run's thread_lock, or a sweep: one stopped midway holds its threads for up to "
        f"{span(LEASE_TTL)}): run again after that to finish them"
    )


def _older(p: Data, key: str) -> str:
    return span(timedelta(seconds=p[key]))


def _gc(p: Data) -> list[str]:
    older = f"older than {_older(p, 'grace_seconds')}"
    lines = [
        f"{plural(p['objects'], 'unreferenced object')} {older} ({human_bytes(p['bytes'])}) "
        f"in {plural(p['threads'], 'thread')}"
    ]
    if p["mode"] == "incremental":
        lines.append(
            f"named by {plural(p['intents'], 'upload intent')} {older} "
            "(`s3dynamo gc --full` lists the whole bucket prefix instead)"
        )
    elif p["unindexed"]:
        lines.append(
            f"{p['unindexed']} objects of threads with no item here are left alone "
            "(name the thread, or `s3dynamo delete THREAD`)"
        )
    if p.get("leftover_writes"):
        lines.append(
            f"{plural(p['leftover_writes'], 'leftover writes record')} {older}, of "
            "checkpoints never committed (or of a delete that stopped)"
        )
    return lines


def _expiry(p: Data) -> list[str]:
    idle = f"{plural(p['idle_threads'], 'thread')} idle for over {_older(p, 'ttl_seconds')}"
    if p["strategy"] == "keep_latest":
        n = p["keep_last"]
        kept = (
            "its latest checkpoints" if n == 1 else f"the {n} newest checkpoints of each namespace"
        )
        first = (
            f"{idle} with history to drop (each keeps {kept}); "
            f"{p['kept_threads']} idle with nothing to drop"
        )
    else:
        first = f"{idle} ({plural(p['records'], 'record')}, and their objects)"
    lines = [f"{first}; {p['active_threads']} active"]
    if p["leftovers"]:
        lines.append(
            f"leftovers of {plural(p['leftovers'], 'removed thread')} to clear (tombstones past "
            "the time to live, or a removal an earlier run left unfinished)"
        )
    if p["undated_threads"]:
        lines.append(
            f"{p['undated_threads']} threads have no stamp or time-based checkpoint id and are kept"
        )
    return lines


def _copy(p: Data) -> list[str]:
    lines = [
        f"copy {p['source']} -> {p['target']}: {plural(p['checkpoints'], 'checkpoint')}; "
        f"writes {plural(p['items'], 'item')}, shares {plural(p['objects'], 'object')} "
        "(no object is written)"
    ]
    if p["target_checkpoints"]:
        lines.append(
            f"the target already has {p['target_checkpoints']} checkpoints, all from an "
            "earlier copy of the source: --yes completes that copy if it is unfinished"
        )
    return lines


def _copied(p: Data, result: Any) -> str:
    n = result["copied_checkpoints"]
    whole = "" if n else " (it held the whole copy already)"
    return f"done: copied {plural(n, 'checkpoint')} to {p['target']}{whole}"


def _three(d: Data) -> str:
    return ", ".join(plural(d[f"{k}s"], k) for k in ("checkpoint", "item", "object"))


def _reencrypt(p: Data) -> list[str]:
    counts = ", ".join(f"{k}: {n}" for k, n in p["item_blobs"].items()) or "none"
    return [
        f"active key {p['active_key']}; {plural(len(p['threads']), 'thread')}",
        f"blobs in items by key: {counts}; {p['stale_item_blobs']} to re-seal "
        "(objects are checked as it runs)",
    ]


def _catalog(p: Data) -> list[str]:
    lines = [
        f"catalog of {', '.join(p['fields'])}: file {plural(p['threads'], 'thread')} "
        f"({p['entries']} entries)",
        *(
            [f"name {plural(p['namespaces'], 'Store namespace')} as their data subjects'"]
            if p["namespaces"]
            else []
        ),
    ]
    for s in p["skipped"]:
        lines.append(
            f"not filed: thread {s['partition']} (key id {s['key_id']}): {s['kind']}: {s['reason']}"
        )
    if p["skipped"]:
        lines.append(
            "with a thread not filed, the catalog is not recorded complete: searches by a "
            "declared field stay refused (CatalogNotBuiltError); `s3dynamo verify` tells "
            "each; restore or delete it (tampered), or build with its keys (other keys), "
            "then build again"
        )
    return lines


def _filed(p: Data, result: Any) -> str:
    filed = plural(result["threads"], "thread")
    entries = "1 entry" if result["entries"] == 1 else f"{result['entries']} entries"
    if result["complete"]:
        return f"done: filed {filed} ({entries}); the catalog is complete"
    unfiled = plural(result["skipped_threads"], "thread")
    return f"done: filed {filed} ({entries}); not complete: {unfiled} not filed"


def _expired(p: Data, result: Any) -> str:
    items, dropped = result["items"], result["namespaces_dropped"]
    return "removed " + "; ".join(
        f"{plural(items.get(label, 0), f'expired {label} item')} "
        f"({plural(dropped.get(label, 0), 'namespace')} left empty, dropped)"
        for label in items
    )


# By plan name (`Plan.name`): how it reads.
SHOWN = {
    "gc": Shown(_gc, doing="deleting"),
    "expiry": Shown(_expiry, lambda _p, r: outcome(r) + _busy(r), doing="removing"),
    "prune": Shown(
        lambda p: [
            f"{t['thread_id']}: {t['checkpoints']} checkpoints, keep {t['kept']}, "
            f"remove {t['removed']}"
            for t in p["threads"]
        ],
        lambda p, r: (
            f"done: removed {plural(r['removed_checkpoints'], 'checkpoint')} of "
            f"{plural(len(p['threads']), 'thread')}"
        ),
    ),
    "delete": Shown(
        lambda p: [
            f"delete thread {shown_id(p['thread_id'])}: {_three(p)} "
            f"({human_bytes(p['object_bytes'])})"
        ],
        lambda p, r: f"done: deleted thread {shown_id(p['thread_id'])}: {_three(r)}",
    ),
    "copy": Shown(_copy, _copied),
    "reencrypt": Shown(_reencrypt, doing="re-sealing threads", ticks=True),
    "rotate_key": Shown(
        lambda p: [
            f"active data key {p['active_key']} (KMS key {p['kms_key_id']}); a new one "
            "from KMS becomes active, the old ones stay readable",
            "then: s3dynamo reencrypt --yes",
        ]
    ),
    "import": Shown(
        lambda p: [
            f"{plural(len(p['threads']), 'thread')} in {p['source']}: "
            f"{plural(p['checkpoints_to_copy'], 'checkpoint')} to copy"
            + (f", {plural(p['writes_to_copy'], 'pending write')}" if p["writes_to_copy"] else ""),
            *(f"left alone: {t['conflict']}" for t in p["threads"] if t["conflict"]),
        ],
        doing="importing threads",
        ticks=True,
    ),
    "catalog": Shown(_catalog, _filed),
    "memory_delete": Shown(
        lambda p: [f"delete {p['what']}" if p["exists"] else "no such item"],
        lambda p, r: f"done: deleted {plural(r['items'], 'item')} ({p['what']})",
    ),
    "erasure": Shown(
        lambda p: [
            f"subject {p['subject']} ({p['state']}; key {p['key'] or 'none'}): "
            f"{plural(p['threads'], 'thread')}, {plural(p['namespaces'], 'Store namespace')}",
            "its key is destroyed first: nothing of it opens again, backups included",
        ],
        lambda p, r: (
            f"done: erased subject {r['subject']}: {plural(r['threads'], 'thread')} "
            f"({plural(r['checkpoints'], 'checkpoint')}), {plural(r['items'], 'Store item')} "
            f"in {plural(r['namespaces'], 'namespace')}; recorded (s3dynamo erasures)"
        ),
        doing="erasing",
        ticks=True,
    ),
    "subjects_build": Shown(
        lambda p: [
            f"{plural(p['threads'], 'thread')} and {plural(p['namespaces'], 'Store namespace')} "
            f"of {plural(p['subjects'], 'subject')} to seal under their subjects' keys",
            *(
                [f"{plural(p['skipped_threads'], 'thread')} skipped: other keys"]
                if p["skipped_threads"]
                else []
            ),
        ],
        lambda p, r: f"done: {plural(r['resealed'], 'blob')} sealed again under subjects' keys",
        doing="sealing",
    ),
    "namespace_delete": Shown(
        lambda p: [
            *(f"{written(n['namespace'])}  {plural(n['items'], 'item')}" for n in p["namespaces"]),
            f"delete {plural(p['items'], 'item')} in {plural(len(p['namespaces']), 'namespace')}",
        ],
        lambda p, r: f"done: deleted {plural(r['items'], 'item')} under {p['prefixes']}",
        doing="deleting",
    ),
    "memory_expiry": Shown(
        lambda p: [plural(n, f"expired {label} item") for label, n in p["items"].items()],
        _expired,
    ),
}


def show_plan(plan: Plan, as_json: bool, yes: bool, **about: Any) -> int:
    """Show a plan (its lines read its counts and `about`, what the command adds);
    with --yes, carry it out and say what it did."""
    shown = SHOWN[plan.name]
    run = yes and plan.work
    data = {**plan.counts, **about}
    if not as_json:
        for line in shown.lines(data):
            out.print(escape(line))
        sys.stdout.flush()  # said before the work: a log of a run killed midway holds it
    if run:
        with progress(shown.doing) as tick:
            plan.execute(**({"progress": tick} if shown.ticks else {}))
    if as_json:
        emit_json({"plan": plan.counts, "executed": run, "result": plan.result()})
        return OK
    if run:
        out.print(escape(shown.said(data, plan.result())), soft_wrap=True)
    else:
        out.print(
            "nothing changed; run again with --yes to do it" if plan.work else "nothing to do"
        )
    return OK


def plan_command(fn: Callable[..., Plan]) -> Callable[..., int]:
    """A command that makes a plan: with --json, --yes and the store options, and the
    plan it returns shown (and carried out on --yes) by `show_plan`."""

    @functools.wraps(fn)
    def command(*args: Any, as_json: bool, yes: bool, **kwargs: Any) -> int:
        return show_plan(fn(*args, **kwargs), as_json, yes)

    return json_option(yes_option(store_options(command)))
