"""Opening an MLflow store that many processes open at once.

SQLite stores race when parallel jobs create the tables or the experiment they both expect to exist,
so on this machine one process at a time does, under a lock file beside the database; a tracking
server needs no lock. A file that cannot be a SQLite store is named before MLflow's own error, a
SQLAlchemy traceback that never names it, and so is a store whose disk is full (`full_store`).
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from contextlib import AbstractContextManager, closing, nullcontext
from pathlib import Path

from ragsweep.cache import exclusive

_OPENED_STORES: set[str] = set()  # SQLite stores this process has opened (their tables exist)
_EXPERIMENT_IDS: dict[tuple[str, str], str] = {}  # (uri, name) -> id, for the many runs of one process


def sqlite_store_problem(database: Path) -> str | None:
    """Why an existing file cannot be an MLflow SQLite store (not SQLite, or unreadable); None when it can,
    or does not exist yet. MLflow's own error is a SQLAlchemy traceback that never names the file."""
    if not database.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as error:
        return (f"{database} is not a readable SQLite database ({error}); move it aside (a new store is made in "
                "its place) or point tracking.uri at another store")
    return None


SQLITE = "sqlite:///"  # a store in a file of this machine: sqlite:///<path>


def sqlite_database(uri: str) -> Path | None:
    """The SQLite file a store's URI names; None for a store that is not a file here (a tracking server)."""
    return Path(uri.removeprefix(SQLITE)) if uri.startswith(SQLITE) else None


def absolute_uri(uri: str) -> str:
    """A sqlite URI made absolute, so the store does not move with the working directory."""
    database = sqlite_database(uri)
    return uri if database is None else f"{SQLITE}{database.resolve()}"


FULL = "database or disk is full"  # SQLite's SQLITE_FULL, as sqlite3 says it and SQLAlchemy and MLflow pass it on
STORE_SETTING = "paths.mlruns (or tracking.uri)"  # what moves a sweep's store (paths.mlruns holds the default one)
MLFLOW_DB_LOGGER = "mlflow.store.db.utils"  # logs the traceback of every OperationalError it passes on


def full_store(error: BaseException | None, uri: str | None = None) -> OSError | None:
    """ENOSPC naming the SQLite file of the store at `uri` (None: the store MLflow used last) when `error` is, or
    was raised from, SQLite's full disk; None otherwise. MLflow raises it as an MlflowException from SQLAlchemy's
    OperationalError, no OSError, so `disk.write_refused` alone would let it end a command in a traceback."""
    if not _fills(error):
        return None
    if uri is None:
        import mlflow

        uri = mlflow.get_tracking_uri()
    database = sqlite_database(uri)
    return None if database is None else OSError(errno.ENOSPC, FULL, str(database))


def _fills(error: BaseException | None) -> bool:
    """Whether `error`, or what it was raised from or while handling, is SQLite's full disk."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if FULL in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


class _SaidInOneLine(logging.Filter):
    """Drops MLflow's logged traceback of a full disk under the store: the command ends in one line naming it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is None or not _fills(record.exc_info[1])


_SAID_IN_ONE_LINE = _SaidInOneLine()


def open_client(uri: str):
    """An MlflowClient on the store at `uri`, which also becomes MLflow's tracking URI; a new SQLite store's
    tables are made by the first process that opens it, while the others wait for them."""
    import mlflow

    logging.getLogger(MLFLOW_DB_LOGGER).addFilter(_SAID_IN_ONE_LINE)
    mlflow.set_tracking_uri(uri)
    database = sqlite_database(uri)
    if database is None or uri in _OPENED_STORES:
        return mlflow.MlflowClient(uri)
    database.parent.mkdir(parents=True, exist_ok=True)
    with store_lock(uri):
        client = mlflow.MlflowClient(uri)
        client.search_experiments(max_results=1)
    _OPENED_STORES.add(uri)
    return client


def store_lock(uri: str) -> AbstractContextManager:
    """Across processes on this machine, one at a time creates a SQLite store's tables or an experiment in it
    (two sweeps started together raced in MLflow's migrations); no lock is needed on a tracking server."""
    database = sqlite_database(uri)
    if database is None or not os.access(database.parent, os.W_OK):
        return nullcontext()  # a read-only store is only read
    return exclusive(database.with_name(database.name + ".lock"))


EXPERIMENT_KIND_TAG = "mlflow.experimentKind"  # what the experiment holds: model training, not a GenAI app; MLflow
EXPERIMENT_KIND = "custom_model_development"  # 3.17's UI still opens on its GenAI view (see `ragsweep ui`'s links)


def ensure_experiment(uri: str, name: str, artifacts: str) -> str:
    """The id of experiment `name` in the store at `uri`, created on first use with `artifacts` as its
    artifact root on a local store (a tracking server keeps its own); remembered for the process's later runs."""
    known = _EXPERIMENT_IDS.get((uri, name))
    if known is not None:
        return known
    client = open_client(uri)
    with store_lock(uri):
        experiment = client.get_experiment_by_name(name)
        kind = {EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
        if experiment is None and uri.startswith(("http://", "https://")):
            experiment_id = client.create_experiment(name, tags=kind)
        elif experiment is None:
            Path(artifacts).mkdir(parents=True, exist_ok=True)
            experiment_id = client.create_experiment(name, Path(artifacts).resolve().as_uri(), tags=kind)
        else:
            experiment_id = experiment.experiment_id
            if experiment.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:  # made by an older ragsweep
                client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    _EXPERIMENT_IDS[(uri, name)] = experiment_id
    return experiment_id
