"""`s3dynamo memory ...`: the Store's long-term memory (namespaces, items, search,
delete, namespace delete, expiry) and the node cache's share, read with the writers'
keys. A namespace is written with `/` between its labels (`users/42/memories`); a `/` or
`\\` inside a label is written `\\/` or `\\\\`, so a label holding one is never taken
for two."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.markup import escape

from langgraph.checkpoint.s3dynamo.cli import render
from langgraph.checkpoint.s3dynamo.cli.common import (
    OK,
    USAGE,
    cli,
    emit_json,
    err,
    json_option,
    open_saver,
    out,
    progress,
    store_options,
    yes_option,
)
from langgraph.checkpoint.s3dynamo.cli.plans import plan_command, show_plan
from langgraph.checkpoint.s3dynamo.ops import Plan
from langgraph.checkpoint.s3dynamo.ops.memory import namespaces_found

FILTER_EXAMPLE = {"kind": "note"}


def _namespace(text: str) -> tuple[str, ...]:
    """A namespace as written on the command line (`render.written`): labels between `/`,
    where `\\` makes the next character part of the label."""
    labels, label, escaped = [], "", False
    for ch in text:
        if escaped or ch not in "\\/":
            label, escaped = label + ch, False
        elif ch == "\\":
            escaped = True
        else:
            labels.append(label)
            label = ""
    labels.append(label + ("\\" if escaped else ""))
    return tuple(part for part in labels if part)


def _store(**settings: Any) -> Any:
    from langgraph.store.s3dynamo import S3DynamoStore

    return S3DynamoStore.from_saver(open_saver(**settings))


def _filter(given: tuple[str, ...]) -> dict[str, Any] | None:
    """--filter, repeatable, every one applying, as `threads --filter` takes it
    (`render.metadata_filter`): KEY=VALUE (VALUE as text), or a JSON object of field
    values, as LangGraph's `search(filter=...)` takes it (other types: `{"n": 3}`)."""
    try:
        found = render.metadata_filter(given, "kind=note", json.dumps(FILTER_EXAMPLE))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--filter") from None
    return found or None


def _item(item: Any) -> dict[str, Any]:
    data: dict[str, Any] = item.dict()
    return data


@cli.group()
def memory() -> None:
    """The Store's long-term memory and the node cache, on the same table and bucket."""


@memory.command()
@click.option("--under", "ns_prefix", default="", help="only namespaces under this one (a/b)")
@click.option("--max-depth", type=int, help="cut namespaces to this many labels")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@json_option
@store_options
def namespaces(
    ns_prefix: str, max_depth: int | None, limit: int, as_json: bool, **settings: Any
) -> int:
    """List namespaces (one Query of the namespace directory)."""
    store = _store(**settings)
    found = store.list_namespaces(
        prefix=_namespace(ns_prefix) or None, max_depth=max_depth, limit=limit
    )
    if as_json:
        emit_json([list(ns) for ns in found])
        return OK
    for ns in found:
        out.print(escape(render.written(ns)))
    return OK


@memory.command(name="show")
@click.argument("namespace")
@click.argument("key")
@json_option
@store_options
def show_item(namespace: str, key: str, as_json: bool, **settings: Any) -> int:
    """One item's value and times (its TTL is not refreshed)."""
    store = _store(**settings)
    item = store.get(_namespace(namespace), key, refresh_ttl=False)
    if item is None:
        expired = store.saver.ops.memory.expired_at(_namespace(namespace), key)
        if expired is not None:
            err.print(
                f"s3dynamo: item {escape(key)!r} in namespace {escape(namespace)!r} expired "
                f"at {expired:%Y-%m-%d %H:%M:%S} UTC; an expired item is never read back, "
                "and `s3dynamo memory expire` removes it (not yet swept)",
                soft_wrap=True,
            )
            return USAGE
        err.print(
            f"s3dynamo: no item {escape(key)!r} in namespace {escape(namespace)!r}: none was "
            "put there, or it was deleted. `s3dynamo memory search "
            f"{escape(namespace)}` lists the items there",
            soft_wrap=True,
        )
        return USAGE
    if as_json:
        emit_json(_item(item))
        return OK
    out.print(f"{escape(namespace)} {escape(key)}  created {item.created_at:%Y-%m-%d %H:%M:%S}")
    out.print(escape(json.dumps(item.value, indent=2, ensure_ascii=False, default=repr)))
    return OK


