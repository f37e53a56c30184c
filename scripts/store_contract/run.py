"""Run LangGraph's SQLite store tests with S3DynamoStore swapped in: the outside
contract of `BaseStore`.

Usage: python scripts/store_contract/run.py [extra pytest arguments]
(`make test-store-contract`; S3DYNAMO_CONTRACT_BACKEND=moto runs them on moto.)

1. Takes the source distribution of the installed langgraph-checkpoint-sqlite from the
   package registry, once, into .store-contract/, and unpacks tests/test_store.py and
   tests/test_async_store.py.
2. Rewrites their `SqliteStore`/`AsyncSqliteStore` import to shim.py, whose
   `from_conn_string` yields an S3DynamoStore on a fresh sealed deployment.
3. Runs them and checks the outcome: every test passes except those in EXPLAINED, each
   with its reason. Anything else failing, or an explained test now passing, exits 1.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".store-contract"
HERE = Path(__file__).resolve().parent
FILES = ("test_store.py", "test_async_store.py")

# Tests of SQLite's own internals (its SQL helpers and migrations), not of BaseStore:
# not collected.
SQLITE_ONLY = [
    "test_nonnull_migrations",
    "test_escape_glob_literal",
    "test_namespace_match_pattern",
    "test_list_namespaces_prefix_uses_indexable_condition",
]
# Test id (substring) -> why it fails with this store.
EXPLAINED: dict[str, str] = {
    "test_store::test_vector_store_initialization": (
        "its last part reads SQLite's own vector tables through `store.conn`; the parts "
        "about `index_config` and `embeddings` before it pass"
    ),
    "test_store::test_sql_injection_vulnerability": (
        "expects ValueError('Invalid filter key') for a key that would break SQLite's SQL; "
        "this store builds no query from a filter key (filters run on the opened values), "
        "so such a key matches nothing and leaks nothing; the test's first half passes"
    ),
    "test_async_store::test_no_running_loop": (
        "AsyncSqliteStore's sync methods refuse to run on the event loop's thread (its "
        "connection belongs to the loop); S3DynamoStore is one class that serves sync and "
        "async callers, so its sync methods work anywhere (they block the loop if called "
        "on it, as any sync I/O does)"
    ),
}


def unpack() -> Path:
    release = version("langgraph-checkpoint-sqlite")
    name = f"langgraph_checkpoint_sqlite-{release}"
    archive = WORK / f"{name}.tar.gz"
    if not archive.exists():
        WORK.mkdir(exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", f"langgraph-checkpoint-sqlite=={release}", "-d", str(WORK)],
            check=True,
        )  # fmt: skip
    suite = WORK / "suite"
    shutil.rmtree(suite, ignore_errors=True)
    (suite / "tests").mkdir(parents=True)
    with tarfile.open(archive) as tar:
        for file in FILES:
            member = tar.extractfile(f"{name}/tests/{file}")
            assert member is not None
            text = member.read().decode()
            text = text.replace(
                "from langgraph.store.sqlite import SqliteStore", "from shim import SqliteStore"
            ).replace(
                "from langgraph.store.sqlite import AsyncSqliteStore",
                "from shim import AsyncSqliteStore",
            )
            if "async" in file:
                # Its async tests run on anyio's pytest plugin (in this project's test
                # environment) rather than pytest-asyncio.
                text += "\n\npytestmark = pytest.mark.anyio\n"
            (suite / "tests" / file).write_text(text)
    (suite / "tests" / "__init__.py").write_text("")
    shutil.copy(HERE / "shim.py", suite / "shim.py")
    shutil.copy(HERE / "conftest.py", suite / "conftest.py")
    # Its own rootdir, so this project's pytest settings (warnings as errors) stay out.
    (suite / "pytest.ini").write_text("[pytest]\n")
    return suite


def main() -> int:
    suite = unpack()
    report = WORK / "report.xml"
    deselect = " or ".join(SQLITE_ONLY)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "ignore::DeprecationWarning", "-k", f"not ({deselect})",
         f"--junitxml={report}", "tests", *sys.argv[1:]],
        cwd=suite,
    )  # fmt: skip
    failed, passed = [], 0
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure") is not None or case.find("error") is not None
        explained = next((why for k, why in EXPLAINED.items() if k in name), None)
        if bad and explained is None:
            failed.append(name)
        elif not bad and explained is not None and case.find("skipped") is None:
            failed.append(f"{name} (explained as failing, but passed: update EXPLAINED)")
        elif not bad:
            passed += 1
    print(f"store contract: {passed} passed, {len(EXPLAINED)} explained, {len(failed)} unexpected")
    for name in failed:
        print("  UNEXPECTED", name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
