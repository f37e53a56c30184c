"""The `s3dynamo` commands: click for parsing, rich for tables and progress bars.

Exit codes: 0 fine, 1 problems found (or an operation failed), 2 usage or
configuration (bad flags, missing settings, table or bucket, credentials, keys, unknown
thread). Errors a person can act on are one line on stderr with the fix; set
S3DYNAMO_DEBUG=1 for the traceback.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, TypeVar

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.pretty import Pretty
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import langgraph.checkpoint.s3dynamo.cli.collect as collect
import langgraph.checkpoint.s3dynamo.cli.render as render
from langgraph.checkpoint.s3dynamo import (
    IntegrityError,
    InvalidConfigError,
    KeyNotFoundError,
    ObjectNotFoundError,
    PlaintextRefusedError,
    S3DynamoError,
    S3DynamoSaver,
    StorageError,
    StoreMissingError,
    ThreadExistsError,
)
from langgraph.checkpoint.s3dynamo.cli.collect import UnknownThreadError

F = TypeVar("F", bound=Callable[..., Any])

OK, PROBLEMS, USAGE = 0, 1, 2
ALL_NAMESPACES = "*"
SHORT_ID = 12

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


# --------------------------------------------------------------------- settings


def store_options(fn: F) -> F:
    """--table, --bucket, --prefix, --region and --endpoint-url on every command."""
    options = [
        click.option("--table", envvar="S3DYNAMO_TABLE", help="DynamoDB table [S3DYNAMO_TABLE]"),
        click.option("--bucket", envvar="S3DYNAMO_BUCKET", help="S3 bucket [S3DYNAMO_BUCKET]"),
        click.option(
            "--prefix", envvar="S3DYNAMO_PREFIX", help="object key prefix [S3DYNAMO_PREFIX]"
        ),
        click.option("--region", help="AWS region [AWS_REGION]"),
        click.option(
            "--endpoint-url",
            help="endpoint of an S3- and DynamoDB-compatible server (sets both clients')",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="print JSON (shape: README)")(fn)


def yes_option(fn: F) -> F:
    return click.option("--yes", is_flag=True, help="carry out the plan (default: show it)")(fn)


def open_saver(
    table: str | None,
    bucket: str | None,
    prefix: str | None,
    region: str | None,
    endpoint_url: str | None,
) -> S3DynamoSaver:
    """A saver from the same environment as `S3DynamoSaver.from_env()`, flags first.
    Region and endpoint go through the AWS SDK's own variables, which the saver's
    clients read when they are built."""
    if region:
        os.environ["AWS_REGION"] = os.environ["AWS_DEFAULT_REGION"] = region
    if endpoint_url:
        os.environ["AWS_ENDPOINT_URL_S3"] = endpoint_url
        os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint_url
    overrides = {k: v for k, v in {"table": table, "bucket": bucket, "prefix": prefix}.items() if v}
    try:
        return S3DynamoSaver.from_env(**overrides)
    except InvalidConfigError as exc:
        if "table and bucket are required" in str(exc):
            raise InvalidConfigError(
                "no table or bucket given: pass --table and --bucket, or set S3DYNAMO_TABLE "
                "and S3DYNAMO_BUCKET (and S3DYNAMO_KEYS, S3DYNAMO_SECRET as the writers do)"
            ) from exc
        raise


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=repr) + "\n")


@contextmanager
def progress(label: str) -> Iterator[collect.Tick]:
    """A progress bar on stderr while threads are worked through; nothing when stderr is
    not a terminal, and gone when the work ends."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    task = bar.add_task(label, total=None)

    def tick(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield tick


def short(checkpoint_id: str | None) -> str:
    return checkpoint_id[-SHORT_ID:] if checkpoint_id else "-"


def resolve_checkpoint(
    saver: S3DynamoSaver, thread_id: str, ns: str, given: str | None
) -> str | None:
    """A full checkpoint id from a full id or any unique start or end of one (`history`
    shows the last 12 characters)."""
    if given is None:
        return None
    entries = collect.require_thread(saver.store, thread_id)
    ids = [e.checkpoint_id for e in entries if e.ns == ns]
    if given in ids:
        return given
    found = [c for c in ids if c.startswith(given) or c.endswith(given)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise UnknownThreadError(
            f"thread {thread_id!r} has no checkpoint {given!r} in namespace {ns!r}; "
            f"`s3dynamo history {thread_id}` lists them"
        )
    raise click.BadParameter(
        f"{given!r} matches {len(found)} checkpoints; give more of the id", param_hint="CHECKPOINT"
    )


# --------------------------------------------------------------------- the group


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="langgraph-checkpoint-s3dynamo", prog_name="s3dynamo")
def cli() -> None:
    """Inspect and maintain an s3dynamo checkpoint store (a DynamoDB table and an S3
    bucket). Settings come from the environment the saver reads (S3DYNAMO_TABLE,
    S3DYNAMO_BUCKET, S3DYNAMO_PREFIX, S3DYNAMO_KEYS, S3DYNAMO_SECRET, LANGGRAPH_AES_KEY,
    AWS_REGION, ...) or from flags. Commands that change the store show their plan and
    change nothing without --yes.

    Exit codes: 0 fine, 1 problems found, 2 usage or configuration.
    """


# ------------------------------------------------------------------------ reads


@cli.command()
@click.option(
    "--limit", default=50, show_default=True, type=click.IntRange(1), help="threads per page"
)
@click.option("--page-token", help="continue after the page that printed this token")
@json_option
@store_options
def threads(limit: int, page_token: str | None, as_json: bool, **settings: Any) -> int:
    """List threads, most recently updated first (a scan of the table)."""
    saver = open_saver(**settings)
    try:
        render.parse_page_token(page_token) if page_token else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--page-token") from None
    data = collect.threads(saver.store, limit=limit, page_token=page_token)
    if as_json:
        emit_json(data)
        return OK
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("thread", overflow="fold")
    table.add_column("checkpoints", justify="right")
    table.add_column("last step", justify="right")
    table.add_column("last updated (UTC)", no_wrap=True)
    for row in data["threads"]:
        table.add_row(
            escape(row["thread_id"]),
            str(row["checkpoints"]),
            "-" if row["last_step"] is None else str(row["last_step"]),
            render.short_time(row["last_updated"]),
        )
    if data["threads"]:
        out.print(table)
    else:
        out.print("no threads")
    if data["unreadable_records"]:
        err.print(
            f"{data['unreadable_records']} checkpoint items did not open (other keys or "
            "secret?); `s3dynamo verify` lists them"
        )
    if data["next_page_token"]:
        out.print(f"next page: s3dynamo threads --page-token {data['next_page_token']}")
    return OK


@cli.command()
@click.argument("thread_id")
@click.option("--ns", default="", help="checkpoint namespace (default: the root graph; '*': all)")
@click.option("--limit", type=click.IntRange(1), help="only the newest N checkpoints")
@json_option
@store_options
def history(thread_id: str, ns: str, limit: int | None, as_json: bool, **settings: Any) -> int:
    """Checkpoints of a thread, newest first: step, source, time, next nodes,
    interrupts and stored size."""
    saver = open_saver(**settings)
    data = collect.history(saver.store, thread_id, None if ns == ALL_NAMESPACES else ns)
    if limit is not None:
        data["checkpoints"] = data["checkpoints"][:limit]
    if as_json:
        emit_json(data)
        return OK
    every_ns = ns == ALL_NAMESPACES
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("checkpoint", no_wrap=True)
    if every_ns:
        table.add_column("ns", overflow="fold")
    table.add_column("step", justify="right")
    table.add_column("source")
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("next", overflow="fold")
    table.add_column("stored", justify="right", no_wrap=True)
    for row in data["checkpoints"]:
        nxt = ", ".join(row["next"]) or "-"
        if row["interrupts"]:
            nxt += f" ({render.plural(len(row['interrupts']), 'interrupt')})"
        cells = [short(row["checkpoint_id"])]
        if every_ns:
            cells.append(escape(row["checkpoint_ns"]) or "(root)")
        cells += [
            "-" if row["step"] is None else str(row["step"]),
            str(row["source"] or "-"),
            render.short_time(row["created_at"])[5:],
            escape(nxt),
            render.human_bytes(row["stored_bytes"]),
        ]
        table.add_row(*cells)
    out.print(table)
    return OK


def _print_value(name: str, value: Any, full: bool) -> None:
    if render.is_message_list(value) or (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and {"type", "content"} <= set(m) for m in value)
    ):
        out.print(f"[bold]{escape(name)}[/bold]  {render.plural(len(value), 'message')}")
        shown = value if full else value[-10:]
        if len(shown) < len(value):
            out.print(f"  … {len(value) - len(shown)} earlier (--full shows all)")
        for m in shown:
            out.print("  " + escape(render.message_line(m, 10_000 if full else 74)))
        return
    out.print(f"[bold]{escape(name)}[/bold]")
    out.print(
        Pretty(
            value,
            max_length=None if full else 3,
            max_string=None if full else 120,
            max_depth=None if full else 3,
            indent_guides=False,
        ),
        crop=not full,
    )


