"""Opening a study's storage: an Optuna storage, or an SQLAlchemy URL made into one."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

import optuna
import sqlalchemy.engine
import sqlalchemy.exc
from optuna.storages import BaseStorage

__all__ = ["creation_lock", "open_storage", "sqlite_path"]

_SQLITE_TIMEOUT_S = 60
"""How long a SQLite write waits for another worker's transaction."""


def sqlite_path(storage: object) -> Path | None:
    """The database file of an SQLite URL, as SQLAlchemy reads it (percent-escapes decoded, any
    driver); None for another storage, an in-memory database or a ``file:`` URI."""
    if not isinstance(storage, str):
        return None
    try:
        url = sqlalchemy.engine.make_url(storage)
    except sqlalchemy.exc.ArgumentError:  # opening it says why
        return None
    database = url.database
    if (
        url.get_backend_name() != "sqlite"
        or database in (None, "", ":memory:")
        or database.startswith("file:")
    ):
        return None
    return Path(database)


def open_storage(storage: str | BaseStorage | None) -> BaseStorage:
    """``storage`` as an Optuna storage: None in memory, a URL in a database (on an SQLite file,
    writes wait for other workers' transactions)."""
    if storage is None:
        return optuna.storages.InMemoryStorage()
    if not isinstance(storage, str):
        return storage
    if sqlite_path(storage) is None:
        return optuna.storages.RDBStorage(storage)
    return optuna.storages.RDBStorage(storage, engine_kwargs={"connect_args": {"timeout": _SQLITE_TIMEOUT_S}})


@contextlib.contextmanager
def creation_lock(storage: object) -> Iterator[None]:
    """On an SQLite file, a file lock next to it (two processes creating one database's tables at
    once would fail); elsewhere nothing."""
    path = sqlite_path(storage)
    if path is None:
        yield
        return
    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
