"""Every error s3dynamo raises is an S3DynamoError naming what was expected, what came, the fix:
├── InvalidConfigError (ValueError)     bad config, thread id, namespace, setting or argument
│   ├── ArgumentTypeError (TypeError)   an argument of another type than its method takes
│   ├── ItemTooLargeError               a checkpoint would not fit one index item
│   ├── RegionNotSetError, CredentialsNotFoundError   no AWS region; no AWS credentials
│   ├── ScopeNotNamedError              a table-wide sweep, no prefix, on a tenants' table
│   ├── InvalidCursorError              a search_threads cursor no search returned
│   ├── ValueNotSerializableError       a value the serializer cannot store (a TypeError)
│   ├── VectorDimensionsError           an embedding's dims not the IndexConfig's or namespace's
│   └── StorageConfigError              S3, DynamoDB or KMS refused a bucket, key, region...
├── DeploymentMismatchError             keys, secret, bucket or serde cipher not the deployment's
│   └── KeyringMissingError             a KMS keyring lost: restore it from a backup
├── StoreMissingError                   table or bucket does not exist: run setup() / terraform
├── CatalogNotBuiltError                a declared field's thread catalog is not built yet
├── SubjectErasedError (LookupError)    what was asked for is an erased data subject's
├── StorageError                        another S3 or DynamoDB failure that may pass: retry
│   └── EndpointUnreachableError        the service's endpoint did not answer
├── ThreadExistsError (ValueError)      copy_thread onto a thread that has checkpoints
├── ThreadNotFoundError (LookupError)   an operation named a thread with nothing stored
├── CheckFailedError                    `ops.check()` found problems (`.report`)
├── ConcurrentUpdateError               another run moved the thread on: retry the run
│   ├── ThreadDeletedError              the thread was deleted since this run loaded it
│   │   └── SubjectErasingError         an erasure of the data's subject began, not ended
│   ├── LeaseTimeoutError               thread_lock not acquired within its wait
│   └── LeaseLostError                  the lease was taken over: this holder's write refused
└── IntegrityError                      a stored blob did not open: tampered, moved, truncated
    ├── ForgedTombstoneError            a forged delete of a thread kept coming back
    ├── ObjectNotFoundError             the index references an object that is gone
    ├── KeyNotFoundError                sealed under a key id missing from the keyring
    └── PlaintextRefusedError           unsealed data read while encryption is on"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class S3DynamoError(Exception):
    """Base class of every error this package raises. botocore errors are translated in
    one place (`backends/aws_errors.py`), with `from`."""


class InvalidConfigError(S3DynamoError, ValueError):
    """A config, thread id, namespace, setting or argument is malformed."""


class ArgumentTypeError(InvalidConfigError, TypeError):
    """An argument of a public method (a setting, a thread id, a list of them, a size, a
    yes/no choice) is of another type than the method takes. Names the argument, what
    came and what it accepts; raised before any request (`arguments.py`). A `TypeError`
    too, as Python's own error for a wrong type is."""


class DeploymentMismatchError(S3DynamoError):
    """The saver's keys, naming secret, bucket or serializer cipher (LangGraph's
    `EncryptedSerializer`) differ from those the deployment was written with.

    Raised instead of showing an empty thread (names derived from another naming key find
    nothing) or starting a second, parallel set of names beside the first. The message
    names key ids and fingerprints, never key bytes."""


class KeyringMissingError(DeploymentMismatchError):
    """A KMS deployment's keyring record is missing while the deployment holds data (or
    its deployment record): a new keyring would make new keys and a new naming secret,
    under which every thread reads as empty and no stored blob ever opens again, so
    none is made. The message names the items to restore and how (point-in-time
    recovery of the table)."""

    def __init__(self, table: str, pk: str, found: str) -> None:
        super().__init__(table, pk, found)
        self.table, self.pk, self.found = table, pk, found

    def __str__(self) -> str:
        table = self.table
        return (
            f"the KMS keyring of this deployment (table {table!r}, partition {self.pk!r}, "
            f"sort key 'keyring') is missing, and {self.found}. A new keyring would make "
            "other keys and another naming secret, under which every stored thread reads as "
            "empty and nothing stored ever opens again, so none was made and nothing was "
            "written. Restore the item 'keyring' (and 'deployment', if it is gone too) of "
            "that partition from a backup: with point-in-time recovery, `aws dynamodb "
            f"restore-table-to-point-in-time --source-table-name {table} --target-table-name "
            f"{table}-restored --restore-date-time <a time before they were deleted>`, then "
            "copy the two items back (`aws dynamodb get-item` from the restored table, "
            '`put-item` into this one; docs/SECURITY.md, "Keys from KMS")'
        )


