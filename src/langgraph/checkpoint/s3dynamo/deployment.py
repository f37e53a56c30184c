"""Whether the keys are the ones the deployment was written with.

The deployment's own partition of the index (`layout.deployment_pk`: one per prefix, so
tenants sharing a table each have theirs), which no thread partition can collide with,
and which one Query reads whole (`Control`), holds its deployment record and, with KMS,
its keyring (`kms_keyring.py`: where the keys come from).

`Deployment`: the record of what the deployment was written with (fingerprints of the
naming key and of each sealing key, the sealing mode, the bucket, and, sealed, the
metadata fields its thread catalog files threads by; no key bytes), read once per
process and compared before anything is written. Bootstrap, rotation and races:
docs/SECURITY.md, "The keyring and deployment records".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import NamedTuple, TypeVar, cast

from langgraph.checkpoint.s3dynamo.backoff import CONFLICT_ATTEMPTS, tries
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer, identity, own_sealer, padded
from langgraph.checkpoint.s3dynamo.errors import (
    DeploymentMismatchError,
    IntegrityError,
    StorageConfigError,
    StorageError,
    StoreMissingError,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    DEPLOYMENT_RECORD,
    DEPLOYMENT_SUFFIX,
    STORAGE_FORMAT,
    is_control_pk,
    is_record_key,
    is_writes_key,
    prefix_of,
    scope_of,
)
from langgraph.checkpoint.s3dynamo.format.records import ControlRecord, control_from, put_control
from langgraph.checkpoint.s3dynamo.format.schema import PARTITION_KEY
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.ports import ObjectStore
from langgraph.checkpoint.s3dynamo.table import (
    ItemKey,
    Table,
    Write,
    Written,
    begins,
    key_of,
    scan_pages,
)
from langgraph.checkpoint.s3dynamo.waves import parallel

_T = TypeVar("_T")


@contextmanager
def guarded(deployment: Deployment) -> Iterator[None]:
    """A blob that does not open, or an object that is missing, is first checked against
    the deployment record: with other keys, another naming secret or another bucket than
    the deployment's, `DeploymentMismatchError` names which (nothing was tampered with or
    deleted; the configuration is wrong). A record that matches leaves the error as it
    was. A table that does not exist is checked against where the bucket lives (one
    HeadBucket, on that path only: `Deployment.located`)."""
    try:
        with deployment.located():
            yield
    except IntegrityError as exc:
        try:
            deployment.verify(write=False)
        except DeploymentMismatchError as mismatch:
            raise mismatch from exc
        raise


def is_checkpoint_key(key: ItemKey) -> bool:
    """Whether an item's keys are a checkpoint record's (a thread's partition, not its
    control items; no writes record nor mark)."""
    return not is_control_pk(key.pk) and is_record_key(key.sk) and not is_writes_key(key.sk)


class Control:
    """A deployment's own partition (`layout.deployment_pk`), read with one request on
    first need and cached."""

    def __init__(
        self, table: Callable[[], Table], apply: Callable[[Write], Written], pk: str
    ) -> None:
        self._table = table
        self._apply = apply
        self.pk = pk
        self._records: dict[str, ControlRecord] | None = None
        self._lock = threading.RLock()

    @property
    def loaded(self) -> bool:
        return self._records is not None

    def records(self) -> dict[str, ControlRecord]:
        with self._lock:
            if self._records is None:
                page = self._table().query(self.pk, consistent=True)
                self._records = {r.name: r for r in map(control_from, page.items)}
            return self._records

    def refresh(self) -> dict[str, ControlRecord]:
        with self._lock:
            self._records = None
            return self.records()

    def data(self, *, checkpoints: bool = False) -> ItemKey | None:
        """An item of this deployment outside its own partition, if there is one (with
        `checkpoints`, a checkpoint record: a thread's, which no write of a process that
        is making the deployment record can have made yet): a Scan (keys only) of this
        prefix's partitions, page after page until one is found. Asked once in a
        deployment's life, before its KMS keyring is made, or its record."""
        prefix = self.pk[: -len(DEPLOYMENT_SUFFIX)]
        kept = begins(PARTITION_KEY, prefix) if prefix else None
        for items in scan_pages(self._table(), filter=kept, attributes=()):
            for item in items:
                key = key_of(item)
                if key.pk == self.pk or prefix_of(key.pk) != prefix:
                    continue
                if not checkpoints or (scope_of(key.pk) == prefix and is_checkpoint_key(key)):
                    return key
        return None

    def put(self, record: ControlRecord, expected_version: int | None) -> bool:
        ok = self._apply(put_control(self.pk, record, expected_version)).applied
        with self._lock:
            if ok and self._records is not None:
                self._records[record.name] = record
        return ok


