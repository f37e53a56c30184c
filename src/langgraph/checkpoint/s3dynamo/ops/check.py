"""Checking a deployment up front (table, bucket, keys, permissions) and rotating its KMS
data key. Few, cheap requests; `check` writes nothing."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from langgraph.checkpoint.s3dynamo.compose import Components
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.errors import (
    CheckFailedError,
    InvalidConfigError,
    S3DynamoError,
    StorageConfigError,
)

log = logging.getLogger(__name__)


@dataclass
class CheckReport:
    """What `check` verified: one line per part, and the problems found."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        return "\n".join([*self.lines, *(f"PROBLEM: {p}" for p in self.problems)])


def check(parts: Components, *, raise_on_problem: bool = True) -> CheckReport:
    """One Query on the control partition (the table exists in this region and may be
    read; it also reads the deployment record and the KMS keyring), one listing of at
    most one key under the prefix (the bucket exists and may be listed), one HeadBucket
    (the bucket lives in the region the saver is configured for; where the table is
    missing, asked instead of the listing), one KMS Decrypt with `kms_key_id` (the key
    unwraps this deployment's keyring; before the keyring is made, one GenerateDataKey
    instead, its key discarded: the key can make it), and where subjects are declared
    one GetItem of the key table. Nothing is written. Returns the report, or raises
    `CheckFailedError` holding it."""
    report = CheckReport()
    steps = [("table", _check_table), ("bucket", _check_bucket), ("keys", _check_keys)]
    if parts.settings.subjects:
        steps.append(("key table", _check_key_table))
    for name, step in steps:
        try:
            report.lines.append(f"{name}: {step(parts)}")
        except S3DynamoError as exc:
            report.problems.append(f"{name}: {exc}")
            if name == "table":
                break  # keys live in the table
    if parts.kms is not None:
        report.requests = {f"kms.{k}": n for k, n in parts.kms.requests.items()}
    if report.problems and raise_on_problem:
        raise CheckFailedError(report)
    return report


def _check_table(parts: Components) -> str:
    with guarded(parts.deployment):  # missing: is the bucket in another region?
        parts.deployment.refresh()
    return f"{parts.store.index_resource()} answers"


def _check_bucket(parts: Components) -> str:
    answered = parts.store.probe_objects()
    problem = parts.deployment.region_problem()
    if problem:
        raise StorageConfigError(
            f"{problem}; the table this saver reads is not in the bucket's region, so it "
            "is not the deployment's table unless it was made apart on purpose"
        )
    return f"{answered} answers"


def _check_keys(parts: Components) -> str:
    deployment = parts.deployment
    if parts.kms is not None and not parts.kms.exists():
        if deployment.recorded() is not None:
            parts.kms.keyring()  # lost, not yet made: raises KeyringMissingError
        key = parts.kms.probe()  # a key KMS refuses raises, naming the setting to fix
        return (
            f"no KMS keyring in the table yet; {key} makes data keys for it, so setup() or "
            "the first write makes it (kms:GenerateDataKey, the maintenance policy)"
        )
    mine = deployment.mine()  # unwraps the KMS keyring (one Decrypt)
    theirs = deployment.recorded()
    if theirs is None:
        return "no deployment record yet (the first write creates it); this saver: " + (
            mine.describe()
        )
    problems = deployment.differences(theirs, mine)
    if problems:
        raise InvalidConfigError("; ".join(problems) + f" (deployment: {theirs.describe()})")
    matched = f"match the deployment: {mine.describe()}"
    # The record keeps every key id ever used, so one missing here is either retired (a
    # finished rotation) or newer: said, not failed.
    if mine.mode == "sealed" and (missing := sorted(set(theirs.keys) - set(mine.keys))):
        matched += (
            f"; the deployment also has key id(s) {missing}, which this saver lacks: fine "
            "for a key retired after reencrypt(), but a newer one (a rotation) belongs first "
            "in this keyring, or this saver seals under an older key and cannot open what "
            "is sealed under it"
        )
    return matched


def _check_key_table(parts: Components) -> str:
    return f"{parts.subjects.probe_key_table()} answers"


def rotate_key(parts: Components) -> str:
    """Add a new data key from KMS and make it active; returns its id (module docs)."""
    kms, deployment = parts.kms, parts.deployment
    if kms is None:
        raise InvalidConfigError(
            "rotate_key() rotates KMS data keys; this saver has none. With keys=... / "
            "S3DYNAMO_KEYS, put the new key first, keep the old one, run reencrypt(), "
            "then drop the old key"
        )
    if not kms.exists():
        deployment.verify(write=True)  # creates the keyring, records it
        return kms.keyring().active
    deployment.verify(write=False)
    key_id = kms.rotate()
    deployment.verify(write=True)
    log.info("rotate_key: new active key %s", key_id)
    return key_id
