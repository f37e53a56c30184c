"""Run LangGraph's SQLite and Postgres store tests with S3DynamoStore swapped in: the
outside contract of `BaseStore`, as LangGraph's own stores are held to it.

Usage: python scripts/store_contract/run.py [extra pytest arguments]
(`make test-store-contract`; S3DYNAMO_CONTRACT_BACKEND=moto runs them on moto.)

For each suite (SUITES):
1. Takes the source distribution of the installed langgraph-checkpoint-sqlite (or
   -postgres) from the package registry, once, into .store-contract/, and unpacks its
   tests/test_store.py and tests/test_async_store.py.
2. Rewrites their store imports to shim.py (shim_postgres.py, which also stands in for
   the psycopg connections that make a database per test), whose `from_conn_string`
   yields an S3DynamoStore on a fresh sealed deployment.
3. Runs them and checks the outcome: every test passes except those in its `explained`,
   each with its reason. Anything else failing, or an explained test now passing, exits 1.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".store-contract"
HERE = Path(__file__).resolve().parent
FILES = ("test_store.py", "test_async_store.py")

SQLITE = {
    "from langgraph.store.sqlite import SqliteStore": "from shim import SqliteStore",
    "from langgraph.store.sqlite import AsyncSqliteStore": "from shim import AsyncSqliteStore",
}
POSTGRES = {
    "from langgraph.store.postgres import PostgresStore": "from shim_postgres import PostgresStore",
    "from langgraph.store.postgres import AsyncPostgresStore": (
        "from shim_postgres import AsyncPostgresStore"
    ),
    "from psycopg import Connection": "from shim_postgres import Connection",
    "from psycopg import AsyncConnection": "from shim_postgres import AsyncConnection",
}
# What the Postgres tests import from their conftest, which would connect to a server.
POSTGRES_CONFTEST = """
import pytest

from tests.embed_test_utils import CharacterEmbeddings

