"""The offline judges (lexical, embedding) and the claims an answer is split into."""

from __future__ import annotations

import math

import pytest

from ragsweep.embedding.minilm import MiniLMEmbedder
from ragsweep.judging.base import Pair, Verdict
from ragsweep.judging.claims import Claim, claims_from_statements, split_claims
from ragsweep.judging.embedding import EmbeddingJudge
from ragsweep.judging.lexical import LexicalJudge, TermWeights, coverage

PASSAGE = "The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic."


def test_lexical_coverage_counts_content_words_and_weighs_numbers():
    assert coverage("The bridge was opened in 1932.", PASSAGE) == 1.0
    # words {bridge, opened}, number 1950 (weight 2): 2 of 4 found
    assert coverage("The bridge was opened in 1950.", PASSAGE) == 0.5
    assert coverage("Bridges opened", PASSAGE) == 1.0  # words match on their first six letters
    assert coverage("Bridges opening", PASSAGE) == 0.5  # "openin" is not "opened"
    assert coverage("It was.", PASSAGE) == 1.0  # nothing to check


def test_idf_weighted_coverage_counts_a_rare_word_more_than_a_common_one():
    # three 20-character pieces: "bridge" in all three, "mayor" in one; idf = ln((N + 1) / (df + 0.5))
    weights = TermWeights.from_texts(["bridge mayor opened ", "bridge river crossed", "bridge tolls rising "], window=20)
    assert weights.idf["bridge"] == pytest.approx(math.log(4 / 3.5))
    assert weights.idf["mayor"] == pytest.approx(math.log(4 / 1.5))
    assert weights.unseen == pytest.approx(math.log(4 / 0.5))
    both = weights.idf["bridge"] + weights.idf["mayor"]
    assert weights.coverage("The mayor's bridge", "the mayor spoke") == pytest.approx(weights.idf["mayor"] / both)
    assert weights.coverage("The mayor's bridge", "a bridge") == pytest.approx(weights.idf["bridge"] / both)
    assert weights.coverage("Zeppelins", "zeppelins") == 1.0 and weights.coverage("Zeppelins", "a bridge") == 0.0
    assert weights.coverage("It was.", "anything") == 1.0  # nothing to check, as coverage()


def test_lexical_judge_verdicts_and_settings():
    verdicts = LexicalJudge().judge([Pair("The mayor opened the bridge.", PASSAGE), Pair("Ferries stop.", PASSAGE)])
    assert verdicts == [Verdict(1.0), Verdict(0.0)]
    with pytest.raises(ValueError, match="judge.threshold"):
        LexicalJudge(threshold=1.5)
    with pytest.raises(ValueError, match="judge.number_weight"):
        LexicalJudge(number_weight=0)


def test_a_verdict_is_either_a_score_or_a_failure():
    with pytest.raises(ValueError):
        Verdict(None)
    with pytest.raises(ValueError):
        Verdict(0.3, "parse_failed")
    with pytest.raises(ValueError):
        Verdict(None, "maybe")
    assert not Verdict(None, "error", "timeout").ok


@pytest.fixture(scope="module")
def embedding_judge():
    return EmbeddingJudge(MiniLMEmbedder(progress=False))


def test_embedding_judge_scores_the_closest_sentence(embedding_judge):
    long_passage = "Ferries stop running in winter. " * 5 + "The bridge was opened in 1932 by the mayor."
    on_topic, off_topic, buried = embedding_judge.judge([
        Pair("The mayor opened the bridge in 1932.", PASSAGE),
        Pair("Ferries stop running in winter.", PASSAGE),
        Pair("The mayor opened the bridge in 1932.", long_passage)])
    assert on_topic.score > 0.7 > off_topic.score
    whole = embedding_judge.embedder.encode(["The mayor opened the bridge in 1932.", long_passage])
    diluted = float(whole[0] @ whole[1] / (sum(whole[0] ** 2) * sum(whole[1] ** 2)) ** 0.5)
    assert buried.score > 0.9 > diluted + 0.2  # one matching sentence is enough; the whole passage dilutes it
    assert embedding_judge.judge([]) == []


def test_answers_split_into_sentences_with_their_citations():
    claims = split_claims("The bridge opened in 1932 [1]. It has eight lanes [2][1]. [3]\n\nNo ferries run.")
    assert claims == [Claim("The bridge opened in 1932 .", (1,)), Claim("It has eight lanes .", (2, 1, 3)),
                      Claim("No ferries run.", ())]
    assert split_claims("") == [] and split_claims(None) == [] and split_claims("[1]") == []


def test_decomposed_statements_inherit_the_citations_of_their_sentence():
    answer = "The bridge opened in 1932 [1]. It has eight lanes [2]."
    claims = claims_from_statements(["It carries eight lanes.", "The bridge opened in 1932."], answer)
    assert [claim.citations for claim in claims] == [(2,), (1,)]