class StoreMissingError(S3DynamoError):
    """The DynamoDB table or S3 bucket does not exist. `resource` names it, with the
    region and endpoint asked."""

    def __init__(self, message: str, resource: str = "") -> None:
        super().__init__(message)
        self.resource = resource


class InvalidCursorError(InvalidConfigError):
    """`search_threads(before=...)` was given what no search of this deployment returned
    for this filter: a cursor is opaque and sealed (it carries where the next page starts),
    so a made-up, cut or altered one, one of an earlier release, or one of a search by
    another filter is refused, before any request. Start again without `before`."""


class CatalogNotBuiltError(S3DynamoError):
    """`search_threads` by a declared field (or, with none named, over every thread) on a
    deployment whose catalog of it is not known to be complete: threads written before
    the field was declared have no entries yet. Build it once (`saver.ops.catalog.build()`,
    `s3dynamo catalog build`: one Scan), or declare the fields before the deployment's
    first thread."""


class RegionNotSetError(InvalidConfigError):
    """No AWS region is set for a client the saver builds."""


class CredentialsNotFoundError(InvalidConfigError):
    """The AWS SDK found no credentials for a request."""


class ScopeNotNamedError(InvalidConfigError):
    """A saver without a prefix was asked for a table-wide destructive operation on a
    table that also holds prefixed deployments (tenants): it acts on the unprefixed
    threads only, so it must be told that is meant (`scope=""`)."""


class SubjectErasedError(S3DynamoError, LookupError):
    """What was read belongs to a data subject that was erased: the subject's key was
    destroyed (`erase_subject`), so nothing sealed under it opens again, from the table, the
    bucket or any backup of them. Not an empty thread: the data existed and is gone."""


class StorageError(S3DynamoError):
    """S3 or DynamoDB failed a request after botocore's retries, in a way that may pass
    (throttling, a service error, a dropped connection): retry later."""


class EndpointUnreachableError(StorageError):
    """The service's endpoint did not answer (network, region or endpoint setting)."""


class StorageConfigError(InvalidConfigError):
    """S3, DynamoDB or KMS refused a request because of how the saver is configured: a
    bucket name S3 does not accept, a KMS key that does not exist or is disabled, a region
    or endpoint that does not serve the service, access or credentials refused; or the
    bucket lives in another region than the saver is configured for. It does not pass on
    its own: fix the setting it names."""


class ValueNotSerializableError(InvalidConfigError, TypeError):
    """The serializer cannot store a channel value, a pending write or the metadata (a
    function, a lock, a client, an object holding one). Names the channel (and the task
    of a write) and the type; raised before anything is written. A `TypeError` too, as
    the serializer's own error was."""


class VectorDimensionsError(InvalidConfigError):
    """Embeddings of other dimensions than the Store's: the embedding function returned
    another number than the IndexConfig's `dims` (`namespace` None), or a put's or a
    query's embeddings have other dimensions than the vectors a namespace's index holds
    (`expected`: written under another IndexConfig or embedding model, or under two).
    Raised before anything is written; the message names both figures and the fix."""

    def __init__(
        self,
        subject: str,
        got: int,
        expected: Iterable[int],
        namespace: tuple[str, ...] | None = None,
    ) -> None:
        self.subject, self.got, self.expected = subject, got, sorted(set(expected))
        self.namespace = namespace
        super().__init__(subject, got, self.expected, namespace)

    def __str__(self) -> str:
        if self.namespace is None:
            return (
                f"{self.subject}: the embedding function returned {self.got} dimensions, and "
                f"the IndexConfig says dims={self.expected[0]}; set dims to what the "
                "embedding model returns"
            )
        had = " and ".join(map(str, self.expected))
        said = (
            f"{self.subject}: its embedding has {self.got} dimensions (the IndexConfig's "
            f"dims), and the vectors namespace {self.namespace!r} holds have {had}"
        )
        if len(self.expected) > 1:
            return said + (
                ", written under different IndexConfigs (dims or embedding model). Put its "
                "items into a new namespace under one IndexConfig (get reads them, as does "
                "a search without a query)"
            )
        return said + (
            ", written under another IndexConfig (dims or embedding model). Use "
            f"dims={had} and the model they were written with, or put the items into a new "
            "namespace, embedded with this one"
        )


class ThreadExistsError(S3DynamoError, ValueError):
    """The target of `copy_thread` already holds checkpoints."""


