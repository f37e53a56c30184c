"""A KMS deployment's keys (`KmsKeyring`): with `kms_key_id`, KMS makes every key; the
keyring record, in the deployment's own partition beside its deployment record
(`deployment.Control`), holds one KMS-wrapped key that seals the data keys and the naming
secret, so a cold start costs one Decrypt. Made on first use (one GenerateDataKey), and
never over a deployment that lost it: one that holds data, or its deployment record, and
no keyring is refused with `KeyringMissingError` (a new keyring would never open what is
stored). Bootstrap, rotation, races and restoring a lost keyring: docs/SECURITY.md, "Keys
from KMS" and "The keyring and deployment records".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from langgraph.checkpoint.s3dynamo.deployment import Control
from langgraph.checkpoint.s3dynamo.errors import (
    IntegrityError,
    KeyringMissingError,
    StorageError,
)
from langgraph.checkpoint.s3dynamo.format.layout import DEPLOYMENT_RECORD, KEYRING_RECORD
from langgraph.checkpoint.s3dynamo.format.records import ControlRecord
from langgraph.checkpoint.s3dynamo.keys.keyring import Keyring
from langgraph.checkpoint.s3dynamo.ports import KeyService

WRAP_LABEL = b"s3dynamo/v1/kms/wrap"
DATA_KEY_LABEL = b"s3dynamo/v1/kms/data-key"
NAMING_SECRET_LABEL = b"s3dynamo/v1/kms/naming-secret"
KEYRING_AAD = b"s3dynamo/v1/kms-keyring"
KMS_KEY_PREFIX = "kms-"


def kms_context(table: str, prefix: str = "") -> dict[str, str]:
    """The encryption context every wrapped key of this deployment is bound to: its
    table, and on a shared table its prefix, so one tenant's keyring never opens as
    another's."""
    context = {"s3dynamo:table": table, "s3dynamo:purpose": "keyring"}
    if prefix:
        context["s3dynamo:prefix"] = prefix
    return context


@dataclass
class _Unwrapped:
    keyring: Keyring
    secret: bytes = field(repr=False)
    version: int


