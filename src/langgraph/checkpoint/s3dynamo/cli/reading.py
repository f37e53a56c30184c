"""The commands that read: threads, history, show, diff, stats, verify. Each gets a
report from `saver.ops` or a tuple from `get_tuple` (`views.py`) and draws it."""

from __future__ import annotations

from typing import Any

import click
from rich import box
from rich.markup import escape
from rich.pretty import Pretty
from rich.table import Table

import langgraph.checkpoint.s3dynamo.cli.render as render
import langgraph.checkpoint.s3dynamo.cli.views as views
from langgraph.checkpoint.s3dynamo import S3DynamoSaver
from langgraph.checkpoint.s3dynamo.cli.common import (
    ALL_NAMESPACES,
    OK,
    PROBLEMS,
    cli,
    emit_json,
    err,
    json_option,
    open_saver,
    out,
    progress,
    short,
    store_options,
)


def resolve(
    saver: S3DynamoSaver, thread_id: str, ns: str | None, given: str | None
) -> tuple[str, str | None]:
    try:
        return views.resolve_checkpoint(saver, thread_id, ns, given)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="CHECKPOINT") from None


NS_HELP = (
    "checkpoint namespace (default: the root graph, or the namespace of the checkpoint "
    "named, as `history --ns '*'` lists them)"
)

# ------------------------------------------------------------------------ reads


@cli.command()
@click.option(
    "--limit", default=50, show_default=True, type=click.IntRange(1), help="threads per page"
)
@click.option("--page-token", help="continue after the page that printed this token")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="only threads whose latest checkpoint's metadata has KEY equal to the text VALUE, "
    "or, for a value of another type, each pair of a JSON object ('{\"user_id\": 42}'); "
    "repeatable, a key once; on a declared catalog field, from the thread catalog",
)
@json_option
@store_options
def threads(
    limit: int, page_token: str | None, filters: tuple[str, ...], as_json: bool, **settings: Any
) -> int:
    """List threads, most recently updated first: a scan of the table, or, with --filter
    on a field declared in S3DYNAMO_CATALOG_FIELDS, the thread catalog (only the threads
    that have had that value are read)."""
    saver = open_saver(**settings)
    try:
        views.parse_page_token(page_token) if page_token is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--page-token") from None
    try:
        metadata = render.metadata_filter(filters)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--filter") from None
    data = views.threads(saver, limit=limit, page_token=page_token, metadata=metadata)
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
            escape(render.shown_id(row["thread_id"])),
            "-" if row["checkpoints"] is None else str(row["checkpoints"]),
            "-" if row["last_step"] is None else str(row["last_step"]),
            render.short_time(row["last_updated"]),
        )
    if data["threads"]:
        out.whole(table)
    else:
        out.print("no threads")
    if data["unreadable_records"]:
        err.print(
            f"{data['unreadable_records']} checkpoint items did not open (other keys or "
            "secret?); `s3dynamo verify` lists them"
        )
    if data["next_page_token"]:
        out.print(
            f"next page: s3dynamo threads --page-token {data['next_page_token']}", soft_wrap=True
        )
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
    data = views.history(saver, thread_id, None if ns == ALL_NAMESPACES else ns)
    if limit is not None:
        data["checkpoints"] = data["checkpoints"][:limit]
    if as_json:
        emit_json(data)
        return OK
    if ns != ALL_NAMESPACES:
        out.print(_history_table(data["checkpoints"]))
        return OK
    # Every namespace: a heading per namespace, on a line of its own, then its rows; a
    # column of `node:<uuid>` namespaces would wrap a character or two per line at 80.
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in data["checkpoints"]:
        groups.setdefault(row["checkpoint_ns"], []).append(row)
    for i, name in enumerate(sorted(groups, key=lambda n: n != "")):
        if i:
            out.print()
        out.print(f"namespace {escape(name) or '(root)'}", soft_wrap=True)
        out.print(_history_table(groups[name]))
    return OK


