"""The MLflow tracker's RunStore on a real sqlite store: runs read back as records filtered by status, tags, parent and
ids, a run read back, tags, files attached and downloaded, a parent run opened and closed."""

from __future__ import annotations

import pytest

from ragsweep.tracking.base import RunStore, TrackedRun
from ragsweep.tracking.mlflow_store import condition
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.table import param, runs_table, tag


def test_a_condition_is_mlflows_filter_of_equal_fields_and_refuses_a_quote():
    assert condition("FINISHED", {"ragsweep.role": "job"}, "p1", ["a1", "b2"]) == (
        "attributes.status = 'FINISHED' and tags.`ragsweep.role` = 'job' and tags.`mlflow.parentRunId` = 'p1' "
        "and attributes.run_id IN ('a1', 'b2')")
    with pytest.raises(ValueError, match="quote"):
        condition(tags={"x": "it's"})


def test_the_run_store_reads_back_what_it_wrote(tmp_path):
    tracker = MlflowTracker(f"sqlite:///{tmp_path}/mlflow.db", "store", str(tmp_path / "artifacts"))
    assert isinstance(tracker, RunStore) and tracker.missing() == tmp_path / "mlflow.db"  # made on first use
    parent = tracker.start_parent("sweep:one", {"ragsweep.sweep": "one"})
    with tracker.start_run("k=3", {"k": 3}, {"ragsweep.config_label": "k=3"}, parent_run_id=parent) as job:
        tracker.log_metrics({"recall": 0.5})
    (tmp_path / "summary.md").write_text("# ranked\n")
    tracker.set_tags(job, {"ragsweep.pareto": "true"})
    tracker.log_run_metrics(parent, {"race_evaluations_share": 0.25})
    tracker.attach(parent, tmp_path / "summary.md")
    tracker.finish(parent, "FINISHED")

    jobs = tracker.runs(parent=parent, status="FINISHED")
    assert [run.run_id for run in jobs] == [job] and isinstance(jobs[0], TrackedRun)
    assert (jobs[0].name, jobs[0].label, jobs[0].parent, jobs[0].params) == ("k=3", "k=3", parent, {"k": "3"})
    assert jobs[0].tags["ragsweep.pareto"] == "true" and jobs[0].metrics == {"recall": 0.5}
    assert jobs[0].start_time > 0 and jobs[0].experiment_id == tracker.experiment_id()
    assert [run.run_id for run in tracker.runs(tags={"ragsweep.role": "parent"})] == [parent]
    assert tracker.runs(run_ids=[]) == []
    assert [run.run_id for run in tracker.runs(run_ids=[job, parent], most=1)] == [job]
    table = runs_table(tracker.runs(status="FINISHED"))  # newest first; the parent's label is its name
    assert list(table.run_id) == [job, parent] and list(table.label) == ["k=3", "sweep:one"]
    assert (table.recall[0], table[param("k")][0], table[tag("ragsweep.pareto")][0]) == (0.5, "3", "true")
    assert table.parent[0] == parent and table.parent.isna()[1] and table[param("k")].isna()[1]
    read = tracker.run(parent)
    assert (read.status, read.metrics["race_evaluations_share"], read.tags["ragsweep.sweep"]) == ("FINISHED", 0.25, "one")
    assert tracker.run(job).params == {"k": "3"}
    assert tracker.download(parent, "summary.md", str(tmp_path / "down")).read_text() == "# ranked\n"
    with pytest.raises(ValueError, match="no artifact"):
        tracker.download(job, "summary.md", str(tmp_path / "down"))
    with pytest.raises(ValueError, match="no run"):
        tracker.run("0" * 32)
    assert "store" in tracker.experiment_names() and tracker.missing() is None and tracker.problem() is None
    assert tracker.local_database() == tmp_path / "mlflow.db"
    assert MlflowTracker("http://localhost:5000", "store", "artifacts").local_database() is None


def test_a_missing_or_unreadable_sqlite_store_is_named(tmp_path):
    missing = MlflowTracker(f"sqlite:///{tmp_path}/none.db", "store", str(tmp_path / "artifacts"))
    assert missing.missing() == tmp_path / "none.db"
    (tmp_path / "text.db").write_text("not a database, but long enough to be read as one's header" * 20)
    assert "not a readable SQLite database" in MlflowTracker(f"sqlite:///{tmp_path}/text.db", "s", "a").problem()


def test_a_race_round_extends_its_run_left_open_and_marks_it_done_last(tmp_path):
    """Each round logs at its step into the one run; rounds before the last leave it RUNNING and do not reopen it
    (its params stay as the first round logged them); the `done` tags come only once a round ends well."""
    import mlflow

    from ragsweep.tracking.base import RunExtension

    tracker = MlflowTracker(f"sqlite:///{tmp_path}/mlflow.db", "race", str(tmp_path / "artifacts"))
    with tracker.start_run("k=3", {"k": 3}, {"a": "1"}, extend=RunExtension(None, 10, close=False,
                                                                             done={"questions": "10"})) as run_id:
        assert "questions" not in tracker.run(run_id).tags
        tracker.log_metrics({"recall": 0.5})
    assert (tracker.run(run_id).status, tracker.run(run_id).tags["questions"]) == ("RUNNING", "10")
    with tracker.start_run("k=3", {"k": 4}, {"a": "2"}, extend=RunExtension(run_id, 20, held_open=True, close=False,
                                                                             done={"questions": "20"})):
        tracker.log_metrics({"recall": 0.6})
    read = tracker.run(run_id)
    assert (read.status, read.tags["questions"], read.tags["a"], read.params) == ("RUNNING", "20", "2", {"k": "3"})
    with pytest.raises(RuntimeError), tracker.start_run("k=3", {"k": 3}, {}, extend=RunExtension(
            run_id, 40, held_open=True, done={"questions": "40"})):
        raise RuntimeError("the third round fails")
    assert (tracker.run(run_id).status, tracker.run(run_id).tags["questions"]) == ("FAILED", "20")
    history = mlflow.MlflowClient(tracker.uri).get_metric_history(run_id, "recall")
    assert [(m.step, m.value) for m in history] == [(10, 0.5), (20, 0.6)]


def test_a_full_disk_under_the_store_mid_run_raises_an_oserror_naming_the_database_and_keeps_the_record(
        tmp_path, monkeypatch):
    """SQLite's full disk, passed on by MLflow as no OSError, ends the job (every next call would fail the same
    way) as the ENOSPC `disk.cannot_write` says in one line; what the store did not take stays in the record."""
    import errno
    import json
    import sqlite3

    from mlflow.exceptions import MlflowException

    from ragsweep.tracking.record import RECORD_FILE
    from ragsweep.tracking.store import full_store

    tracker = MlflowTracker(f"sqlite:///{tmp_path}/mlflow.db", "store", str(tmp_path / "artifacts"))

    def full(*args, **kwargs):
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as error:
            raise MlflowException(f"(sqlite3.OperationalError) {error}") from error

    with pytest.raises(OSError) as raised, tracker.start_run("k=3", {"k": 3}, {}, record_dir=tmp_path / "job"):
        monkeypatch.setattr(tracker, "_log_metrics", full)
        tracker.log_metrics({"recall": 0.5})
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(tmp_path / "mlflow.db"))
    record = json.loads((tmp_path / "job" / RECORD_FILE).read_text())
    assert (record["metrics"], record["unsent"][0], record["status"]) == ({"recall": 0.5}, "metrics", "FAILED")
    assert full_store(RuntimeError("the store stopped answering")) is None
