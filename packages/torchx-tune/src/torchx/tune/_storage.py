"""Opening a study's storage: an Optuna storage, an SQLAlchemy URL or a journal file made into one.

A string is an SQLAlchemy URL (``sqlite:///study.db``, ``postgresql://user@host/db``), or
``journal:PATH``: Optuna's journal file (:class:`~optuna.storages.journal.JournalFileBackend`),
for workers that share a file system but no database server. It is spelled with a prefix,
not told by its suffix, so that no file name is taken for a kind of storage by surprise, and
so that it reads like the ``sqlite:`` URLs beside it; ``PATH`` is a plain path (no escapes).

A ``postgresql://`` URL that names no driver gets the one installed (psycopg, else psycopg2:
SQLAlchemy's default may be the other). Creating an RDB storage's tables is not safe from two
processes at once, so :func:`creation_lock` serialises it: a file lock beside an SQLite file,
an advisory lock on PostgreSQL.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import optuna
import sqlalchemy
import sqlalchemy.engine
import sqlalchemy.exc
import sqlalchemy.pool
from optuna.storages import BaseStorage
from optuna.storages.journal import JournalFileBackend

from torchx.core import MissingPackageError

__all__ = ["JOURNAL_PREFIX", "creation_lock", "journal_path", "open_storage", "sqlite_path", "storage_file"]

JOURNAL_PREFIX = "journal:"
"""How a storage string names a journal file: ``journal:study.log``."""

_SQLITE_TIMEOUT_S = 60
"""How long a SQLite write waits for another worker's transaction."""

_POSTGRES_DRIVERS = ("psycopg", "psycopg2")
"""The PostgreSQL drivers SQLAlchemy knows, in its order of preference (2.1's default first)."""

_CREATION_LOCK_KEY = 0x746F72636878  # "torchx"
"""The PostgreSQL advisory lock that workers creating a database's tables take in turn."""


def sqlite_path(storage: object) -> Path | None:
    """The database file of an SQLite URL, as SQLAlchemy reads it (percent-escapes decoded, any
    driver); None for another storage, an in-memory database or a ``file:`` URI."""
    url = _url(storage)
    if url is None or url.get_backend_name() != "sqlite":
        return None
    database = url.database
    if database in (None, "", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def journal_path(storage: object) -> Path | None:
    """The file of a ``journal:PATH`` storage; None for another storage."""
    if not isinstance(storage, str) or not storage.startswith(JOURNAL_PREFIX):
        return None
    return Path(storage.removeprefix(JOURNAL_PREFIX))


def storage_file(storage: object) -> Path | None:
    """The file a storage lives in (an SQLite database or a journal); None for a server or memory."""
    return sqlite_path(storage) or journal_path(storage)


def open_storage(storage: str | BaseStorage | None) -> BaseStorage:
    """``storage`` as an Optuna storage: None in memory, ``journal:PATH`` in a journal file, a URL in
    a database (on an SQLite file, writes wait for other workers' transactions).

    Raises MissingPackageError for a ``postgresql://`` URL where no driver is installed.
    """
    if storage is None:
        return optuna.storages.InMemoryStorage()
    if not isinstance(storage, str):
        return storage
    journal = journal_path(storage)
    if journal is not None:
        if journal.name == "":
            raise ValueError(f"{storage}: names no file; fix: {JOURNAL_PREFIX}study.log")
        return optuna.storages.JournalStorage(JournalFileBackend(str(journal)))
    if sqlite_path(storage) is None:
        return optuna.storages.RDBStorage(_with_driver(storage))
    return optuna.storages.RDBStorage(storage, engine_kwargs={"connect_args": {"timeout": _SQLITE_TIMEOUT_S}})


@contextlib.contextmanager
def creation_lock(storage: object) -> Iterator[None]:
    """While an RDB storage is made (it creates its tables), other workers wait: on an SQLite file,
    a file lock next to it; on PostgreSQL, an advisory lock on a connection of its own; elsewhere
    nothing."""
    path = sqlite_path(storage)
    if path is not None:
        with open(f"{path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return
    url = _url(storage)
    if not isinstance(storage, str) or url is None or url.get_backend_name() != "postgresql":
        yield
        return
    engine = sqlalchemy.create_engine(_with_driver(storage), poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as connection:  # closing it releases the lock, whatever happened
            connection.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": _CREATION_LOCK_KEY})
            yield
    finally:
        engine.dispose()


def _url(storage: object) -> sqlalchemy.engine.URL | None:
    """``storage`` read as an SQLAlchemy URL; None for anything else (opening it says why)."""
    if not isinstance(storage, str) or journal_path(storage) is not None:
        return None
    try:
        return sqlalchemy.engine.make_url(storage)
    except sqlalchemy.exc.ArgumentError:
        return None


def _with_driver(storage: str) -> str:
    """A ``postgresql://`` URL with the installed driver named (``postgresql+psycopg2://``); any
    other URL as it is."""
    url = _url(storage)
    if url is None or url.drivername != "postgresql":
        return storage
    for driver in _POSTGRES_DRIVERS:
        if importlib.util.find_spec(driver) is not None:
            return url.set(drivername=f"postgresql+{driver}").render_as_string(hide_password=False)
    raise MissingPackageError(
        "no PostgreSQL driver is installed for a postgresql:// storage; fix: pip install psycopg2-binary"
    )