# ------------------------------------------------------------------ deployment record


# The deployment record's field holding the declared catalog fields, sealed.
CATALOG = "catalog"


@dataclass
class DeploymentView:
    """What a deployment was written with, or what a saver would write with."""

    naming: str
    mode: str
    keys: dict[str, str] = field(default_factory=dict)
    source: str = ""
    # A new deployment is format 1 until it holds what only a newer format describes.
    format: int = 1
    # The object store's name (an S3 bucket); "" where unknown or not yet recorded.
    bucket: str = ""
    # The declared catalog fields, sealed (`Deployment.catalog_fields`); b"": none recorded.
    catalog: bytes = b""

    @classmethod
    def of(cls, record: ControlRecord) -> DeploymentView:
        f = record.fields
        keys = json.loads(str(f.get("keys", "{}")))
        return cls(
            str(f.get("naming", "")),
            str(f.get("mode", "")),
            keys,
            str(f.get("by", "")),
            int(str(f.get("format", "1"))),  # records from before the field: format 1
            str(f.get("bucket", "")),  # records from before the field name none
            f[CATALOG] if isinstance(f.get(CATALOG), bytes) else b"",  # type: ignore[arg-type]
        )

    def fields(self) -> dict[str, str | bytes]:
        fields: dict[str, str | bytes] = {
            "naming": self.naming,
            "mode": self.mode,
            "keys": json.dumps(self.keys, sort_keys=True),
            "by": self.source,
            "format": str(self.format),
        }
        if self.bucket:
            fields["bucket"] = self.bucket
        if self.catalog:
            fields[CATALOG] = self.catalog
        return fields

    def parts(self) -> list[str]:
        by = f" from {self.source}" if self.source else ""
        keys = [f"key ids {sorted(self.keys)}"] if self.keys else []
        bucket = [f"bucket {self.bucket!r}"] if self.bucket else []
        return [f"naming key fingerprint {self.naming}{by}", self.mode, *keys, *bucket]

    def describe(self) -> str:
        return ", ".join(self.parts())

    def beside(self, theirs: DeploymentView) -> str:
        """This saver's view as a message puts it after the deployment's: only what
        differs (a key under the same id differs in its check value only, which the
        problem names)."""
        differing = [part for part in self.parts() if part not in theirs.parts()]
        if not differing and any(theirs.keys.get(k, v) != v for k, v in self.keys.items()):
            return "this saver's differs in the keys' check values only"
        if not differing:
            return "this saver's keys and bucket are the deployment's"
        return f"this saver: {', '.join(differing)}"


def bucket_problem(theirs: str, mine: str) -> str | None:
    """What is wrong when the recorded bucket and this saver's differ (both named)."""
    if not theirs or not mine or theirs == mine:
        return None
    return (
        f"this saver's objects go to bucket {mine!r} and the deployment's are in bucket "
        f"{theirs!r}, so values too large for the index would be written where no reader "
        f"looks and read from where none were written: set S3DYNAMO_BUCKET (bucket=) to "
        f"{theirs!r}; if the objects were moved to the new bucket, update the record's "
        "bucket field (docs/FORMAT.md)"
    )


