"""`ragsweep estimate` before a sweep and the cost its runs log after, with SmolLM2 answering for real; the judges'
calls it counts against those a run makes; `budget` stopping a sweep before it starts (a sweep within it runs: the
other sweeps of this suite, at the default null)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ragsweep.generation.base import Generation
from ragsweep.metrics.costs import Prices
from ragsweep.runner.estimating.calls import Held, Planned
from ragsweep.runner.estimating.estimates import JobEstimate
from ragsweep.runner.estimating.job_calls import CLAIMS_UNKNOWN, JobCalls, planned_calls
from ragsweep.runner.estimating.prediction import SCALE_FROM, CallPredictor
from ragsweep.runner.estimating.sampling import failed_in_sample, spread
from ragsweep.runner.estimating.sweep import SweepEstimator
from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[2]
MODEL = "SmolLM2-135M-Instruct.Q4_1"
# tokens priced, seconds not: the cost is a function of the tokens, which greedy decoding repeats
SETTINGS = ["retriever=bm25", "generator=transformers", "dataset.limit=4",
            f"prices.models={{{MODEL}:{{input:1,output:2}}}}"]


def _call(characters: int, cl100k_tokens: int = 0, tokens: bool = True) -> Planned:
    return Planned("generation", "g", "key", characters, cl100k_tokens, None, 128, tokens)


def test_a_missing_call_is_predicted_from_the_held_ones_by_their_tokens_per_character():
    predictor = CallPredictor()
    for held in (Held(1000, 300, 40, 700.0), Held(3000, 700, 60, 1300.0), Held(2000, 500, 20, 700.0)):
        predictor.observe("g", held)  # 1 ms a prompt token, 10 a completion token
    predicted, rough = predictor.predict(_call(4000))
    assert not rough
    # 4000 x (1500 / 6000) prompt tokens, the mean of 40, 60 and 20; 1 x 1000 + 10 x 40 ms, not their mean 900
    assert predicted.prompt_tokens == 1000 and predicted.completion_tokens == 40
    assert predicted.latency_ms == pytest.approx(1400.0)


def test_with_tokens_that_do_not_vary_a_missing_call_takes_the_held_calls_mean_time():
    predictor = CallPredictor()
    predictor.observe("g", Held(100, 0, 0, 20.0))  # an extractive answer: no tokens, only time
    predictor.observe("g", Held(300, 0, 0, 40.0))
    assert predictor.predict(_call(200, tokens=False))[0].latency_ms == 30.0


def test_with_no_call_held_the_prompt_counts_its_cl100k_tokens_and_the_answer_max_tokens():
    assert CallPredictor().predict(_call(13, 3)) == (Held(13, 3, 128, 0.0), True)
    assert CallPredictor().predict(_call(13, 0, tokens=False)) == (Held(13, 0, 0, 0.0), True)  # no model: no tokens


def test_a_missing_call_takes_its_questions_completion_tokens_held_by_other_jobs():
    predictor = CallPredictor()
    for question, completion in enumerate((10, 50, 30)):
        predictor.observe("g", Held(1000, 250, completion, 0.0), job=1, question=question)
    assert predictor.predict(replace(_call(2000), question=1), job=0)[0].completion_tokens == 50
    assert predictor.predict(replace(_call(2000), question=7), job=0)[0].completion_tokens == 30  # none: the mean


def _scaled_by_own_calls(own: int) -> Held:
    """A call of job 0 predicted from job 1's calls (1 ms a prompt token, 10 a completion token; `MEAN` completion
    tokens) and from `own` held calls of job 0, each with twice the completion tokens and milliseconds that job 1's
    call of its question took."""
    predictor = CallPredictor()
    for question in range(SCALE_FROM):
        prompt, completion = 250 * (question + 1), 10 + 5 * question
        for job, times in ((1, 1), (0, 2)):
            if job == 1 or question < own:
                predictor.observe("g", Held(4 * prompt, prompt, times * completion,
                                              times * (prompt + 10.0 * completion)), job, question)
    return predictor.predict(replace(_call(2000), question=SCALE_FROM), job=0)[0]


MEAN = 10 + 5 * (SCALE_FROM - 1) / 2


def test_a_job_holding_enough_calls_of_its_own_scales_its_missing_ones_by_them():
    assert _scaled_by_own_calls(SCALE_FROM) == Held(2000, 500, round(2 * MEAN), pytest.approx(2 * (500 + 10 * MEAN)))
    too_few = _scaled_by_own_calls(SCALE_FROM - 1)  # job 1's rates as they are
    assert too_few == Held(2000, 500, round(MEAN), pytest.approx(500 + 10 * MEAN))


# an endpoint's answers priced 1 a completion token, nothing else: a job's cost is its answers' completion tokens
PRICED = SimpleNamespace(query=None, judge=None, relevance_judge=None, prices=Prices({"m": (0.0, 1e6)}),
                         plan=SimpleNamespace(generates=True, judges=False, judges_relevance=False),
                         generator=SimpleNamespace(component=SimpleNamespace(model_name="m", remote=True)))


def _answered(job: str, completions: np.ndarray, held: set[int]) -> JobCalls:
    """A job's answer calls, one a question, those at `held` cached with their completion tokens."""
    return JobCalls([Planned("generation", "g", f"{job} {question}", 1000, 0,
                             Generation("", 10.0 * tokens, 250, int(tokens)) if question in held else None, 128, True,
                             question)
                     for question, tokens in enumerate(completions)], {}, len(completions), {})


