"""A throwaway PostgreSQL server on 127.0.0.1 for the PostgresSaver runs."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

USER = "bench"


def find_bin_dir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(command: list[str], run_as: str | None) -> None:
    # initdb and postgres refuse to run as root, so as root run them as `postgres`.
    if run_as:
        command = ["runuser", "-u", run_as, "--", *command]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@contextmanager
def local_postgres() -> Iterator[str | None]:
    """Yield a connection string for a fresh server, or None if PostgreSQL is missing."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        print("note: PostgreSQL not found (Debian: apt-get install -y postgresql); skipping")
        yield None
        return
    run_as = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    data = root / "data"
    if run_as:
        pw = pwd.getpwnam(run_as)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    port = _free_port()
    started = False
    try:
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            run_as,
        )
        _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(root / "server.log"),
                "-w",
                "-o",
                f"-h 127.0.0.1 -p {port} -k {root}",
                "start",
            ],
            run_as,
        )
        started = True
        yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    finally:
        if started:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], run_as)
        shutil.rmtree(root, ignore_errors=True)