@memory.command()
@click.argument("namespace", default="")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="only items whose value has KEY equal to the text VALUE (repeatable); or a JSON "
    "object of field values, for other types: '{\"n\": 3}'",
)
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True)
@json_option
@store_options
def search(
    namespace: str, filters: tuple[str, ...], limit: int, as_json: bool, **settings: Any
) -> int:
    """Items under a namespace prefix, newest first, optionally filtered (TTLs are not
    refreshed). No ranking by a query: the command line has no embedding function."""
    wanted = _filter(filters)  # refused before any request
    store = _store(**settings)
    found = store.search(_namespace(namespace), filter=wanted, limit=limit, refresh_ttl=False)
    if as_json:
        emit_json([_item(i) for i in found])
        return OK
    for item in found:
        value = json.dumps(item.value, ensure_ascii=False, default=repr)
        where = render.written(tuple(item.namespace))
        out.print(escape(f"{where}  {item.key}  {render.shorten(value, 80)}"))
    return OK


@memory.command(name="delete")
@click.argument("namespace")
@click.argument("key")
@json_option
@yes_option
@store_options
def delete_item(namespace: str, key: str, as_json: bool, yes: bool, **settings: Any) -> int:
    """Delete one item (and its object)."""
    store = _store(**settings)
    ns = _namespace(namespace)
    exists = store.get(ns, key, refresh_ttl=False) is not None
    counts = {"namespace": list(ns), "key": key, "exists": exists}

    def delete() -> dict[str, int]:
        store.delete(ns, key)
        return {"items": 1}

    plan = Plan("memory_delete", counts, delete, exists)
    return show_plan(plan, as_json, yes, what=f"item {key!r} of {namespace!r}")


@memory.command(name="delete-namespace")
@click.argument("prefixes", nargs=-1, required=True, metavar="PREFIX...")
@json_option
@yes_option
@store_options
def delete_namespace(prefixes: tuple[str, ...], as_json: bool, yes: bool, **settings: Any) -> int:
    """Delete every item of each PREFIX (a/b) and of every namespace below it, with their
    objects and search indexes: a user's memories purged."""
    wanted = [_namespace(text) for text in prefixes]
    for text, ns in zip(prefixes, wanted, strict=True):
        if not ns:
            raise click.BadParameter(
                f"expected a namespace such as users/42, got {text!r}, which would be the "
                "whole Store; `s3dynamo memory namespaces --max-depth 1` lists the top-level "
                "namespaces, to delete one by one",
                param_hint="PREFIX",
            )
    saver = open_saver(**settings)
    with progress("reading"):
        plans = [saver.ops.memory.plan_namespace_delete(ns) for ns in wanted]
    found = {tuple(n["namespace"]): n["items"] for p in plans for n in p.counts["namespaces"]}
    plan = Plan(
        "namespace_delete",
        namespaces_found(wanted, found),
        lambda: {"items": sum(p.execute() for p in plans)},
        bool(found),
    )
    return show_plan(plan, as_json, yes, prefixes=", ".join(prefixes))


@memory.command(name="stats")
@json_option
@store_options
def memory_stats(as_json: bool, **settings: Any) -> int:
    """Namespaces, items and bytes of the Store and the node cache."""
    saver = open_saver(**settings)
    with progress("reading"):
        data = saver.ops.memory.stats()
    if as_json:
        emit_json(data)
        return OK
    for line in stats_lines(data):
        out.print(escape(line))
    return OK


def stats_lines(data: dict[str, dict[str, int]]) -> list[str]:
    hb = render.human_bytes
    return [
        f"{label:<8}  {render.plural(s['namespaces'], 'namespace')}, "
        f"{render.plural(s['items'], 'item')} ({s['expired']} expired, not yet swept): "
        f"{hb(s['inline_bytes'])} in the table, {render.plural(s['objects'], 'object')} "
        f"{hb(s['object_bytes'])}"
        for label, s in data.items()
    ]


@memory.command(name="expire")
@plan_command
def expire_memory(**settings: Any) -> Plan:
    """Remove expired Store items and cache entries (per space: a Query of the directory,
    then one of each namespace). An expired item is never read back whether or not this
    runs."""
    saver = open_saver(**settings)
    with progress("scanning"):
        return saver.ops.memory.plan_expiry()
