"""The answer-judging stage of one job: answers → claims → verdicts (cached) → judged metrics per question.

Every (claim, passage) pair is one call of the support judge, cached under the judge's settings and the
two texts (`runner.verdicts`), so configurations that produce the same answer from the same passages share
their verdicts, and a rerun judges nothing again. Failed calls are kept with their status and raw output,
left out of every mean, counted in `judge_failure_rate`, and never cached. The relevance judge's stage is
`runner.relevance`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from ragsweep.identity import fingerprint
from ragsweep.generation.base import Generation
from ragsweep.judging.base import Listed, Pair, Verdict
from ragsweep.judging.claims import Claim, claims_from_statements, split_claims
from ragsweep.metrics import judged
from ragsweep.metrics.answers import cosine_similarity, strip_citations
from ragsweep.metrics.relevance import context_relevance
from ragsweep.runner.build import Pipeline
from ragsweep.runner.failures import JudgingFailed, write_calls
from ragsweep.runner.verdicts import cached_verdicts
from ragsweep.types import Chunk, Hit

log = logging.getLogger(__name__)

RELEVANT = 0.5  # a passage whose judged relevance is below this is listed as irrelevant in the diagnostics


@dataclass
class Judgement:
    """One question's judged answer: its claims and every claim × passage verdict."""

    claims: list[Claim] = field(default_factory=list)
    support: list[list[Verdict]] = field(default_factory=list)  # claims × passages, in rank order
    answer_relevance: float | None = None
    questions: Verdict | None = None  # the judge writing questions from the answer (RAGAS answer relevance), if asked
    decomposed: Listed | None = None  # the judge splitting the answer into claims (`judge.decompose`), if asked

    def calls(self) -> list[tuple[str, Verdict]]:
        """The calls whose failures count (a failed decomposition falls back to sentences)."""
        return ([("support", v) for row in self.support for v in row]
                + [("questions", self.questions)] * (self.questions is not None))

    def spent(self) -> list[Verdict | Listed]:
        """Every call the judge made for the answer, as its cost counts them."""
        return [v for _, v in self.calls()] + [self.decomposed] * (self.decomposed is not None)


def judge_answers(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk],
                  hits: Sequence[Sequence[Hit]], generations: Sequence[Generation] | None) -> list[Judgement] | None:
    """Each question's `Judgement` (None without a judge or a generator); a question whose generation
    failed has an empty one (no claims, no calls)."""
    if pipeline.judge is None or generations is None:
        return None
    passages = [[chunks[hit.index].text for hit in query_hits[: pipeline.plan.k]] for query_hits in hits]
    answers = [made.answer if made.error is None else None for made in generations]
    claims, decomposed = _claims(pipeline, questions, answers)
    pairs: list[Pair] = []
    for question, answer, query_claims, texts in zip(questions, answers, claims, passages, strict=True):
        if answer is None:
            continue
        pairs += [Pair(claim.text, text) for claim in query_claims for text in texts]
    verdicts = iter(_verdicts(pipeline, pairs))
    judgements = []
    for answer, query_claims, texts, listed in zip(answers, claims, passages, decomposed, strict=True):
        if answer is None:
            judgements.append(Judgement())
            continue
        support = [[next(verdicts) for _ in texts] for _ in query_claims]
        judgements.append(Judgement(query_claims, support, decomposed=listed))
    _answer_relevance(pipeline, questions, answers, judgements)
    return judgements


def judged_scores(judgement: Judgement, question: str, answer: str | None, threshold: float,
                  weights: Sequence[float], cites: bool,
                  relevance: Sequence[int | None]) -> tuple[dict[str, float], dict]:
    """A question's judged metrics (only those it has) and its diagnostics for per_query.jsonl; `relevance`
    holds its passages' span labels (1 relevant, 0 not, None unlabelled), the triad's context part."""
    support = [[v.score for v in row] for row in judgement.support]
    relevance = [None if label is None else float(label) for label in relevance]
    supports = judged.claim_support(support)
    scores = {"faithfulness": judged.faithfulness(supports, threshold), "groundedness": judged.groundedness(supports),
              "answer_relevance": judgement.answer_relevance}
    scores["triad_overall"] = judged.triad_overall(context_relevance(relevance), scores["groundedness"],
                                                   scores["answer_relevance"], weights)
    if scores["triad_overall"] is not None:
        band = judged.triad_band(scores["triad_overall"])
        scores.update({f"triad_{name}": float(name == band) for name, _ in judged.BANDS})
    if cites:
        scores.update(judged.citation_scores([claim.citations for claim in judgement.claims], support, threshold))
    if answer is not None:
        scores["claims_per_answer"] = float(len(judgement.claims))
    diagnostics = judged.diagnose([claim.text for claim in judgement.claims], support, relevance, question,
                                  answer, threshold, RELEVANT) if answer is not None else {}
    return {name: float(value) for name, value in scores.items() if value is not None}, diagnostics


