"""The throwaway PostgreSQL server on 127.0.0.1 that the benchmarks run PostgresSaver on
(`benchmarks/pg_server.py`, one copy), for the tests that read from PostgresSaver."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "pg_server.py"
_spec = importlib.util.spec_from_file_location("pg_server", _PATH)
assert _spec and _spec.loader
pg_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pg_server)

local_postgres = pg_server.local_postgres
find_bin_dir = pg_server.find_bin_dir
