"""Data subjects' maintenance, as `saver.ops.subjects` (and `saver.erase_subject`,
`saver.export_subject`): erasing a subject, the erasure records an auditor reads, and
exporting what a subject has (`keys/subjects.py` says whose data is whose).

An erasure runs in this order (the argument: docs/RELIABILITY.md, "Erasing a data
subject"): the subject's fence is set erasing, so no commit of its data lands from then
on; its threads (the catalog's entries under its value, unopened) and its Store
namespaces (the items naming them its own) are listed; its key is destroyed, so nothing
sealed under it opens again, in the table, the bucket or any backup of them; then its
threads, their catalog entries and its Store namespaces are removed, by their names
alone; last, the erasure record goes to the key table and the fence is left erased, so
the subject's next write makes a new key. Each step can be repeated: an interrupted
erasure is finished by running it again, and until then the subject takes no write.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from langgraph.checkpoint.s3dynamo.boundary import public
from langgraph.checkpoint.s3dynamo.compose import Components, memory_space
from langgraph.checkpoint.s3dynamo.config.arguments import Function, Subject
from langgraph.checkpoint.s3dynamo.deployment import guarded
from langgraph.checkpoint.s3dynamo.errors import InvalidConfigError
from langgraph.checkpoint.s3dynamo.format.layout import STORE_SPACE
from langgraph.checkpoint.s3dynamo.keys.subjects import Subjects, sealing_key
from langgraph.checkpoint.s3dynamo.ops.plan import Plan, Progress, no_progress
from langgraph.checkpoint.s3dynamo.store import Skipped, warn_skipped

log = logging.getLogger(__name__)

# Threads removed in one wave of an erasure (each its own removal protocol).
ERASE_WAVE = 25
# What an erasure that found nothing removed.
NOTHING = ("threads", "checkpoints", "records", "objects", "namespaces", "items")


class SubjectOperations:
    """`saver.ops.subjects` (module docstring)."""

    def __init__(self, parts: Components) -> None:
        self.parts = parts
        self.subjects: Subjects = parts.subjects

    def _text(self, subject: Any) -> str:
        if not self.subjects.declared:
            raise InvalidConfigError(
                "this saver declares no data subjects: set subject_field "
                "(S3DYNAMO_SUBJECT_FIELD, such as user_id) and, for the Store, "
                "subject_label (S3DYNAMO_SUBJECT_LABEL)"
            )
        return self.subjects.text(subject)

    @public("ops.subjects.plan_erasure")
    def plan_erasure(self, subject: Subject) -> Plan:
        """What erasing `subject` removes (read, nothing changed): its threads, its Store
        namespaces, the key it is sealed under. `.execute()` erases it (module
        docstring); its result counts what went."""
        text = self._text(subject)
        self.parts.deployment.verify(write=False)
        token = self.subjects.token(text)
        with guarded(self.parts.deployment):
            fence = self.subjects.fence(text)
            threads = self._threads(text)
            namespaces = self.subjects.namespaces(text) if self.subjects.label is not None else []
            keys = self.subjects.live_keys(token)
        counts = {
            "subject": token,
            "state": fence.state if fence else "none",
            "key": fence.kid if fence else None,
            "keys": len(keys),
            "threads": len(threads),
            "namespaces": len(namespaces),
        }
        work = bool(threads or namespaces or keys) or (
            fence is not None and fence.state != "erased"
        )

        def run(progress: Progress = no_progress) -> dict[str, Any]:
            with guarded(self.parts.deployment):
                return self._erase(text, progress)

        return Plan("erasure", counts, run, work)

    def _threads(self, text: str) -> list[str]:
        field = self.subjects.field
        values = self.subjects.catalog_values(text)
        return [] if field is None else self.parts.store.threads_of(field, values)

    def _erase(self, text: str, progress: Progress) -> dict[str, Any]:
        subjects, store = self.subjects, self.parts.store
        fence = subjects.begin_erasure(text, subjects.fence(text))
        threads = self._threads(text)
        partitions = subjects.namespaces(text) if subjects.label is not None else []
        found = {"threads": len(threads), "namespaces": len(partitions)}
        fence = subjects.note_found(fence, found)
        subjects.destroy(fence)
        counts = {"threads": 0, "checkpoints": 0, "records": 0, "objects": 0}
        progress(0, len(threads))
        for at in range(0, len(threads), ERASE_WAVE):
            for removed in store.remove_threads(threads[at : at + ERASE_WAVE]):
                counts["threads"] += 1
                counts["checkpoints"] += removed.checkpoints
                counts["records"] += removed.records
                counts["objects"] += removed.objects
            progress(min(at + ERASE_WAVE, len(threads)), len(threads))
        space = memory_space(self.parts, STORE_SPACE)
        counts["namespaces"] = len(partitions)
        counts["items"] = space.drop_partitions(partitions)
        subjects.unlink(text, partitions)
        subjects.end_erasure(fence, counts)
        log.info("erasure of subject %s: %s", subjects.token(text), counts)
        return {"subject": subjects.token(text), "key": fence.kid, **counts}

    def erase(self, subject: Any) -> dict[str, Any]:
        """Erase a data subject (module docstring); what went."""
        plan = self.plan_erasure(subject)
        if not plan.work:  # erased already, and nothing written since: nothing to record
            return {**plan.counts, **dict.fromkeys(NOTHING, 0)}
        plan.execute()
        result: dict[str, Any] = plan.result()
        return result

    @public("ops.subjects.plan_build")
    def plan_build(self, progress: Function = None) -> Plan:
        """What sealing under its subject's key the data written before (data sealed
        under the deployment's keys: before subjects were declared, or by a process
        that declared none) re-seals, read with one Scan of the records and one Query of
        the Store's directory; nothing changed. `.execute()` makes each subject's key
        where it has none, seals each of its threads again under it (as `reencrypt`
        does, `ThreadStore.reseal`) and each of its Store namespaces (names them the
        subject's too), so that an erasure covers them. Run it once after declaring
        subjects on a deployment that has data."""
        subjects, store = self.subjects, self.parts.store
        if not subjects.declared:
            self._text("")
        self.parts.deployment.verify(write=False)
        skipped: list[Skipped] = []
        tell = progress or no_progress
        with guarded(self.parts.deployment):
            threads = {
                tid: text
                for tid, metadata in store.newest_metadata(skipped).items()
                if (text := subjects.of_metadata(metadata)) is not None
            }
            space = memory_space(self.parts, STORE_SPACE)
            found = [f for f in space.namespaces() if subjects.of_namespace(f[0]) is not None]
        named = {subjects.of_namespace(ns) for ns, _ in found}
        counts = {
            "subjects": len(set(threads.values()) | {n for n in named if n is not None}),
            "threads": len(threads),
            "namespaces": len(found),
            "skipped_threads": len(skipped),
        }

        def run() -> dict[str, int]:
            resealed, total = 0, len(threads) + len(found)
            with guarded(self.parts.deployment):
                for done, (tid, text) in enumerate(sorted(threads.items())):
                    tell(done, total)
                    key = subjects.established(text)
                    resealed += store.reseal(tid, sealing_key(key))
                for done, (namespace, entry) in enumerate(found, start=len(threads)):
                    tell(done, total)
                    named = subjects.of_namespace(namespace) or ""
                    key = subjects.established(named)
                    subjects.link(named, space.pk(namespace))
                    resealed += space.reseal((namespace, entry), sealing_key(key))
            tell(total, total)
            warn_skipped("subjects build", skipped)
            store.forget()
            return {**counts, "resealed": resealed}

        return Plan("subjects_build", counts, run, bool(threads or found))

    @public("ops.subjects.erasures")
    def erasures(self) -> list[dict[str, Any]]:
        """Every erasure recorded, oldest first: the subject's keyed hash (which only this
        deployment's naming secret makes from a subject: `token`), when it began, the key
        destroyed, and what went: the threads and Store namespaces it found when it began,
        the checkpoints, records, objects and items its last run removed. No personal
        data."""
        return [
            {
                "subject": e.token,
                "began": _iso(e.began_ms),
                "key": e.kid,
                "counts": e.counts,
            }
            for e in self.subjects.erasures()
        ]

    def token(self, subject: Any) -> str:
        """The keyed hash an erasure record names a subject by."""
        return self.subjects.token(self._text(subject))

    @public("ops.subjects.export")
    def export(self, subject: Subject, progress: Function = None) -> Iterator[dict[str, Any]]:
        """Everything the subject has, one record at a time: each of its threads'
        checkpoints (their state, metadata and pending writes; in a thread whose
        checkpoints name several subjects, those that name this one or none) and each
        of its Store items, values as the graph holds them (messages as message
        objects; `json_line` writes a record as `s3dynamo export-subject` does). What an
        erasure made unreadable (a backup restored after it) is left out, with a warning.
        `progress(done, total)` hears of the threads and namespaces read."""
        text = self._text(subject)
        tell = progress or no_progress
        field = self.subjects.field
        erased: list[str] = []
        with guarded(self.parts.deployment):
            values = self.subjects.catalog_values(text)
            store = self.parts.store
            tids = [] if field is None else store.subject_threads(field, values, erased)
            partitions = self.subjects.namespaces(text) if self.subjects.label is not None else []
        total = len(tids) + len(partitions)
        for done, tid in enumerate(tids):
            tell(done, total)
            for record in _checkpoints(self.parts, tid):
                named = self.subjects.of_metadata(record["metadata"])
                if named is None or named == text:
                    yield record
        space = memory_space(self.parts, STORE_SPACE)
        serde = self.parts.serde()
        namespaces = space.namespaces_of(partitions, erased)
        if erased:
            log.warning(
                "export of subject %s: left out %d thread(s) and Store namespace(s) an "
                "erasure made unreadable (a backup restored after it; erase the subject "
                "again to remove them)",
                self.subjects.token(text),
                len(erased),
            )
        for done, namespace in enumerate(namespaces, start=len(tids)):
            tell(done, total)
            for found in space.items_of(namespace):
                body = serde.loads_typed(found.typed)
                yield {
                    "type": "store_item",
                    "namespace": list(found.namespace),
                    "key": found.key,
                    "value": body.get("value") if isinstance(body, Mapping) else body,
                    "created_at": _iso(found.created_ms),
                    "updated_at": _iso(found.updated_ms),
                }
        tell(total, total)


def _checkpoints(parts: Components, tid: str) -> Iterator[dict[str, Any]]:
    store = parts.store
    for found in store.tuples(store.entries(tid), None, None):
        configurable = found.config["configurable"]
        parent = (found.parent_config or {}).get("configurable", {})
        yield {
            "type": "checkpoint",
            "thread_id": tid,
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            "checkpoint_id": configurable.get("checkpoint_id"),
            "parent_checkpoint_id": parent.get("checkpoint_id"),
            "created_at": found.checkpoint.get("ts"),
            "metadata": dict(found.metadata or {}),
            "values": dict(found.checkpoint.get("channel_values") or {}),
            "pending_writes": [
                {"task_id": task, "channel": channel, "value": value}
                for task, channel, value in found.pending_writes or []
            ],
        }


def json_line(record: Mapping[str, Any]) -> str:
    """One exported record as a line of JSON: what the serializer's values are in JSON
    (messages, models and dataclasses as their fields, bytes as base64), else their text."""
    return json.dumps(record, default=_jsonable, ensure_ascii=False, sort_keys=True)


def _jsonable(value: Any) -> Any:
    for method in ("model_dump", "dict"):
        dump = getattr(value, method, None)
        if callable(dump):
            try:
                return dump()
            except TypeError:
                pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return repr(value)


def _iso(ms: int | None) -> str | None:
    if not ms:
        return None
    at = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return at.isoformat(timespec="milliseconds")