def run_summaries(pipeline: Pipeline, judgements: Sequence[Judgement]) -> dict[str, dict]:
    """What metrics.json holds for the whole run beside the per-question means: the micro averages and the
    failure rates (with `judge.labels`, `runner.corrections` adds the corrected estimates)."""
    return {**judged.micro_summaries(claim_supports(judgements), pipeline.judge.component.threshold),
            **failure_rates(judgements)}


def claim_supports(judgements: Sequence[Judgement]) -> list[list[float | None]]:
    """Each question's claims' support (`metrics.judged.claim_support`: best score over its passages)."""
    return [judged.claim_support([[v.score for v in row] for row in j.support]) for j in judgements]


def write_failed_calls(output_dir: Path, query_ids: Sequence[str], judgements: Sequence[Judgement]) -> list[Path]:
    """`judge_failures.jsonl`, one line per failed judge call with its raw output (none: no file)."""
    return write_calls(output_dir / "judge_failures.jsonl", failed_calls(query_ids, judgements), "judge")


def fail_on_judge_failures(judgements: Sequence[Judgement], max_failure_rate: float, output_dir: Path) -> None:
    rate = failure_rates(judgements)["judge_failure_rate"]["value"]
    if rate > max_failure_rate:
        raise JudgingFailed(
            f"{rate:.1%} of judge calls failed, more than judge.max_failure_rate={max_failure_rate} allows; the failed "
            f"calls and what the judge answered are in {output_dir / 'judge_failures.jsonl'}; a rerun retries only them")


def failure_rates(judgements: Sequence[Judgement]) -> dict[str, dict]:
    """Failed judge calls / calls over the whole run, in all and per task, as metrics.json holds them
    (`{"value", "n"}`, n the calls): a run's rate, not a mean over questions, so a question with many
    claims weighs as many calls as it made."""
    calls = [call for judgement in judgements for call in judgement.calls()]
    rates = {}
    tasks = ("support", *(("questions",) if any(kind == "questions" for kind, _ in calls) else ()))
    for name, made in (("judge_failure_rate", [v for _, v in calls]),
                       *((f"judge_failure_rate_{task}", [v for kind, v in calls if kind == task]) for task in tasks)):
        rates[name] = {"value": judged.failure_rate(sum(not v.ok for v in made), len(made)) or 0.0, "n": len(made)}
    return rates


def failed_calls(query_ids: Sequence[str], judgements: Sequence[Judgement]) -> list[dict]:
    """Every failed judge call of the job, with what the judge said (for judge_failures.jsonl)."""
    failed = []
    for query_id, judgement in zip(query_ids, judgements, strict=True):
        for c, row in enumerate(judgement.support):
            failed += [{"id": query_id, "task": "support", "claim": judgement.claims[c].text, "passage": p + 1,
                        "status": v.status, "raw": v.raw} for p, v in enumerate(row) if not v.ok]
        if judgement.questions is not None and not judgement.questions.ok:
            failed.append({"id": query_id, "task": "questions", "status": judgement.questions.status,
                           "raw": judgement.questions.raw})
    return failed


def _claims(pipeline: Pipeline, questions: Sequence[str],
            answers: Sequence[str | None]) -> tuple[list[list[Claim]], list[Listed | None]]:
    """Sentences of each answer, or with `judge.decompose` the judge's atomic statements (cached; an
    answer whose decomposition fails falls back to its sentences, and the fallback is logged); and each answer's
    decomposition (None: not asked)."""
    sentences = [split_claims(answer) for answer in answers]
    decomposed: list[Listed | None] = [None] * len(answers)
    judge = pipeline.judge.component
    if "statements" not in judge_lists(pipeline):
        return sentences, decomposed
    wanted = [i for i, answer in enumerate(answers) if answer]
    keys = [claims_key(pipeline, questions[i], answers[i]) for i in wanted]

    def compute(positions: list[int]) -> list[dict[str, np.ndarray]]:
        asked = [wanted[position] for position in positions]
        return [pack_listed(_listed(judge.decompose(questions[i], strip_citations(answers[i]))), "statements")
                for i in asked]

    entries = pipeline.cache.get_or_compute_each("claims", keys, compute, storable=lambda e: bool(e["ok"]))
    fallback = 0
    for i, entry in zip(wanted, entries, strict=True):
        decomposed[i] = unpack_listed(entry, "statements")
        if decomposed[i].items:
            sentences[i] = claims_from_statements(decomposed[i].items, answers[i])
        else:
            fallback += 1
    if fallback:
        log.warning("judge.decompose failed for %d of %d answers; their sentences are the claims", fallback, len(wanted))
    return sentences, decomposed


def judge_lists(pipeline: Pipeline) -> dict[str, Callable[[str, str], str]]:
    """The lists the judge writes for an answer beside its verdicts, by the field its cache entry holds them in, each
    with the key of an answer's (from its question and text): its claims ("statements", with `judge.decompose`),
    and the questions it answers ("questions": a judge with `questions_for` and the metrics' answer embedder)."""
    judge = pipeline.judge.component
    lists = {}
    if getattr(judge, "decompose_claims", False):
        lists["statements"] = partial(claims_key, pipeline)
    if hasattr(judge, "questions_for") and pipeline.evaluator.answer_embedder is not None:
        lists["questions"] = lambda question, answer: questions_key(pipeline, answer)
    return lists