def _sampled_estimate(rng: np.random.Generator, questions: int = 68, sample: int = 16,
                      alone: bool = False) -> tuple[float, SweepEstimator]:
    """A job whose answers run 1.5x another job's (all held; `alone`: no such job), times a lognormal spread, with
    `sample` of its own questions held: its actual cost, and the sweep's estimator (the sampled job last)."""
    other = rng.uniform(20, 200, questions).round()
    actual = np.round(1.5 * other * rng.lognormal(0.0, 0.4, questions))
    estimator = SweepEstimator()
    if not alone:
        estimator.add("other", PRICED, _answered("other", other, set(range(questions))))
    estimator.add("sampled", PRICED, _answered("sampled", actual, set(rng.choice(questions, sample, replace=False))))
    return float(actual.sum()), estimator


@pytest.mark.parametrize("alone", [False, True], ids=["beside another job", "alone"])
def test_a_cost_scaled_by_a_sample_has_an_interval_that_covers_the_actual_cost_as_often_as_it_says(alone):
    rng = np.random.default_rng(1)
    covered, widths = {"cost_total": 0, "completion_tokens": 0}, []
    for _ in range(200):
        actual, estimator = _sampled_estimate(rng, alone=alone)
        estimate = estimator.estimate()
        for name in covered:  # the cost is the completion tokens, so both hold it
            low, high = estimate.jobs[-1].intervals[name]
            covered[name] += low <= actual <= high
        widths.append((high - low) / actual)
        assert estimate.jobs[-1].intervals["prompt_tokens"] == (250 * 68, 250 * 68)  # 250 a prompt, as each held one
        assert alone or not estimate.jobs[0].intervals  # held whole: nothing scaled
        assert estimate.interval[0] <= estimate.new_cost <= estimate.interval[1]
    for held in covered.values():
        assert 0.88 <= held / 200 <= 0.99  # 95% asked; a percentile bootstrap of 16 questions covers a little less
    # 2 x 1.96 x the spread of 52 answers predicted from 16: ±19% (alone: the answers' own spread, ±30%)
    assert 0.2 < float(np.median(widths)) < 0.9


def test_another_jobs_sample_does_not_move_a_sampled_jobs_estimate():
    """Two jobs writing twice the held job's answers, each with the same 16 questions asked: each scaled against the
    job that holds every question, not against the other's sample (which would ratio its sampled questions against
    longer answers than the rest, and put each 27% under)."""
    rng, asked = np.random.default_rng(4), set(spread(68, 16))
    held = rng.uniform(20, 200, 68).round()
    twice = [np.round(2 * held * rng.lognormal(0.0, 0.3, 68)) for _ in range(2)]
    estimates = []
    for jobs in (1, 2):
        estimator = SweepEstimator()
        estimator.add("held", PRICED, _answered("held", held, set(range(68))))
        for job in range(jobs):
            estimator.add(str(job), PRICED, _answered(str(job), twice[job], asked))
        estimates.append(estimator.estimate().jobs[1])
    alone, beside = estimates
    assert beside.total("completion_tokens") == alone.total("completion_tokens")
    low, high = beside.intervals["completion_tokens"]
    assert low <= twice[0].sum() <= high


def test_jobs_sharing_their_sampled_calls_keep_the_samples_spread_in_their_intervals():
    """Two jobs asking the same prompts (a rewriter's, in two jobs), their 16 sampled calls held alike: neither is
    the other's base, which would predict each sampled call exactly and leave its spread out of the interval."""
    rng, asked, covered = np.random.default_rng(5), set(spread(68, 16)), 0
    for _ in range(200):
        shared = np.round(rng.uniform(20, 200, 68) * rng.lognormal(0.0, 0.4, 68))
        estimator = SweepEstimator()
        for job in ("a", "b"):
            estimator.add(job, PRICED, _answered("shared", shared, asked))
        low, high = estimator.estimate().jobs[0].intervals["completion_tokens"]
        covered += low <= shared.sum() <= high
    assert 0.88 <= covered / 200 <= 0.99


