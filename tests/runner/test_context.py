"""A job with a cut-off and an augmenter, run for real: what it passes on is what its generator and judge read, what
its token metrics score (recounted here character by character) and what its exported pipeline returns; and what
each of its questions cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def widened_run(tmp_path_factory) -> Path:
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    folder = tmp_path_factory.mktemp("context")
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["retriever=bm25", "k=4", "cutoff=margin", "cutoff.margin=0.3",
                                           "augment=neighbours", "augment.characters=50", "metrics.unit=chars",
                                           "generator=extractive", "judge=lexical", "dataset.limit=12",
                                           "prices.cpu_second=0.5", f"paths.root={folder}"])
    run(plan_job(cfg), RunContext(folder / "out"))
    return folder / "out"


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]


def _chars(spans: list[dict]) -> set[tuple[str, int]]:
    return {(span["doc_id"], position) for span in spans for position in range(span["start"], span["end"])}


def test_each_question_costs_its_search_and_its_answer_at_the_price_of_a_cpu_second(widened_run):
    """The extractive generator and the lexical judge are local and call no LLM, so a question's cost is
    prices.cpu_second times its answer's seconds and the timed questions' mean search and rerank seconds."""
    latency = json.loads((widened_run / "latency.json").read_text())
    searching = sum(sum(latency[name]) / len(latency[name]) for name in ("search_ms", "rerank_ms") if latency[name])
    records = _records(widened_run)
    assert searching > 0
    costs = [record["metrics"]["cost_per_question"] for record in records]
    assert costs == pytest.approx([0.5 * (searching + record["generation"]["latency_ms"]) / 1000 for record in records])
    summary = json.loads((widened_run / "metrics.json").read_text())
    assert summary["cost_total"]["value"] == pytest.approx(sum(costs))
    assert summary["cost_per_question"]["mean"] == pytest.approx(sum(costs) / len(costs))


def test_the_context_is_widened_kept_hits_and_what_the_token_metrics_and_the_judge_read(widened_run):
    from ragsweep.data.sotu_qa import SotuQADataset

    documents = SotuQADataset().load().documents
    records = _records(widened_run)
    assert len(records) == 12
    assert any(len(record["retrieved"]) < 4 for record in records)  # the margin cut some questions short
    for record in records:
        context, retrieved = record["context"], record["retrieved"]
        assert 1 <= len(context) <= len(retrieved) <= 4
        for hit in retrieved:  # each kept chunk widened by one neighbour and 50 characters a side, within a passage
            assert any(p["doc_id"] == hit["doc_id"] and p["start"] <= max(hit["start"] - 50, 0)
                       and min(hit["end"] + 50, documents[hit["doc_id"]].length) <= p["end"] for p in context)
        shared = _chars(context) & _chars(record["references"])
        assert record["metrics"]["token_recall"] == pytest.approx(len(shared) / len(_chars(record["references"])))
        assert record["metrics"]["token_precision"] == pytest.approx(len(shared) / len(_chars(context)))
        assert record["metrics"]["context_size"] == sum(p["end"] - p["start"] for p in context)
        assert record["metrics"]["context_passages"] == len(context)
        if record["judged"]["passages"]:
            assert record["judged"]["passages"] == [documents[p["doc_id"]].text[p["start"]:p["end"]] for p in context]
        assert len(record["relevance"]["labels"]) == len(context)


def test_the_exported_configuration_passes_on_the_same_passages(widened_run):
    import ragsweep

    pipeline = ragsweep.load_pipeline(widened_run / "config.yaml")
    for record in _records(widened_run)[:4]:
        passages = pipeline.retrieve(record["question"])
        assert [(p.doc_id, p.start, p.end) for p in passages] == [
            (p["doc_id"], p["start"], p["end"]) for p in record["context"]]
        assert pipeline.answer(record["question"]) == record["answer"]