def _history_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("checkpoint", no_wrap=True)
    table.add_column("step", justify="right")
    table.add_column("source")
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("next", overflow="fold")
    table.add_column("stored", justify="right", no_wrap=True)
    for row in rows:
        nxt = ", ".join(row["next"]) or "-"
        if row["interrupts"]:
            nxt += f" ({render.plural(len(row['interrupts']), 'interrupt')})"
        table.add_row(
            short(row["checkpoint_id"]),
            "-" if row["step"] is None else str(row["step"]),
            str(row["source"] or "-"),
            render.short_time(row["created_at"])[5:],
            escape(nxt),
            render.human_bytes(row["stored_bytes"]),
        )
    return table


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
    out.whole(
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
@click.option("--ns", help=NS_HELP)
@click.option("--full", is_flag=True, help="show long values and pending writes whole")
@click.option("--redact", is_flag=True, help="show the shape of values, not their text or numbers")
@json_option
@store_options
def show(
    thread_id: str,
    checkpoint: str | None,
    ns: str | None,
    full: bool,
    redact: bool,
    as_json: bool,
    **settings: Any,
) -> int:
    """A checkpoint's state (default: the latest): values, pending writes, interrupts."""
    saver = open_saver(**settings)
    ns, cid = resolve(saver, thread_id, ns, checkpoint)
    data = views.state(saver, thread_id, cid, ns, redacted=redact)
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
            head = f"  {short(w['task_id'])}  {w['channel']}: "
            if full:
                _print_lines(head, render.value_lines(w["value"], 74 - len(head), full=True))
            else:
                out.print(escape(head + render.summary(w["value"], 50)))
    if data["interrupts"]:
        out.print()
        out.print(f"[bold]interrupts[/bold]  {len(data['interrupts'])}")
        for i in data["interrupts"]:
            _print_lines("  ", render.value_lines(i["value"], 74, full))
    return OK


def _print_lines(head: str, lines: list[str]) -> None:
    """The first line after `head`, the rest indented two spaces; long lines run on
    rather than being cut or folded, so a pasted value stays whole."""
    out.print(escape(head + lines[0]), soft_wrap=True)
    for line in lines[1:]:
        out.print(escape("  " + line), soft_wrap=True)


@cli.command()
@click.argument("thread_id")
@click.argument("a", required=False)
@click.argument("b", required=False)
@click.option("--ns", help=NS_HELP)
@json_option
@store_options
def diff(
    thread_id: str, a: str | None, b: str | None, ns: str | None, as_json: bool, **settings: Any
) -> int:
    """What changed between two checkpoints of one namespace (default: the latest against
    its parent; one id: that checkpoint against its parent)."""
    saver = open_saver(**settings)
    a_ns, a_id = resolve(saver, thread_id, ns, a)
    _, b_id = resolve(saver, thread_id, a_ns, b)  # in A's namespace
    data = views.diff(saver, thread_id, a_id, b_id, a_ns)
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
        data = views.stats(saver, thread_id, tick)
    if thread_id is None:
        # Long-term memory's share (`s3dynamo memory stats`).
        data["memory"] = saver.ops.memory.stats()
        data["cost"] = _with_memory(data["cost"], data["memory"])
    if as_json:
        emit_json(data)
        return OK
    _print_totals(thread_id, data)
    out.print(_channels_table(data["channels"]))
    if "memory" in data:
        from langgraph.checkpoint.s3dynamo.cli.memory import stats_lines

        for line in stats_lines(data["memory"]):
            out.print(escape(line))
    _print_cost(data["cost"])
    return OK


def _print_totals(thread_id: str | None, data: dict[str, Any]) -> None:
    """What `stats` read, in all: threads and checkpoints, DynamoDB's items, S3's
    objects, and the values' sizes with their compression and reuse."""
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


def _channels_table(channels: list[dict[str, Any]]) -> Table:
    """A row a channel: its values and references, inline and in objects, and their
    sealed and serialized bytes."""
    hb = render.human_bytes
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
    for c in channels:
        table.add_row(
            escape(c["channel"]),
            str(c["values"]),
            str(c["references"]),
            str(c["inline"]),
            str(c["objects"]),
            hb(c["stored_bytes"]),
            hb(c["logical_bytes"]),
        )
    return table


def _print_cost(cost: dict[str, Any]) -> None:
    """The monthly storage cost, by service (and long-term memory's share, when
    counted), and the prices it is reckoned at."""
    out.print(
        f"monthly storage cost {render.usd(cost['total_monthly'])}: "
        f"DynamoDB {render.usd(cost['dynamodb_monthly'])}, S3 {render.usd(cost['s3_monthly'])}"
        + (
            f", of which long-term memory {render.usd(cost['memory_monthly'])}"
            if "memory_monthly" in cost
            else ""
        )
    )
    out.print(
        f"  ({cost['region']} list prices of {cost['prices_as_of']}: DynamoDB "
        f"${cost['dynamodb_gb_month']}/GB-month + {cost['dynamodb_item_overhead_bytes']} B "
        f"per item, S3 ${cost['s3_gb_month']}/GB-month)"
    )


def _with_memory(cost: dict[str, Any], memory: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The threads' cost plus the Store's and the cache's: their items and directory
    entries at the same per-item overhead, their inline blobs and their objects."""
    items = sum(s["items"] + s["namespaces"] for s in memory.values())
    inline = sum(s["inline_bytes"] for s in memory.values())
    objects = sum(s["object_bytes"] for s in memory.values())
    share = render.monthly_cost(items, inline, objects)
    out = dict(cost)
    for part in ("dynamodb_monthly", "s3_monthly", "total_monthly"):
        out[part] = cost[part] + share[part]
    out["memory_monthly"] = share["total_monthly"]
    return out


@cli.command()
@click.argument("thread_id", required=False)
@json_option
@store_options
def verify(thread_id: str | None, as_json: bool, **settings: Any) -> int:
    """Open and authenticate every item and object; report missing, unreferenced,
    tampered or unopenable ones. Exit 1 if any."""
    saver = open_saver(**settings)
    with progress("verifying threads") as tick:
        data = views.verify(saver, thread_id, tick)
    if as_json:
        emit_json(data)
    else:
        c = data["checked"]
        out.print(
            f"checked {render.plural(c['items'], 'item')} and "
            f"{render.plural(c['objects'], 'object')}: {c['opened']} of "
            f"{c['blobs']} sealed blobs opened"
        )
        if leftover := data["leftover_writes"]:
            out.print(
                f"{render.plural(leftover, 'leftover writes record')} (of checkpoints never "
                "committed, or of a delete that stopped): no reader sees them, no problem; "
                "`s3dynamo gc --full` removes them after the grace"
            )
        if awaiting := data["awaiting_collection"]:
            out.print(
                f"{render.plural(awaiting, 'unreferenced object')} named by upload intents "
                "(of writes under way, replaced values, crashes): no problem; `s3dynamo gc` "
                "removes them after the grace"
            )
        for space, m in data.get("memory", {}).items():
            out.print(
                f"{space}: {render.plural(m['namespaces'], 'namespace')}, "
                f"{render.plural(m['items'], 'item')}, "
                f"{render.plural(m['index items'], 'index item')} and "
                f"{render.plural(m['objects'], 'object')}: {m['opened']} of "
                f"{m['blobs']} sealed blobs opened"
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
            out.print(escape(f"what to do: {data['hint']}"), soft_wrap=True)
    return OK if data["ok"] else PROBLEMS
