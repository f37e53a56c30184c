"""Data subjects' commands (S3DYNAMO_SUBJECT_FIELD, S3DYNAMO_SUBJECT_LABEL): erasing one
(a plan first, nothing changes without `--yes`), exporting what one has as JSON Lines,
and listing the erasure records for an auditor (`saver.ops.subjects`)."""

from __future__ import annotations

from typing import IO, Any

import click
from rich.markup import escape

from langgraph.checkpoint.s3dynamo.cli import render
from langgraph.checkpoint.s3dynamo.cli.common import (
    OK,
    cli,
    emit_json,
    err,
    json_option,
    open_saver,
    out,
    progress,
    store_options,
)
from langgraph.checkpoint.s3dynamo.cli.plans import plan_command
from langgraph.checkpoint.s3dynamo.ops import Plan
from langgraph.checkpoint.s3dynamo.ops.subjects import json_line


@cli.command("erase-subject")
@click.argument("subject")
@plan_command
def erase_subject(subject: str, **settings: Any) -> Plan:
    """Erase a data SUBJECT (a user id) for good: its key first, so that no backup of the
    table or the bucket gives its data back, then its threads, catalog entries and Store
    namespaces; an erasure record without personal data is kept (`s3dynamo erasures`).
    Run it again to finish one that was interrupted."""
    saver = open_saver(**settings)
    with progress("reading"):
        return saver.ops.subjects.plan_erasure(subject)


@cli.group()
def subjects() -> None:
    """Data subjects (S3DYNAMO_SUBJECT_FIELD, S3DYNAMO_SUBJECT_LABEL): whose data is whose."""


@subjects.command(name="build")
@plan_command
def subjects_build(**settings: Any) -> Plan:
    """Seal the data written before subjects were declared under each subject's key (one
    Scan, then each thread and Store namespace of a subject sealed again), so that an
    erasure covers it: once, after declaring subjects on a deployment that has data."""
    saver = open_saver(**settings)
    with progress("reading every thread") as tick:
        return saver.ops.subjects.plan_build(tick)


@cli.command("export-subject")
@click.argument("subject")
@click.option(
    "--output",
    "-o",
    type=click.File("w", encoding="utf-8"),
    default="-",
    show_default=True,
    help="where the JSON Lines go ('-': standard output)",
)
@store_options
def export_subject(subject: str, output: IO[str], **settings: Any) -> int:
    """Everything a data SUBJECT has, as JSON Lines: each checkpoint of its threads (state
    and metadata), then each of its Store items; progress on standard error."""
    saver = open_saver(**settings)
    written = 0
    with progress("exporting") as tick:
        for record in saver.ops.subjects.export(subject, tick):
            output.write(json_line(record) + "\n")
            written += 1
    err.print(escape(f"done: exported {render.plural(written, 'record')}"))  # not in the JSON
    return OK


@cli.command()
@json_option
@store_options
def erasures(as_json: bool, **settings: Any) -> int:
    """The erasures done here, oldest first: when, the subject's keyed hash (its id run
    through this deployment's naming secret: `s3dynamo subject-hash`), the key destroyed,
    and what went."""
    saver = open_saver(**settings)
    found = saver.ops.subjects.erasures()
    if as_json:
        emit_json(found)
        return OK
    if not found:
        out.print("no erasure recorded")
    for e in found:
        counts = ", ".join(f"{render.plural(n, k.rstrip('s'))}" for k, n in e["counts"].items())
        out.print(escape(f"{e['began']}  subject {e['subject']}  key {e['key']}  {counts}"))
    return OK


@cli.command("subject-hash")
@click.argument("subject")
@json_option
@store_options
def subject_hash(subject: str, as_json: bool, **settings: Any) -> int:
    """The keyed hash erasure records name SUBJECT by: to tell whether it was erased."""
    token = open_saver(**settings).ops.subjects.token(subject)
    if as_json:
        emit_json({"subject_hash": token})
    else:
        out.print(token)
    return OK
