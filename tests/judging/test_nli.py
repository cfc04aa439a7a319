"""The NLI judge: loading by path, label lookup, batching and truncation, probabilities and errors.

No real NLI model can be installed or run here (none ships offline), so these tests build tiny real
sequence-classification folders from MiniLM's encoder with seeded, untrained heads: a 3-label one
(id2label {0: contradiction, 1: entailment, 2: neutral}) and a single-logit one. The plumbing is
real (transformers loading, tokenising pairs, softmax/sigmoid, column choice); the scores carry no
meaning, so nothing here says how well NLI judges support.
"""

from __future__ import annotations

import pytest
import torch

from ragsweep.judging.base import Pair
from ragsweep.judging.nli import NLIJudge, entailment_index

PAIRS = [Pair("The senate passed the budget.", "The senate passed the budget bill on Tuesday."),
         Pair("Bananas are blue.", "Bananas are yellow fruit."),
         Pair("Who passed the budget?", "The senate passed the budget bill.", task="relevance")]
LABELS = {0: "contradiction", 1: "entailment", 2: "neutral"}


def _build(folder, num_labels: int, id2label: dict | None) -> str:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ragsweep.embedding.minilm import minilm_path

    torch.manual_seed(0)
    kwargs = {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}} if id2label else {}
    AutoModelForSequenceClassification.from_pretrained(minilm_path(), num_labels=num_labels, **kwargs).save_pretrained(folder)
    AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def three_label_model(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("nli3"), 3, LABELS)


@pytest.fixture(scope="module")
def single_logit_model(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("nli1"), 1, None)


def _logits(folder: str, pairs) -> torch.Tensor:
    """The model's own logits for the pairs, computed independently of the judge."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModelForSequenceClassification.from_pretrained(folder)
    inputs = tokenizer([p.passage for p in pairs], [p.claim for p in pairs], padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model.eval()(**inputs).logits.double()


@pytest.mark.parametrize("wanted, expected", [(None, 1), ("ENTAILMENT", 1), ("neutral", 2), (0, 0), ("Entailment", 1)])
def test_entailment_column_is_found_by_name_or_id(wanted, expected):
    assert entailment_index(LABELS, wanted) == expected


def test_single_logit_models_have_no_column_and_unknown_labels_are_listed():
    assert entailment_index({0: "LABEL_0"}, None) is None
    with pytest.raises(ValueError, match=r"judge.entailment_label=None .*'LABEL_0'.*'LABEL_1'"):
        entailment_index({0: "LABEL_0", 1: "LABEL_1"}, None)
    with pytest.raises(ValueError, match=r"judge.entailment_label='entails'"):
        entailment_index(LABELS, "entails")


def test_three_label_model_scores_the_softmax_entailment_column(three_label_model):
    verdicts = NLIJudge(three_label_model, batch_size=2).judge(PAIRS)  # 2 batches: batching keeps the order
    expected = torch.softmax(_logits(three_label_model, PAIRS), dim=-1)[:, 1].tolist()
    assert [v.status for v in verdicts] == ["ok"] * 3
    assert [v.score for v in verdicts] == pytest.approx(expected, abs=1e-5)
    assert all(0.0 <= v.score <= 1.0 for v in verdicts)


def test_entailment_label_picks_another_column(three_label_model):
    (verdict,) = NLIJudge(three_label_model, entailment_label="neutral").judge(PAIRS[:1])
    assert verdict.score == pytest.approx(torch.softmax(_logits(three_label_model, PAIRS[:1]), dim=-1)[0, 2].item(), abs=1e-5)


def test_single_logit_model_scores_the_sigmoid(single_logit_model):
    verdicts = NLIJudge(single_logit_model).judge(PAIRS)
    assert [v.score for v in verdicts] == pytest.approx(torch.sigmoid(_logits(single_logit_model, PAIRS)[:, 0]).tolist(), abs=1e-5)


def test_long_pairs_are_truncated_to_max_length(three_label_model):
    long = Pair("The senate passed the budget.", "The senate met. " * 400)  # ~1600 tokens, over MiniLM's 512
    (cut,) = NLIJudge(three_label_model, max_length=32).judge([long])
    (full,) = NLIJudge(three_label_model).judge([long])
    assert cut.ok and full.ok and cut.score != pytest.approx(full.score, abs=1e-6)  # 32 tokens see less than 512


def test_model_without_an_entailment_label_fails_in_preflight(tmp_path):
    folder = _build(tmp_path / "plain", 2, None)  # labels LABEL_0, LABEL_1
    with pytest.raises(ValueError, match=r"matches none of the model's labels .*LABEL_0"):
        NLIJudge(folder).preflight()


def test_unloadable_folder_fails_in_preflight_naming_the_key(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"judge.model_path=.* cannot be loaded .*folder holding an NLI model"):
        NLIJudge(str(tmp_path)).preflight()


@pytest.mark.parametrize("kwargs, key", [({"model_path": "/missing/nli"}, "judge.model_path"),
                                         ({"threshold": 1.5}, "judge.threshold"),
                                         ({"batch_size": 0}, "judge.batch_size"),
                                         ({"max_length": -1}, "judge.max_length"),
                                         ({"max_failure_rate": 2.0}, "judge.max_failure_rate")])
def test_bad_settings_fail_when_built(tmp_path, kwargs, key):
    with pytest.raises(ValueError, match=key):
        NLIJudge(**{"model_path": str(tmp_path), **kwargs})