class KmsKeyring:
    """Data keys and the naming secret of a deployment, wrapped by KMS (module docstring)."""

    def __init__(
        self, control: Control, service: Callable[[], KeyService], context: dict[str, str]
    ) -> None:
        self._control = control
        self._service = service
        self._context = context
        self._state: _Unwrapped | None = None
        # Key ids this process read the keyring again for (`holding`): once each.
        self._sought: set[str] = set()
        self._lock = threading.RLock()
        # KMS requests this process made (reported by `ops.check`).
        self.requests = {"GenerateDataKey": 0, "Decrypt": 0}

    def prime(self) -> None:
        """Build the KMS client and its adapter (no request)."""
        self._service()

    def exists(self) -> bool:
        """Whether the keyring record exists (no KMS request)."""
        return self._state is not None or KEYRING_RECORD in self._control.records()

    def keyring(self) -> Keyring:
        return self._load().keyring

    def probe(self) -> str:
        """Ask KMS for a data key bound to this deployment and discard it (one
        GenerateDataKey, nothing written): whether the first write could make the
        keyring. Returns the key's description."""
        self._generate()
        return self._service().describe()

    def secret(self) -> bytes:
        return self._load().secret

    def holding(self, key_id: str) -> Keyring:
        """The keyring, read again from the table where it lacks `key_id` (one Query, and
        one Decrypt if the record changed): a key another process's rotation added since
        this one loaded it. Once per key id a process, so a made-up id costs one read."""
        with self._lock:
            state = self._load()
            if key_id in state.keyring.keys or key_id in self._sought:
                return state.keyring
            self._sought.add(key_id)
            record = self._control.refresh().get(KEYRING_RECORD)
            if record is not None and record.version != state.version:
                self._state = self._open(record)
            return self._load().keyring

    def _load(self) -> _Unwrapped:
        state = self._state
        if state is not None:
            return state
        with self._lock:
            if self._state is None:
                record = self._control.records().get(KEYRING_RECORD)
                self._state = self._open(record) if record else self._bootstrap()
            return self._state

    def _wrap_key(self, wrapped: bytes) -> bytes:
        self.requests["Decrypt"] += 1
        plain = self._service().decrypt(wrapped, self._context)
        return hmac.new(plain, WRAP_LABEL, hashlib.sha256).digest()

    def _aad(self) -> bytes:
        return KEYRING_AAD + json.dumps(self._context, sort_keys=True).encode()

    def _open(self, record: ControlRecord) -> _Unwrapped:
        wrapped, sealed = record.fields.get("w"), record.fields.get("p")
        if not isinstance(wrapped, bytes) or not isinstance(sealed, bytes):
            raise IntegrityError("the keyring record in the control partition is malformed")
        try:
            raw = AESGCM(self._wrap_key(wrapped)).decrypt(sealed[:12], sealed[12:], self._aad())
        except InvalidTag:
            raise IntegrityError(
                "the keyring record failed authentication: it was altered, or moved from "
                "another table"
            ) from None
        payload = json.loads(raw)
        keys = {k: base64.b64decode(v) for k, v in payload["keys"].items()}
        return _Unwrapped(
            Keyring(keys=keys, active=payload["active"]),
            base64.b64decode(payload["naming"]),
            record.version,
        )

    def _generate(self) -> tuple[bytes, bytes]:
        self.requests["GenerateDataKey"] += 1
        return self._service().generate_data_key(self._context)

    def _record(self, plain: bytes, wrapped: bytes, state: _Unwrapped) -> ControlRecord:
        payload = json.dumps(
            {
                "keys": {k: base64.b64encode(v).decode() for k, v in state.keyring.keys.items()},
                "active": state.keyring.active,
                "naming": base64.b64encode(state.secret).decode(),
            }
        ).encode()
        nonce = os.urandom(12)
        wrap = hmac.new(plain, WRAP_LABEL, hashlib.sha256).digest()
        sealed = nonce + AESGCM(wrap).encrypt(nonce, payload, self._aad())
        return ControlRecord(KEYRING_RECORD, {"w": wrapped, "p": sealed}, state.version)

    def _bootstrap(self) -> _Unwrapped:
        self._refuse_over_data()
        plain, wrapped = self._generate()
        key_id = f"{KMS_KEY_PREFIX}1"
        state = _Unwrapped(
            Keyring(
                keys={key_id: hmac.new(plain, DATA_KEY_LABEL, hashlib.sha256).digest()},
                active=key_id,
            ),
            hmac.new(plain, NAMING_SECRET_LABEL, hashlib.sha256).digest(),
            1,
        )
        if self._control.put(self._record(plain, wrapped, state), None):
            return state
        # Another process created the keyring first: use that one.
        record = self._control.refresh().get(KEYRING_RECORD)
        if record is None:  # pragma: no cover - a conditional put refused for no record
            raise StorageError("the keyring record could neither be created nor read")
        return self._open(record)

    def _refuse_over_data(self) -> None:
        """A deployment that has its deployment record, or data, and no keyring lost
        it: a new one would never open what is stored (`KeyringMissingError`)."""
        pk = self._control.pk
        if DEPLOYMENT_RECORD in self._control.records():
            found = f"its deployment record (sort key {DEPLOYMENT_RECORD!r}) is there"
        elif (key := self._control.data()) is not None:
            found = f"it holds data (an item of partition {key.pk!r}), but no deployment record"
        else:
            return
        raise KeyringMissingError(self._context["s3dynamo:table"], pk, found)

    def rotate(self) -> str:
        """Add a data key made by KMS and make it active; returns its id."""
        with self._lock:
            state = self._load()
            plain, wrapped = self._generate()
            numbers = [
                int(k[len(KMS_KEY_PREFIX) :])
                for k in state.keyring.keys
                if k.startswith(KMS_KEY_PREFIX) and k[len(KMS_KEY_PREFIX) :].isdigit()
            ]
            key_id = f"{KMS_KEY_PREFIX}{max(numbers, default=0) + 1}"
            keys = {
                key_id: hmac.new(plain, DATA_KEY_LABEL, hashlib.sha256).digest(),
                **state.keyring.keys,
            }
            new = _Unwrapped(Keyring(keys=keys, active=key_id), state.secret, state.version + 1)
            if not self._control.put(self._record(plain, wrapped, new), state.version):
                self._state = None
                self._control.refresh()
                raise StorageError(
                    "another process rotated the KMS keyring at the same time; nothing was "
                    "changed by this call: run rotate_key() again if one more key is wanted"
                )
            self._state = new
            return key_id
