"""Every setting of a saver, validated in one place: `Settings`, from arguments or from
the environment (`Settings.from_env`); no client is built, no request sent. Variables:

    S3DYNAMO_TABLE, S3DYNAMO_BUCKET, S3DYNAMO_PREFIX       table, bucket, prefix
    S3DYNAMO_REGION (else AWS_REGION, AWS_DEFAULT_REGION,  region
      the AWS profile)
    S3DYNAMO_ENDPOINT_URL                                  endpoint_url
    S3DYNAMO_INLINE_MAX, S3DYNAMO_DELTA_MAX                 inline_max, delta_max
    S3DYNAMO_OBJECT_CACHE_BYTES, S3DYNAMO_MAX_ATTEMPTS      object_cache_bytes, max_attempts
    S3DYNAMO_DETECT_CONCURRENT_RUNS (yes or no)            detect_concurrent_runs
    S3DYNAMO_CATALOG_FIELDS (user_id,graph_id or langgraph) catalog_fields
    S3DYNAMO_SUBJECT_FIELD (user_id: whose a thread is)    subject_field
    S3DYNAMO_SUBJECT_LABEL (1: whose a Store namespace is)  subject_label
    S3DYNAMO_KEY_TABLE (else <table>-keys)                 key_table
    S3DYNAMO_ASYNC_WORKERS (read even without from_env)    async_workers
    S3DYNAMO_RETENTION (30d, 12h, 90m, 3600s, or days)     retention
    S3DYNAMO_RETENTION_STRATEGY (delete or keep_latest)    retention_strategy
    S3DYNAMO_RETENTION_KEEP_LAST (keep_latest's N: 1)      retention_keep_last
    S3DYNAMO_TTL: LangGraph Platform's `checkpointer.ttl`  ttl (its names and units,
      of langgraph.json, as JSON                             `platform_ttl`; our keep_last)
    one key source:
      S3DYNAMO_KMS_KEY_ID                                  kms_key_id
      S3DYNAMO_KEYS (id:base64key,...) + S3DYNAMO_SECRET   keys, secret
      LANGGRAPH_AES_KEY (read even without from_env, as LangGraph's platform does)
      S3DYNAMO_PLAINTEXT=1                                 plaintext

A yes/no variable takes 1, true, yes or on, or 0, false, no or off, in any case (`yes_no`);
a duration a number with a unit, d, h, m or s, or a bare number of days (`duration`); an
argument's text is read as its variable's. Anything else is refused by name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from functools import partial
from typing import Any

from langgraph.checkpoint.s3dynamo.blobs.placement import DEFAULT_DELTA_MAX, DEFAULT_INLINE_MAX
from langgraph.checkpoint.s3dynamo.config.arguments import (
    boolean,
    came,
    field_names,
    optional,
    positive,
    text,
    whole,
    yes_no,
)
from langgraph.checkpoint.s3dynamo.config.aws_names import AN_AWS_REGION, region_name
from langgraph.checkpoint.s3dynamo.config.keywords import refuse_unknown, refuse_unread
from langgraph.checkpoint.s3dynamo.errors import ArgumentTypeError, InvalidConfigError
from langgraph.checkpoint.s3dynamo.format.catalog_records import MAX_FIELDS as MAX_CATALOG_FIELDS
from langgraph.checkpoint.s3dynamo.format.catalog_records import (
    declared_fields,
    refuse_misspelled_fields,
)
from langgraph.checkpoint.s3dynamo.keys.keyring import (
    MAKE_SECRET,
    MIN_SECRET_BYTES,
    Keyring,
    KeySource,
    aes_key_text,
    key_source,
    keyring_of,
    secret_bytes,
)

# Worker threads of the process-wide pool async calls run in (`executor.py`), chosen by
# benchmarks/async_scaling.py (issue 31): see docs/OPERATIONS.md.
DEFAULT_ASYNC_WORKERS = 64

# Objects this process wrote or read lately, kept in memory (see blobs/objects.py).
DEFAULT_CACHE_BYTES = 16 * 1024 * 1024
# botocore's retry budget per request (first try included), in its "standard" mode.
DEFAULT_MAX_ATTEMPTS = 5
# A duration's units (`duration`); a bare number is days (seconds for `gc --grace`).
DURATION_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}

RETENTION_STRATEGIES = ("delete", "keep_latest")
# zstd's highest compression level.
MAX_COMPRESSION_LEVEL = 22
# Every variable `Settings.from_env` reads (the module docstring says what each sets).
VARIABLES = (
    "S3DYNAMO_TABLE",
    "S3DYNAMO_BUCKET",
    "S3DYNAMO_PREFIX",
    "S3DYNAMO_REGION",
    "S3DYNAMO_ENDPOINT_URL",
    "S3DYNAMO_INLINE_MAX",
    "S3DYNAMO_DELTA_MAX",
    "S3DYNAMO_OBJECT_CACHE_BYTES",
    "S3DYNAMO_MAX_ATTEMPTS",
    "S3DYNAMO_DETECT_CONCURRENT_RUNS",
    "S3DYNAMO_CATALOG_FIELDS",
    "S3DYNAMO_SUBJECT_FIELD",
    "S3DYNAMO_SUBJECT_LABEL",
    "S3DYNAMO_KEY_TABLE",
    "S3DYNAMO_ASYNC_WORKERS",
    "S3DYNAMO_RETENTION",
    "S3DYNAMO_RETENTION_STRATEGY",
    "S3DYNAMO_RETENTION_KEEP_LAST",
    "S3DYNAMO_TTL",
    "S3DYNAMO_KMS_KEY_ID",
    "S3DYNAMO_KEYS",
    "S3DYNAMO_SECRET",
    "S3DYNAMO_PLAINTEXT",
)
# LangGraph Platform's names in langgraph.json's `checkpointer.ttl`, and ours beside them
# (`keep_last`: how many checkpoints of each namespace `keep_latest` keeps).
PLATFORM_TTL_KEYS = ("strategy", "default_ttl", "sweep_interval_minutes", "keep_last")


def keep_last_count(value: object, name: str = "keep_last") -> int:
    """A count of checkpoints to keep in each namespace (`keep_last`): a whole number, at
    least 1 (1 is keep_latest); a variable's text is read as one. Anything else is an
    error naming the setting, what came and what it accepts."""
    count = value
    if isinstance(value, str):
        try:
            count = int(value.strip())
        except ValueError:
            count = value
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidConfigError(
            f"{name} must be a whole number of checkpoints, at least 1 (1 keeps only the "
            f"latest, as keep_latest does), got {value!r}"
        )
    return count


def duration(
    value: object, name: str = "retention", *, bare: str = "days", zero: bool = False
) -> timedelta:
    """The duration `value` of the setting or option `name`: a timedelta, a number of
    `bare` units (days; "seconds" for `gc --grace`), or text, a number with a unit (30d,
    12h, 90m, 3600s) or a bare number. Positive, or with `zero` at least 0. Anything else
    is an error that names the setting, what came and what it accepts."""
    accepts = f"a number with a unit, d, h, m or s (30d, 12h, 90m, 3600s), or a number of {bare}"
    if isinstance(value, timedelta):
        span = value
    elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
        # A number is `bare` units; so is text without a unit. An infinite or NaN one is none.
        spelled = str(value).strip().lower()
        unit = spelled[-1:] if isinstance(value, str) and spelled[-1:] in DURATION_UNITS else ""
        try:
            number = spelled.removesuffix(unit)
            if not number.isascii():  # float() reads Arabic-Indic or full-width digits too
                raise ValueError(number)
            span = timedelta(**{DURATION_UNITS.get(unit, bare): float(number)})
        except (ValueError, OverflowError):
            raise InvalidConfigError(
                f"{name} must be a duration, got {value!r}; expected {accepts}"
            ) from None
    else:
        raise ArgumentTypeError(
            f"{name} must be a duration, got a {type(value).__name__}: {value!r}; expected "
            f"{accepts}, or a timedelta"
        )
    # Activity is stamped in whole seconds: a shorter span than one is a slip (1e-9 days).
    if span < timedelta(0) or (span < timedelta(seconds=1) and not (zero and not span)):
        least = "0 or at least one second" if zero else "at least one second"
        raise InvalidConfigError(
            f"{name} must be {least}, got {value!r}; expected {accepts}, such as 30d"
        )
    return span


def platform_ttl(ttl: Any) -> dict[str, Any]:
    """Our settings from LangGraph Platform's `checkpointer.ttl` (langgraph.json): its
    names and units, `strategy` ("delete" or "keep_latest"), `default_ttl` (minutes) and
    `sweep_interval_minutes`."""
    if not isinstance(ttl, Mapping):
        raise ArgumentTypeError(
            f"ttl must be a mapping like langgraph.json's checkpointer.ttl, such as "
            f'{{"strategy": "keep_latest", "default_ttl": 43200}}, got {came(ttl)}'
        )
    unknown = sorted(set(ttl) - set(PLATFORM_TTL_KEYS))
    if unknown:
        raise InvalidConfigError(
            f"unknown ttl key(s) {unknown}; langgraph.json's checkpointer.ttl has "
            f"{list(PLATFORM_TTL_KEYS)} (default_ttl and sweep_interval_minutes in minutes)"
        )
    out: dict[str, Any] = {}
    for key, name in (("default_ttl", "retention"), ("sweep_interval_minutes", "sweep_interval")):
        value = ttl.get(key)
        if value is None:
            continue
        out[name] = timedelta(minutes=positive(f"ttl {key}", value, unit="minutes"))
    if "strategy" in ttl:
        out["retention_strategy"] = ttl["strategy"]
    if "keep_last" in ttl:
        out["retention_keep_last"] = keep_last_count(ttl["keep_last"], "ttl keep_last")
    return out


def langgraph_json_ttl(path: str = "langgraph.json") -> dict[str, Any]:
    """The `checkpointer.ttl` of a langgraph.json (an empty mapping if it has none), for
    `S3DynamoSaver.from_env(ttl=...)`: a custom checkpointer gets the same retention the
    Platform's own would."""
    with open(path) as f:
        config = json.load(f)
    ttl = (config.get("checkpointer") or {}).get("ttl") or {}
    return dict(ttl)


