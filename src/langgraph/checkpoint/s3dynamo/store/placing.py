"""Where a checkpoint's values go: what its parent stored carried forward unchanged, a
changed value sealed as a delta against the channel's last full version when it fits,
else whole; then inline in the record while the budget lasts, the smallest first, the
rest as objects (`blobs/placement.py`).

A channel value is stored once per (thread, ns, channel, version): a checkpoint whose
channel did not change points at what its parent stored (usually kept from the read
that started the run, `handoff.py`), so unchanged values are never uploaded again. A
changed value whose parent is (or is a delta of) a full version this process holds is
sealed as a delta against it when the delta fits inline and `delta_max`; the write path
never reads S3 for a base. What a copy shares of its source (`StoredValue.owner`) is
carried forward shared; one sealed under an older key is sealed again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from langgraph.checkpoint.s3dynamo.blobs import BlobEngine
from langgraph.checkpoint.s3dynamo.blobs.cache import Lru
from langgraph.checkpoint.s3dynamo.blobs.placement import MAX_DELTA_BASE
from langgraph.checkpoint.s3dynamo.blobs.sealing import Sealer
from langgraph.checkpoint.s3dynamo.blobs.steps import Steps
from langgraph.checkpoint.s3dynamo.config.runnable_config import describe
from langgraph.checkpoint.s3dynamo.keys.codec import (
    NONE_OF_IT,
    Codec,
    delta_id,
    serializing,
    value_id,
)
from langgraph.checkpoint.s3dynamo.keys.identities import CheckpointAt, ValueAt
from langgraph.checkpoint.s3dynamo.store.finder import Finder
from langgraph.checkpoint.s3dynamo.store.handoff import Handoff
from langgraph.checkpoint.s3dynamo.store.walker import StoredValue, StoredValues, Typed, Walker

# Opened delta bases kept (see `_delta_base`), each of at most 1 MiB.
OPENED_BASES = 4
OPENED_BASE_MAX = 1 << 20


class Fresh(NamedTuple):
    """A changed value, sealed whole or (with `base`) as a delta."""

    channel: str
    version: str
    sealed: bytes
    typed: Typed
    base: str | None


class Placer:
    """Places one checkpoint's values (module docstring), through the walker's namer,
    codec and object cache, so what it writes is what the walker reads."""

    def __init__(
        self, engine: BlobEngine, finder: Finder, walker: Walker, handoff: Handoff, delta_max: int
    ) -> None:
        self.engine = engine
        self.finder = finder
        self.walker = walker
        self.handoff = handoff
        self.delta_max = delta_max
        # Object key -> opened data of recent delta bases.
        self.bases: Lru[str, Typed] = Lru(OPENED_BASES)

    def place(
        self,
        at: CheckpointAt,
        parent_id: str | None,
        values: Mapping[str, Any],
        versions: Mapping[str, Any],
        new_versions: Mapping[str, Any],
        codec: Codec,
    ) -> Steps[tuple[StoredValues, list[tuple[str, bytes]]]]:
        """Where each value of the checkpoint goes, and the objects to upload, sealed by
        `codec` (under the thread's key: `subjects.py`)."""
        tid, ns = at.tid, at.ns
        carried = yield from self._parent_values(tid, ns, parent_id, versions, new_versions)
        budget = self.engine.budget()
        stored: StoredValues = {}
        fresh: list[Fresh] = []
        for channel, raw_version in versions.items():
            version = str(raw_version)
            old = carried.get(channel)
            if channel not in new_versions and old is not None and old.version == version:
                if old.blob is not None and _stale(codec.sealer, old.blob):
                    # Carried forward from before a rotation: seal it under this commit's key.
                    old = self._reseal_carried(tid, ns, channel, old, at.what, codec)
                if (old.blob is not None and budget.take(old.blob, carried=True)) or (
                    old.leaf is not None
                ):
                    stored[channel] = old
                    continue
            if channel in values:
                value_at = ValueAt(tid, ns, channel, version)
                with serializing(_holder(at, channel), values[channel], NONE_OF_IT):
                    fresh.append(self._seal_fresh(value_at, values[channel], old, codec))
        uploads: list[tuple[str, bytes]] = []
        # Smallest first, so the inline budget keeps as many values out of S3 as it can.
        for f in sorted(fresh, key=lambda f: len(f.sealed)):
            if budget.take(f.sealed):
                stored[f.channel] = StoredValue(f.version, f.sealed, None, f.base)
                continue
            full = f.sealed
            value_at = ValueAt(tid, ns, f.channel, f.version)
            if f.base is not None:
                # The delta did not fit after all: a full version, which later deltas use.
                full = codec.seal_value_typed(value_at, f.typed)
            leaf = self.walker.namer.value(value_at)
            uploads.append((self.walker.object_key(tid, leaf), full))
            stored[f.channel] = StoredValue(f.version, None, leaf)
        return stored, uploads

    def _parent_values(
        self,
        tid: str,
        ns: str,
        parent_id: str | None,
        versions: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> Steps[StoredValues]:
        """Where the parent keeps the values this checkpoint did not change: usually
        cached from the read that started the run; otherwise one query reads the
        parent's record (no object request)."""
        if parent_id is None:
            return {}
        cached = self.handoff.stored(tid, ns, parent_id)
        if cached is not None:
            return cached  # also tells where the bases of new deltas are
        if all(ch in new_versions for ch in versions):
            return {}
        entry = yield from self.finder.read_checkpoint(tid, ns, parent_id)
        if entry is None:
            return {}
        return self.walker.stored_values(entry, self.walker.open_body(entry))

    def _seal_fresh(
        self, at: ValueAt, value: Any, previous: StoredValue | None, codec: Codec
    ) -> Fresh:
        """Seal a changed value: as a delta against the channel's last full version when
        this process holds that version and the delta is at most `delta_max` (and fits
        inline), else whole."""
        typed = codec.dump(value)
        base = self._delta_base(at.tid, at.ns, at.channel, previous)
        if base is not None:
            base_version, base_data = base
            delta = codec.seal_value_delta(at, typed, base_version, base_data)
            if delta is not None and len(delta) <= min(self.engine.inline_max, self.delta_max):
                return Fresh(at.channel, at.version, delta, typed, base_version)
        sealed = codec.seal_value_typed(at, typed)
        return Fresh(at.channel, at.version, sealed, typed, None)

    def _delta_base(
        self, tid: str, ns: str, channel: str, previous: StoredValue | None
    ) -> tuple[str, Typed] | None:
        """(version, opened data) of the full version a new delta of `channel` is made
        against: the one the parent's value is, or is a delta of. Only an object can be
        a base, and only one this process holds: the write path never reads S3."""
        if previous is None or (previous.base is None and previous.leaf is None):
            return None
        if previous.owner is not None:
            # Shared by a copy: a delta and its base always belong to one thread.
            return None
        version = previous.base if previous.base is not None else previous.version
        at = ValueAt(tid, ns, channel, version)
        key = self.walker.object_key(tid, self.walker.namer.value(at))
        opened = self.bases.get(key)
        if opened is not None:
            return version, opened
        body = self.walker.objects.cached(key)
        if body is None:
            return None
        what = f"{describe(tid, ns, version)} (delta base)"
        data = self.walker.codec.value_data(at, body, what)
        if len(data[1]) > MAX_DELTA_BASE:
            return None
        # Consecutive deltas share their base: keep it opened (objects never change).
        if len(data[1]) <= OPENED_BASE_MAX:
            self.bases.put(key, data)
        return version, data

    def _reseal_carried(
        self, tid: str, ns: str, channel: str, old: StoredValue, what: str, codec: Codec
    ) -> StoredValue:
        """A carried inline value sealed again under this commit's key, as re-encryption
        seals it (`sealed.resealed`); a delta whose base this process does not hold, or
        one a copy shares (its base is another thread's), stays as it is: it still
        opens under its key, and re-encryption moves it later."""
        if old.blob is None or (old.base is not None and old.owner is not None):
            return old
        # Only a commit after a key rotation or a subject's first key comes here.
        from langgraph.checkpoint.s3dynamo.store.sealed import Sealed, resealed

        at = ValueAt(old.owner or tid, ns, channel, old.version)
        carried = Sealed("value", "item", what, None, old.blob, value_id(at))
        bases: dict[str, Typed] = {}
        if old.base is not None:
            base = self._delta_base(tid, ns, channel, old)
            if base is None:
                return old
            bases[what] = base[1]
            carried.base = Sealed("value", "object", what, None, None, b"")
            carried.ident = delta_id(at, old.base)
        return old._replace(blob=resealed(codec.sealer, carried, bases))


def _stale(sealer: Sealer, blob: bytes) -> bool:
    """Sealed under another key than a commit's (`sealer`): from before a rotation, or
    before the thread's data subject had a key (`subjects.py`)."""
    sealing = sealer.sealing_id
    return sealing is not None and sealer.key_id_of(blob) != sealing


def _holder(at: CheckpointAt, channel: str) -> Callable[[], str]:
    """What an error names as holding a channel's value, made only if one is raised."""
    return lambda: f"{at.what}: channel {channel!r}"
