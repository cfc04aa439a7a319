"""A job's model calls, each with what the stage cache holds for it (`planned_calls`): its rewrites, answers, the
judge's lists and verdicts and the relevance judge's, the calls of a sample of its questions made first; a judge's
calls on an answer still to be made stand per claim until the known answers' claims size them (`per_answer`)."""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ragsweep.data.loading import load_once
from ragsweep.generation.base import Request
from ragsweep.judging.base import Pair
from ragsweep.query.base import Rewrite
from ragsweep.runner.build import Built, Pipeline
from ragsweep.runner.context import passed_on
from ragsweep.runner.costing import priced_as
from ragsweep.runner.estimating.calls import Made, Planned
from ragsweep.runner.estimating.endpoints import EndpointCalls, endpoint_calls, remote_search
from ragsweep.runner.estimating.sampling import ask, failed_in_sample, spread
from ragsweep.runner.generating import answer_requests, unpack_generation
from ragsweep.runner.judge_stage import held_claims, judge_lists, unpack_listed
from ragsweep.runner.ranking import rank_questions
from ragsweep.runner.relevance import relevance_pairs
from ragsweep.runner.rewriting import rewrite_keys, rewritten, unpack_rewrite
from ragsweep.runner.scoring import latency_samples
from ragsweep.runner.verdicts import unpack_verdict, verdict_keys
from ragsweep.tokenizer import Tokenizer

CLAIMS_UNKNOWN = 3  # claims an answer is taken to have when no judged answer is known to count them
_TOKENIZER = Tokenizer()


@dataclass
class JobCalls:
    """A job's model calls (`planned`), its search and rerank milliseconds (what its cost counts of retrieval), its
    questions, and per judge the claims of the answers whose claims are known (count and characters of each)."""

    planned: list[Planned]
    samples: dict[str, np.ndarray]
    questions: int
    claims: dict[str, list[tuple[int, int]]]
    endpoints: EndpointCalls | None = None  # its embedder's and reranker's calls, when either is an endpoint


def planned_calls(pipeline: Pipeline, sample: int = 0) -> JobCalls:
    """The job's rewrites, answers, judge's and relevance judge's calls, each with what the cache holds for it; the
    calls of `sample` questions spread over the dataset are made first (and cached, as the job's run would)."""
    dataset = load_once(pipeline.dataset)
    questions = [query.text for query in dataset.queries]
    asked_now = spread(len(questions), sample)
    planned: list[Planned] = []
    guessed: set[int] = set()  # questions searched as asked, whose prompts and verdicts are sized, not known

    def held_rewrites(asked: Sequence[str]) -> list[Rewrite] | None:
        """The rewrites the cache holds; a question whose rewrite is missing is searched as asked."""
        if "query" not in pipeline.plan.targets:
            return None
        failed_in_sample(pipeline, rewrites=[made.error is not None for made in
                                             rewritten(pipeline, [asked[i] for i in asked_now]) or ()])
        rewriting = _rewrites(pipeline, asked)
        planned.extend(rewriting)
        guessed.update(position for position, call in enumerate(rewriting) if call.held is None)
        return [call.held if call.held is not None else Rewrite((question,))
                for call, question in zip(rewriting, asked, strict=True)]

    endpoints = endpoint_calls(pipeline, dataset, questions)
    if remote_search(pipeline) and not pipeline.plan.generates and not pipeline.plan.judges_relevance \
            and "query" not in pipeline.plan.targets:
        return JobCalls([], {}, len(questions), {}, endpoints)  # priced without embedding: nothing needs a ranking
    ranked = rank_questions(pipeline, dataset, questions, [(0, len(questions))], held_rewrites, {})
    context = passed_on(pipeline, questions, ranked.chunks, ranked.hits, dataset.documents)
    if asked_now:
        ask(pipeline, [questions[i] for i in asked_now], context.chunks, [context.hits[i] for i in asked_now])
    claims: dict[str, list[tuple[int, int]]] = {}
    if pipeline.plan.generates:
        requests, keys = answer_requests(pipeline, questions, context.chunks, context.hits)
        answers = _answers(pipeline, requests, keys, guessed)
        planned += answers
        if pipeline.plan.judges:
            support, sizes = _support(pipeline, questions, [request.passages for request in requests], answers)
            planned += support
            claims[_model(pipeline.judge, "judge")[0]] = sizes
    if pipeline.plan.judges_relevance:
        planned += _relevance(pipeline, *relevance_pairs(pipeline, questions, context.chunks, context.hits), guessed)
    return JobCalls(planned, latency_samples(ranked.search_ms, ranked.rerank_ms), len(questions), claims, endpoints)


