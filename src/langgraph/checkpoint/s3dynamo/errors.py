"""Errors raised by s3dynamo: each names what was expected, what came, and how to fix
it; botocore errors are translated in one place (`backends/aws_errors.py`), with `from`.

    S3DynamoError
    ├── InvalidConfigError (ValueError)     bad config, thread id, namespace, setting or argument
    │   ├── ArgumentTypeError (TypeError)   an argument of another type than its method takes
    │   ├── ItemTooLargeError               a checkpoint would not fit one index item
    │   ├── RegionNotSetError               no AWS region for a client the saver builds
    │   ├── CredentialsNotFoundError        no AWS credentials found
    │   ├── ScopeNotNamedError              a table-wide sweep, no prefix, a table with tenants
    │   ├── ValueNotSerializableError       a value or write the serializer cannot store
    │   │   (also TypeError)                (names the channel, and the task of a write)
    │   └── StorageConfigError              S3, DynamoDB or KMS refused the configuration
    │                                       (bucket, KMS key, region, endpoint, access): fix it
    ├── DeploymentMismatchError             keys, naming secret or bucket not the deployment's
    ├── StoreMissingError                   table or bucket does not exist: run setup() / terraform
    ├── CatalogNotBuiltError                a declared field's thread catalog is not built yet
    ├── StorageError                        another S3 or DynamoDB failure that may pass: retry
    │   └── EndpointUnreachableError        the service's endpoint did not answer
    ├── ThreadExistsError (ValueError)      copy_thread onto a thread that has checkpoints
    ├── ThreadNotFoundError (LookupError)   an operation named a thread with nothing stored
    ├── CheckFailedError                    `ops.check()` found problems (`.report`)
    ├── ConcurrentUpdateError               another run moved the thread on: retry the run
    │   ├── LeaseTimeoutError               thread_lock not acquired within its wait
    │   └── LeaseLostError                  the lease was taken over: this holder's write refused
    └── IntegrityError                      a stored blob did not open: tampered, moved, truncated
        ├── ObjectNotFoundError             the index references an object that is gone
        ├── KeyNotFoundError                sealed under a key id missing from the keyring
        └── PlaintextRefusedError           unsealed data read while encryption is on
"""

from __future__ import annotations


class S3DynamoError(Exception):
    """Base class of every error this package raises."""


class InvalidConfigError(S3DynamoError, ValueError):
    """A config, thread id, namespace, setting or argument is malformed."""


class ArgumentTypeError(InvalidConfigError, TypeError):
    """An argument of a public method (a setting, a thread id, a list of them, a size, a
    yes/no choice) is of another type than the method takes. Names the argument, what
    came and what it accepts; raised before any request (`arguments.py`). A `TypeError`
    too, as Python's own error for a wrong type is."""


class DeploymentMismatchError(S3DynamoError):
    """The saver's keys, naming secret or bucket differ from those the deployment was
    written with.

    Raised instead of showing an empty thread (names derived from another naming key find
    nothing) or starting a second, parallel set of names beside the first. The message
    names key ids and fingerprints, never key bytes."""


class StoreMissingError(S3DynamoError):
    """The DynamoDB table or S3 bucket does not exist. `resource` names it, with the
    region and endpoint asked."""

    def __init__(self, message: str, resource: str = "") -> None:
        super().__init__(message)
        self.resource = resource


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
    state), or serialize runs with `saver.ops.thread_lock(thread_id)`.

    Raised once, by the index adapter, with the `reason` the service gave; the store,
    which knows which write that was, names it (`refusing`) before the error goes on,
    and the message says both."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.write: str | None = None
        self.continued: str | None = None

    def refusing(self, write: str, continued: str | None = None) -> None:
        """Name the write refused and the checkpoint its run continued as the latest
        (None: a new thread)."""
        self.write, self.continued = write, continued

    def __str__(self) -> str:
        if self.write is None:
            return self.reason
        return (
            f"{self.write}: not written: another run committed to this thread since this run "
            f"continued checkpoint {self.continued or '(none: a new thread)'} as the latest "
            f"({self.reason}). Retry the run: it will load the new latest state. To run one "
            "at a time instead, wrap runs in saver.ops.thread_lock(thread_id)"
        )


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
            f"from {self.where}; it was deleted outside s3dynamo"
        )


class KeyNotFoundError(IntegrityError):
    """A blob was sealed under a key id that the keyring does not hold."""


class PlaintextRefusedError(IntegrityError):
    """An unsealed blob was read while encryption is configured."""
