"""A throwaway PostgreSQL cluster for tests: ``initdb`` + ``pg_ctl`` on a free localhost port, removed afterwards.

The server runs as an unprivileged user when the tests run as root (PostgreSQL refuses to run as root): the
``postgres`` system user of the Debian package when it exists, else ``nobody``, through ``runuser``. Password
authentication (scram-sha-256) is on for TCP connections, so a wrong password is refused as on a real server.
``.ci/run`` installs the Debian package ``postgresql`` when the binaries are missing; elsewhere the tests that need
the server are skipped with the reason.
"""

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
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "setfit"
PASSWORD = "lite-secret"


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on PATH, else the newest ``/usr/lib/postgresql/*/bin``."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    return Path(candidates[-1]).parent if candidates else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        """A SQLAlchemy URL (``postgresql://``: psycopg 3 under SQLAlchemy 2.1) for ``database``."""
        return (f"postgresql://{self.user}:{self.password if password is None else password}"
                f"@{self.host}:{self.port}/{database}")

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URL."""
        import psycopg

        with psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _run_as(user: str | None, command: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """Start a cluster in a fresh temporary folder; stop it (immediate) and remove the folder on exit.

    Raises ``FileNotFoundError`` when the PostgreSQL binaries are not installed.
    """
    bindir = find_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL's initdb/pg_ctl not found (Debian: apt-get install -y postgresql)")
    run_user = None
    if os.geteuid() == 0:
        names = [u.pw_name for u in pwd.getpwall()]
        run_user = "postgres" if "postgres" in names else "nobody"
    # in /tmp when the server runs as another user: $TMPDIR may sit in a folder that user cannot enter
    root = Path(tempfile.mkdtemp(prefix="setfit-lite-pg-", dir="/tmp" if run_user else None))
    data = root / "data"
    try:
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD + "\n", encoding="utf-8")
        if run_user is not None:
            entry = pwd.getpwnam(run_user)
            for path in (root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        _run_as(run_user, [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}",
                           "--auth-host=scram-sha-256", "--auth-local=trust", "--no-sync", "-E", "UTF8",
                           "--locale=C"])
        port = free_port()
        options = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=100")
        _run_as(run_user, [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"),
                           "-w", "-t", "60", "start"])
        try:
            yield PostgresServer("127.0.0.1", port, SUPERUSER, PASSWORD)
        finally:
            _run_as(run_user, [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