def _rewrites(pipeline: Pipeline, questions: Sequence[str]) -> list[Planned]:
    group, max_tokens, tokens = _model(pipeline.query, "query")
    return [_planned("query", group, key, question, _held_by(pipeline, "rewrites", key, unpack_rewrite), max_tokens,
                     tokens, position)
            for position, (question, key) in enumerate(zip(questions, rewrite_keys(pipeline, questions), strict=True))]


def _answers(pipeline: Pipeline, requests: Sequence[Request], keys: Sequence[str],
             guessed: Container[int]) -> list[Planned]:
    """The answers' calls; one of a question searched as asked is to be made, even if the cache holds its prompt."""
    group, max_tokens, tokens = _model(pipeline.generator, "generation")
    return [_planned("generation", group, key, "".join(message["content"] for message in request.messages),
                     None if position in guessed else _held_by(pipeline, "answers", key, unpack_generation),
                     max_tokens, tokens, position)
            for position, (request, key) in enumerate(zip(requests, keys, strict=True))]


def _relevance(pipeline: Pipeline, pairs: Sequence[Pair], counts: Sequence[int],
               guessed: Container[int]) -> list[Planned]:
    """The relevance judge's calls, one a (question, passage) pair, each marked with its question's position."""
    owners = [position for position, count in enumerate(counts) for _ in range(count)]
    return _verdict_calls(pipeline, pipeline.relevance_judge, "relevance", pairs, owners, guessed)


def _support(pipeline: Pipeline, questions: Sequence[str], passages: Sequence[Sequence[str]],
             answers: Sequence[Planned]) -> tuple[list[Planned], list[tuple[int, int]]]:
    """The answer judge's calls: its lists of each answer (`_lists`), one call a (claim, passage) pair of an answer
    whose claims are known (a held answer's sentences, or its decomposition held), else one standing for an answer's
    calls per claim (`per_claim`); and each known answer's claims (their count and characters), which size the
    others'."""
    judge = pipeline.judge
    group, max_tokens, tokens = _model(judge, "judge")
    calls, pairs, owners, sizes = _lists(pipeline, questions, answers), [], [], []
    for position, (question, texts, asked) in enumerate(zip(questions, passages, answers, strict=True)):
        answer = asked.held  # never a failed one: the cache keeps only answers made
        claims = held_claims(pipeline, question, answer.answer) if answer is not None else None
        if claims is None:  # keyed by the answer's key: jobs asking the same prompt share these calls
            calls.append(Planned("judge", group, f"{group} {asked.key}", sum(map(len, texts)), 0, None, max_tokens,
                                 tokens, position, len(texts), per_claim=True))
            continue
        sizes.append((len(claims), sum(len(claim.text) for claim in claims)))
        pairs += [Pair(claim.text, text) for claim in claims for text in texts]
        owners += [position] * (len(claims) * len(texts))
    return [*calls, *_verdict_calls(pipeline, judge, "judge", pairs, owners)], sizes