def test_within_asks_more_questions_until_the_sweeps_figures_are_known_that_closely():
    rng, within, samples = np.random.default_rng(3), 0, []
    for _ in range(100):
        completions = {"other": rng.uniform(20, 200, 68).round()}
        completions["sampled"] = np.round(1.5 * completions["other"] * rng.lognormal(0.0, 0.4, 68))
        asked = {"other": set(range(68)), "sampled": set()}

        def plan(pipeline: SimpleNamespace, sample: int) -> JobCalls:  # as planned_calls: asked questions stay held
            asked[pipeline.job].update(spread(68, sample))
            return _answered(pipeline.job, completions[pipeline.job], asked[pipeline.job])

        estimator = SweepEstimator(16, plan)
        for job in asked:
            pipeline = SimpleNamespace(**vars(PRICED), job=job)
            estimator.add(job, pipeline, plan(pipeline, 16))
        estimate = estimator.narrowed(0.05)
        assert estimate.margin() <= 0.05 and estimate.sample == len(asked["sampled"])
        actual = sum(values.sum() for values in completions.values())
        within += abs(estimate.total("cost_total") / actual - 1) <= 0.05
        samples.append(estimate.sample)
    assert within >= 88  # 95% asked, after a sequential stop
    # 16 questions leave the sweep's cost ±12%; about 50 of the 68 bring it to ±5% (34-63 over 300 sweeps)
    assert 30 <= float(np.median(samples)) <= 60 and min(samples) > 16


def test_within_from_no_sample_starts_with_twice_the_calls_that_scale_a_job():
    from ragsweep.runner.estimating.sampling import sample_for

    assert sample_for(0.05, 0.2, 0, 68) == 2 * SCALE_FROM and sample_for(0.05, 0.2, 0, 10) == 10
    assert sample_for(0.05, 0.2, 16, 68) == 57 and sample_for(0.05, 0.06, 16, 68) == 24  # n0/(1+n0/N); 8 more


def test_an_estimate_with_no_call_scaled_by_its_own_has_no_interval():
    _, estimator = _sampled_estimate(np.random.default_rng(2), sample=SCALE_FROM - 1)
    estimate = estimator.estimate()
    assert [job.intervals for job in estimate.jobs] == [{}, {}] and estimate.interval is None


def test_the_table_shows_a_scaled_jobs_intervals_and_a_dash_for_the_others():
    from ragsweep.cli.project import estimate_table
    from ragsweep.runner.estimating.estimates import StageCount, SweepEstimate

    answers = {"generation": StageCount(68, 16, 60_000, 3_000)}
    sampled = {"prompt_tokens": (59_010.4, 61_200.0), "completion_tokens": (2_700.2, 3_350.7),
               "cost_total": (0.047, 0.0531)}
    table = estimate_table(SweepEstimate([JobEstimate("k=3", 68, answers, 0.04, 0.0),
                                          JobEstimate("k=5", 68, answers, 0.05, 0.03, sampled)],
                                         0.03, 52, (0.027, 0.0331)))
    header, held, scaled, total, legend = table.splitlines()
    assert header.split()[-7:] == ["prompt_tokens", "prompt_tokens_95%", "completion_tokens",
                                   "completion_tokens_95%", "cost_total", "cost_total_95%", "new_cost"]
    assert held.split()[-7:] == ["60,000", "-", "3,000", "-", "0.04", "-", "0"]
    assert scaled.split()[-7:] == ["60,000", "[59010,61200]", "3,000", "[2700,3351]", "0.05", "[0.047,0.0531]", "0.03"]
    assert total.endswith("costing about 0.03, 95% [0.027,0.0331]") and legend.startswith("95%: ")
    assert "95%" not in estimate_table(SweepEstimate([JobEstimate("k=3", 68, answers, 0.04, 0.0)], 0.0, 0))
    swept = {"prompt_tokens": (119_010.0, 121_200.0), "completion_tokens": (5_700.2, 6_350.7),
             "cost_total": (0.087, 0.1)}
    table = estimate_table(SweepEstimate([JobEstimate("k=3", 68, answers, 0.04, 0.0),
                                          JobEstimate("k=5", 68, answers, 0.05, 0.03, sampled)],
                                         0.03, 52, (0.027, 0.0331), swept, 24))
    assert table.splitlines()[4] == ("the sweep: prompt_tokens 120,000 [119010,121200], completion_tokens 6,000 "
                                     "[5700,6351], cost_total 0.09 [0.087,0.1] (95%: within ±11.1%), 24 questions of "
                                     "each job asked first")