def workers_from_env(env: Mapping[str, str] | None = None) -> int:
    """The pool size `S3DYNAMO_ASYNC_WORKERS` asks for, else the default."""
    name = "S3DYNAMO_ASYNC_WORKERS"
    raw = (os.environ if env is None else env).get(name, "").strip()
    if not raw:
        return DEFAULT_ASYNC_WORKERS
    size = whole(name, raw, unit="threads", spelled=True)  # as the argument's text is
    check_workers(size, name)
    return size


def check_workers(size: int, name: str = "async_workers") -> None:
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidConfigError(
            f"{name} must be a whole number of threads, at least 1, got {size!r}; the "
            f"default is {DEFAULT_ASYNC_WORKERS}"
        )


def catalog_fields(name: str, value: object) -> tuple[str, ...]:
    """The metadata fields the thread catalog files threads by: a list of names, or one
    str of them separated by commas; `langgraph` stands for LangGraph's server's
    user_id, assistant_id and graph_id."""
    names = field_names(name, value, each="metadata field names")
    refuse_misspelled_fields(name, names)
    fields = declared_fields(names)
    if len(fields) > MAX_CATALOG_FIELDS:
        raise InvalidConfigError(
            f"{name} declares {len(fields)} fields, at most {MAX_CATALOG_FIELDS} are "
            "allowed (a thread's first put writes two catalog items per field in its commit)"
        )
    return fields