DEFAULT_URI = "postgres://postgres:postgres@localhost:5441/postgres?sslmode=disable"
VECTOR_TYPES = ["vector", "halfvec"]


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)
"""


@dataclass
class Suite:
    distribution: str
    imports: dict[str, str]  # the store's import -> the shim's
    shims: tuple[str, ...]
    # Tests of the store's own internals (its SQL helpers and migrations), not of
    # BaseStore: not collected.
    internal: tuple[str, ...]
    explained: dict[str, str]  # test id (substring) -> why it fails with this store
    extra: tuple[str, ...] = ()  # other files of the suite's tests/ it needs
    conftest: str = ""  # its tests/conftest.py, replacing the suite's own


SUITES = {
    "sqlite": Suite(
        "langgraph-checkpoint-sqlite",
        SQLITE,
        ("shim.py",),
        (
            "test_nonnull_migrations",
            "test_escape_glob_literal",
            "test_namespace_match_pattern",
            "test_list_namespaces_prefix_uses_indexable_condition",
        ),
        {
            "test_store::test_vector_store_initialization": (
                "its last part reads SQLite's own vector tables through `store.conn`; the "
                "parts about `index_config` and `embeddings` before it pass"
            ),
            "test_store::test_sql_injection_vulnerability": (
                "expects ValueError('Invalid filter key') for a key that would break "
                "SQLite's SQL; this store builds no query from a filter key (filters run on "
                "the opened values), so such a key matches nothing and leaks nothing; the "
                "test's first half passes"
            ),
            "test_async_store::test_no_running_loop": (
                "AsyncSqliteStore's sync methods refuse to run on the event loop's thread "
                "(its connection belongs to the loop); S3DynamoStore is one class that "
                "serves sync and async callers, so its sync methods work anywhere (they "
                "block the loop if called on it, as any sync I/O does)"
            ),
        },
    ),
    "postgres": Suite(
        "langgraph-checkpoint-postgres",
        POSTGRES,
        ("shim.py", "shim_postgres.py"),
        (
            "test_nonnull_migrations",
            "test_escape_like_literal",
            "test_namespace_match_pattern",
            # 60,000 concurrent operations: over 3 minutes a store here (one ran past 180 s
            # unfinished), where the tier has minutes; test_large_batches, 6,000, passes.
            "test_large_batches_async",
        ),
        {
            "test_async_store::test_no_running_loop": (
                "AsyncPostgresStore's sync methods refuse to run on the event loop's thread; "
                "S3DynamoStore serves sync and async callers alike (as for SQLite's)"
            ),
            "test_async_store::test_abatch_uses_single_pool_checkout": (
                "counts checkouts of Postgres's connection pool (`_ainternal.get_connection`)"
            ),
            "test_store::test_batch_list_namespaces_ops": (
                "its third operation passes a bare string as a MatchCondition path; this "
                "store refuses it by name (it would be read as one label per character, as "
                "Postgres reads it: its assertion then holds over an empty list)"
            ),
            "-halfvec-l2]": (
                "distance_type 'l2': this store ranks by cosine similarity (LangGraph's "
                "IndexConfig has no distance type); the cosine and inner-product rows pass"
            ),
            "::test_omit_expired_filters_read_paths": (
                "expires a row by SQL through `store._cursor()`; this store has no SQL"
            ),
            "::test_omit_expired_refresh_ttl_only_refreshes_live_rows": (
                "expires a row by SQL through `store._cursor()`; this store has no SQL"
            ),
            "::test_omit_expired_search_pagination": (
                "expires a row and moves rows' times by SQL through `store._cursor()`"
            ),
        },
        extra=("embed_test_utils.py",),
        conftest=POSTGRES_CONFTEST,
    ),
}


def unpack(name: str, suite: Suite) -> Path:
    release = version(suite.distribution)
    base = f"{suite.distribution.replace('-', '_')}-{release}"
    archive = WORK / f"{base}.tar.gz"
    if not archive.exists():
        WORK.mkdir(exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", f"{suite.distribution}=={release}", "-d", str(WORK)],
            check=True,
        )  # fmt: skip
    where = WORK / name
    shutil.rmtree(where, ignore_errors=True)
    (where / "tests").mkdir(parents=True)
    with tarfile.open(archive) as tar:
        for file in (*FILES, *suite.extra):
            member = tar.extractfile(f"{base}/tests/{file}")
            assert member is not None
            text = member.read().decode()
            for theirs, ours in suite.imports.items():
                text = text.replace(theirs, ours)
            if "async" in file:
                # Its async tests run on anyio's pytest plugin (in this project's test
                # environment) rather than pytest-asyncio.
                text += "\n\npytestmark = pytest.mark.anyio\n"
            (where / "tests" / file).write_text(text)
    (where / "tests" / "__init__.py").write_text("")
    (where / "tests" / "conftest.py").write_text(suite.conftest)
    for shim in suite.shims:
        shutil.copy(HERE / shim, where / shim)
    shutil.copy(HERE / "conftest.py", where / "conftest.py")
    # Its own rootdir, so this project's pytest settings (warnings as errors) stay out.
    (where / "pytest.ini").write_text("[pytest]\n")
    return where


def check(name: str, suite: Suite) -> list[str]:
    """Run one suite; what failed unexplained (or passed though explained)."""
    where = unpack(name, suite)
    report = WORK / f"report-{name}.xml"
    deselect = " or ".join(suite.internal)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "ignore::DeprecationWarning", "-k", f"not ({deselect})",
         f"--junitxml={report}", "tests", *sys.argv[1:]],
        cwd=where,
    )  # fmt: skip
    failed, passed = [], 0
    for case in ET.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure") is not None or case.find("error") is not None
        explained = next((why for k, why in suite.explained.items() if k in test), None)
        if bad and explained is None:
            failed.append(test)
        elif not bad and explained is not None and case.find("skipped") is None:
            failed.append(f"{test} (explained as failing, but passed: update `explained`)")
        elif not bad:
            passed += 1
    print(
        f"store contract, {suite.distribution}'s tests: {passed} passed, "
        f"{len(suite.explained)} explained, {len(failed)} unexpected"
    )
    for test in failed:
        print("  UNEXPECTED", test)
    return failed


def main() -> int:
    failed = [test for name, suite in SUITES.items() for test in check(name, suite)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