def _listed(made: Listed | Sequence[str] | None) -> Listed:
    """A judge's list with its cost (a judge of your own may return the bare list: its calls count 0)."""
    return made if isinstance(made, Listed) else Listed(list(made) if made is not None else None)


def pack_listed(listed: Listed, name: str) -> dict[str, np.ndarray]:
    return {name: np.array(json.dumps(listed.items)), "ok": np.array(bool(listed.items)),
            "spent": np.array([listed.prompt_tokens, listed.completion_tokens, listed.latency_ms])}


def unpack_listed(entry: dict[str, np.ndarray], name: str) -> Listed:
    prompt, completion, milliseconds = entry["spent"].tolist() if "spent" in entry else (0, 0, 0.0)  # kept untimed
    return Listed(json.loads(str(entry[name])), int(prompt), int(completion), float(milliseconds))


def claims_key(pipeline: Pipeline, question: str, answer: str) -> str:
    """The key the judge's decomposition of an answer into claims is cached under (`judge.decompose`)."""
    return fingerprint("claims", pipeline.judge.signature, question, answer)


def held_claims(pipeline: Pipeline, question: str, answer: str | None) -> list[Claim] | None:
    """The claims the judge will check in `answer`, without asking it: its sentences, or the decomposition the
    stage cache holds (one that failed: the sentences, as `_claims` falls back); None for a decomposition still to
    be made."""
    if "statements" not in judge_lists(pipeline) or not answer:
        return split_claims(answer)
    entry = pipeline.cache.peek("claims", claims_key(pipeline, question, answer))
    if entry is None:
        return None
    statements = json.loads(str(entry["statements"]))
    return claims_from_statements(statements, answer) if statements else split_claims(answer)


def _verdicts(pipeline: Pipeline, pairs: Sequence[Pair]) -> list[Verdict]:
    return cached_verdicts(pipeline.judge, pipeline.cache, pairs)


def _answer_relevance(pipeline: Pipeline, questions: Sequence[str], answers: Sequence[str | None],
                      judgements: list[Judgement]) -> None:
    """cos(question, answer) with the metrics' answer embedder, clipped at 0; with a judge that writes
    questions (`questions_for`, the llm judge) the RAGAS form: the mean cosine of the original question
    and the questions generated from the answer."""
    embedder = pipeline.evaluator.answer_embedder
    answered = [i for i, answer in enumerate(answers) if answer]
    if embedder is None or not answered:
        return
    asked = {i: [strip_citations(answers[i])] for i in answered}
    generated: dict[int, Listed] = {}
    if "questions" in judge_lists(pipeline):
        generated = dict(zip(answered, _generated_questions(pipeline, [answers[i] for i in answered]), strict=True))
        asked = {i: listed.items for i, listed in generated.items() if listed.items}
        for i in set(generated) - set(asked):  # a failed call, counted in judge_failure_rate like any other
            judgements[i].questions = Verdict(None, "parse_failed", "no list of questions in the judge's output "
                                              "(its raw output is in the job's log)", *_spent(generated[i]))
    texts = list(dict.fromkeys([questions[i] for i in asked] + [text for found in asked.values() for text in found]))
    row = {text: position for position, text in enumerate(texts)}
    vectors = embedder.encode(texts, role="passage")
    for i, found in asked.items():
        cosines = [cosine_similarity(vectors[row[questions[i]]], vectors[[row[text]]]) for text in found]
        judgements[i].answer_relevance = max(0.0, float(np.mean(cosines)))
        if i in generated:  # the judge wrote these questions: an ok call, kept with its output
            judgements[i].questions = Verdict(judgements[i].answer_relevance, "ok", json.dumps(found),
                                              *_spent(generated[i]))


def _spent(listed: Listed) -> tuple[int, int, float]:
    return listed.prompt_tokens, listed.completion_tokens, listed.latency_ms


def questions_key(pipeline: Pipeline, answer: str) -> str:
    """The key the questions the judge writes from an answer are cached under (answer relevance, RAGAS form)."""
    return fingerprint("questions", pipeline.judge.signature, answer)


def _generated_questions(pipeline: Pipeline, answers: Sequence[str]) -> list[Listed]:
    keys = [questions_key(pipeline, answer) for answer in answers]

    def compute(positions: list[int]) -> list[dict[str, np.ndarray]]:
        return [pack_listed(_listed(pipeline.judge.component.questions_for(strip_citations(answers[i]))), "questions")
                for i in positions]

    entries = pipeline.cache.get_or_compute_each("claims", keys, compute, storable=lambda e: bool(e["ok"]))
    return [unpack_listed(entry, "questions") for entry in entries]