# How each setting is checked, and brought to its type where an argument may take
# another form: as its variable's text is read (yes/no words, a whole number, a
# duration), a secret as text, keys as S3DYNAMO_KEYS' text or a mapping
# (`Settings.__post_init__`).
FIELD_FORMS: dict[str, Callable[[str, Any], Any]] = {
    "table": lambda n, v: text(n, v, what="the DynamoDB table's name"),
    "bucket": lambda n, v: text(n, v, what="the S3 bucket's name"),
    "prefix": lambda n, v: text(n, v, what="the deployment's prefix, such as 'tenant-42/'"),
    "region": optional(
        lambda n, v: region_name(f"{n} (region=, --region)", text(n, v, what=AN_AWS_REGION))
    ),
    "endpoint_url": optional(partial(text, what="a URL, such as 'http://localhost:4566'")),
    "inline_max": lambda n, v: whole(n, v, unit="bytes", spelled=True),
    "delta_max": lambda n, v: whole(n, v, unit="bytes", spelled=True),
    "object_cache_bytes": lambda n, v: whole(n, v, unit="bytes", spelled=True),
    "compression_level": lambda n, v: whole(n, v, spelled=True),
    "max_attempts": lambda n, v: whole(n, v, unit="attempts", spelled=True),
    "detect_concurrent_runs": boolean,
    "catalog_fields": catalog_fields,
    "subject_field": optional(partial(text, what="a metadata field name, such as 'user_id'")),
    "subject_label": optional(lambda n, v: whole(n, v, unit="positions", spelled=True)),
    "key_table": lambda n, v: text(n, v, what="the key table's name"),
    "async_workers": lambda n, v: whole(n, v, unit="threads", spelled=True),
    "retention": optional(lambda n, v: duration(v, n)),
    "retention_strategy": lambda n, v: text(n, v, what="'delete' or 'keep_latest'"),
    "retention_keep_last": lambda n, v: whole(n, v, unit="checkpoints", spelled=True),
    "sweep_interval": optional(lambda n, v: duration(v, n)),
    "keys": optional(lambda n, v: keyring_of(v)),
    "secret": secret_bytes,
    "kms_key_id": optional(partial(text, what="a KMS key id, ARN or alias")),
    "plaintext": boolean,
    "allow_plaintext_read": boolean,
    "langgraph_aes_key": aes_key_text,
}


