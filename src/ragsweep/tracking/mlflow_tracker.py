"""The only module that talks to MLflow: one tracked run per sweep job."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class MlflowTracker:
    """Logs params, tags, metrics and artifacts of one run to an MLflow store.

    A run that raises is closed as FAILED before the error propagates, so no run is left RUNNING.

    Args:
        uri: Tracking URI, e.g. `sqlite:///<root>/mlruns/mlflow.db` (MLflow 3 refuses a plain ./mlruns).
        experiment: Experiment name; created with `artifacts` as its artifact root if missing.
        artifacts: Folder for run artifacts.
    """

    def __init__(self, uri: str, experiment: str, artifacts: str) -> None:
        self.uri = uri
        self.experiment = experiment
        self.artifacts = artifacts

    @contextmanager
    def start_run(self, name: str, params: dict[str, Any], tags: dict[str, str]) -> Iterator[str]:
        import mlflow
        from mlflow.entities import Param

        uri = self.uri
        if uri.startswith("sqlite:///"):  # absolute, so the store does not move with the working directory
            database = Path(uri.removeprefix("sqlite:///")).resolve()
            database.parent.mkdir(parents=True, exist_ok=True)
            uri = f"sqlite:///{database}"
        mlflow.set_tracking_uri(uri)
        experiment_id = self._experiment_id(mlflow, uri)
        # MLflow's context manager closes the run as FAILED when the body raises, FINISHED otherwise.
        with mlflow.start_run(experiment_id=experiment_id, run_name=name, tags=tags) as run:
            # params first, in one batch, so even a run that fails shows which config it was
            params = [Param(key, _param_value(value)) for key, value in params.items()]
            mlflow.MlflowClient().log_batch(run.info.run_id, params=params)
            yield run.info.run_id

    def _experiment_id(self, mlflow, uri: str) -> str:
        known = _EXPERIMENT_IDS.get((uri, self.experiment))
        if known is not None:
            return known
        experiment = mlflow.get_experiment_by_name(self.experiment)
        if experiment is not None:
            _EXPERIMENT_IDS[(uri, self.experiment)] = experiment.experiment_id
            return experiment.experiment_id
        Path(self.artifacts).mkdir(parents=True, exist_ok=True)
        return mlflow.create_experiment(self.experiment, artifact_location=Path(self.artifacts).resolve().as_uri())

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """All metrics in one batch: one database transaction, not one per metric call."""
        import mlflow
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        batch = [Metric(key, float(value), stamp, 0) for key, value in metrics.items()]
        mlflow.MlflowClient().log_batch(mlflow.active_run().info.run_id, metrics=batch)

    def log_artifacts(self, *paths: Path) -> None:
        import mlflow

        for path in paths:
            mlflow.log_artifact(str(path))


_EXPERIMENT_IDS: dict[tuple[str, str], str] = {}  # (uri, name) -> id, for the many runs of one process


def _param_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 6000 else text[:5997] + "..."  # MLflow's param length limit