def test_the_sampled_questions_are_spread_over_the_dataset_and_a_larger_sample_holds_a_smaller_one():
    assert spread(68, 4) == [0, 17, 34, 51] and spread(68, 8) == [0, 8, 17, 25, 34, 42, 51, 59]
    assert all(set(spread(68, n)) < set(spread(68, n + 1)) for n in range(68))
    assert spread(68, 68) == spread(68, 100) == list(range(68))
    assert spread(3, 8) == [0, 1, 2] and spread(3, 0) == [] and spread(1, 1) == [0]


def test_the_samples_failed_calls_are_named_in_a_warning(caplog):
    pipeline = SimpleNamespace(plan=SimpleNamespace(label="k=5"))  # what the warning reads of a job
    failed_in_sample(pipeline, answers=[False, True], judge_calls=[False, False])
    failed_in_sample(pipeline, rewrites=[False])
    assert caplog.messages == ["k=5: the sample's calls that failed (not cached: predicted like the others): 1 of 2 "
                               "answers"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    return {**env, "PYTHONPATH": str(ROOT)}


def _ragsweep(project: Path, *args: str) -> subprocess.CompletedProcess:
    return run_command([str(Path(sys.executable).with_name("ragsweep")), *args], project, _env(), timeout=600)


def _sweep(project: Path, *args: str) -> subprocess.CompletedProcess:
    return run_command([sys.executable, "sweep.py", *args], project, _env())


def _rows(table: str) -> dict[str, list[str]]:
    """The estimate's job lines by the job's swept value of k."""
    rows = {}
    for line in table.splitlines()[1:]:
        if line.startswith(("new model calls", "~")):
            break
        label = line.split()[0]
        k = next(part for part in label.split(",") if part.startswith("k="))
        rows[k] = line.split()
    return rows


def _logged(project: Path) -> dict[str, dict[str, float]]:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    runs = runs[runs["tags.ragsweep.role"] == "job"]
    return {f"k={row['params.k']}": {"cost_total": row["metrics.cost_total"],
                                     "prompt_tokens": 4 * row["metrics.prompt_tokens_mean"]}
            for _, row in runs.iterrows()}


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    return scratch_project(tmp_path_factory.mktemp("estimate") / "project")


def test_the_estimate_before_a_sweep_and_its_logged_cost_after_agree(project):
    ran = _sweep(project, "-m", *SETTINGS, "k=3")
    assert ran.returncode == 0, ran.stderr[-2000:]
    between = _ragsweep(project, "estimate", "--sample", "2", "-m", *SETTINGS, "k=3,5")
    assert between.returncode == 0, between.stderr[-2000:]
    rows, logged = _rows(between.stdout), _logged(project)
    assert set(logged) == {"k=3"}  # the estimate ran no job
    assert rows["k=3"][3:5] == ["4", "(4"] and rows["k=3"][-1] == "0"  # answers held, nothing new
    assert float(rows["k=3"][-2]) == pytest.approx(logged["k=3"]["cost_total"], rel=1e-3)  # held: what was logged
    assert int(rows["k=3"][-4].replace(",", "")) == logged["k=3"]["prompt_tokens"]
    assert rows["k=5"][3:5] == ["4", "(2"]  # two of its answers made first (the sample), and cached for the sweep
    assert "new model calls: 2 " in between.stdout and "~" not in between.stdout  # the others from the held calls

    ran = _sweep(project, "-m", *SETTINGS, "k=5")
    assert ran.returncode == 0, ran.stderr[-2000:]
    logged = _logged(project)
    assert float(rows["k=5"][-2]) == pytest.approx(logged["k=5"]["cost_total"], rel=0.05)
    assert int(rows["k=5"][-4].replace(",", "")) == pytest.approx(logged["k=5"]["prompt_tokens"], rel=0.05)


def test_a_sample_that_is_no_count_or_a_within_that_is_no_share_is_refused_before_any_work(capsys):
    from ragsweep.cli.project import estimate

    assert estimate(["--sample", "some", "-m", "k=5"], ROOT / "conf") == 2
    assert capsys.readouterr().err == ("ragsweep: error: --sample some: give a whole number of questions >= 0, e.g. "
                                       "--sample 8\n")
    assert estimate(["--sample=-1", "--within=5", "-m", "k=5"], ROOT / "conf") == 2
    assert capsys.readouterr().err.splitlines() == [
        "ragsweep: error: --sample -1: give a whole number of questions >= 0, e.g. --sample 8",
        "ragsweep: error: --within 5: give the share of each figure the estimate may miss by, between 0 and 1, e.g. "
        "--within 0.05 (±5%)"]
    assert estimate(["-m", "k=5", "--within", "a lot"], ROOT / "conf") == 2
    assert "--within a lot: give the share" in capsys.readouterr().err


def test_a_sweep_over_its_budget_stops_before_it_starts(project):
    runs = len(_logged(project))
    over = _sweep(project, "-m", *SETTINGS, "k=7", "budget=0.000001")
    assert over.returncode == 2
    assert over.stderr.strip().splitlines()[-1].startswith(
        "ragsweep: error: budget=1e-06: the sweep's 4 new model calls would cost about"), over.stderr[-2000:]
    assert len(_logged(project)) == runs


def _metrics(project: Path, k: int) -> dict:
    """The metrics.json of the job run with k=`k`."""
    for path in (project / "outputs" / "multirun").glob("*/*/metrics.json"):
        if f"k={k}" in (path.parent / ".hydra" / "overrides.yaml").read_text():
            return json.loads(path.read_text())
    raise AssertionError(f"no job ran k={k}")


def test_the_judges_calls_are_counted_from_the_held_answers_claims(tmp_path, scratch_project):
    """Extractive answers judged by the lexical judges: no tokens, so the calls are what is estimated; a held
    answer's judge calls are its claims x passages, exactly as the run makes them; an LLM judge that lists an
    answer's claims first is planned one list an answer, and claims not known until it lists them."""
    from ragsweep.runner.build import build
    from ragsweep.runner.compose import compose_config
    from ragsweep.runner.entry import conf_dir
    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.preflight import check_command_line

    project = scratch_project(tmp_path / "project")
    grid = ["retriever=bm25", "generator=extractive", "judge=lexical", "relevance_judge=lexical", "dataset.limit=4",
            f"paths.root={project}"]

    def estimate(*swept: str) -> dict[str, JobEstimate]:
        estimator = SweepEstimator()
        assert check_command_line(["-m", *grid, *swept], conf_dir(project), visit=estimator.visit) == []
        return {next(p for p in job.label.split(",") if p.startswith("k=")): job for job in estimator.estimate().jobs}

    before = estimate("k=3")["k=3"].stages  # nothing cached: every call predicted, roughly, and nothing stored
    assert before["generation"].cached == 0 and before["generation"].rough and before["judge"].rough
    assert before["judge"].calls == 4 * 3 * CLAIMS_UNKNOWN
    assert not (project / ".cache" / "ragsweep" / "answers").exists() and not (project / "mlruns").exists()
    assert _sweep(project, "-m", *grid, "k=3").returncode == 0
    jobs = estimate("k=3,5")
    held = jobs["k=3"].stages
    assert held["generation"].cached == held["generation"].calls == 4
    assert held["judge"].calls == _metrics(project, 3)["judge_failure_rate"]["n"]  # every claim x every passage
    assert held["relevance"].calls == 4 * 3
    predicted = jobs["k=5"].stages
    assert predicted["generation"].cached == 0 and predicted["relevance"].calls == 4 * 5
    assert _sweep(project, "-m", *grid, "k=5").returncode == 0
    made = _metrics(project, 5)["judge_failure_rate"]["n"]  # an answer to make: the held answers' mean claims
    assert predicted["judge"].calls == pytest.approx(made, rel=0.25)
    # no rewrite cached: each question searched as asked
    rewriting = estimate("k=3", "query=multi_query", "query/generator=llama_cpp")["k=3"].stages
    assert (rewriting["query"].cached, rewriting["generation"].cached) == (0, 0)  # its prompts held, as k=3's: to make
    llm = [*(setting for setting in grid if setting != "judge=lexical"), "judge=llm", "judge/generator=llama_cpp",
           "judge.decompose=true", "k=3"]
    planned = planned_calls(build(plan_job(compose_config(conf_dir(project), llm)))).planned
    lists = [call for call in planned if call.group.endswith(" statements")]  # the LLM judge's claims of each answer
    assert [call.question for call in lists] == [0, 1, 2, 3] and all(call.held is None for call in lists)
    assert sum(call.per_claim for call in planned) == 4  # whose claims are not known before it lists them
