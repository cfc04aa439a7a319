"""A judged run's faithfulness and groundedness corrected by people's labels (`judge.labels`).

One rule (`metrics.corrected`): the labelled claims of every configuration the judge scored form one pool that
measures the judge's error, and that error corrects this run. A labelled claim joins the pool with the judge's
score recorded beside it when that judge is this run's judge (same class and settings), or else with this run's
own verdict when this run's answers hold the claim; any other line is left out and counted. Faithfulness uses
the judge's decision (score >= threshold), groundedness its score; both estimate the share of claims people
call supported.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence

from ragsweep.identity import fingerprint
from ragsweep.judging.calibration.claim_labels import ClaimLabel, claim_key
from ragsweep.metrics import judged
from ragsweep.metrics.corrected import corrected_mean, error_check, error_rates
from ragsweep.runner.build import Pipeline
from ragsweep.runner.judge_stage import Judgement, claim_supports

log = logging.getLogger(__name__)

CHECK_P_VALUE = 0.05  # below it, a generator's labels say the judge errs differently on its answers


def judge_source(pipeline: Pipeline) -> str:
    """The judge as a feedback's source: its class and a digest of the settings its verdicts are cached under."""
    return f"{type(pipeline.judge.component).__name__}:{fingerprint('judge', pipeline.judge.signature)[:12]}"


def corrected_estimates(pipeline: Pipeline, query_ids: Sequence[str], judgements: Sequence[Judgement]
                        ) -> dict[str, dict]:
    """`faithfulness_corrected` and `groundedness_corrected` for metrics.json, each with the judge's own
    estimate, the error rates it used and their check per generator; a metric whose labels cannot
    correct it (too few of a class, a judge that does not separate them) is left out with a warning."""
    threshold = pipeline.judge.component.threshold
    supports = claim_supports(judgements)
    pool = _pool(pipeline, query_ids, judgements, supports)
    found: dict[str, dict] = {}
    for name, value, per_question in (
            ("faithfulness", lambda score: float(score >= threshold),
             [judged.faithfulness(s, threshold) for s in supports]),
            ("groundedness", float, [judged.groundedness(s) for s in supports])):
        questions = [v for v in per_question if v is not None]
        try:
            rates = error_rates([value(score) for _, score, _, _ in pool], [label for _, _, label, _ in pool],
                                [inclusion for _, _, _, inclusion in pool])
            estimate = corrected_mean(questions, rates)
        except ValueError as error:
            log.warning("judge.labels: no %s_corrected: %s", name, error)
            continue
        own = sum(questions) / len(questions)
        found[f"{name}_corrected"] = {**estimate.to_dict(), "judge_estimate": own, "error_rates": rates.to_dict(),
                                      "generators": _check(pool, value)}
    return found


def _pool(pipeline: Pipeline, query_ids: Sequence[str], judgements: Sequence[Judgement],
          supports: Sequence[Sequence[float | None]]) -> list[tuple[str, float, int, float]]:
    """(generator, judge score, label, inclusion probability) of every labelled claim this run can use."""
    source, generator = judge_source(pipeline), str(pipeline.plan.params.get("generator", "run"))
    scores = {claim_key(query_id, claim.text): support
              for query_id, judgement, claim_supports in zip(query_ids, judgements, supports, strict=True)
              for claim, support in zip(judgement.claims, claim_supports, strict=True) if support is not None}
    pool, unused = [], 0
    for label in pipeline.claim_labels or ():
        score = label.judge_score if label.judge == source else scores.get(label.key)
        if score is None:
            unused += 1
            continue
        pool.append((_generator(label, source, generator), float(score), label.label, label.inclusion))
    if unused:
        log.warning("judge.labels: %d of %d labelled claims left out: neither scored by this judge (%s) nor among "
                    "this run's claims", unused, len(pipeline.claim_labels or ()), source)
    return pool


def _generator(label: ClaimLabel, source: str, this_run: str) -> str:
    return (label.generator or "unknown") if label.judge == source and label.judge_score is not None else this_run


def _check(pool: Sequence[tuple[str, float, int, float]], value: Callable[[float], float]) -> dict[str, dict]:
    """Per generator, whether the judge errs on its answers as on the pool (`metrics.corrected.error_check`)."""
    groups: dict[str, tuple[list, list, list]] = defaultdict(lambda: ([], [], []))
    for generator, score, label, inclusion in pool:
        for part, item in zip(groups[generator], (value(score), label, inclusion), strict=True):
            part.append(item)
    report = error_check(groups) if len(groups) > 1 else {}
    for name, found in report.items():
        if found["p_value"] is not None and found["p_value"] < CHECK_P_VALUE:
            log.warning("judge.labels: the judge errs differently on generator %s's answers (mu0 %.2f, mu1 %.2f "
                        "against the others', p = %.3g): label more of its claims, or correct it on its own",
                        name, found["mu0"], found["mu1"], found["p_value"])
    return report
