"""The thread catalog: every thread of the deployment, and the threads that have had a
value of a declared metadata field (`catalog_fields`), found through keyed-hash tokens
at the cost of what they hold instead of a Scan of the table.

Writing. A put files its thread under the token of each declared value of its metadata
(and under the deployment's token) that its process does not know the thread has: an
entry and its back-reference in the put's own commit (`entries_for`); a thread's first
checkpoint (a root-namespace put with no parent) files all of them again. What a process
wrote or read of a thread tells it which it has (`handoff.py`). Copies and imports file
the target; a thread's deletion removes its entries through the back-references, after
its records (`uncatalog`).

Reading. `threads(field, value)`: every thread that has had the value, from one Query of
its partition (paged), each entry opened and checked against its keys (a forged or moved
one is an `IntegrityError`). What `search_threads` makes of them: `store/search.py`.

A field's catalog is complete once every thread has its entries; the deployment's
partition records it (`complete_record`) when the deployment is created with the field
declared, or once `ops.build_catalog` has filed every thread. Layout: `layout.py`; items:
`catalog_records.py`; what the tokens reveal: docs/SECURITY.md, "The thread catalog".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.blobs.steps import (
    Batch,
    Steps,
    every_item,
    keys_of,
)
from langgraph.checkpoint.s3dynamo.deployment import Control, Deployment
from langgraph.checkpoint.s3dynamo.equality import canonical
from langgraph.checkpoint.s3dynamo.errors import (
    CatalogNotBuiltError,
    IntegrityError,
    InvalidConfigError,
    SubjectErasedError,
)
from langgraph.checkpoint.s3dynamo.format.catalog_records import (
    CatalogEntry,
    complete_record,
    declared_fields,
    declared_values,
    entry_from,
    entry_key,
)
from langgraph.checkpoint.s3dynamo.format.layout import (
    CATALOG_REF,
    DEPLOYMENT_RECORD,
    catalog_pk,
    catalog_record,
    control_pk,
)
from langgraph.checkpoint.s3dynamo.format.records import ItemKey
from langgraph.checkpoint.s3dynamo.format.schema import SORT_KEY
from langgraph.checkpoint.s3dynamo.keys.codec import Codec
from langgraph.checkpoint.s3dynamo.keys.naming import Namer
from langgraph.checkpoint.s3dynamo.store.format import catalog_deletes
from langgraph.checkpoint.s3dynamo.store.handoff import Handoff
from langgraph.checkpoint.s3dynamo.table import begins

# The field of the deployment's own entries: every thread (no declared field is "").
EVERY_THREAD = ""


class Catalogued(NamedTuple):
    """A thread the catalog names: its id (opened from the entry) and its name as stored."""

    tid: str
    name: str


class Catalog:
    """The catalog of one deployment's threads, for the fields it declares (module
    docstring)."""

    def __init__(
        self,
        prefix: str,
        namer: Namer,
        codec: Codec,
        handoff: Handoff,
        fields: Sequence[str],
    ) -> None:
        self.prefix = prefix
        self.namer = namer
        self.codec = codec
        self.handoff = handoff
        self.declared = declared_fields(fields)
        # The deployment's own partition, where completeness is recorded, and its record,
        # which holds the fields (set by the composition root; a store built without them
        # takes its declared fields, and every catalog as complete).
        self.control: Control | None = None
        self.deployment: Deployment | None = None
        # Whether the deployment holds data, once a deployment without a record asked.
        self._holds_data = False

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields threads are filed by: the deployment's, recorded in its record, else
        those declared; declared others are `DeploymentMismatchError`
        (`Deployment.catalog_fields`)."""
        if self.deployment is None:
            return self.declared
        return self.deployment.catalog_fields(self.declared)

    @property
    def enabled(self) -> bool:
        """Whether any field is declared: without one, nothing is filed."""
        return bool(self.fields)

    def token(self, field: str, text: str = "") -> str:
        """The token of one value (its canonical text) of a field; of the field alone
        with no text; of every thread with neither."""
        return self.namer.catalog(field, text)

    def tokens(self, metadata: Mapping[str, Any] | None) -> frozenset[str]:
        """What a checkpoint with this metadata files its thread under: the deployment's
        token, and one per declared value it holds."""
        values = declared_values(metadata, self.fields)
        return frozenset(
            [self.token(EVERY_THREAD), *(self.token(f, text) for f, text in values.items())]
        )

    def usable(self, filter: Mapping[str, Any] | None) -> tuple[str, str] | None:
        """(field, token) of the first declared field the filter asks to equal a value a
        token stands for; None when it names none."""
        for field in self.fields:
            if filter and field in filter and (text := canonical(filter[field])) is not None:
                return field, self.token(field, text)
        return None

    # ------------------------------------------------------------ writing

    def entries(
        self, tid: str, tokens: Iterable[str], codec: Codec | None = None
    ) -> list[CatalogEntry]:
        """The entries filing thread `tid` under these tokens, its id sealed for each (by
        `codec`: under the thread's key, `subjects.py`; else the deployment's)."""
        name = self.namer.thread(tid)
        codec = codec or self.codec
        out = []
        for token in sorted(set(tokens)):
            key = entry_key(name, token)
            out.append(CatalogEntry(key, codec.seal_catalog(key.pk, key.sk, tid)))
        return out

    def entries_of(
        self, tid: str, metadata: Iterable[Mapping[str, Any] | None], codec: Codec | None = None
    ) -> list[CatalogEntry]:
        """Every entry filing thread `tid` under the declared values of these checkpoints'
        metadata (a copy's, an import's); none without a declared field."""
        if not self.enabled:
            return []
        tokens = frozenset().union(*(self.tokens(md) for md in metadata))
        return self.entries(tid, tokens, codec)

    def entries_of_all(
        self,
        found: Sequence[Any],
        metadata_of: Callable[[Any], Mapping[str, Any] | None],
        progress: Callable[[int, int | None], None],
    ) -> tuple[int, list[CatalogEntry]]:
        """Every entry filing the threads of these checkpoints (`Entry`s) under the
        declared values of their metadata (a build): (threads, entries); `progress`
        hears of each thread read, out of all of them."""
        total = len({e.tid for e in found})
        metadata: dict[str, list[Mapping[str, Any] | None]] = {}
        for e in found:
            if e.tid not in metadata:
                progress(len(metadata), total)
            metadata.setdefault(e.tid, []).append(metadata_of(e))
        progress(len(metadata), total)
        return len(metadata), [e for tid, md in metadata.items() for e in self.entries_of(tid, md)]

    def entries_for(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        metadata: Mapping[str, Any],
        codec: Codec | None = None,
    ) -> list[CatalogEntry]:
        """What a put of this metadata writes in its commit: every entry for a thread's
        first checkpoint, else those this process does not know the thread has."""
        if not self.enabled:
            return []
        tokens = self.tokens(metadata)
        if ns or parent_id is not None:
            tokens -= self.handoff.tokens(tid)
        return self.entries(tid, tokens, codec)

    def written(self, tid: str, entries: Sequence[CatalogEntry]) -> None:
        """A commit wrote these entries of thread `tid`."""
        if entries:
            self.handoff.keep_tokens(tid, frozenset(e.token for e in entries))

    def seen(self, tid: str, metadata: Mapping[str, Any] | None) -> None:
        """A checkpoint of thread `tid` with this metadata was read: every writer files
        its thread under its declared values, so the thread has those entries."""
        if self.enabled:
            self.handoff.keep_tokens(tid, self.tokens(metadata))

    # ------------------------------------------------------------ reading

    def listed(self, token: str) -> Steps[list[CatalogEntry]]:
        """Every entry under a token (unopened), read strongly consistent, so that a
        search finds a thread whose first put has just committed: one Query, paged."""
        items = yield from every_item(catalog_pk(self.prefix, token), consistent=True)
        return [entry_from(i) for i in items]

    def opened(self, entry: CatalogEntry) -> Catalogued:
        """The thread an entry names, its sealed id opened for the entry's keys and checked
        against its sort key: a forged or moved entry is an `IntegrityError`."""
        what = f"catalog entry {entry.key.pk} {entry.key.sk}"
        tid = self.codec.open_catalog(entry.key.pk, entry.key.sk, entry.sealed, what)
        if self.namer.thread(tid) != entry.thread_name:
            raise IntegrityError(
                f"{what}: names a thread whose records are stored under another key: the "
                "entry was moved, or written with another naming secret"
            )
        return Catalogued(tid, entry.thread_name)

    def opened_all(
        self, entries: Sequence[CatalogEntry], erased: list[str] | None = None
    ) -> list[Catalogued]:
        """The threads these entries name, leaving out those of a data subject an
        erasure made unreadable (a backup restored after it), unless that is all there
        is: then `SubjectErasedError`, never an empty answer for the subject's own.
        With `erased` (a subject's export), their threads' names go there instead."""
        out: list[Catalogued] = []
        refused: SubjectErasedError | None = None
        for entry in entries:
            try:
                out.append(self.opened(entry))
            except SubjectErasedError as exc:
                refused = exc
                if erased is not None:
                    erased.append(entry.thread_name)
        if refused is not None and not out and erased is None:
            raise refused
        return out

    def threads(self, field: str, value: Any) -> Steps[list[Catalogued]]:
        """Every thread that has had `value` in the declared field `field`, in no set
        order (for a search, `store/search.py`; for what a subject is, a user's threads):
        one Query of its partition, each entry opened. A field whose catalog is not
        complete is `CatalogNotBuiltError`."""
        if field not in self.fields:
            raise InvalidConfigError(
                f"{field!r} is not a declared catalog field; declared: {list(self.fields)} "
                "(catalog_fields, S3DYNAMO_CATALOG_FIELDS)"
            )
        text = canonical(value)
        if text is None:
            raise InvalidConfigError(
                f"the catalog files scalar values and lists of them; {field}={value!r} has "
                "no entries"
            )
        self.require_complete(field)
        return [self.opened(e) for e in (yield from self.listed(self.token(field, text)))]

    # ------------------------------------------------------------ completeness

    def complete(self, field: str) -> bool:
        """Whether every thread has its entries under `field`'s values (`EVERY_THREAD`:
        under the deployment's token): the deployment's partition says so, or holds no
        deployment record while the deployment holds no data either (nothing was written
        yet: `empty`). Read once per process; read again while it says no, so a catalog
        built meanwhile is seen. A deployment with data and no record (it was deleted)
        is not complete: nothing says its threads were filed."""
        control = self.control
        if control is None:
            return True
        name = catalog_record(self.token(field))
        for records in (control.records, control.refresh):
            found = records()
            if name in found:
                return True
        return DEPLOYMENT_RECORD not in found and self.empty()

    def empty(self) -> bool:
        """Whether the deployment holds no checkpoint (a Scan, keys only, until it finds
        a checkpoint record; asked where no deployment record is, and kept once it finds
        one). A process making the record has written none yet: its first checkpoint
        waits for the record; its writes records, sent beside, are no threads."""
        if not self._holds_data:
            found = self.control.data(checkpoints=True) if self.control is not None else None
            self._holds_data = found is not None
        return not self._holds_data

    def require_fields(self) -> None:
        """`InvalidConfigError` for a saver that declares no field, in a deployment that
        records none (it keeps no catalog)."""
        if not self.enabled:
            raise InvalidConfigError(
                "this saver declares no catalog field, and the deployment records none, so "
                "it keeps no thread catalog: set "
                "catalog_fields (S3DYNAMO_CATALOG_FIELDS), such as 'langgraph' for "
                "LangGraph's server's user_id, assistant_id and graph_id, then build it "
                "once for the threads written before (s3dynamo catalog build)"
            )

    def require_complete(self, field: str) -> None:
        """`require_fields`, then `CatalogNotBuiltError` unless the catalog of `field`
        (`EVERY_THREAD`: of every thread) is complete."""
        self.require_fields()
        if not self.complete(field):
            which = f"field {field!r}" if field else "every thread"
            raise CatalogNotBuiltError(
                f"the thread catalog of {which} is not complete in this deployment: threads "
                "written before the field was declared have no entries yet. Build it once "
                "(saver.ops.catalog.build(), or `s3dynamo catalog build`: one Scan of the "
                "table), with every process writing threads declaring the same fields"
            )

    def mark_complete(self, unfiled: Sequence[Any] = ()) -> bool:
        """Record that every thread has its entries under every declared field and the
        deployment's token (the catalog was built), unless some thread could not be
        filed (`unfiled`: the threads a build skipped): then nothing is recorded, and a
        search by a declared field stays `CatalogNotBuiltError`. Whether it was."""
        if self.control is None or not self.enabled:
            return False
        if self.deployment is not None:  # the fields it files under, for every process
            self.deployment.record_catalog(self.fields)
        if unfiled:
            return False
        self._completed()
        return True

    def created(self) -> None:
        """The deployment record was just made by this process (with its declared fields):
        its threads are filed from the first, so the catalog is complete, unless the
        deployment holds data already (its record was lost: those threads may have no
        entries)."""
        if self.control is not None and self.enabled and self.empty():
            self._completed()

    def _completed(self) -> None:
        assert self.control is not None
        for field in (EVERY_THREAD, *self.fields):
            self.control.put(complete_record(self.token(field)), None)


# ------------------------------------------------------------ a thread's removal


def uncatalog(control: Iterable[ItemKey]) -> Steps[list[ItemKey]]:
    """Delete the catalog entries the back-references among these control keys of a
    thread point at (one batch, only if there are any); the back-references, which the
    caller deletes after them, so an interrupted removal is found again."""
    entries, refs = catalog_deletes(control)
    if entries:
        yield Batch(deletes=entries)
    return refs


def drop_catalog(thread_name: str) -> Steps[None]:
    """Remove a thread's catalog entries, then their back-references: what removing it
    does to the catalog, for an operation that empties it another way."""
    control = yield from keys_of(control_pk(thread_name), where=begins(SORT_KEY, CATALOG_REF))
    refs = yield from uncatalog(control)
    if refs:
        yield Batch(deletes=refs)
