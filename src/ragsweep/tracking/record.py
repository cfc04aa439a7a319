"""What a job's run logged, kept beside its results, so a run the store did not take is not lost.

A tracking server can stop answering mid-run; the job goes on, and `ragsweep sync` logs the record
(`RECORD_FILE` in the job's output folder) once the store answers again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RECORD_FILE = "mlflow_run.json"  # in a job's output folder: what its run logged (see RunRecord)


class RunRecord:
    """What a run logged, kept beside its results (`RECORD_FILE` in the job's output folder), so a run
    the store could not take can be logged later by `ragsweep sync`. Artifacts are kept as paths.

    The file is written when the run starts, whenever the store does not take something (from then on the
    record holds what the store lacks) and when the run ends: while the store takes everything, it has it."""

    def __init__(self, folder: Path | None, uri: str, experiment: str, run_id: str, name: str,
                 tags: dict[str, str], params: dict[str, str]) -> None:
        self.path = Path(folder) / RECORD_FILE if folder is not None else None
        self.uri, self.experiment, self.run_id, self.name = uri, experiment, run_id, name
        self.tags, self.params = tags, params
        self.metrics: dict[str, float] = {}
        self.dataset: dict[str, Any] | None = None
        self.artifacts: list[str] = []
        self.status = "RUNNING"
        self.unsent: list[str] = []
        self._write()

    def add(self, field: str, value: Any) -> None:
        """Keep what the run logs next; the file takes it if the store does not (`not_taken`), else at `end`."""
        if field == "metrics":
            self.metrics.update(value)
        elif field == "artifacts":
            self.artifacts += [str(Path(path).resolve()) for path in value]
        else:
            setattr(self, field, value)

    def not_taken(self, what: str) -> None:
        """The store did not take the run's `what` (or was not asked, having failed before)."""
        self.unsent.append(what)
        self._write()

    def end(self, status: str) -> None:
        self.status = status
        self._write()

    def synced(self, run_id: str) -> None:
        self.run_id, self.unsent = run_id, []
        self._write()

    def advice(self) -> str:
        where = f"{self.path.parent}" if self.path else "(no output folder)"
        return (f"MLflow at {self.uri} did not take this run's {', '.join(dict.fromkeys(self.unsent))}; its results "
                f"are kept in {where}: log them with `ragsweep sync {where}` once the store answers")

    def _write(self) -> None:
        if self.path is None:
            return
        state = {key: value for key, value in vars(self).items() if key != "path"}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(state, indent=1))
        os.replace(partial, self.path)

    @classmethod
    def read(cls, path: Path) -> RunRecord:
        state = json.loads(Path(path).read_text())
        record = cls.__new__(cls)
        vars(record).update(state)
        record.path = Path(path)
        return record
