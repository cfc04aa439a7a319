"""The Verdict contract on every option of conf/judge/ and conf/relevance_judge/, each judge built as a
sweep builds it (`build`, with the real models): one Verdict per pair, in order, a score in [0, 1] when
ok and none otherwise, never an exception, also for an empty or blank passage. The options come from the
folders, so a new judge YAML is held to the contract without editing this file."""

from __future__ import annotations

import math

import pytest
from omegaconf import OmegaConf

from ragsweep.embedding.minilm import minilm_path
from ragsweep.judging.base import STATUSES, Pair, Verdict
from ragsweep.runner.build import build
from tests.conf_options import compose_option, options

pytestmark = pytest.mark.slow

CASES = [(group, option) for group in ("judge", "relevance_judge") for option in options(group)]
PASSAGE = "The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic."
ASKED = {
    "judge": [Pair("The Harbour Bridge was opened in 1932.", PASSAGE),
              Pair("It carries eight lanes.", PASSAGE),
              Pair("Ferries stop running in winter.", PASSAGE),
              Pair("The bridge was opened in 1950.", PASSAGE)],
    "relevance_judge": [Pair("When was the Harbour Bridge opened?", PASSAGE, "relevance"),
                        Pair("When does the river freeze?", PASSAGE, "relevance"),
                        Pair("How many lanes does the bridge carry?", PASSAGE, "relevance")],
}
# Training shrunk to a few examples, without the QA answer pairs, so that a trained judge trains in seconds:
# the contract is about what a judge returns, not how well it ranks.
QUICK = {"examples": 4, "answers": "false", "progress": "false"}
# Values an option marks ??? (no NLI model ships offline: MiniLM with an untrained two-label head loads
# as one).
REQUIRED = {("judge", "nli"): [f"judge.model_path={minilm_path()}", "judge.entailment_label=1"]}


def _quick(node: dict, prefix: str) -> list[str]:
    """Overrides setting every QUICK key found in `node`, at any depth (an ensemble's trained member too)."""
    found = []
    for key, value in node.items():
        if isinstance(value, dict):
            found += _quick(value, f"{prefix}.{key}")
        elif key in QUICK:
            found.append(f"{prefix}.{key}={QUICK[key]}")
    return found


def assert_verdicts(verdicts, pairs) -> None:
    assert isinstance(verdicts, list) and len(verdicts) == len(pairs)
    for verdict in verdicts:
        assert isinstance(verdict, Verdict) and verdict.status in STATUSES
        if verdict.ok:
            assert isinstance(verdict.score, float) and not math.isnan(verdict.score)
            assert 0.0 <= verdict.score <= 1.0
        else:
            assert verdict.score is None


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_every_judge_keeps_the_verdict_contract(group, option, tiny_judges_root):
    overrides = ["generator=extractive", f"paths.root={tiny_judges_root}", *REQUIRED.get((group, option), [])]
    node = OmegaConf.to_container(compose_option(group, option, *overrides)[group])
    pipeline = build(compose_option(group, option, *overrides, *_quick(node, group)), preflight=False)
    stage = getattr(pipeline, group)
    if stage is None:  # a judge that is off is no stage at all: nothing calls it
        assert option == "none", f"{group}={option} builds no judge"
        return
    judge, asked = stage.component, ASKED[group]
    assert isinstance(judge.threshold, (int, float)) and 0.0 <= judge.threshold <= 1.0

    verdicts = judge.judge(asked)
    assert_verdicts(verdicts, asked)
    assert all(verdict.ok for verdict in verdicts), verdicts
    backwards = judge.judge(asked[::-1])[::-1]  # the same verdicts, each still at its own pair
    assert [v.status for v in backwards] == [v.status for v in verdicts]
    assert [v.score for v in backwards] == pytest.approx([v.score for v in verdicts], abs=1e-4)

    blank = [Pair(asked[0].claim, passage, asked[0].task) for passage in ("", " \n")]
    assert_verdicts(judge.judge(blank), blank)
    assert judge.judge([]) == []
