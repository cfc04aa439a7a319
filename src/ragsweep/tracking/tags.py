"""The names a run is tagged and found by, and how its settings become params: shared by every tracker and
every reader of runs, whichever store holds them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ragsweep.tracking.processes import process_tags

FINGERPRINT_TAG = "ragsweep.config_fingerprint"
UNVERSIONED_TAG = "ragsweep.config_fingerprint_unversioned"  # the fingerprint without its code's versions
VERSIONS_TAG = "ragsweep.code_versions"  # the versions its classes declared: `reranker=2, metrics=1`
LABEL_TAG = "ragsweep.config_label"  # how tables, plots and run names call a configuration: chunker=fixed,k=3
JUDGE_TAG = "ragsweep.judge"  # a judged run's judge as its feedback names it (class:digest); labels pool by it
ROLE_TAG = "ragsweep.role"  # "parent" for a sweep's run, "job" for a configuration's
PARENT_RUN_ENV = "RAGSWEEP_PARENT_RUN_ID"  # set in each job's process through the job's config (hydra.job.env_set)
RERUN_ENV = "RAGSWEEP_RERUN"  # why this process reruns an export (verify, gate), tagged as RERUN_TAG
RERUN_TAG = "ragsweep.rerun"
PER_QUERY_TAG = "ragsweep.per_query"  # "dropped": the sweep kept per_query.jsonl for its best runs only
LOST_TAG = "ragsweep.lost"  # on a run marked KILLED because its process or node is gone
DATASET_TAG = "dataset.name"  # the dataset a job ran on, and its content fingerprint
DATASET_FINGERPRINT_TAG = "dataset.fingerprint"
GIT_SHA_TAG = "ragsweep.git_sha"
VERSION_TAG = "version."  # + a package's name: its version

# A configuration's run in a race (hydra/sweeper=racing): found again by these each round and after a restart.
RACE_FINGERPRINT_TAG = "ragsweep.race.fingerprint"  # the config fingerprint, before it has run every question
RACE_SEED_TAG = "ragsweep.race.seed"  # the seed of the race's question order
RACE_QUESTIONS_TAG = "ragsweep.race.questions"  # questions the run has run so far
RACE_METRIC_TAG = "ragsweep.race.metric"  # on a race's parent run: the metric raced on
STOPPED_ROUND_TAG = "ragsweep.race.stopped_round"  # the round a configuration was stopped in; "none" if never
STOPPED_TAG = "ragsweep.race.stopped"  # why: its difference to the leader then, with the interval that stopped it
WINNER_TAG = "ragsweep.race.winner"


def dotted_params(tree: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    """Nested settings as MLflow params: dotted keys (`chunker.size`, `embedder._target_`), lists as values."""
    flat: dict[str, object] = {}
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        flat.update(dotted_params(value, name) if isinstance(value, Mapping) else {name: value})
    return flat


def run_tags() -> dict[str, str]:
    """Every run's tags of its process (`processes.process_tags`), and why it runs when it reruns an export."""
    rerun = os.environ.get(RERUN_ENV)  # `best --verify` or `gate` rerunning an export: told apart from a user's runs
    return {**process_tags(), **({RERUN_TAG: rerun} if rerun else {})}