class ThreadNotFoundError(S3DynamoError, LookupError):
    """An operation named a thread (or a checkpoint of one) that has nothing stored."""


class CheckFailedError(S3DynamoError):
    """`ops.check()` found problems; `report` holds every line it checked."""

    def __init__(self, report: object) -> None:
        super().__init__(f"saver check failed:\n{report}")
        self.report = report


class ItemTooLargeError(InvalidConfigError):
    """A checkpoint's metadata or body would not fit one index item (DynamoDB's 400 KB);
    refused before any request, naming what is too large."""


class ConcurrentUpdateError(S3DynamoError):
    """Another run committed to this thread (namespace) since this run loaded its latest
    checkpoint. Nothing of this write is visible; retry the run (it loads the new latest
    state), or serialize runs with `saver.ops.thread_lock(thread_id)`. `committed` lists
    the checkpoints this run committed in the namespace before it was refused, oldest
    first: when it is not empty, they are in the thread's history (the first holds the
    run's input), and a run that loaded the thread since may have continued them, so
    the input is not to be sent again (docs/RELIABILITY.md, "A refused run and its
    retry").

    Raised once, by the index adapter, with the `reason` the service gave; the store,
    which knows which write that was, names it (`refusing`) before the error goes on,
    and the message says both.

    `is_stale_write_owner_error` is LangGraph's proposed marker (langgraph issue 8796) of
    an error meaning "this writer no longer owns the thread", so a server that learns to
    recognise stale writers recognises ours (a `ThreadDeletedError` is one too)."""

    is_stale_write_owner_error = True

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.write: str | None = None
        self.continued: str | None = None
        self.committed: tuple[str, ...] = ()

    def refusing(
        self, write: str, continued: str | None = None, committed: tuple[str, ...] = ()
    ) -> None:
        """Name the write refused, the checkpoint its run continued as the latest (None:
        a new thread), and the checkpoints the run committed before it."""
        self.write, self.continued, self.committed = write, continued, committed

    def __str__(self) -> str:
        if self.write is None:
            return self.reason
        said = (
            f"{self.write}: not written: another run committed to this thread since this run "
            f"continued checkpoint {self.continued or '(none: a new thread)'} as the latest "
            f"({self.reason}). "
        )
        if not self.committed:
            return said + (
                "Nothing of this run is visible. Retry the run: it will load the new latest "
                "state. To run one at a time instead, wrap runs in "
                "saver.ops.thread_lock(thread_id)"
                + (
                    ". If the thread still reads as empty, a copy_thread or import into it "
                    "is under way or was interrupted: let it finish, or run it again"
                    if self.continued is None
                    else ""
                )
            )
        return said + (
            f"This run had committed {len(self.committed)} checkpoint(s) before: "
            f"{', '.join(self.committed)} (the first holds its input, if it was given one). "
            "They are in the "
            "thread's history, and the other run may have continued from them: do not send "
            "this run's input again. Read the latest state (get_state): if it holds the "
            "input, the other run answered it; if not, run again. To run one at a time "
            "instead, wrap runs in saver.ops.thread_lock(thread_id)"
        )


class ThreadDeletedError(ConcurrentUpdateError):
    """The thread (namespace) was deleted after this run loaded it: a delete, retention or
    an erasure left its head a tombstone, and a run that loaded it before cannot write it
    back. Nothing of this write is visible. To keep talking to the user, start the thread
    afresh: a run that loads it now finds it empty and starts a new history. `tombstone`
    is the head as the refused write found it (the store checks its seal)."""

    def __init__(self, reason: str, tombstone: str | None = None) -> None:
        super().__init__(reason)
        self.tombstone = tombstone

    def __str__(self) -> str:
        if self.write is None:
            return self.reason
        return (
            f"{self.write}: not written: the thread was deleted after this run loaded it "
            f"({self.reason}); a deleted thread stays deleted. Run again to start it afresh "
            "(the run then loads an empty thread; if it still loads the old history, the "
            "delete was interrupted: run delete_thread, or the retention sweep, again to "
            "finish it)"
        )


class SubjectKeyChangedError(ConcurrentUpdateError):
    """A data subject's key changed between the sealing of a write and its commit: another
    process made the subject's first key, or an erasure ended and the next write makes a
    new one. The write is sealed again under the key now in force and sent once more;
    this error reaches a caller only when that happens again at once."""