@cli.command()
@click.argument("thread_id")
@click.argument("checkpoint", required=False)
@click.option("--ns", default="", help="checkpoint namespace (default: the root graph)")
@click.option("--full", is_flag=True, help="show long values whole")
@json_option
@store_options
def show(
    thread_id: str, checkpoint: str | None, ns: str, full: bool, as_json: bool, **settings: Any
) -> int:
    """A checkpoint's state (default: the latest): values, pending writes, interrupts."""
    saver = open_saver(**settings)
    cid = resolve_checkpoint(saver, thread_id, ns, checkpoint)
    data = collect.state(saver, thread_id, cid, ns)
    if as_json:
        emit_json(data)
        return OK
    out.print(f"thread      {escape(thread_id)}" + (f"  (namespace {escape(ns)})" if ns else ""))
    out.print(f"checkpoint  {data['checkpoint_id']}")
    out.print(f"parent      {data['parent_checkpoint_id'] or '-'}")
    out.print(
        f"step {data['step']}, source {data['source']}, {render.short_time(data['created_at'])} UTC"
    )
    out.print(f"next        {escape(', '.join(data['next']) or '-')}")
    out.print()
    for name, value in data["values"].items():
        _print_value(name, value, full)
    if data["pending_writes"]:
        out.print()
        out.print(f"[bold]pending writes[/bold]  {len(data['pending_writes'])}")
        for w in data["pending_writes"]:
            out.print(
                f"  {escape(short(w['task_id']))}  {escape(w['channel'])}: "
                + escape(render.summary(w["value"], 50))
            )
    if data["interrupts"]:
        out.print()
        out.print(f"[bold]interrupts[/bold]  {len(data['interrupts'])}")
        for i in data["interrupts"]:
            out.print("  " + escape(render.summary(i["value"], 74)))
    return OK


