"""Context relevance from spans: the labelling rule, the span-trained relevance judge out of fold, and the
`context_relevance_auc` a run logs, recomputed from its per_query.jsonl with a rank count of our own."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from sklearn.metrics import roc_auc_score

from ragsweep.data.sotu_qa import SotuQADataset
from ragsweep.judging.base import Pair
from ragsweep.judging.embedding import sentences
from ragsweep.judging.training.finetune import encoder_path
from ragsweep.judging.lexical import TermWeights
from ragsweep.judging.span_relevance import SpanTrainedRelevanceJudge
from ragsweep.judging.training.span_triplets import relevance_triplets
from ragsweep.metrics.relevance import context_relevance, relevance_auc, span_relevance
from ragsweep.types import Span
from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[2]
CHROMA_GENERAL = ROOT.parent / "shared" / "data" / "chroma_general"
TINY = ("relevance_judge.examples=24", "relevance_judge.pairs_per_question=1", "relevance_judge.progress=false")


def test_a_passage_is_relevant_when_it_holds_half_a_reference_and_irrelevant_when_it_touches_none():
    references = [Span("a", 100, 200), Span("b", 0, 10)]
    assert span_relevance(Span("a", 150, 400), references) == 1  # 50 of 100 characters: exactly half
    assert span_relevance(Span("a", 151, 400), references) is None  # 49: grazes it, left unlabelled
    assert span_relevance(Span("a", 200, 400), references) == 0  # touches its end, shares no character
    assert span_relevance(Span("b", 5, 6), references) is None  # 1 of 10
    assert span_relevance(Span("c", 100, 200), references) == 0  # same offsets, another document
    assert span_relevance(Span("a", 0, 1000), references) == 1
    assert context_relevance([1, None, 0, 0]) == pytest.approx(1 / 3)
    assert context_relevance([None, None]) is None


def test_relevance_auc_is_sklearns_over_the_labelled_scored_pairs():
    scores, labels = [0.9, 0.2, None, 0.5, 0.4, 0.7], [1, 0, 1, None, 1, 0]
    found = relevance_auc(scores, labels)
    assert found == {"value": roc_auc_score([1, 0, 1, 0], [0.9, 0.2, 0.4, 0.7]), "n": 4, "positives": 2}
    assert relevance_auc([0.3, 0.4], [1, 1]) is None  # one label: undefined, never a 0.5


def test_every_question_is_scored_by_a_model_that_never_saw_its_spans(tmp_path):
    dataset = SotuQADataset().load()
    judge = SpanTrainedRelevanceJudge(dataset=dataset, folds=3, cache_dir=str(tmp_path))
    folds = {query.id: judge.fold_of(query.id) for query in dataset.queries}
    assert set(folds.values()) == {0, 1, 2}
    for fold in range(3):
        trained_on = {query.id for query in judge.training_questions(fold)}
        assert trained_on == {qid for qid, f in folds.items() if f != fold}
    triplets = relevance_triplets(dataset, dataset.queries[:10], 40, 4, (100, 500), seed=0)
    documents = dataset.documents
    for triplet in triplets:  # every relevant window holds half a reference of its question; no irrelevant one touches any
        query = next(q for q in dataset.queries[:10] if q.text == triplet.question)
        relevant, irrelevant = triplet.spans
        assert triplet.relevant == documents[relevant.doc_id].text[relevant.start:relevant.end]
        assert triplet.irrelevant == documents[irrelevant.doc_id].text[irrelevant.start:irrelevant.end]
        assert any(ref.doc_id == relevant.doc_id and 2 * (min(ref.end, relevant.end) - max(ref.start, relevant.start))
                   >= ref.end - ref.start for ref in query.references)
        assert all(ref.doc_id != irrelevant.doc_id or ref.end <= irrelevant.start or irrelevant.end <= ref.start
                   for ref in query.references)
    assert {t.kind for t in triplets} == {"same_document", "any_document"}


def test_a_pairs_score_averages_the_fold_models_cosine_and_the_questions_idf_weighted_coverage(tmp_path):
    from sentence_transformers import SentenceTransformer

    dataset = SotuQADataset().load()
    encoder = SentenceTransformer(encoder_path(None, tmp_path), device="cpu")  # stands in for both fold models
    question = dataset.queries[0]
    reference = question.references[0]
    text = dataset.documents[reference.doc_id].text
    passages = [text[max(0, reference.start - 200):reference.end + 200], text[:400]]
    pairs = [Pair(question.text, passage, "relevance") for passage in passages]
    weights = TermWeights.from_texts(document.text for document in dataset.documents.values())
    scores = {}
    for weight in (0.0, 0.5, 1.0):
        judge = SpanTrainedRelevanceJudge(dataset=dataset, cache_dir=str(tmp_path), lexical_weight=weight)
        judge.__dict__["_models"] = [encoder, encoder]
        scores[weight] = [verdict.score for verdict in judge.judge(pairs)]
    for position, passage in enumerate(passages):
        vectors = encoder.encode([question.text, *sentences(passage)], normalize_embeddings=True)
        cosine = min(1.0, max(0.0, float((vectors[1:] @ vectors[0]).max())))
        words = weights.coverage(question.text, passage)
        assert scores[0.0][position] == pytest.approx(cosine, abs=1e-5)
        assert scores[1.0][position] == pytest.approx(words)
        assert scores[0.5][position] == pytest.approx((cosine + words) / 2, abs=1e-5)
    with pytest.raises(ValueError, match="relevance_judge.lexical_weight"):
        SpanTrainedRelevanceJudge(dataset=dataset, lexical_weight=1.5)


def _rank_auc(scores: list[float], labels: list[int]) -> float:
    """P(score of a relevant pair > score of an irrelevant one), ties counted half: the AUC by counting."""
    positives = [s for s, y in zip(scores, labels) if y == 1]
    negatives = [s for s, y in zip(scores, labels) if y == 0]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def _run(cwd: Path, *args: str, k: int = 3, outputs: str = "outputs") -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    done = run_command([sys.executable, str(ROOT / "sweep.py"), f"k={k}", "relevance_judge=span_trained", *TINY,
                           *args, f"paths.root={cwd}", f"paths.outputs={cwd / outputs}"], cwd=cwd, env=env,
                          text=True, capture_output=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return next((cwd / outputs / "runs").glob("*/"))


def _scores(folder: Path) -> list[list[float]]:
    return [json.loads(line)["relevance"]["scores"] for line in (folder / "per_query.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["sotu_qa", "chroma_general"])
def test_a_run_logs_the_relevance_judges_auc_against_the_span_labels(tmp_path, dataset):
    extra, k = [f"dataset={dataset}"], 3
    if dataset == "chroma_general":
        if not CHROMA_GENERAL.is_dir():
            pytest.skip("../shared/data/chroma_general is not beside the checkout")
        # BM25, k=1 and 80 of the 472 questions (each corpus's share) here: each fold's model scoring every
        # sentence of 3 passages per question costs minutes
        extra += [f"paths.data={CHROMA_GENERAL.parent}", "retriever=bm25", "dataset.sample=80"]
        k = 1
    # retrieval only: the judge scores the same passages with or without answers (tests/generation/
    # test_judged_sweep.py judges extractive answers' passages)
    extra += ["generator=none"]
    folder = _run(tmp_path, *extra, k=k)
    records = [json.loads(line) for line in (folder / "per_query.jsonl").read_text().splitlines()]
    metrics = json.loads((folder / "metrics.json").read_text())
    scores, labels = [], []
    for record in records:
        references = record["references"]
        for hit, label, score in zip(record["retrieved"], record["relevance"]["labels"], record["relevance"]["scores"],
                                     strict=True):
            # the rule again, by hand: share of some reference inside the passage, or no overlap at all
            shares = [max(0, min(hit["end"], ref["end"]) - max(hit["start"], ref["start"])) / (ref["end"] - ref["start"])
                      for ref in references if ref["doc_id"] == hit["doc_id"]]
            expected = 1 if any(share >= 0.5 for share in shares) else 0 if not any(shares) else None
            assert label == expected
            if label is not None:
                scores.append(score)
                labels.append(label)
        known = [label for label in record["relevance"]["labels"] if label is not None]
        if known:
            assert record["metrics"]["context_relevance"] == pytest.approx(sum(known) / len(known))
    logged = metrics["context_relevance_auc"]
    assert logged["n"] == len(labels) and logged["positives"] == sum(labels) > 0
    assert logged["value"] == pytest.approx(_rank_auc(scores, labels))
    assert metrics["relevance_judge_failure_rate"] == {"value": 0.0, "n": k * len(records)}
    if dataset == "sotu_qa":  # span_trained's context_weight 1: each score moved by its margin over the others'
        alone = _scores(_run(tmp_path, *extra, "relevance_judge.context_weight=0", k=k, outputs="alone"))
        for row, pair_scores in zip(_scores(folder), alone, strict=True):
            others = [(sum(pair_scores) - s) / (k - 1) for s in pair_scores]
            assert row == pytest.approx([min(1.0, max(0.0, 2 * s - o)) for s, o in zip(pair_scores, others)])
        assert _scores(folder) != alone
