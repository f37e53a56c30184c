"""Everything beyond LangGraph's checkpointer methods, as `saver.ops`: checking and
rotating keys, maintenance (garbage collection, retention, delete, copy, prune,
re-encryption), the thread lease, and inspection (threads, history, stats, verify).

Every operation that changes stored data is planned first: `plan_*` reads what it would
touch and changes nothing, and returns the one plan value (`ops/plan.py`: its name, its
counts, how to run it); the plan's `execute()` does it (the command line shows the plan
and executes it on `--yes`). Inspections return reports. Each plan and report has
`to_dict()`, the shape the command line prints with `--json`.

    plan.py          the plan value every `plan_*` returns; the scope of a table-wide one
    gc.py            garbage collection: plan, then execute (proof in docs/RELIABILITY.md)
    retention.py     expiring idle threads: the sweep and its guarantees
    sweep.py         finding idle threads through the idle index, after the sweep's cursor
    threads.py       delete, copy, prune and delete-runs plans
    reencrypt.py     re-sealing under the active key
    memory.py        the Store's and the node cache's maintenance (`saver.ops.memory`)
    inspect.py       threads, history and stats reports
    verification.py  verify: every sealed blob opened, threads' and memory's alike
    catalog.py       building the thread catalog (`saver.ops.catalog`)
    check.py         the up-front check and KMS key rotation
    migrate.py       importing threads from another LangGraph checkpointer
    subjects.py      data subjects: erasure, its records, export (`saver.ops.subjects`)

The deployment check guards every read here as on the saver's own path: an empty
result, or a blob that does not open, is first checked against the deployment record,
so a wrong key or naming secret is named as such, never shown as an empty thread or
reported as tampering.
"""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from functools import cached_property
from typing import TYPE_CHECKING

from langgraph.checkpoint.s3dynamo import lease
from langgraph.checkpoint.s3dynamo.boundary import public
from langgraph.checkpoint.s3dynamo.compose import Components
from langgraph.checkpoint.s3dynamo.config.arguments import (
    Boolean,
    Deadline,
    Duration,
    Function,
    LambdaContext,
    MaybeDict,
    MaybeN,
    MaybeSeconds,
    MaybeText,
    MaybeThreadId,
    MaybeThreadIds,
    MaybeWhole,
    Moment,
    RunIds,
    Seconds,
    Source,
    Span,
    Text,
    ThreadId,
    ThreadIds,
    Whole,
)
from langgraph.checkpoint.s3dynamo.config.runnable_config import thread_id_of
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.errors import (
    InvalidConfigError,
    ThreadNotFoundError,
)
from langgraph.checkpoint.s3dynamo.format.layout import is_memory_pk
from langgraph.checkpoint.s3dynamo.ops import catalog as catalogs
from langgraph.checkpoint.s3dynamo.ops import check as checks
from langgraph.checkpoint.s3dynamo.ops import (
    gc,
    inspect,
    migrate,
    reencrypt,
    retention,
    sweep,
    threads,
)
from langgraph.checkpoint.s3dynamo.ops.check import CheckReport
from langgraph.checkpoint.s3dynamo.ops.plan import Plan, table_wide
from langgraph.checkpoint.s3dynamo.ops.reencrypt import ReencryptResult
from langgraph.checkpoint.s3dynamo.store import Entry, Skipped
from langgraph.checkpoint.s3dynamo.table import Item

if TYPE_CHECKING:  # imported when first used: the Store's maintenance
    from langgraph.checkpoint.s3dynamo.ops.memory import MemoryOperations
    from langgraph.checkpoint.s3dynamo.ops.subjects import SubjectOperations
    from langgraph.checkpoint.s3dynamo.ops.verification import VerifyReport

__all__ = [
    "CheckReport",
    "Operations",
    "Plan",
    "ReencryptResult",
    "guarded",
]

log = logging.getLogger(__name__)