@dataclass(frozen=True)
class Settings:
    """A saver's settings (the arguments of `S3DynamoSaver`, less the parts you inject:
    clients, ports, serializer). Validated when made; see the module docstring for the
    environment variables `from_env` reads."""

    table: str = ""
    bucket: str = ""
    prefix: str = ""
    region: str | None = None
    endpoint_url: str | None = None
    inline_max: int = DEFAULT_INLINE_MAX
    delta_max: int = DEFAULT_DELTA_MAX
    object_cache_bytes: int = DEFAULT_CACHE_BYTES
    compression_level: int = 3
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    detect_concurrent_runs: bool = True
    # Metadata fields the thread catalog files threads by (`store/catalog.py`): none, no
    # catalog.
    catalog_fields: tuple[str, ...] = ()
    # Whose data a thread is (a metadata field) and a Store namespace is (a position in
    # it), and the table their keys live in (`subjects.py`): none, no subjects.
    subject_field: str | None = None
    subject_label: int | None = None
    key_table: str = ""
    # Worker threads of the process-wide pool async calls run in (`executor.py`).
    async_workers: int = field(default_factory=workers_from_env)
    retention: timedelta | None = None
    retention_strategy: str = "delete"
    # How many checkpoints of each namespace the keep_latest strategy keeps.
    retention_keep_last: int = 1
    sweep_interval: timedelta | None = None
    keys: Keyring | None = None  # its repr names ids only
    secret: bytes | None = field(default=None, repr=False)
    kms_key_id: str | None = None
    plaintext: bool = False
    allow_plaintext_read: bool = False
    # Read from the environment when not given, as LangGraph's platform does: the key
    # alone turns encryption on.
    langgraph_aes_key: str | None = field(
        default_factory=lambda: os.environ.get("LANGGRAPH_AES_KEY") or None, repr=False
    )

    def __post_init__(self) -> None:
        for name, form in FIELD_FORMS.items():
            object.__setattr__(self, name, form(name, getattr(self, name)))
        if self.inline_max < 0:
            raise InvalidConfigError(f"inline_max must be >= 0 bytes, got {self.inline_max}")
        if self.delta_max < 0:
            raise InvalidConfigError(
                f"delta_max must be >= 0 bytes (0 stores no deltas), got {self.delta_max}"
            )
        if self.object_cache_bytes < 0:
            raise InvalidConfigError(
                f"object_cache_bytes must be >= 0 (0 turns the cache off), got "
                f"{self.object_cache_bytes}"
            )
        if self.max_attempts < 1:
            raise InvalidConfigError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.compression_level > MAX_COMPRESSION_LEVEL:
            raise InvalidConfigError(
                f"compression_level must be at most {MAX_COMPRESSION_LEVEL} (zstd's highest; "
                f"3 is the default, negative levels are faster), got {self.compression_level}"
            )
        check_workers(self.async_workers)
        self._check_retention()
        self._check_key_source()
        self._check_subjects()

    def _check_retention(self) -> None:
        if self.retention_strategy not in RETENTION_STRATEGIES:
            raise InvalidConfigError(
                f"retention strategy {self.retention_strategy!r} is not one of "
                f"{RETENTION_STRATEGIES}: 'delete' removes an idle thread whole, 'keep_latest' "
                "keeps its latest checkpoint in each namespace and drops the rest"
            )
        keep_last_count(self.retention_keep_last, "retention_keep_last")
        if self.retention_keep_last != 1 and self.retention_strategy != "keep_latest":
            raise InvalidConfigError(
                f"retention_keep_last={self.retention_keep_last} with retention strategy "
                f"{self.retention_strategy!r}: keep_last counts what 'keep_latest' keeps; "
                "set the strategy to keep_latest (S3DYNAMO_RETENTION_STRATEGY, or the ttl's "
                "strategy)"
            )

    def _check_key_source(self) -> None:
        if self.kms_key_id is not None and (self.keys is not None or self.secret):
            raise InvalidConfigError(
                "kms_key_id and keys/secret were both given: with KMS the data keys and the "
                "naming secret come from the keyring KMS wraps in the table; pass one or the other"
            )
        if self.keys is not None and not self.secret:
            raise InvalidConfigError(
                "encryption keys were given without a naming secret: expected secret=... "
                "(or S3DYNAMO_SECRET), which names objects and is never rotated, unlike keys"
            )
        if self.secret and len(self.secret) < MIN_SECRET_BYTES:
            raise InvalidConfigError(
                f"the naming secret (secret=, S3DYNAMO_SECRET) is {len(self.secret)} bytes; "
                f"expected at least {MIN_SECRET_BYTES} (UTF-8 bytes for text): every object "
                "and partition name is a keyed hash under it, so a short one can be guessed. "
                f"Make one with: {MAKE_SECRET}, and keep it: it is never rotated"
            )
        size = len(self.langgraph_aes_key.encode()) if self.langgraph_aes_key is not None else 32
        if size not in (16, 24, 32):
            raise InvalidConfigError(
                f"LANGGRAPH_AES_KEY is {size} bytes; LangGraph "
                "requires a raw string of 16, 24 or 32 bytes (it is used as is, not "
                "base64-decoded); make one with: python -c 'import secrets; "
                "print(secrets.token_hex(16))'"
            )

    def _check_subjects(self) -> None:
        """Subjects need commits in transactions (each checks the subject's fence), and
        their thread catalog, so that an erasure finds their threads: the subject field
        is a catalog field too."""
        if not self.subjects:
            return
        if self.subject_field == "":
            raise InvalidConfigError(
                "subject_field (S3DYNAMO_SUBJECT_FIELD) is empty: name the metadata field "
                "whose value says whose data a thread is, such as 'user_id'"
            )
        if self.subject_label is not None and self.subject_label < 0:
            raise InvalidConfigError(
                f"subject_label (S3DYNAMO_SUBJECT_LABEL) is {self.subject_label}: expected the "
                "position of the subject's label in a Store namespace, counted from 0 (1 in "
                "('users', user_id, 'memories'))"
            )
        if not self.detect_concurrent_runs:
            raise InvalidConfigError(
                "data subjects (subject_field, subject_label) need detect_concurrent_runs: "
                "every commit of a subject's data checks its fence in one transaction, "
                "which is what an erasure stops; turn S3DYNAMO_DETECT_CONCURRENT_RUNS on"
            )
        if self.subject_field and self.subject_field not in self.catalog_fields:
            catalog_fields("subject_field", [self.subject_field])  # named as given
            fields = catalog_fields("catalog_fields", [*self.catalog_fields, self.subject_field])
            object.__setattr__(self, "catalog_fields", fields)

    @property
    def subjects(self) -> bool:
        """Whether data subjects are declared."""
        return self.subject_field is not None or self.subject_label is not None

    @property
    def key_table_name(self) -> str:
        """The key table (`subjects.py`): as named, else the data table's name + `-keys`."""
        return self.key_table or (f"{self.table}-keys" if self.table else "")

    @staticmethod
    def check(settings: object) -> Settings:
        if not isinstance(settings, Settings):
            raise ArgumentTypeError(f"settings must be a Settings, got {came(settings)}")
        return settings

    @classmethod
    def of(cls, **options: Any) -> Settings:
        """Settings from `S3DynamoSaver`'s keyword arguments (`FIELD_FORMS` says what each
        takes), `active_key` and LangGraph Platform's `ttl`. A name that is none of them
        is an error that names the one meant and lists the others."""
        refuse_unknown("Settings", options, {"": SETTING_ARGUMENTS | {"langgraph_aes_key"}})
        options = dict(options)
        active = options.pop("active_key", None)
        if active is not None:
            if options.get("keys") is None:
                raise InvalidConfigError(
                    f"active_key={active!r} names a key of keys=..., and no keys were given"
                )
            options["keys"] = keyring_of(options["keys"], text("active_key", active))
        ttl = options.pop("ttl", None)
        if ttl is not None:
            given = [k for k, v in RETENTION_DEFAULTS.items() if options.get(k, v) != v]
            if given:  # two answers to one question: never pick one silently
                raise InvalidConfigError(
                    f"ttl and {', '.join(given)} were both given: ttl (langgraph.json's "
                    "checkpointer.ttl) sets the retention, its strategy and sweep interval; "
                    "pass one or the other. Nothing was sent"
                )
            options.update(platform_ttl(ttl))
        if options.get("kms_key_id") == "":
            options["kms_key_id"] = None
        # The constructor's None: the pool size S3DYNAMO_ASYNC_WORKERS names, or 64.
        if "async_workers" in options and options["async_workers"] is None:
            del options["async_workers"]
        return cls(**options)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from the environment (module docstring); keyword arguments win."""
        env = os.environ if env is None else env
        refuse_unread(env, VARIABLES, FROM_ENV_ARGUMENTS)
        options: dict[str, Any] = {
            "table": env.get("S3DYNAMO_TABLE", ""),
            "bucket": env.get("S3DYNAMO_BUCKET", ""),
            "prefix": env.get("S3DYNAMO_PREFIX", ""),
            "langgraph_aes_key": env.get("LANGGRAPH_AES_KEY") or None,
        }
        for name, setting in (
            ("S3DYNAMO_INLINE_MAX", "inline_max"),
            ("S3DYNAMO_DELTA_MAX", "delta_max"),
            ("S3DYNAMO_OBJECT_CACHE_BYTES", "object_cache_bytes"),
            ("S3DYNAMO_MAX_ATTEMPTS", "max_attempts"),
        ):
            if raw := env.get(name):
                unit = "attempts" if setting == "max_attempts" else "bytes"
                options[setting] = whole(name, raw, unit=unit, spelled=True)
        if raw := env.get("S3DYNAMO_DETECT_CONCURRENT_RUNS"):
            options["detect_concurrent_runs"] = yes_no("S3DYNAMO_DETECT_CONCURRENT_RUNS", raw)
        if raw := env.get("S3DYNAMO_CATALOG_FIELDS"):
            options["catalog_fields"] = catalog_fields("S3DYNAMO_CATALOG_FIELDS", raw)
        for name, setting in (
            ("S3DYNAMO_SUBJECT_FIELD", "subject_field"),
            ("S3DYNAMO_SUBJECT_LABEL", "subject_label"),
            ("S3DYNAMO_KEY_TABLE", "key_table"),
        ):
            if raw := env.get(name, "").strip():
                options[setting] = FIELD_FORMS[setting](name, raw)
        if env.get("S3DYNAMO_ASYNC_WORKERS"):
            options["async_workers"] = workers_from_env(env)
        if raw := env.get("S3DYNAMO_REGION"):
            options["region"] = region_name("S3DYNAMO_REGION", raw)
        if raw := env.get("S3DYNAMO_ENDPOINT_URL"):
            options["endpoint_url"] = raw
        if spec := env.get("S3DYNAMO_KEYS"):
            options["keys"] = spec
        if secret := env.get("S3DYNAMO_SECRET"):
            options["secret"] = secret
        if kms_key_id := env.get("S3DYNAMO_KMS_KEY_ID"):
            options["kms_key_id"] = kms_key_id
        if raw := env.get("S3DYNAMO_PLAINTEXT"):
            options["plaintext"] = yes_no("S3DYNAMO_PLAINTEXT", raw)
        if raw := env.get("S3DYNAMO_RETENTION"):
            options["retention"] = duration(raw, "S3DYNAMO_RETENTION")
        if raw := env.get("S3DYNAMO_RETENTION_STRATEGY"):
            options["retention_strategy"] = raw.strip()
        if raw := env.get("S3DYNAMO_RETENTION_KEEP_LAST"):
            options["retention_keep_last"] = keep_last_count(raw, "S3DYNAMO_RETENTION_KEEP_LAST")
        if raw := env.get("S3DYNAMO_TTL"):
            options.update(_env_ttl(raw, [k for k in RETENTION_DEFAULTS if k in options]))
        if "ttl" in overrides:  # a retention of its own, in place of the environment's
            options = {k: v for k, v in options.items() if k not in RETENTION_DEFAULTS}
        options.update(overrides)  # keyword arguments win, setting by setting
        return cls.of(**options)

    def replace(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def key_source(
        self, *, serializer_cipher: bool = False, key_service: bool = False
    ) -> KeySource:
        """The one key source these settings name (`keys/keyring.key_source`)."""
        return key_source(self, serializer_cipher=serializer_cipher, key_service=key_service)

    def require_storage(self, *, index: bool, objects: bool) -> None:
        """Table and bucket must be named unless their ports are injected."""
        if (not self.table and not index) or (not self.bucket and not objects):
            raise InvalidConfigError(
                f"table and bucket are required, got table={self.table!r} "
                f"bucket={self.bucket!r}; set S3DYNAMO_TABLE and S3DYNAMO_BUCKET or pass them"
            )


# What LangGraph Platform's `ttl` sets, and each one's default (`Settings.of`).
RETENTION_DEFAULTS = {
    f.name: f.default
    for f in fields(Settings)
    if f.name in ("retention", "retention_strategy", "retention_keep_last", "sweep_interval")
}


def _env_ttl(raw: str, also: list[str]) -> dict[str, Any]:
    """The settings S3DYNAMO_TTL sets; refused beside variables that set them too."""
    if also:
        raise InvalidConfigError(
            "S3DYNAMO_TTL and S3DYNAMO_RETENTION* are both set: S3DYNAMO_TTL (langgraph.json's "
            "checkpointer.ttl) sets the retention, its strategy and sweep interval; unset one"
        )
    try:
        ttl = json.loads(raw)
    except ValueError:
        raise InvalidConfigError(
            f"S3DYNAMO_TTL must be JSON like langgraph.json's checkpointer.ttl, e.g. "
            f'{{"strategy": "keep_latest", "default_ttl": 43200}}; got {raw!r}'
        ) from None
    return platform_ttl(ttl)


# The keyword settings of `S3DynamoSaver` and of `from_env`'s overrides: every field but
# LANGGRAPH_AES_KEY's, which only the environment sets, and `active_key` and `ttl`.
SETTING_ARGUMENTS = frozenset(
    {f.name for f in fields(Settings) if f.name != "langgraph_aes_key"} | {"active_key", "ttl"}
)
# What `S3DynamoSaver.from_env` passes to the constructor as parts rather than settings,
# and every keyword its overrides take.
PARTS = (
    *("serde", "dynamodb_client", "s3_client", "kms_client"),  # the serializer, clients
    *("index", "object_store", "key_service", "key_index"),  # or the ports themselves
)
FROM_ENV_ARGUMENTS = SETTING_ARGUMENTS | set(PARTS)
