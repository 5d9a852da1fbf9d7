"""The tune suite's skip where torchx-tune is missing, and a real PostgreSQL for its tests.

``postgres_url`` gives a ``postgresql://`` URL (no driver named) to a brand-new empty
database on a server this session starts: a fresh data folder, ``127.0.0.1`` on a free
port, trust authentication, stopped at the end. Run as root, the server runs as the
``postgres`` user (initdb and postgres refuse root). Without PostgreSQL's programs or a
Python driver the tests that use it skip, saying what to install.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import pytest
from not_installed import not_installed, skip_every_module

# Its tests need Optuna too, which torchx-tune brings.
if not_installed("torchx.tune"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-tune is not installed; run: pip install torchx-tune"
    )

_INSTALL_POSTGRES = (
    "PostgreSQL is not installed; run: apt-get install postgresql (or brew install postgresql)"
)
_INSTALL_DRIVER = "no PostgreSQL driver is installed; run: pip install psycopg2-binary"


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's server programs (Debian keeps them off PATH), or None."""
    candidates = []
    if shutil.which("pg_config") is not None:
        bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip()
        candidates.append(Path(bindir))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version)
    candidates += [Path(bin) for bin in reversed(versions)]
    initdb = shutil.which("initdb")
    if initdb is not None:
        candidates.append(Path(initdb).resolve().parent)
    return next((bin for bin in candidates if (bin / "initdb").is_file()), None)


def _version(bin: str) -> tuple[int, str]:
    name = Path(bin).parent.name
    return (int(name), name) if name.isdigit() else (0, name)


class PostgresServer:
    """A throwaway PostgreSQL server in ``folder``, on ``127.0.0.1:port``."""

    def __init__(self, bin: Path, folder: Path) -> None:
        self.bin, self.folder = bin, folder
        self.port = _free_port()
        self._names = count()
        self._as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def start(self) -> None:
        if self._as_owner:  # root: the folder belongs to the postgres user, who runs the server
            shutil.chown(self.folder, "postgres", "postgres")
        data = str(self.folder / "data")
        self._run(self._owned("initdb", "-D", data, "-A", "trust", "-U", "postgres"))
        # Only TCP on 127.0.0.1, its socket in our folder; no fsync: a throwaway database.
        options = f"-h 127.0.0.1 -p {self.port} -k {self.folder} -F -c max_connections=200"
        log = str(self.folder / "server.log")
        self._run(self._owned("pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "start"))

    def stop(self) -> None:
        data = str(self.folder / "data")
        subprocess.run(self._owned("pg_ctl", "-D", data, "-m", "immediate", "stop"), capture_output=True)

    def _owned(self, program: str, *arguments: str) -> list[str]:
        """``program`` of the server's, run as the server's owner."""
        return [*self._as_owner, str(self.bin / program), *arguments]

    def new_database(self) -> str:
        """A new empty database's URL."""
        name = f"test_{next(self._names)}"
        self._run(
            [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name]
        )
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.folder / "server.log"
            server = log.read_text(errors="replace") if log.is_file() else ""
            raise RuntimeError(f"{' '.join(command)} exit {done.returncode}: {done.stderr}{server}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (skips without PostgreSQL or a driver)."""
    bin = postgres_bin()
    if bin is None:
        pytest.skip(_INSTALL_POSTGRES)
    if all(importlib.util.find_spec(driver) is None for driver in ("psycopg", "psycopg2")):
        pytest.skip(_INSTALL_DRIVER)
    if os.geteuid() == 0 and (shutil.which("runuser") is None or not _user_exists("postgres")):
        pytest.skip(
            "run as root, the PostgreSQL tests need its 'postgres' user; run: apt-get install postgresql"
        )
    server = PostgresServer(bin, Path(tempfile.mkdtemp(prefix="torchx-tune-postgres-")))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A ``postgresql://`` URL to a brand-new empty database."""
    return postgres_server.new_database()