def catalog_problem(declared: tuple[str, ...], recorded: tuple[str, ...]) -> str | None:
    """What is wrong when a saver declares other catalog fields than the deployment's."""
    if not declared or set(declared) == set(recorded):
        return None
    return (
        f"this saver declares catalog fields {list(declared)} and the deployment files its "
        f"threads under {list(recorded)}, so a thread written here would be missing from "
        f"its catalog: declare the same (S3DYNAMO_CATALOG_FIELDS={','.join(recorded)}, "
        "catalog_fields=), or none, to file under the deployment's"
    )


class Configured(NamedTuple):
    """What a saver is configured with, as its deployment record is checked against it
    and its errors name it: where its keys come from (`source`), where its index lives
    (`where`), the bucket its objects go to ("" if it has no name to compare), and the
    catalog fields it declares."""

    source: str
    where: str
    bucket: str = ""
    catalog: tuple[str, ...] = ()


class Deployment:
    """Checks this saver's keys and bucket against the deployment record (module
    docstring)."""

    def __init__(
        self,
        control: Control,
        namer: Namer,
        sealer: Sealer,
        configured: Configured,
        *,
        root: Control | None = None,
        objects: Callable[[], ObjectStore] | None = None,
    ) -> None:
        # With a prefix: the unprefixed deployment's partition, read once if this prefix
        # has no deployment record yet (`_refuse_unscoped`).
        self._root = root
        self._control = control
        self._namer = namer
        self._sealer = sealer
        self._source, self._where, self._bucket, self._declared = configured
        # The recorded catalog fields as last opened: (the sealed blob, the fields).
        self._opened: tuple[bytes, tuple[str, ...]] | None = None
        # The object store, asked where its bucket lives (`region_problem`).
        self._objects = objects
        self._lock = threading.Lock()
        # "unchecked", then "read" (checked; a write must still record itself), "ok".
        self.state = "unchecked"
        # The storage format the record is known to name at least.
        self._format = 1
        self.created: Callable[[], None] = lambda: None  # once it made the record

    def mine(self) -> DeploymentView:
        if self._sealer.sealed:
            keyring = self._sealer.keyring
            assert keyring is not None
            mode, keys = "sealed", keyring.fingerprints()
        elif self._sealer.serde_cipher is not None:
            mode, keys = "serializer cipher", {}
        else:
            mode, keys = "plaintext", {}
        return DeploymentView(
            self._namer.fingerprint(), mode, keys, self._source, bucket=self._bucket
        )

    def recorded(self) -> DeploymentView | None:
        record = self._control.records().get(DEPLOYMENT_RECORD)
        return DeploymentView.of(record) if record else None

    def verify(self, *, write: bool) -> None:
        """Raise `DeploymentMismatchError` if this saver's keys are not the deployment's;
        with `write`, record them first if nothing is recorded (or add a new active key)."""
        if self.state == "ok" or (self.state == "read" and not write):
            return
        with self._lock, self.located():
            for _ in tries(CONFLICT_ATTEMPTS):
                if self._verify_once(write):
                    return
            raise StorageError(  # pragma: no cover - needs five concurrent updates
                f"the deployment record in {self._where} kept changing under concurrent "
                f"writers ({CONFLICT_ATTEMPTS} attempts); retry later"
            )

    def _verify_once(self, write: bool) -> bool:
        record = self._control.records().get(DEPLOYMENT_RECORD)
        mine = self.mine()
        if record is None:
            self._refuse_unscoped(mine)
            if not write:
                self.state = "read"
                return True
            if self._declared:  # the deployment is made with the fields this saver declares
                mine = replace(mine, catalog=self._seal_catalog(self._declared))
            if self._control.put(ControlRecord(DEPLOYMENT_RECORD, mine.fields()), None):
                self.state = "ok"
                self.created()
                return True
            self._control.refresh()  # lost the race: compare with the winner's record
            return False
        theirs = DeploymentView.of(record)
        problems = self.differences(theirs, mine)
        if problems:
            raise DeploymentMismatchError(
                f"this saver does not match the deployment in {self._where}: "
                + "; ".join(problems)
                + f". Deployment: {theirs.describe()}; {mine.beside(theirs)}. "
                "Nothing was read or written."
            )
        merged = self.merged(theirs, mine)
        if merged is None:
            self.state = "ok"
            return True
        if not write:
            self.state = "read"
            return True
        new = ControlRecord(DEPLOYMENT_RECORD, merged.fields(), record.version + 1)
        if self._control.put(new, record.version):
            self.state = "ok"
            return True
        self._control.refresh()
        return False

    def require_format(self, needed: int) -> None:
        """Record in the deployment record that it holds data only format `needed`
        describes (a copy that shares objects: `layout.SHARING_FORMAT`), before the first
        such write, so that an older release refuses the deployment instead of misreading
        it (docs/FORMAT.md): one conditional write, once a deployment; none after."""
        if self._format >= needed:
            return
        self._replace(lambda view: None if view.format >= needed else replace(view, format=needed))
        self._format = needed

    def _replace(self, change: Callable[[DeploymentView], DeploymentView | None]) -> None:
        """The deployment record (written first if there is none) replaced by what
        `change` makes of it, on condition of its version (read again and changed again
        when another writer replaced it first); `change` None: nothing to write."""
        self.verify(write=True)
        with self._lock:
            for _ in tries(CONFLICT_ATTEMPTS):
                record = self._control.records().get(DEPLOYMENT_RECORD)
                assert record is not None  # verify(write=True) wrote one if none was there
                new = change(DeploymentView.of(record))
                if new is None:
                    return
                fields = new.fields()
                if self._control.put(
                    ControlRecord(DEPLOYMENT_RECORD, fields, record.version + 1), record.version
                ):
                    return
                self._control.refresh()
        raise StorageError(  # pragma: no cover - needs five concurrent updates
            f"the deployment record in {self._where} kept changing under concurrent "
            f"writers ({CONFLICT_ATTEMPTS} attempts); retry later"
        )

    # ------------------------------------------------------------ catalog fields

    def catalog_fields(self, declared: tuple[str, ...]) -> tuple[str, ...]:
        """The metadata fields the thread catalog files threads by: those recorded in the
        deployment record (by `setup()` or `catalog build` of a saver declaring them, or
        by the saver that made the record), else `declared`. Read with the record, which a
        process's first read brings in its own wave (else one Query, once). A saver that
        declares other fields than the recorded ones is refused, before it writes."""
        record = self._control.records().get(DEPLOYMENT_RECORD)
        recorded = self._recorded_catalog(DeploymentView.of(record)) if record else None
        if recorded is None:
            return declared
        if problem := catalog_problem(declared, recorded):
            raise DeploymentMismatchError(
                f"this saver does not match the deployment in {self._where}: {problem}. "
                "Nothing was written."
            )
        return declared or recorded

    def record_catalog(self, fields: tuple[str, ...]) -> None:
        """Record the catalog fields this saver declares in the deployment record (sealed),
        where it records none: `setup()` and `catalog build` do. Other fields recorded:
        `DeploymentMismatchError` (`catalog_fields`)."""
        if not fields:
            return
        self.verify(write=True)
        self.catalog_fields(fields)
        sealed = self._seal_catalog(fields)
        self._replace(lambda view: None if view.catalog else replace(view, catalog=sealed))

    def _recorded_catalog(self, theirs: DeploymentView) -> tuple[str, ...] | None:
        """The catalog fields a deployment record holds (its `catalog` field), opened
        once; None where it has none. Sealed under the naming key: a saver with another
        one is told so (`DeploymentMismatchError`), not that the record was altered."""
        blob = theirs.catalog
        if not blob:
            return None
        if self._opened is None or self._opened[0] != blob:
            if theirs.naming != self._namer.fingerprint():
                self.verify(write=False)
            what = f"the catalog fields of the deployment record in {self._where}"
            _, data = self._catalog_sealer().open(blob, self._catalog_id(), what)
            self._opened = (blob, tuple(str(f) for f in json.loads(data)))
        return self._opened[1]

    def _catalog_sealer(self) -> Sealer:
        """Sealing under a key derived from the naming key (`Namer.sealing_key`), which
        every process of the deployment holds whatever sealing keys it has; without a
        secret, none (as names are then unkeyed)."""
        return own_sealer(self._namer.sealing_key(CATALOG))

    def _catalog_id(self) -> bytes:
        return identity("deployment", self._control.pk, CATALOG)

    def _seal_catalog(self, fields: tuple[str, ...]) -> bytes:
        data = padded(json.dumps(list(fields)).encode())
        return self._catalog_sealer().seal("json", data, self._catalog_id(), compress=False)

    def region_problem(self) -> str | None:
        """What is wrong when the bucket lives in another region than this saver's
        clients are configured for (one request: HeadBucket); None when it lives there,
        does not exist, or the service names no region. S3 bucket names are global, so a
        bucket found elsewhere is the deployment's: its table is there too."""
        found = self._objects().bucket_region() if self._objects is not None else None
        if found is None or not found.configured or found.lives_in == found.configured:
            return None
        return (
            f"bucket {found.bucket!r} lives in region {found.lives_in}, this saver is "
            f"configured for {found.configured}; set AWS_REGION={found.lives_in} (or "
            "S3DYNAMO_REGION, region=, --region) where the deployment is"
        )

    @contextmanager
    def located(self) -> Iterator[None]:
        """A table that does not exist, inside the block, is checked against where the
        bucket lives (`region_problem`): in another region, `StorageConfigError` names the
        region to set instead of `StoreMissingError`, whose fix, setup(), would start a
        second, empty deployment there. The deployment check and `guarded` use it, so a
        process's first request says it, whichever it is."""
        try:
            yield
        except StoreMissingError as exc:
            problem = self.region_problem()
            if problem is None:
                raise
            raise StorageConfigError(
                f"{exc.resource or 'the index'} does not exist, and {problem}. Do not run "
                "setup() in this region: it would start a second, empty deployment"
            ) from exc

    def objects_resource(self) -> str:
        """The object store, as messages name it (its bucket)."""
        return f"bucket {self._bucket!r}" if self._bucket else "the object store"

    def refuse_elsewhere(self) -> None:
        """Before `setup()` creates anything: a bucket that lives in another region than
        the saver is configured for is the deployment's, so `StorageConfigError` names the
        region to set instead of a second, empty table being made here (one HeadBucket)."""
        if problem := self.region_problem():
            raise StorageConfigError(
                f"setup() refused: {problem}. Creating the table here would start a second, "
                "empty deployment beside the one the bucket belongs to; nothing was created"
            )

    def refresh(self) -> None:
        """Read the deployment's own partition again (one Query): `ops.check` sees the
        table answer this way."""
        self._control.refresh()

    def checked_read(self, read: Callable[[], _T | None]) -> _T | None:
        """A read checked against the deployment record, which comes in the same wave if
        this process has not read it yet (so a new thread, which must be checked against
        it, costs no second round trip): another bucket than the recorded one is refused
        before any object is read, and a read that finds nothing checks the keys (other
        keys or another naming secret find nothing, and must say so)."""
        if self._control.loaded:
            found = read()
        else:
            steps: list[Callable[[], object]] = [read, self._control.records]
            found = cast("_T | None", parallel(lambda step: step(), steps)[0])
        self.check_bucket()
        if found is None:
            self.verify(write=False)
        return found

    def check_bucket(self) -> None:
        """Refuse a saver on another bucket than the recorded one, from the record already
        read (no request; nothing to compare before it is read)."""
        if self.state != "unchecked" or not self._bucket or not self._control.loaded:
            return
        record = self._control.records().get(DEPLOYMENT_RECORD)
        problem = bucket_problem(DeploymentView.of(record).bucket, self._bucket) if record else None
        if problem:
            raise DeploymentMismatchError(
                f"this saver does not match the deployment in {self._where}: {problem}. "
                "Nothing was read or written."
            )

    def _refuse_unscoped(self, mine: DeploymentView) -> None:
        """A prefix with no deployment record of its own, on a table whose unprefixed
        deployment has these very keys: version 0.1 wrote a prefixed deployment that way
        (the prefix on object keys only), and this saver would otherwise find every
        thread empty. Not an error once the prefix has its own record."""
        if self._root is None:
            return
        record = self._root.records().get(DEPLOYMENT_RECORD)
        if record is not None and DeploymentView.of(record).naming == mine.naming:
            raise DeploymentMismatchError(
                f"{self._where} has no deployment of its own, but the table's unprefixed "
                "deployment has this saver's naming key, so this prefix would start a second, "
                "empty set of threads beside it. If the prefix is not meant (a typo, or one "
                "set by mistake), fix or unset S3DYNAMO_PREFIX (prefix=); a tenant on a "
                "shared table needs keys of its own (docs/SECURITY.md); a deployment written "
                "by version 0.1, where the prefix applied to object keys only, is read with "
                "langgraph-checkpoint-s3dynamo<0.2 (docs/FORMAT.md)"
            )

    def differences(self, theirs: DeploymentView, mine: DeploymentView) -> list[str]:
        problems = []
        if theirs.format > STORAGE_FORMAT:
            problems.append(
                f"the deployment is in storage format {theirs.format} and this version of "
                f"langgraph-checkpoint-s3dynamo reads format {STORAGE_FORMAT}: upgrade the package "
                "(docs/FORMAT.md)"
            )
        if wrong_bucket := bucket_problem(theirs.bucket, mine.bucket):
            problems.append(wrong_bucket)
        same_naming = theirs.naming == mine.naming  # which the catalog fields are sealed under
        recorded = self._recorded_catalog(theirs) if self._declared and same_naming else None
        if recorded is not None and (other := catalog_problem(self._declared, recorded)):
            problems.append(other)
        if not same_naming:
            slip = self._namer.slip(theirs.naming)
            problems.append(
                f"the naming key differs (fingerprint {mine.naming} here, {theirs.naming} in "
                "the deployment), so every thread would look empty: use the naming secret the "
                "deployment was written with (S3DYNAMO_SECRET, LANGGRAPH_AES_KEY, or the KMS "
                "keyring in this table)" + (f"; {slip}" if slip else "")
            )
        if theirs.mode == "plaintext" and mine.mode == "sealed":
            if not self._sealer.allow_plaintext_read:
                problems.append(
                    "the deployment was written without encryption and this saver seals: to "
                    "turn encryption on over it, run reencrypt() with allow_plaintext_read=True "
                    "(s3dynamo reencrypt --allow-plaintext-read), then drop the option"
                )
        elif theirs.mode == "sealed" and mine.mode != "sealed":
            problems.append(
                f"the deployment is sealed (key ids {sorted(theirs.keys)}) and this saver has "
                f"no sealing key ({mine.mode}): configure the deployment's keys"
            )
        elif theirs.mode == "sealed":
            common = set(theirs.keys) & set(mine.keys)
            wrong = sorted(k for k in common if theirs.keys[k] != mine.keys[k])
            if wrong:
                problems.append(
                    f"key id(s) {wrong} hold other keys than the deployment's (check values "
                    + ", ".join(f"{k}: {mine.keys[k]} here, {theirs.keys[k]} there" for k in wrong)
                    + ")"
                )
            elif not common:
                problems.append(
                    f"this saver holds key ids {sorted(mine.keys)} and none of the "
                    f"deployment's {sorted(theirs.keys)}: add a deployment key to the keyring "
                    "(rotation keeps the old key until reencrypt() has run)"
                )
        return problems

    def merged(self, theirs: DeploymentView, mine: DeploymentView) -> DeploymentView | None:
        """The record with this saver's keys added, or None if nothing is new."""
        if mine.mode != "sealed":
            return None
        if theirs.mode == "sealed" and set(mine.keys) <= set(theirs.keys):
            return None
        # The bucket is kept as recorded, never added to a record without one: nothing
        # here proves this saver's bucket holds the deployment's objects (docs/FORMAT.md).
        keys = {**theirs.keys, **mine.keys}
        return replace(theirs, mode="sealed", keys=keys, source=mine.source)
