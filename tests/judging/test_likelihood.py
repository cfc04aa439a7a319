"""The likelihood judge with the real SmolLM2-135M-Instruct GGUF through llama.cpp."""

from __future__ import annotations

import math

import pytest

from ragsweep.judging.base import Pair
from ragsweep.judging.likelihood import LikelihoodJudge, reduce

pytestmark = pytest.mark.llama_cpp

PASSAGE = ("In 1803 the United States bought the Louisiana territory from France for fifteen million dollars, "
           "doubling the size of the nation.")
OTHER = "Congress passed a tariff on imported wool and cotton to protect the mills of New England."
VERBATIM = "The United States bought the Louisiana territory from France for fifteen million dollars."
NUMBER_SWAP = VERBATIM.replace("fifteen", "fifty")
NAME_SWAP = VERBATIM.replace("France", "Spain")


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


@pytest.mark.parametrize("statistic, expected", [("mean", -0.375), ("min", -3.0), ("min2", -2.0)])
def test_statistics_reduce_the_token_gains(statistic, expected):
    import numpy as np

    # (2 − 1 + 0.5 − 3) / 4 = −0.375; min = −3; two lowest (−3, −1) → −2
    assert reduce(np.array([2.0, -1.0, 0.5, -3.0]), statistic) == pytest.approx(expected)
    assert reduce(np.array([1.5]), statistic) == pytest.approx(1.5)  # one token: every statistic is that token


def test_verbatim_claim_beats_swapped_ones():
    mean = dict(zip(("verbatim", "number"), (v.score for v in LikelihoodJudge(statistic="mean").judge(
        [Pair(VERBATIM, PASSAGE), Pair(NUMBER_SWAP, PASSAGE)]))))
    low = dict(zip(("verbatim", "name"), (v.score for v in LikelihoodJudge(statistic="min").judge(
        [Pair(VERBATIM, PASSAGE), Pair(NAME_SWAP, PASSAGE)]))))
    # Measured: mean gain 2.70 vs 2.47 nats; min 'France'→'Spain' −3.61 vs the verbatim claim's −0.38 (its '.').
    # The minimum does NOT catch "fifty": the passage still lifts that token by 6.6 nats, and the claim's
    # minimum sits elsewhere (−0.05 vs −0.38), so only the mean is asserted for the number swap.
    assert _logit(mean["verbatim"]) > _logit(mean["number"]) + 0.1  # the logit is the statistic itself (scale 1)
    assert _logit(low["verbatim"]) > _logit(low["name"]) + 1.0


def test_passage_makes_its_claim_and_question_more_likely_than_an_unrelated_one():
    question = "How much did the Louisiana Purchase cost?"
    own, other, own_q, other_q = LikelihoodJudge(statistic="mean").judge(
        [Pair(VERBATIM, PASSAGE), Pair(VERBATIM, OTHER),
         Pair(question, PASSAGE, task="relevance"), Pair(question, OTHER, task="relevance")])
    assert own.score > other.score and own_q.score > other_q.score  # mean gains: 2.70 > 0.65, 1.20 > 0.65 nats


def test_no_passage_is_the_baseline_itself():
    (verdict,) = LikelihoodJudge().judge([Pair(VERBATIM, "")])
    assert verdict.ok and verdict.score == 0.5  # same prompt both times: every gain is exactly 0


def test_scores_do_not_depend_on_what_else_is_in_the_call():
    """The KV cache is reused across pairs sharing a prefix and the baseline is cached per claim;
    neither may change a number."""
    pairs = [Pair(NUMBER_SWAP, PASSAGE), Pair(NUMBER_SWAP, OTHER), Pair(VERBATIM, PASSAGE), Pair(NUMBER_SWAP, PASSAGE)]
    judge = LikelihoodJudge(statistic="min2")
    together = [v.score for v in judge.judge(pairs)]
    alone = [judge.judge([pair])[0].score for pair in reversed(pairs)][::-1]
    assert together == pytest.approx(alone, abs=1e-6) and together[0] == pytest.approx(together[3], abs=1e-6)


def test_scale_is_the_logistic_slope():
    one, two = (LikelihoodJudge(statistic="mean", scale=s).judge([Pair(NAME_SWAP, PASSAGE)])[0] for s in (1.0, 2.0))
    assert _logit(two.score) == pytest.approx(2 * _logit(one.score), rel=1e-6)
    assert one.raw.startswith("mean=") and float(one.raw[5:]) == pytest.approx(_logit(one.score), abs=1e-3)


def test_failed_pairs_are_verdicts_and_the_rest_still_score():
    too_long, empty, fine = LikelihoodJudge(n_ctx=256).judge(
        [Pair(VERBATIM, PASSAGE * 20), Pair("  ", PASSAGE), Pair(VERBATIM, PASSAGE)])
    assert (too_long.status, too_long.score) == ("error", None) and "over judge.n_ctx=256" in too_long.raw
    assert empty.status == "error" and "empty" in empty.raw
    assert fine.ok and 0.0 <= fine.score <= 1.0


def test_unreadable_model_fails_in_preflight(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")
    with pytest.raises(ValueError, match=r"judge.model_path=.*broken.gguf: llama.cpp cannot load it"):
        LikelihoodJudge(model_path=str(broken)).preflight()


@pytest.mark.parametrize("kwargs, key", [({"statistic": "max"}, "judge.statistic"), ({"scale": 0}, "judge.scale"),
                                         ({"threshold": -0.1}, "judge.threshold"), ({"n_ctx": 10}, "judge.n_ctx"),
                                         ({"threads": 0}, "judge.threads"), ({"model_path": "/missing.gguf"}, "judge.model_path"),
                                         ({"max_failure_rate": 1.5}, "judge.max_failure_rate")])
def test_bad_settings_fail_when_built(kwargs, key):
    with pytest.raises(ValueError, match=key):
        LikelihoodJudge(**kwargs)