@cli.command()
@click.argument("thread_id")
@click.argument("a", required=False)
@click.argument("b", required=False)
@click.option("--ns", default="", help="checkpoint namespace (default: the root graph)")
@json_option
@store_options
def diff(
    thread_id: str, a: str | None, b: str | None, ns: str, as_json: bool, **settings: Any
) -> int:
    """What changed between two checkpoints (default: the latest against its parent;
    one id: that checkpoint against its parent)."""
    saver = open_saver(**settings)
    a_id = resolve_checkpoint(saver, thread_id, ns, a)
    b_id = resolve_checkpoint(saver, thread_id, ns, b)
    data = collect.diff(saver, thread_id, a_id, b_id, ns)
    if as_json:
        emit_json(data)
        return OK
    old, new = data["from"], data["to"]
    if old is None:
        out.print(f"{short(new['checkpoint_id'])} (step {new['step']}) has no parent")
    else:
        out.print(
            f"from {short(old['checkpoint_id'])} (step {old['step']}, {old['source']}) "
            f"to {short(new['checkpoint_id'])} (step {new['step']}, {new['source']})"
        )
    for line in render.diff_lines(data["changes"]):
        out.print(escape(line))
    return OK


@cli.command()
@click.argument("thread_id", required=False)
@json_option
@store_options
def stats(thread_id: str | None, as_json: bool, **settings: Any) -> int:
    """Items, objects, stored and logical bytes, compression and reuse, per channel, and
    the monthly storage cost (us-east-1 list prices)."""
    saver = open_saver(**settings)
    with progress("reading") as tick:
        data = collect.stats(saver.store, thread_id, tick)
    if as_json:
        emit_json(data)
        return OK
    hb = render.human_bytes
    scope = f"thread {thread_id}" if thread_id else "whole store"
    out.print(
        f"{escape(scope)}: {render.plural(data['threads'], 'thread')}, "
        f"{render.plural(data['checkpoints'], 'checkpoint')}"
    )
    items, objects, values = data["items"], data["objects"], data["values"]
    out.print(f"DynamoDB  {render.plural(items['count'], 'item')}, {hb(items['bytes'])}")
    out.print(
        f"S3        {render.plural(objects['count'], 'object')}, {hb(objects['bytes'])}"
        + (f" ({objects['unreferenced']} unreferenced)" if objects["unreferenced"] else "")
    )
    out.print(
        f"values    {values['count']} stored for {values['references']} references: "
        f"{hb(values['logical_bytes'])} serialized -> {hb(values['sealed_bytes'])} sealed"
    )
    out.print(
        f"          compression x{data['compression_ratio'] or '-'}, "
        f"reuse x{data['reuse_ratio'] or '-'} (bytes referenced / bytes stored)"
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col, justify in (
        ("channel", "left"),
        ("values", "right"),
        ("refs", "right"),
        ("inline", "right"),
        ("objects", "right"),
        ("sealed", "right"),
        ("serialized", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in data["channels"]:
        table.add_row(
            escape(c["channel"]),
            str(c["values"]),
            str(c["references"]),
            str(c["inline"]),
            str(c["objects"]),
            hb(c["stored_bytes"]),
            hb(c["logical_bytes"]),
        )
    out.print(table)
    cost = data["cost"]
    out.print(
        f"monthly storage cost {render.usd(cost['total_monthly'])}: "
        f"DynamoDB {render.usd(cost['dynamodb_monthly'])}, S3 {render.usd(cost['s3_monthly'])}"
    )
    out.print(
        f"  ({cost['region']} list prices of {cost['prices_as_of']}: DynamoDB "
        f"${cost['dynamodb_gb_month']}/GB-month + {cost['dynamodb_item_overhead_bytes']} B "
        f"per item, S3 ${cost['s3_gb_month']}/GB-month)"
    )
    return OK


@cli.command()
@click.argument("thread_id", required=False)
@json_option
@store_options
def verify(thread_id: str | None, as_json: bool, **settings: Any) -> int:
    """Open and authenticate every item and object; report missing, unreferenced,
    tampered or unopenable ones. Exit 1 if any."""
    saver = open_saver(**settings)
    with progress("verifying threads") as tick:
        data = collect.verify(saver.store, thread_id, tick)
    if as_json:
        emit_json(data)
    else:
        c = data["checked"]
        out.print(
            f"checked {render.plural(c['items'], 'item')} and "
            f"{render.plural(c['objects'], 'object')}: {c['opened']} of "
            f"{c['blobs']} sealed blobs opened"
        )
        for p in data["problems"]:
            where = f"{p['where']} {p['key']}"
            owner = (
                f" (thread {p['thread_id']!r}, {short(p['checkpoint_id'])})"
                if p["checkpoint_id"]
                else ""
            )
            out.print(escape(f"{p['kind'].upper()}: {where}{owner}: {p['detail']}"), soft_wrap=True)
        out.print("ok" if data["ok"] else f"{render.plural(len(data['problems']), 'problem')}")
    if data["hint"]:
        err.print(f"s3dynamo: {data['hint']}")
        return USAGE
    return OK if data["ok"] else PROBLEMS


# ----------------------------------------------------------------- maintenance


def plan_then(
    as_json: bool, yes: bool, plan: Mapping[str, Any], lines: Sequence[str], act: Callable[[], Any]
) -> int:
    """Show a plan; with --yes, carry it out and report."""
    result = act() if yes else None
    if as_json:
        emit_json({"plan": plan, "executed": yes, "result": result})
        return OK
    for line in lines:
        out.print(escape(line))
    if yes:
        out.print(f"done{'' if result is None else ': ' + str(result)}")
    else:
        out.print("nothing changed; run again with --yes to do it")
    return OK


@cli.command()
@click.argument("thread_ids", nargs=-1)
@click.option(
    "--grace",
    default=3600,
    show_default=True,
    type=click.IntRange(0),
    help="seconds an unreferenced object must be old to go",
)
@json_option
@yes_option
@store_options
def gc(thread_ids: tuple[str, ...], grace: int, as_json: bool, yes: bool, **settings: Any) -> int:
    """Delete objects no item references, older than the grace period (default: the
    whole bucket of this deployment)."""
    saver = open_saver(**settings)
    with progress("planning"):
        gc_plan = saver.plan_garbage_collection(
            list(thread_ids) or None, grace=timedelta(seconds=grace)
        )
    plan = {
        "threads": len(gc_plan.candidates),
        "objects": gc_plan.objects,
        "bytes": gc_plan.bytes,
        "grace_seconds": grace,
        "foreign": gc_plan.foreign,
        "unindexed": gc_plan.unindexed,
    }
    lines = [
        f"{render.plural(plan['objects'], 'unreferenced object')} older than {grace} s "
        f"({render.human_bytes(plan['bytes'])}) in {render.plural(plan['threads'], 'thread')}",
    ]
    if plan["unindexed"]:
        lines.append(
            f"{plan['unindexed']} objects of threads with no item here are left alone "
            "(name the thread, or `s3dynamo delete THREAD`)"
        )

    def act() -> dict[str, int]:
        with progress("deleting"):
            return {"deleted": gc_plan.execute()}

    return plan_then(as_json, yes and plan["objects"] > 0, plan, lines, act)


@cli.command()
@click.option(
    "--older-than",
    envvar="S3DYNAMO_RETENTION",
    help="remove threads idle for longer than this: 30d, 12h, or days [S3DYNAMO_RETENTION]",
)
@json_option
@yes_option
@store_options
def expire(older_than: str | None, as_json: bool, yes: bool, **settings: Any) -> int:
    """Remove, whole, every thread idle for longer than the time to live (records and
    objects), and finish removals an earlier run left midway."""
    if not older_than:
        raise InvalidConfigError(
            "expire needs a time to live: pass --older-than 30d or set S3DYNAMO_RETENTION"
        )
    saver = open_saver(**settings)
    with progress("scanning"):
        found = saver.expire_idle_threads(older_than, dry_run=True)
    plan = {
        "ttl_seconds": int(found.ttl.total_seconds()),
        "idle_threads": len(found.idle),
        "records": found.records,
        "leftovers": len(found.leftovers),
        "active_threads": found.active,
        "undated_threads": found.undated,
    }
    lines = [
        f"{render.plural(plan['idle_threads'], 'thread')} idle for over {older_than} "
        f"({render.plural(plan['records'], 'record')}, and their objects); "
        f"{plan['active_threads']} active",
    ]
    if plan["leftovers"]:
        lines.append(f"{plan['leftovers']} removals left unfinished by an earlier run")
    if plan["undated_threads"]:
        lines.append(
            f"{plan['undated_threads']} threads have no stamp or time-based checkpoint id "
            "and are kept"
        )

    def act() -> dict[str, int]:
        with progress("removing"):
            done = found.execute()
        return {
            "removed_threads": len(done.removed),
            "records_deleted": done.records_deleted,
            "objects_deleted": done.objects_deleted,
            "busy_threads": len(done.busy),
            "revived_threads": len(done.revived),
        }

    work = plan["idle_threads"] + plan["leftovers"]
    return plan_then(as_json, yes and work > 0, plan, lines, act)


@cli.command()
@click.argument("thread_ids", nargs=-1, required=True)
@click.option(
    "--strategy",
    type=click.Choice(["keep_latest", "delete"]),
    default="keep_latest",
    show_default=True,
)
@json_option
@yes_option
@store_options
def prune(
    thread_ids: tuple[str, ...], strategy: str, as_json: bool, yes: bool, **settings: Any
) -> int:
    """Drop old checkpoints (keep_latest keeps each namespace's latest and what
    DeltaChannel needs to rebuild it) or whole threads (delete)."""
    saver = open_saver(**settings)
    plan = collect.prune_plan(saver.store, list(thread_ids), strategy)
    lines = [
        f"{t['thread_id']}: {t['checkpoints']} checkpoints, keep {t['kept']}, remove {t['removed']}"
        for t in plan["threads"]
    ]
    return plan_then(
        as_json, yes, plan, lines, lambda: saver.prune(list(thread_ids), strategy=strategy)
    )


@cli.command()
@click.argument("thread_id")
@json_option
@yes_option
@store_options
def delete(thread_id: str, as_json: bool, yes: bool, **settings: Any) -> int:
    """Delete a thread: every checkpoint, write and object, all namespaces."""
    saver = open_saver(**settings)
    plan = collect.delete_plan(saver.store, thread_id)
    lines = [
        f"delete thread {thread_id}: {render.plural(plan['checkpoints'], 'checkpoint')}, "
        f"{render.plural(plan['items'], 'item')}, {render.plural(plan['objects'], 'object')} "
        f"({render.human_bytes(plan['object_bytes'])})"
    ]
    return plan_then(as_json, yes, plan, lines, lambda: saver.delete_thread(thread_id))


@cli.command()
@click.argument("source")
@click.argument("target")
@json_option
@yes_option
@store_options
def copy(source: str, target: str, as_json: bool, yes: bool, **settings: Any) -> int:
    """Copy a thread to a new thread id (values re-sealed for the target)."""
    saver = open_saver(**settings)
    plan = collect.copy_plan(saver.store, source, target)
    lines = [
        f"copy {source} -> {target}: {render.plural(plan['checkpoints'], 'checkpoint')}, "
        f"{render.plural(plan['items'], 'item')}, {render.plural(plan['objects'], 'object')}"
    ]
    if plan["target_checkpoints"]:
        lines.append(
            f"the target already has {plan['target_checkpoints']} checkpoints: only an "
            "unfinished copy of the source can be completed"
        )
    return plan_then(as_json, yes, plan, lines, lambda: saver.copy_thread(source, target))


@cli.command()
@click.argument("thread_ids", nargs=-1)
@json_option
@yes_option
@store_options
def reencrypt(thread_ids: tuple[str, ...], as_json: bool, yes: bool, **settings: Any) -> int:
    """Re-seal every blob not sealed under the active key (the first of S3DYNAMO_KEYS),
    so an old key can leave the keyring. Default: every thread."""
    saver = open_saver(**settings)
    if saver.sealer.keyring is None:
        raise InvalidConfigError(
            "reencrypt needs sealing keys: set S3DYNAMO_KEYS=new:base64,old:base64 (the "
            "first is the active key) and S3DYNAMO_SECRET"
        )
    plan = collect.reencrypt_plan(saver.store, list(thread_ids) or None)
    counts = ", ".join(f"{k}: {n}" for k, n in plan["item_blobs"].items()) or "none"
    lines = [
        f"active key {plan['active_key']}; {render.plural(len(plan['threads']), 'thread')}",
        f"blobs in items by key: {counts}; {plan['stale_item_blobs']} to re-seal "
        "(objects are checked as it runs)",
    ]

    def act() -> dict[str, int]:
        total = 0
        with progress("re-sealing threads") as tick:
            tick(0, len(plan["threads"]))
            for done, tid in enumerate(plan["threads"], 1):
                total += saver.reencrypt([tid])
                tick(done, len(plan["threads"]))
        return {"resealed": total}

    return plan_then(as_json, yes, plan, lines, act)


@cli.command("rotate-key")
@json_option
@yes_option
@store_options
def rotate_key(as_json: bool, yes: bool, **settings: Any) -> int:
    """Add a new KMS data key and make it active (with S3DYNAMO_KMS_KEY_ID); run
    `reencrypt --yes` afterwards to move old blobs to it."""
    saver = open_saver(**settings)
    if saver.kms is None:
        raise InvalidConfigError(
            "rotate-key rotates KMS data keys: set S3DYNAMO_KMS_KEY_ID. With S3DYNAMO_KEYS, "
            "rotation is a setting: put the new key first, keep the old one, run "
            "`s3dynamo reencrypt --yes`, then drop the old key"
        )
    keyring = saver.sealer.keyring
    plan = {"active_key": keyring.active if keyring else None, "kms_key_id": saver.kms_key_id}
    lines = [
        f"active data key {plan['active_key']} (KMS key {plan['kms_key_id']}); a new one "
        "from KMS becomes active, the old ones stay readable",
        "then: s3dynamo reencrypt --yes",
    ]
    return plan_then(as_json, yes, plan, lines, lambda: {"active_key": saver.rotate_key()})


@cli.command()
@json_option
@store_options
def doctor(as_json: bool, **settings: Any) -> int:
    """Check table, bucket, keys and permissions up front, writing nothing: the same
    checks as `S3DynamoSaver.check()`."""
    saver = open_saver(**settings)
    report = saver.check(raise_on_problem=False)
    if as_json:
        emit_json({"ok": report.ok, "checked": report.lines, "problems": report.problems})
    else:
        for line in report.lines:
            out.print(escape(line))
        for problem in report.problems:
            err.print(f"s3dynamo: {escape(problem)}")
        out.print("ok" if report.ok else render.plural(len(report.problems), "problem"))
    return OK if report.ok else PROBLEMS


@cli.command()
@click.option("--keep", is_flag=True, help="leave the moto server running afterwards")
def demo(keep: bool) -> int:
    """Run the example agent on a local moto server (from_env, two processes, ainvoke,
    sealed), then this command line on what it stored."""
    try:
        import langgraph.checkpoint.s3dynamo.cli.demo as demo_module
    except ImportError as exc:
        raise InvalidConfigError(
            f"the demo needs {exc.name}; install it with: "
            'pip install "langgraph-checkpoint-s3dynamo[cli,testing]" langgraph'
        ) from None
    return demo_module.main(["--keep"] if keep else [])


# ---------------------------------------------------------------------- errors


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _named(exc: BaseException, *names: str) -> bool:
    return any(cls.__name__ in names for cause in _causes(exc) for cls in type(cause).__mro__)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def explain(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, one line with the fix) for errors a person can act on."""
    if _named(exc, "NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"):
        return USAGE, (
            "no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (a local server accepts any)"
        )
    if _named(exc, "NoRegionError"):
        return USAGE, "no AWS region: pass --region or set AWS_REGION"
    if _named(exc, "EndpointConnectionError", "ConnectionClosedError"):
        return USAGE, (
            f"cannot reach the service ({_one_line(exc)}); check --endpoint-url and the network"
        )
    if isinstance(exc, UnknownThreadError):
        return USAGE, _one_line(exc)
    if isinstance(exc, StoreMissingError):
        return USAGE, (
            f"{_one_line(exc)}; or check --table/--bucket (S3DYNAMO_TABLE, S3DYNAMO_BUCKET), "
            "--region and --endpoint-url"
        )
    if isinstance(exc, KeyNotFoundError):
        return USAGE, (
            f"{_one_line(exc)}; add that key to S3DYNAMO_KEYS (id:base64,...) as the "
            "writers have it"
        )
    if isinstance(exc, PlaintextRefusedError):
        return USAGE, _one_line(exc)
    if isinstance(exc, ObjectNotFoundError):
        return PROBLEMS, f"{_one_line(exc)}; `s3dynamo verify` lists every problem"
    if isinstance(exc, IntegrityError):
        return USAGE, (
            f"stored data did not open ({_one_line(exc)}): the sealing keys or naming secret "
            "differ from the writers' (S3DYNAMO_KEYS, S3DYNAMO_SECRET, LANGGRAPH_AES_KEY), or "
            "the data was altered (`s3dynamo verify` tells which)"
        )
    if isinstance(exc, (InvalidConfigError, ThreadExistsError)):
        return USAGE, _one_line(exc)
    if isinstance(exc, StorageError):
        return PROBLEMS, _one_line(exc)
    if isinstance(exc, S3DynamoError):
        return PROBLEMS, _one_line(exc)
    return None


def run(argv: Sequence[str] | None = None) -> None:
    """Run the command line and exit with its code."""
    try:
        code = cli.main(args=argv, prog_name="s3dynamo", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except click.exceptions.Abort:
        err.print("aborted")
        code = PROBLEMS
    except KeyboardInterrupt:
        err.print("interrupted")
        code = 130
    except Exception as exc:
        explained = explain(exc)
        if os.environ.get("S3DYNAMO_DEBUG") or (
            explained is None and not isinstance(exc, (ValueError, TypeError, OSError))
        ):
            raise
        code, message = explained or (PROBLEMS, f"{type(exc).__name__}: {_one_line(exc)}")
        err.print(f"s3dynamo: {escape(message)}", soft_wrap=True)
    sys.exit(code if isinstance(code, int) else OK)


main = functools.partial(run, None)