def _lists(pipeline: Pipeline, questions: Sequence[str], answers: Sequence[Planned]) -> list[Planned]:
    """The judge's list calls (`judge_stage.judge_lists`), one a list and answer, each a prediction group of its
    own, sized by the question and the answer (an answer to make: the held answers' mean characters)."""
    lists = judge_lists(pipeline)
    if not lists:
        return []
    group, max_tokens, tokens = _model(pipeline.judge, "judge")
    max_tokens = max(getattr(pipeline.judge.component, "list_max_tokens", 0), max_tokens or 0)  # as the judge asks
    known = [len(asked.held.answer) for asked in answers if asked.held is not None]
    guessed_length = round(sum(known) / len(known)) if known else 0
    calls = []
    for position, (question, asked) in enumerate(zip(questions, answers, strict=True)):
        answer = asked.held.answer if asked.held is not None else None
        if answer == "":
            continue  # the judge asks nothing about an empty answer
        for name, key_of in lists.items():
            if answer is None:
                characters = len(question) + guessed_length
                calls.append(Planned("judge", f"{group} {name}", f"{group} {name} {asked.key}", characters,
                                     characters // 4 if tokens else 0, None, max_tokens, tokens, position))
                continue
            key = key_of(question, answer)
            entry = pipeline.cache.peek("claims", key)
            calls.append(_planned("judge", f"{group} {name}", key, question + answer,
                                  unpack_listed(entry, name) if entry is not None else None, max_tokens, tokens,
                                  position))
    return calls


def claim_size(known: Sequence[tuple[int, int]]) -> tuple[float | None, float]:
    """The known answers' mean claims an answer, and a claim's mean characters (None, 0: no answer known)."""
    if not known:
        return None, 0.0
    claims = sum(count for count, _ in known)
    return claims / len(known), sum(chars for _, chars in known) / max(claims, 1)


def per_answer(call: Planned, mean_claims: float | None, claim_characters: float) -> Planned:
    """A `per_claim` call made whole: the answer taken to have the known answers' mean claims (`CLAIMS_UNKNOWN`
    with none known), each of the mean claim's characters, each judged against every passage."""
    claims = float(CLAIMS_UNKNOWN) if mean_claims is None else mean_claims
    characters = round(claims * (call.characters + call.calls * claim_characters))
    return replace(call, characters=characters, cl100k_tokens=characters // 4 if call.tokens else 0,
                   calls=max(round(claims * call.calls), 0), per_claim=False)


def _verdict_calls(pipeline: Pipeline, judge: Built, stage: str, pairs: Sequence[Pair], owners: Sequence[int],
                   guessed: Container[int] = ()) -> list[Planned]:
    """The judge's calls on the pairs, each of its owner's question; one of a question in `guessed` is to be made."""
    group, max_tokens, tokens = _model(judge, stage)
    cached = getattr(judge.component, "cached", True)
    return [_planned(stage, group, key, pair.claim + pair.passage,
                     _held_by(pipeline, "verdicts", key, unpack_verdict) if cached and owner not in guessed else None,
                     max_tokens, tokens, owner)
            for pair, key, owner in zip(pairs, verdict_keys(judge, pairs), owners, strict=True)]


def _model(built: Built, stage: str) -> tuple[str, int | None, bool]:
    """A stage's prediction group (its settings), the most tokens its generator writes (a generator's own, or
    that of the generator a rewriter or judge asks), and whether its calls count tokens (it names a model)."""
    asked = getattr(built.component, "generator", built.component)
    return f"{stage} {built.signature}", getattr(asked, "max_tokens", None), priced_as(built.component)[0] is not None


def _held_by(pipeline: Pipeline, stage: str, key: str, unpack: Callable[[dict], Made]) -> Made | None:
    entry = pipeline.cache.peek(stage, key)
    return unpack(entry) if entry is not None else None


def _planned(stage: str, group: str, key: str, text: str, held: Made | None, max_tokens: int | None,
             tokens: bool, question: int) -> Planned:
    """The call, keeping its prompt's size, not its text (a sweep's prompts would fill memory)."""
    counted = _TOKENIZER.count(text) if held is None and tokens else 0
    return Planned(stage, group, key, len(text), counted, held, max_tokens, tokens, question)
