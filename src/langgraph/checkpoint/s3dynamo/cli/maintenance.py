"""The commands that change the store (gc, expire, prune, delete, copy, reencrypt,
rotate-key, catalog build), each showing the plan `saver.ops` makes and executing it
only with `--yes`; and doctor and demo."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

import langgraph.checkpoint.s3dynamo.cli.render as render
import langgraph.checkpoint.s3dynamo.cli.sources as sources
from langgraph.checkpoint.s3dynamo import InvalidConfigError
from langgraph.checkpoint.s3dynamo.cli.common import (
    OK,
    PROBLEMS,
    cli,
    emit_json,
    err,
    json_option,
    open_saver,
    out,
    plan_then,
    progress,
    scope_option,
    store_options,
    yes_option,
)
from langgraph.checkpoint.s3dynamo.ops import GcPlan, IncrementalGcPlan
from langgraph.checkpoint.s3dynamo.settings import duration


@cli.command()
@click.argument("thread_ids", nargs=-1)
@click.option(
    "--grace",
    default="1h",
    show_default=True,
    help="how old an unreferenced object (and the upload intent naming it) must be to go: "
    "1h, 30m, 90s, 2d, or a number of seconds",
)
@click.option(
    "--full",
    is_flag=True,
    help="the repair: list the deployment's whole bucket prefix and read every thread it "
    "finds, instead of only what the upload journal names",
)
@scope_option
@json_option
@yes_option
@store_options
def gc(
    thread_ids: tuple[str, ...],
    grace: str,
    full: bool,
    scope: str | None,
    as_json: bool,
    yes: bool,
    **settings: Any,
) -> int:
    """Delete objects no item references, older than the grace period. By default only
    what crashed or refused writes left (named by their upload intents: no listing of the
    bucket); --full, or naming threads, lists their objects instead, and deletes leftover
    writes records (of checkpoints never committed) too."""
    span = duration(grace, "--grace", bare="seconds", zero=True)
    saver = open_saver(**settings)
    incremental = not full and not thread_ids
    with progress("planning"):
        if incremental:
            gc_plan: GcPlan | IncrementalGcPlan = saver.ops.plan_incremental_garbage_collection(
                grace=span
            )
        else:
            gc_plan = saver.ops.plan_garbage_collection(
                list(thread_ids) or None, grace=span, scope=scope
            )
    plan = gc_plan.to_dict()
    older = f"older than {render.span(span)}"
    lines = [
        f"{render.plural(plan['objects'], 'unreferenced object')} {older} "
        f"({render.human_bytes(plan['bytes'])}) in {render.plural(plan['threads'], 'thread')}",
    ]
    if incremental:
        lines.append(
            f"named by {render.plural(plan['intents'], 'upload intent')} {older} "
            "(`s3dynamo gc --full` lists the whole bucket prefix instead)"
        )
    elif plan["unindexed"]:
        lines.append(
            f"{plan['unindexed']} objects of threads with no item here are left alone "
            "(name the thread, or `s3dynamo delete THREAD`)"
        )
    leftovers = plan.get("leftover_writes", 0)
    if leftovers:
        lines.append(
            f"{render.plural(leftovers, 'leftover writes record')} {older}, of checkpoints "
            "never committed (or of a delete that stopped)"
        )

    def act() -> dict[str, int]:
        with progress("deleting"):
            done = {"deleted": gc_plan.execute()}
        if leftovers:
            done["writes_deleted"] = getattr(gc_plan, "writes_deleted", 0)
        return done

    work = plan["objects"] > 0 or leftovers > 0 or (incremental and plan["intents"] > 0)
    return plan_then(as_json, yes, plan, lines, act, work=work)


@cli.command()
@click.option(
    "--older-than",
    help="threads idle for longer than this: 30d, 12h, or days [S3DYNAMO_RETENTION, S3DYNAMO_TTL]",
)
@click.option(
    "--strategy",
    type=click.Choice(["delete", "keep_latest"]),
    help="delete: remove idle threads whole; keep_latest: keep each one's latest checkpoints "
    "[S3DYNAMO_RETENTION_STRATEGY, default delete]",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=1),
    metavar="N",
    help="with keep_latest: the checkpoints each namespace keeps, newest first "
    "[S3DYNAMO_RETENTION_KEEP_LAST, default 1]",
)
@click.option(
    "--scope",
    metavar="PREFIX",
    help="the prefix the sweep acts on: the saver's own (--prefix); without one, on a table "
    "that holds tenants, say '' for the unprefixed threads, or '*' for every tenant's in one "
    "Scan (strategy delete)",
)
@click.option(
    "--full",
    is_flag=True,
    help="find idle threads with a Scan of the whole table instead of the idle index (a "
    "repair; the first sweep does it anyway, and indexes the threads it finds)",
)
@json_option
@yes_option
@store_options
def expire(
    older_than: str | None,
    strategy: str | None,
    keep_last: int | None,
    scope: str | None,
    full: bool,
    as_json: bool,
    yes: bool,
    **settings: Any,
) -> int:
    """Expire every thread idle for longer than the time to live: remove it whole
    (records and objects) or keep only its latest checkpoints (the N newest of each
    namespace with --keep-last N); finish what an earlier run left midway."""
    ttl = duration(older_than, "--older-than") if older_than else None
    saver = open_saver(**settings)
    if ttl is None and saver.settings.retention is None:
        raise InvalidConfigError(
            "expire needs a time to live: pass --older-than 30d or set S3DYNAMO_RETENTION"
        )
    with progress("scanning"):
        found = saver.ops.plan_expiry(
            ttl, strategy=strategy, keep_last=keep_last, scope=scope, full=full
        )
    plan = found.to_dict()
    idle = f"{render.plural(plan['idle_threads'], 'thread')} idle for over {render.span(found.ttl)}"
    if found.strategy == "keep_latest":
        kept = (
            "its latest checkpoints"
            if found.keep_last == 1
            else f"the {found.keep_last} newest checkpoints of each namespace"
        )
        lines = [
            f"{idle} with history to drop (each keeps {kept}); "
            f"{plan['kept_threads']} idle with nothing to drop; {plan['active_threads']} active"
        ]
    else:
        lines = [
            f"{idle} ({render.plural(plan['records'], 'record')}, and their objects); "
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
            return found.execute().result()

    work = plan["idle_threads"] + plan["leftovers"]
    return plan_then(as_json, yes, plan, lines, act, work=work > 0)


@cli.command()
@click.argument("thread_ids", nargs=-1, required=True)
@click.option(
    "--strategy",
    type=click.Choice(["keep_latest", "delete"]),
    default="keep_latest",
    show_default=True,
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="with keep_latest: the checkpoints each namespace keeps, newest first",
)
@json_option
@yes_option
@store_options
def prune(
    thread_ids: tuple[str, ...],
    strategy: str,
    keep_last: int,
    as_json: bool,
    yes: bool,
    **settings: Any,
) -> int:
    """Drop old checkpoints (keep_latest keeps each namespace's latest, or its N newest
    with --keep-last N, and what DeltaChannel needs to rebuild them) or whole threads
    (delete)."""
    saver = open_saver(**settings)
    pruning = saver.ops.plan_prune(list(thread_ids), strategy, keep_last)
    plan = pruning.to_dict()
    lines = [
        f"{t['thread_id']}: {t['checkpoints']} checkpoints, keep {t['kept']}, remove {t['removed']}"
        for t in plan["threads"]
    ]
    work = any(t["removed"] for t in plan["threads"])

    def said(result: dict[str, int]) -> str:
        removed = render.plural(result["removed_checkpoints"], "checkpoint")
        return f"done: removed {removed} of {render.plural(len(plan['threads']), 'thread')}"

    return plan_then(as_json, yes, plan, lines, pruning.execute, work=work, said=said)


@cli.command()
@click.argument("thread_id")
@json_option
@yes_option
@store_options
def delete(thread_id: str, as_json: bool, yes: bool, **settings: Any) -> int:
    """Delete a thread: every checkpoint, write and object, all namespaces."""
    saver = open_saver(**settings)
    deleting = saver.ops.plan_delete(thread_id)
    plan = deleting.to_dict()
    lines = [
        f"delete thread {thread_id}: {render.plural(plan['checkpoints'], 'checkpoint')}, "
        f"{render.plural(plan['items'], 'item')}, {render.plural(plan['objects'], 'object')} "
        f"({render.human_bytes(plan['object_bytes'])})"
    ]

    def said(result: dict[str, int]) -> str:
        counts = (render.plural(result[f"{k}s"], k) for k in ("checkpoint", "item", "object"))
        return f"done: deleted thread {thread_id}: {', '.join(counts)}"

    return plan_then(as_json, yes, plan, lines, deleting.execute, said=said)


@cli.command()
@click.argument("source")
@click.argument("target")
@click.option(
    "--keep-last",
    type=click.IntRange(min=1),
    default=None,
    help="Copy only each namespace's N newest checkpoints (and what they need), read "
    "newest first: the cost does not grow with the source's history.",
)
@json_option
@yes_option
@store_options
def copy(
    source: str, target: str, keep_last: int | None, as_json: bool, yes: bool, **settings: Any
) -> int:
    """Copy a thread to a new thread id: its index items are written again, its objects
    shared (no object is written). A target with checkpoints of its own, or the source
    itself, is refused before the plan (exit 2)."""
    saver = open_saver(**settings)
    copying = saver.ops.plan_copy(source, target, keep_last=keep_last)
    plan = copying.to_dict()
    lines = [
        f"copy {source} -> {target}: {render.plural(plan['checkpoints'], 'checkpoint')}; "
        f"writes {render.plural(plan['items'], 'item')}, shares "
        f"{render.plural(plan['objects'], 'object')} (no object is written)"
    ]
    if plan["target_checkpoints"]:
        lines.append(
            f"the target already has {plan['target_checkpoints']} checkpoints, all from an "
            "earlier copy of the source: --yes completes that copy if it is unfinished"
        )

    def act() -> dict[str, int]:
        return {"copied_checkpoints": copying.execute()}

    def said(result: dict[str, int]) -> str:
        copied = render.plural(result["copied_checkpoints"], "checkpoint")
        whole = " (it held the whole copy already)" if not result["copied_checkpoints"] else ""
        return f"done: copied {copied} to {target}{whole}"

    return plan_then(as_json, yes, plan, lines, act, said=said)


@cli.command()
@click.argument("thread_ids", nargs=-1)
@scope_option
@json_option
@yes_option
@store_options
def reencrypt(
    thread_ids: tuple[str, ...], scope: str | None, as_json: bool, yes: bool, **settings: Any
) -> int:
    """Re-seal every blob not sealed under the active key (the first of S3DYNAMO_KEYS),
    so an old key can leave the keyring. Default: every thread."""
    saver = open_saver(**settings)
    resealing = saver.ops.plan_reencrypt(list(thread_ids) or None, scope=scope)
    plan = resealing.to_dict()
    counts = ", ".join(f"{k}: {n}" for k, n in plan["item_blobs"].items()) or "none"
    lines = [
        f"active key {plan['active_key']}; {render.plural(len(plan['threads']), 'thread')}",
        f"blobs in items by key: {counts}; {plan['stale_item_blobs']} to re-seal "
        "(objects are checked as it runs)",
    ]

    def act() -> dict[str, int]:
        with progress("re-sealing threads") as tick:
            return {"resealed": int(resealing.execute(tick))}

    return plan_then(as_json, yes, plan, lines, act, work=bool(plan["threads"]))


@cli.command("rotate-key")
@json_option
@yes_option
@store_options
def rotate_key(as_json: bool, yes: bool, **settings: Any) -> int:
    """Add a new KMS data key and make it active (with S3DYNAMO_KMS_KEY_ID); run
    `reencrypt --yes` afterwards to move old blobs to it."""
    saver = open_saver(**settings)
    if saver.parts.kms is None:
        raise InvalidConfigError(
            "rotate-key rotates KMS data keys: set S3DYNAMO_KMS_KEY_ID. With S3DYNAMO_KEYS, "
            "rotation is a setting: put the new key first, keep the old one, run "
            "`s3dynamo reencrypt --yes`, then drop the old key"
        )
    keyring = saver.parts.sealer.keyring
    plan = {
        "active_key": keyring.active if keyring else None,
        "kms_key_id": saver.settings.kms_key_id,
    }
    lines = [
        f"active data key {plan['active_key']} (KMS key {plan['kms_key_id']}); a new one "
        "from KMS becomes active, the old ones stay readable",
        "then: s3dynamo reencrypt --yes",
    ]
    return plan_then(as_json, yes, plan, lines, lambda: {"active_key": saver.ops.rotate_key()})


@cli.command()
@json_option
@store_options
def doctor(as_json: bool, **settings: Any) -> int:
    """Check table, bucket, keys and permissions up front, writing nothing: the same
    checks as `saver.ops.check()`."""
    saver = open_saver(**settings)
    report = saver.ops.check(raise_on_problem=False)
    if as_json:
        emit_json({"ok": report.ok, "checked": report.lines, "problems": report.problems})
    else:
        for line in report.lines:
            out.print(escape(line))
        for problem in report.problems:
            err.print(f"s3dynamo: {escape(problem)}", soft_wrap=True)
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
            'pip install "langgraph-checkpoint-s3dynamo[cli,testing]" langgraph '
            '(from a clone: pip install ".[cli,testing]" langgraph, or make demo)'
        ) from None
    return demo_module.main(["--keep"] if keep else [])


@cli.command("import")
@click.option("--from", "source", required=True, metavar="SOURCE", help=sources.EXPECTED)
@click.argument("thread_ids", nargs=-1)
@json_option
@yes_option
@store_options
def import_threads(
    source: str, thread_ids: tuple[str, ...], as_json: bool, yes: bool, **settings: Any
) -> int:
    """Copy threads, whole histories, from another LangGraph checkpointer (default: every
    thread it has). Resumable; a thread that already has other checkpoints here is
    reported and left alone. Exit 1 if any was."""
    saver = open_saver(**settings)
    region = settings.get("region") or saver.settings.region
    with sources.open_source(source, region) as src:
        with progress("reading the source"):
            importing = saver.ops.plan_import(src, list(thread_ids) or None)
        plan = importing.to_dict()
        lines = [
            f"{render.plural(len(plan['threads']), 'thread')} in {source}: "
            f"{render.plural(plan['checkpoints_to_copy'], 'checkpoint')} to copy"
        ]
        lines += [f"left alone: {t.conflict}" for t in importing.conflicts]

        def act() -> dict[str, Any]:
            with progress("importing threads") as tick:
                return importing.execute(tick).result()

        code = plan_then(as_json, yes, plan, lines, act, work=plan["checkpoints_to_copy"] > 0)
    return PROBLEMS if importing.conflicts else code


@cli.group()
def catalog() -> None:
    """The thread catalog (S3DYNAMO_CATALOG_FIELDS): threads by declared metadata values."""


@catalog.command(name="build")
@json_option
@yes_option
@store_options
def catalog_build(as_json: bool, yes: bool, **settings: Any) -> int:
    """File every thread the deployment holds in the thread catalog (one Scan), then record
    that the catalog of each declared field is complete: once, after declaring a field on
    a deployment that already has threads."""
    saver = open_saver(**settings)
    with progress("reading every thread") as tick:
        building = saver.ops.catalog.plan_build(tick)
    plan = building.to_dict()
    lines = [
        f"catalog of {', '.join(plan['fields'])}: file "
        f"{render.plural(plan['threads'], 'thread')} "
        f"({plan['entries']} entries)"
    ]
    for s in plan["skipped"]:
        lines.append(
            f"not filed: thread {s['partition']} (key id {s['key_id']}): {s['kind']}: {s['reason']}"
        )
    if plan["skipped"]:
        lines.append(
            "with a thread not filed, the catalog is not recorded complete: searches by a "
            "declared field stay refused (CatalogNotBuiltError); `s3dynamo verify` tells "
            "each; restore or delete it (tampered), or build with its keys (other keys), "
            "then build again"
        )

    def build() -> dict[str, Any]:
        return building.execute().to_dict()

    def said(result: dict[str, Any]) -> str:
        filed = render.plural(result["threads"], "thread")
        entries = "1 entry" if result["entries"] == 1 else f"{result['entries']} entries"
        if result["complete"]:
            return f"done: filed {filed} ({entries}); the catalog is complete"
        unfiled = render.plural(result["skipped_threads"], "thread")
        return f"done: filed {filed} ({entries}); not complete: {unfiled} not filed"

    return plan_then(as_json, yes, plan, lines, build, said=said)
