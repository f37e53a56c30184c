"""The commands that change the store (gc, expire, prune, delete, copy, reencrypt,
rotate-key, catalog build), each making the plan (`saver.ops`) that `cli/plans.py` shows
and executes only with `--yes`; and doctor and demo."""

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
    progress,
    scope_option,
    store_options,
    yes_option,
)
from langgraph.checkpoint.s3dynamo.cli.plans import plan_command, show_plan
from langgraph.checkpoint.s3dynamo.config.settings import duration
from langgraph.checkpoint.s3dynamo.ops import Plan


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
@plan_command
def gc(
    thread_ids: tuple[str, ...], grace: str, full: bool, scope: str | None, **settings: Any
) -> Plan:
    """Delete objects no item references, older than the grace period. By default only
    what crashed or refused writes left (named by their upload intents: no listing of the
    bucket); --full, or naming threads, lists their objects instead, and deletes leftover
    writes records (of checkpoints never committed) too."""
    span = duration(grace, "--grace", bare="seconds", zero=True)
    saver = open_saver(**settings)
    with progress("planning"):
        if not full and not thread_ids:
            plan = saver.ops.plan_incremental_garbage_collection(grace=span)
        else:
            plan = saver.ops.plan_garbage_collection(
                list(thread_ids) or None, grace=span, scope=scope
            )
    return plan


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
@plan_command
def expire(
    older_than: str | None,
    strategy: str | None,
    keep_last: int | None,
    scope: str | None,
    full: bool,
    **settings: Any,
) -> Plan:
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
        return saver.ops.plan_expiry(
            ttl, strategy=strategy, keep_last=keep_last, scope=scope, full=full
        )


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
@plan_command
def prune(thread_ids: tuple[str, ...], strategy: str, keep_last: int, **settings: Any) -> Plan:
    """Drop old checkpoints (keep_latest keeps each namespace's latest, or its N newest
    with --keep-last N, and what DeltaChannel needs to rebuild them) or whole threads
    (delete)."""
    return open_saver(**settings).ops.plan_prune(list(thread_ids), strategy, keep_last)


@cli.command()
@click.argument("thread_id")
@plan_command
def delete(thread_id: str, **settings: Any) -> Plan:
    """Delete a thread: every checkpoint, write and object, all namespaces."""
    return open_saver(**settings).ops.plan_delete(thread_id)


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
@plan_command
def copy(source: str, target: str, keep_last: int | None, **settings: Any) -> Plan:
    """Copy a thread to a new thread id: its index items are written again, its objects
    shared (no object is written). A target with checkpoints of its own, or the source
    itself, is refused before the plan (exit 2)."""
    return open_saver(**settings).ops.plan_copy(source, target, keep_last=keep_last)


@cli.command()
@click.argument("thread_ids", nargs=-1)
@scope_option
@click.option(
    "--allow-plaintext-read",
    is_flag=True,
    help="read blobs stored without encryption too, to seal them: turning encryption on "
    "over a deployment written in plaintext (docs/SECURITY.md)",
)
@plan_command
def reencrypt(
    thread_ids: tuple[str, ...], scope: str | None, allow_plaintext_read: bool, **settings: Any
) -> Plan:
    """Re-seal every blob not sealed under the active key (the first of S3DYNAMO_KEYS),
    so an old key can leave the keyring. Default: every thread."""
    saver = open_saver(allow_plaintext_read=allow_plaintext_read, **settings)
    return saver.ops.plan_reencrypt(list(thread_ids) or None, scope=scope)


@cli.command("rotate-key")
@plan_command
def rotate_key(**settings: Any) -> Plan:
    """Add a new KMS data key and make it active (with S3DYNAMO_KMS_KEY_ID); run
    `reencrypt --yes` afterwards to move old blobs to it."""
    saver = open_saver(**settings)
    if saver.parts.kms is None:
        raise InvalidConfigError(
            "rotate-key rotates KMS data keys: set S3DYNAMO_KMS_KEY_ID. With S3DYNAMO_KEYS, "
            "rotation is a setting: put the new key first, keep the old one, run "
            "`s3dynamo reencrypt --yes`, then drop the old key"
        )
    counts = {
        "active_key": saver.store.active_key(),
        "kms_key_id": saver.settings.kms_key_id,
    }
    return Plan("rotate_key", counts, lambda: {"active_key": saver.ops.rotate_key()})


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
    # The source is read where this store is: the same region and endpoint.
    where = saver.settings
    with sources.open_source(source, where.region, where.endpoint_url) as src:
        with progress("reading the source"):
            plan = saver.ops.plan_import(src, list(thread_ids) or None)
        code = show_plan(plan, as_json, yes, source=source)
    return PROBLEMS if plan.conflicts else code


@cli.group()
def catalog() -> None:
    """The thread catalog (S3DYNAMO_CATALOG_FIELDS): threads by declared metadata values."""


@catalog.command(name="build")
@plan_command
def catalog_build(**settings: Any) -> Plan:
    """File every thread the deployment holds in the thread catalog (one Scan), then record
    that the catalog of each declared field is complete: once, after declaring a field on
    a deployment that already has threads."""
    saver = open_saver(**settings)
    with progress("reading every thread") as tick:
        return saver.ops.catalog.plan_build(tick)