class Operations:
    """The operations of one saver (module docstring); `saver.ops`."""

    def __init__(self, parts: Components) -> None:
        self.parts = parts
        self.store = parts.store
        # Threads the last table-wide operation skipped (they do not open with these keys).
        self.last_skipped: list[Skipped] = []

    @cached_property
    def memory(self) -> MemoryOperations:
        """The Store's and the node cache's maintenance (`ops/memory.py`)."""
        from langgraph.checkpoint.s3dynamo.ops.memory import MemoryOperations

        return MemoryOperations(self.parts)

    @cached_property
    def subjects(self) -> SubjectOperations:
        """Data subjects: erasing one, erasure records, exports (`ops/subjects.py`)."""
        from langgraph.checkpoint.s3dynamo.ops.subjects import SubjectOperations

        return SubjectOperations(self.parts)

    @cached_property
    def catalog(self) -> catalogs.CatalogOperations:
        """The thread catalog's maintenance: building it (`ops/catalog.py`)."""
        return catalogs.CatalogOperations(self.parts)

    def _entries(self, thread_id: str) -> list[Entry]:
        """A thread's checkpoints; a thread with none is checked against the deployment
        (a wrong naming secret finds nothing) before it is called unknown."""
        tid = thread_id_of(thread_id)
        with guarded(self.parts.deployment):
            entries = self.store.entries(tid)
        if not entries:
            self.parts.deployment.verify(write=False)
            raise ThreadNotFoundError(
                f"thread {tid!r} has no checkpoints in this deployment; list the threads "
                "with `s3dynamo threads` (or check the table, bucket and prefix)"
            )
        return entries

    # ---------------------------------------------------------------- keys

    @public("ops.check")
    def check(self, *, raise_on_problem: Boolean = True) -> CheckReport:
        """Verify table, bucket, keys and permissions up front, with a few cheap requests;
        nothing is written (see `ops/check.py`). Raises `CheckFailedError` holding the
        report, unless `raise_on_problem` is False."""
        return checks.check(self.parts, raise_on_problem=raise_on_problem)

    @public("ops.rotate_key")
    def rotate_key(self) -> str:
        """Add a new data key from KMS and make it active (with `kms_key_id`); returns its
        id. Then `reencrypt()` moves old blobs to it. With no keyring in the table yet, it
        creates one instead. Needs kms:GenerateDataKey (the maintenance policy). With
        `keys`, rotation is a configuration change: put the new key first in
        S3DYNAMO_KEYS (see docs/SECURITY.md)."""
        return checks.rotate_key(self.parts)

    @public("ops.plan_reencrypt")
    def plan_reencrypt(self, thread_ids: MaybeThreadIds = None, *, scope: MaybeText = None) -> Plan:
        """Which keys the blobs are sealed under now; `.execute()` re-seals every blob not
        sealed under the active key, so an old key can leave the keyring. Over the whole
        table, `scope` names this saver's prefix (needed without one on a table that
        holds tenants: `plan.table_wide`)."""
        if self.parts.store.active_key() is None:
            raise InvalidConfigError(
                "reencrypt needs sealing keys: set S3DYNAMO_KEYS=new:base64,old:base64 (the "
                "first is the active key) and S3DYNAMO_SECRET, or S3DYNAMO_KMS_KEY_ID"
            )
        tids = None if thread_ids is None else [thread_id_of(t) for t in thread_ids]
        for tid in tids or ():
            self._entries(tid)
        self.parts.deployment.verify(write=True)  # records a newly active key
        if tids is not None:
            with guarded(self.parts.deployment):
                return reencrypt.plan_reencrypt(self.store, tids)
        with guarded(self.parts.deployment), table_wide(self.store, "reencrypt", scope):
            return reencrypt.plan_reencrypt(
                self.store,
                None,
                lambda: sum(self.memory.reencrypt().values()),
                self.parts.subjects.rewrap,
            )

    @public("ops.reencrypt")
    def reencrypt(
        self, thread_ids: MaybeThreadIds = None, *, scope: MaybeText = None
    ) -> ReencryptResult:
        """Re-seal every blob of these threads (default: all) not sealed under the active
        key. Returns how many it re-sealed (an int), with `.skipped`: over the whole
        table, threads that do not open with these keys are skipped and listed there."""
        plan = self.plan_reencrypt(thread_ids, scope=scope)
        result = ReencryptResult(plan.execute().result()["resealed"], plan.skipped)
        self.last_skipped = result.skipped
        log.info("reencrypt: %d blobs re-sealed, %d threads skipped", result, len(result.skipped))
        return result

    # -------------------------------------------------------- maintenance

    @public("ops.plan_garbage_collection")
    def plan_garbage_collection(
        self,
        thread_ids: MaybeThreadIds = None,
        *,
        grace: Span = gc.DEFAULT_GRACE,
        scope: MaybeText = None,
    ) -> Plan:
        """Find objects no index item references, older than `grace` (a dry run); call
        `.execute()` on the plan to delete them (see `ops/gc.py`). Over the whole bucket,
        `scope` names this saver's prefix (needed without one on a table that holds
        tenants)."""
        tids = None if thread_ids is None else [thread_id_of(t) for t in thread_ids]
        if tids is not None:
            plan = gc.plan_gc(self.store, tids, grace=grace)
        else:
            with table_wide(self.store, "garbage collection", scope):
                plan = gc.plan_gc(self.store, None, grace=grace)
        log.info("garbage collection plan: %s", plan.counts)
        return plan

    @public()
    def plan_incremental_garbage_collection(
        self, *, grace: Span = gc.DEFAULT_GRACE, now: Moment = None
    ) -> Plan:
        """Find what crashed or refused puts left: objects named by upload intents older
        than `grace` that no index item references (a dry run; `.execute()` deletes them
        and the intents). Costs one Query per journal shard plus a few requests per
        intent, never a listing of the bucket; `plan_garbage_collection` is the full
        repair (see `ops/gc.py`, docs/OPERATIONS.md)."""
        memory = self.memory.live_leaves()

        def live_of(owner: str) -> set[str] | None:
            # An intent names a thread's objects, or a Store or cache namespace's.
            return memory(owner) if is_memory_pk(owner) else self.store.live_leaves(owner)

        plan = gc.plan_incremental_gc(self.store, live_of, grace=grace, now=now)
        log.info("incremental garbage collection plan: %s", plan.counts)
        return plan

    @public("ops.plan_expiry")
    def plan_expiry(
        self,
        older_than: Duration = None,
        *,
        strategy: MaybeText = None,
        keep_last: MaybeWhole = None,
        deadline: Deadline = None,
        scope: MaybeText = None,
        full: Boolean = False,
    ) -> Plan:
        """Every thread idle for longer than `older_than` (default: the `retention`
        setting), found in the idle index after the sweep's cursor (`ops/sweep.py`), or,
        with `full` or no cursor yet, with one Scan; `.execute()` removes them whole (strategy
        "delete") or drops all but their latest checkpoints ("keep_latest"; default: the
        `retention_strategy` setting), the `keep_last` newest of each namespace (default:
        the `retention_keep_last` setting, 1). See `ops/retention.py`. With `deadline` (a
        `time.monotonic()` value), a Scan not finished by then decides nothing
        (`.scanned_all` is False). `scope` names this saver's prefix (needed without one
        on a table that holds tenants), or is "*": every tenant's idle threads, in one
        Scan (strategy "delete" only, which opens nothing, so needs no tenant's keys)."""
        ttl, chosen, kept, every = retention.terms(
            self.parts.settings, older_than, strategy, keep_last, scope
        )
        if not every:  # a tenant's keys: the deployment's, or nothing is removed
            self.parts.deployment.verify(write=False)
        with table_wide(self.store, "retention", scope, every=True):
            return sweep.plan_sweep(
                self.store,
                ttl,
                strategy=chosen,
                keep_last=kept,
                deadline=deadline,
                every=every,
                full=full,
            )

    @public("ops.expire_idle_threads")
    def expire_idle_threads(
        self,
        older_than: Duration = None,
        *,
        strategy: MaybeText = None,
        keep_last: MaybeWhole = None,
        dry_run: Boolean = False,
        deadline: Deadline = None,
        scope: MaybeText = None,
        full: Boolean = False,
    ) -> Plan:
        """Expire every thread idle for longer than `older_than`: remove it whole, or keep
        only its latest checkpoints (`strategy`, default the `retention_strategy`
        setting; the `keep_last` newest of each namespace, default the
        `retention_keep_last` setting); finish what an earlier call left midway. A
        thread written within that time keeps every checkpoint. With `dry_run=True`
        nothing changes and the plan says what would go."""
        plan = self.plan_expiry(
            older_than,
            strategy=strategy,
            keep_last=keep_last,
            deadline=deadline,
            scope=scope,
            full=full,
        )
        if not dry_run:
            plan.execute(deadline=deadline)
            self.store.forget()
        return plan

    @public("ops.plan_delete")
    def plan_delete(self, thread_id: ThreadId) -> Plan:
        """What deleting a thread removes; `.execute()` deletes it."""
        tid = thread_id_of(thread_id)
        plan = threads.plan_delete(self.store, tid)
        if not plan.counts["items"] and not plan.counts["objects"]:
            self._entries(tid)  # names a wrong secret, else the unknown thread
        return plan

    @public("ops.plan_copy")
    def plan_copy(self, source: ThreadId, target: ThreadId, *, keep_last: MaybeN = None) -> Plan:
        """What copying writes (`keep_last`: as copy_thread), or its refusal; `.execute()`."""
        self._entries(source)  # a source with no checkpoints is named as such first
        return threads.plan_copy(self.store, thread_id_of(source), thread_id_of(target), keep_last)

    @public("ops.plan_prune")
    def plan_prune(
        self, thread_ids: ThreadIds, strategy: Text = "keep_latest", keep_last: Whole = 1
    ) -> Plan:
        """What pruning keeps and removes per thread (with `keep_latest`, the `keep_last`
        newest checkpoints of each namespace); `.execute()` prunes."""
        threads.check_strategy(strategy, keep_last)
        tids = [thread_id_of(t) for t in thread_ids]
        for tid in tids:
            self._entries(tid)
        with guarded(self.parts.deployment):
            return threads.plan_prune(self.store, tids, strategy, keep_last)

    @public("ops.plan_import")
    def plan_import(self, source: Source, thread_ids: MaybeThreadIds = None) -> Plan:
        """What importing from another LangGraph checkpointer copies (default: every thread
        its `list(None)` shows); `.execute()` copies them (`ops/migrate.py`)."""
        return migrate.plan_import(self.store, self.parts.deployment, source, thread_ids)

    @public("ops.import_threads")
    def import_threads(self, source: Source, thread_ids: MaybeThreadIds = None) -> Plan:
        """Copy threads, whole histories with every namespace and pending write, from any
        LangGraph checkpointer (`InMemorySaver`, `SqliteSaver`, `PostgresSaver`, AWS's
        `DynamoDBSaver`, ...). Resumable: a repeat copies what is missing and duplicates
        nothing; a thread that has other checkpoints here is reported in `.conflicts`,
        never overwritten. Returns the executed plan (`.result()`: what was copied)."""
        plan = self.plan_import(source, thread_ids)
        plan.execute()
        return plan

    @public("ops.plan_delete_runs")
    def plan_delete_runs(self, run_ids: RunIds) -> Plan:
        """The checkpoints these runs created, found through the run index; `.execute()`
        deletes them with their writes."""
        return threads.plan_delete_runs(self.store, [str(r) for r in run_ids])

    # ---------------------------------------------------------------- runs

    @public()
    def thread_lock(
        self,
        thread_id: ThreadId,
        *,
        ttl: Seconds = lease.DEFAULT_TTL,
        wait: MaybeSeconds = None,
        context: LambdaContext = None,
        heartbeat: Boolean = True,
    ) -> AbstractContextManager[lease.ThreadLease]:
        """Hold the thread's lease for the block, so runs on it go one at a time.

        ```python
        def handler(event, context):
            with saver.ops.thread_lock(thread_id, context=context):
                graph.invoke(inputs, {"configurable": {"thread_id": thread_id}})
        ```

        One conditional UpdateItem takes it; another holder waits up to `wait` seconds
        (default: `ttl` + 1, long enough for a crashed holder's lease to lapse), then
        `LeaseTimeoutError`; `wait=0` fails fast. The lease lasts `ttl` seconds (default
        10) past the holder's last write or renewal: each write in the block renews it,
        and a heartbeat thread (`heartbeat=False` turns it off) renews it when a third of
        `ttl` passed without one, so only a dead or stalled holder loses it. With the
        Lambda `context`, the lease never outlasts the invocation and the wait ends a
        second before it does. Writes in the block carry its fencing token: once another
        holder took the lease, they are refused with `LeaseLostError` (`lease.py`)."""
        tid = thread_id_of(thread_id)
        return lease.thread_lock(self.store, tid, ttl, wait, context=context, heartbeat=heartbeat)

    @public()
    def athread_lock(
        self,
        thread_id: ThreadId,
        *,
        ttl: Seconds = lease.DEFAULT_TTL,
        wait: MaybeSeconds = None,
        context: LambdaContext = None,
        heartbeat: Boolean = True,
    ) -> AbstractAsyncContextManager[lease.ThreadLease]:
        """`thread_lock` for `async with`; waiting does not block the event loop."""
        tid = thread_id_of(thread_id)
        return lease.athread_lock(self.store, tid, ttl, wait, context=context, heartbeat=heartbeat)

    # ---------------------------------------------------------- inspection

    @public("ops.threads")
    def threads(self, metadata: MaybeDict = None) -> inspect.ThreadsReport:
        """Every thread with checkpoints (a scan of the table); with `metadata`, those whose
        latest checkpoint holds each pair, through the catalog on a declared field."""
        self.parts.deployment.verify(write=False)
        return inspect.threads(self.store, metadata)

    @public("ops.history")
    def history(self, thread_id: ThreadId, ns: MaybeText = None) -> list[inspect.HistoryItem]:
        """A thread's checkpoints newest first (`ns`: one namespace, else all), decoded,
        with their sizes."""
        entries = self._entries(thread_id)
        if ns is not None:
            entries = [e for e in entries if e.ns == ns]
            if not entries:
                raise ThreadNotFoundError(
                    f"thread {thread_id!r} has no checkpoints in namespace {ns!r}; "
                    "`--ns '*'` shows every namespace"
                )
        with guarded(self.parts.deployment):
            return inspect.history(self.store, entries)

    @public("ops.checkpoint_ids")
    def checkpoint_ids(self, thread_id: ThreadId, ns: Text) -> list[str]:
        """The ids of a thread's checkpoints in one namespace, newest first."""
        return [e.checkpoint_id for e in self._entries(thread_id) if e.ns == ns]

    @public()
    def checkpoints(self, thread_id: ThreadId) -> list[tuple[str, str]]:
        """(namespace, checkpoint id) of every checkpoint of a thread, newest first in
        each namespace."""
        return [(e.ns, e.checkpoint_id) for e in self._entries(thread_id)]

    @public("ops.stats")
    def stats(
        self, thread_id: MaybeThreadId = None, progress: Function = None
    ) -> inspect.StatsReport:
        """Sizes, compression and reuse by channel, of one thread or the whole store."""
        if thread_id is not None:
            self._entries(thread_id)
        else:
            self.parts.deployment.verify(write=False)
        with guarded(self.parts.deployment):
            return inspect.stats(self.store, thread_id, progress or inspect.no_progress)

    @public("ops.verify")
    def verify(self, thread_id: MaybeThreadId = None, progress: Function = None) -> VerifyReport:
        """Open and authenticate every item and object of one thread or the whole store
        (its Store and node cache too). When nothing opens, the keys are checked against
        the deployment first: a wrong key or secret raises `DeploymentMismatchError`."""
        from langgraph.checkpoint.s3dynamo.ops import verification

        tid = None if thread_id is None else thread_id_of(thread_id)
        if tid is None:
            self.parts.deployment.verify(write=False)
        control: list[Item] = []  # what the Scan read of control and catalog items
        scoped = inspect.scope(self.store, tid, control)
        if tid is not None and not scoped[0] and not scoped[1]:
            self._entries(tid)
        progress = progress or inspect.no_progress
        # What upload intents name, of the whole deployment: read from the Scan's items.
        named = None if tid is not None else self.store.collector().named(None, control)
        report = verification.verify(self.store, tid, progress, scoped, control, named)
        if named is not None:  # the whole deployment: its keys were checked first
            listed = {o.key: o.size for o in scoped[1]}
            verification.verify_memory(self.parts, listed, report, named)
        if report.nothing_opened:
            self.parts.deployment.verify(write=False)
        return report