class ItemReplacedError(ConcurrentUpdateError):
    """A Store put written in a transaction (one that renews its namespace's directory
    entry, or a data subject's, which checks the subject's fence) found its item holding
    another object than it expected: a transaction returns no old item, so this is how
    it learns the one it replaces (`found`: the item, None if gone). The put is sent
    again expecting it; this error reaches a caller only when other puts keep replacing
    the item at the same moment."""

    def __init__(self, key: tuple[str, str], found: Mapping[str, Any] | None) -> None:
        super().__init__(
            f"other puts kept replacing the Store item {tuple(key)} at the same moment; "
            "retry the operation"
        )
        self.key, self.found = key, found


class CopyCutError(ConcurrentUpdateError):
    """A copy was about to show its records, and the deletion of a thread it shares
    objects of had ended its borrowing first (docs/RELIABILITY.md, "Copies share
    objects"): the copy never shows, and is cleared before the caller hears of it."""


class HeadClaimedError(ConcurrentUpdateError):
    """A copy or an import went to claim a thread's heads with its copy marks, and a head
    named a checkpoint (a run committed to the thread since it was read): the claim is
    refused, nothing is written, and the copy or import stops before the caller hears of
    it (`ThreadExistsError`, or a conflict of the import)."""


class LeaseTimeoutError(ConcurrentUpdateError):
    """`thread_lock` did not get the thread's lease within its `wait`: another holder
    keeps it. Retry later, or wait longer."""


class LeaseLostError(ConcurrentUpdateError):
    """A write under `thread_lock` was refused: the lease expired and another holder took
    it over (fencing). Nothing of this write is visible."""

    def __str__(self) -> str:
        if self.write is None:
            return self.reason
        return (
            f"{self.write}: not written: the thread's lease expired and another holder took "
            "it over; this run must stop (its writes are refused). A holder keeps its lease "
            "while it writes or its heartbeat runs; a longer ttl covers longer stalls"
        )


class IntegrityError(S3DynamoError):
    """A stored blob failed to open: it was altered, moved to another identity, or cut short."""


class ForgedTombstoneError(IntegrityError):
    """A write was refused by a tombstone on its namespace's head that no delete of this
    deployment set (no seal, or a wrong one) over checkpoints that are still there; each
    time the store put the head back, it was forged again. Nothing of this write is
    visible and the thread's checkpoints are intact. Someone who can write the table and
    holds no key is at it: find them (docs/SECURITY.md, "Tombstones"), then run again."""

    def __init__(self, write: str, head: str, attempts: int) -> None:
        super().__init__(write, head, attempts)
        self.write, self.head, self.attempts = write, head, attempts

    def __str__(self) -> str:
        return (
            f"{self.write}: not written: its namespace's head was a tombstone without a valid "
            f"seal ({self.head!r}) over checkpoints that are still there, set again each of "
            f"{self.attempts} times the head was put back: someone without the keys is "
            "forging deletes of this thread in the table. Its checkpoints are intact "
            '(get_state reads them); stop that writer (docs/SECURITY.md, "Tombstones"), '
            "then run again"
        )


class ObjectNotFoundError(IntegrityError):
    """An object the index references is missing from the object store.

    Raised once, by the object store's adapter, with the `key` and `where` it looked; the
    store names the checkpoint that needs it (`referenced_by`) before the error goes on."""

    def __init__(self, key: str, where: str) -> None:
        super().__init__(key, where)
        self.key, self.where = key, where
        self.needed_by: str | None = None

    def referenced_by(self, what: str) -> None:
        """Name what references the object (a checkpoint, its writes)."""
        self.needed_by = what

    def __str__(self) -> str:
        if self.needed_by is None:
            return f"object {self.key!r} is missing from {self.where}"
        return (
            f"{self.needed_by}: object {self.key!r} is referenced by the index but missing "
            f"from {self.where}. s3dynamo deletes an object only once no record references "
            "it and no loan to a copy names it, so the object, or the record or loan that "
            "kept it, was deleted outside s3dynamo"
        )


class KeyNotFoundError(IntegrityError):
    """A blob was sealed under a key id that the keyring does not hold."""


class PlaintextRefusedError(IntegrityError):
    """An unsealed blob was read while encryption is configured."""


class SubjectErasingError(ThreadDeletedError):
    """An erasure of the data subject this write belongs to began and has not ended
    (`erase_subject` running, or interrupted): nothing of the subject is written until it
    ends, a Store item or cache entry no more than a checkpoint. Nothing of this write
    stays. Wait for the erasure, or run `erase_subject` again to finish one that was
    interrupted; then the subject starts afresh under a new key."""

    def __str__(self) -> str:
        return self.reason if self.write is None else f"{self.write}: not written: {self.reason}"
