"""A tracking server for a team: `mlflow server` on PostgreSQL, artifacts on a shared path.

SQLite (`sqlite:///mlruns/mlflow.db`) stays the store for one machine. Many writers (the nodes of a
cluster, a team's sweeps) go through one MLflow server whose backend store is PostgreSQL and whose
artifacts live on a path every node's server process can write (`--artifacts-destination`); jobs
then log with `tracking.uri=http://HOST:PORT` and send artifacts through the server.
"""

from __future__ import annotations

import os
import sys


class ServerError(ValueError):
    """A server setting that cannot work, with the fix."""


def server_command(backend_store_uri: str, artifacts_destination: str, host: str, port: int,
                   workers: int) -> tuple[list[str], dict[str, str]]:
    """The `mlflow server` command line and environment for these settings, checked first: the database
    must answer, so a wrong URI fails here with its reason instead of inside the server's workers."""
    check_database(backend_store_uri)
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", backend_store_uri,
               "--artifacts-destination", artifacts_destination, "--serve-artifacts",
               "--host", host, "--port", str(port), "--workers", str(workers)]
    # the job runner (MLflow 3's prompt optimisation and scorers) starts extra processes ragsweep never uses
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # telemetry is off already (ragsweep._offline)
    return command, env


def check_database(uri: str) -> None:
    """Connect once to a SQL backend store; ServerError naming the URI and what to do when it fails."""
    if not uri.startswith(("postgresql", "mysql", "sqlite", "mssql")):
        raise ServerError(f"--backend-store-uri {uri}: not a database URI; for a team use "
                          "postgresql://USER:PASSWORD@HOST:5432/DATABASE")
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(uri)
        with engine.connect():
            pass
        engine.dispose()  # this process waits on the server for its whole life: keep no idle connection open
    except ModuleNotFoundError as error:
        raise ServerError(f"--backend-store-uri {_hidden(uri)}: its driver is not installed ({error.name}); "
                          "postgresql:// uses psycopg (installed with ragsweep)") from None
    except sqlalchemy.exc.SQLAlchemyError as error:
        reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
        raise ServerError(f"--backend-store-uri {_hidden(uri)}: cannot connect ({reason}); start the database "
                          "and create it first, e.g. `createdb -h HOST -U USER mlflow`") from None


def _hidden(uri: str) -> str:
    """The URI without its password, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(uri).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001  (not a URL SQLAlchemy reads: show it as given)
        return uri
