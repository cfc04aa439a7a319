"""The `llm` judge: a YES/NO support verdict, or an A/B/C relevance choice, from any ragsweep generator.

The same judge runs on the local llama.cpp model or on any OpenAI-compatible endpoint, because it
only talks to a built `Generator`. Output is constrained to a small JSON schema where the backend
allows it (llama.cpp turns `json_object` + schema into a grammar, transformers masks tokens through llguidance; a
model that gives no JSON is refused when built), and parsed tolerantly anyway
(`parsing`), since endpoints differ in what they honour. An unparseable answer is re-asked with a
correction (`generation.reask`); what is still unparseable is a `parse_failed` verdict, a failed call an
`error` one, and `Verdict.raw` keeps every call's output.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources

from tqdm.auto import tqdm

from ragsweep.generation.base import JSON, Request, check_gives
from ragsweep.generation.prompts import read_template
from ragsweep.generation.reask import Reply, ask_until_parsed
from ragsweep.judging.base import Listed, Pair, Verdict, check_threshold
from ragsweep.judging.parsing import ParsedVerdict, parse_choice, parse_list, parse_yes_no

log = logging.getLogger(__name__)

RELEVANCE_CHOICES = {"A": 1.0, "B": 0.5, "C": 0.0}  # answers it / partly relevant / not relevant
PROMPT_FIELDS = {"support": ("passage", "claim"), "relevance": ("question", "passage"),
                 "decompose": ("question", "answer"), "questions": ("answer", "n")}
SCHEMAS = {
    "support": {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["YES", "NO"]}},
                "required": ["verdict"]},
    "relevance": {"type": "object", "properties": {"answer": {"type": "string", "enum": list(RELEVANCE_CHOICES)}},
                  "required": ["answer"]},
    "decompose": {"type": "object", "properties": {"claims": {"type": "array", "items": {"type": "string"},
                                                              "minItems": 1, "maxItems": 12}}, "required": ["claims"]},
    "questions": {"type": "object", "properties": {"questions": {"type": "array", "items": {"type": "string"},
                                                                 "minItems": 1}}, "required": ["questions"]},
}
REASK = {"support": 'Reply with JSON only: {"verdict": "YES"} or {"verdict": "NO"}.',
         "relevance": 'Reply with JSON only: {"answer": "A"}, {"answer": "B"} or {"answer": "C"}.',
         "decompose": 'Reply with JSON only: {"claims": ["...", "..."]}.',
         "questions": 'Reply with JSON only: {"questions": ["...", "..."]}.'}


@dataclass(frozen=True)
class JudgePrompt:
    name: str
    system: str
    user: str

    def render(self, **fields: object) -> tuple[dict[str, str], ...]:
        user = self.user
        for key, value in fields.items():
            user = user.replace("{" + key + "}", str(value))
        return ({"role": "system", "content": self.system}, {"role": "user", "content": user})


class LLMJudge:
    """Support and relevance verdicts from a generator's constrained JSON answer.

    Args:
        generator: A built ragsweep generator (Hydra builds the nested `_target_`), e.g. the local
            `LlamaCppGenerator` or an `OpenAIGenerator` endpoint; greedy decoding keeps verdicts repeatable.
        threshold: Score at which a claim counts as supported (verdicts are 0 or 1, so 0.5 splits them).
        retries: Re-asks (with the bad output and a correction) after an unparseable answer.
        decompose: Whether the runner splits answers into atomic claims with `decompose()` rather than into
            sentences; kept as `decompose_claims` (the method has the name).
        constrained: Send `response_format` (JSON object + schema); false for endpoints that reject it.
        prompts: Task -> shipped prompt name or path of a YAML with `system` and `user`, for any of the
            tasks support, relevance, decompose, questions (the rest keep the shipped ones).
        list_max_tokens: Most tokens for a claims or questions list (verdicts use the generator's max_tokens).
        batch_size: Pairs sent to the generator at once (an endpoint serves them `concurrency` at a time).
    """

    def __init__(self, generator, threshold: float = 0.5, retries: int = 1, decompose: bool = False,
                 constrained: bool = True, prompts: Mapping[str, str] | None = None, list_max_tokens: int = 256,
                 batch_size: int = 16) -> None:
        if isinstance(generator, Mapping) and "_target_" in generator:
            from hydra.utils import instantiate

            generator = instantiate(generator)
        if not callable(getattr(generator, "generate", None)) or not getattr(generator, "enabled", True):
            raise ValueError(f"judge.generator must be an LLM generator (e.g. _target_: "
                             f"ragsweep.generation.llama_cpp.LlamaCppGenerator), got {type(generator).__name__}")
        check_threshold(threshold)
        for key, value, low in (("retries", retries, 0), ("list_max_tokens", list_max_tokens, 1),
                                ("batch_size", batch_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"judge.{key} must be an integer >= {low}, got {value!r}")
        unknown = sorted(set(prompts or {}) - set(PROMPT_FIELDS))
        if unknown:
            raise ValueError(f"judge.prompts has no task {unknown[0]!r}; the tasks are {', '.join(PROMPT_FIELDS)}")
        self.generator, self.threshold, self.retries = generator, float(threshold), retries
        self.decompose_claims, self.constrained = bool(decompose), bool(constrained)
        if self.constrained:  # refused before any call: a model that writes free text would fail every verdict
            check_gives(generator, JSON, "judge.constrained=true", instead=", or set judge.constrained=false")
        self.list_max_tokens, self.batch_size = list_max_tokens, batch_size
        self.prompts = {task: load_judge_prompt(task, (prompts or {}).get(task, task)) for task in PROMPT_FIELDS}

    def preflight(self) -> None:
        """Load the generator's model (or reach its endpoint) before any work."""
        if callable(getattr(self.generator, "preflight", None)):
            self.generator.preflight()

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        verdicts: list[Verdict] = []
        with tqdm(total=len(pairs), desc="llm judge", unit="pair", leave=False, disable=len(pairs) < 32) as bar:
            for start in range(0, len(pairs), self.batch_size):
                batch = pairs[start:start + self.batch_size]
                asks = [(pair.task, self._fields(pair)) for pair in batch]
                verdicts += [_verdict(reply) for reply in self._ask(self.generator, asks)]
                bar.update(len(batch))
        return verdicts

    def decompose(self, question: str, answer: str) -> Listed:
        """The answer's atomic claims, or None when the model gives no usable list (the runner then
        falls back to sentences)."""
        return self._list("decompose", {"question": question, "answer": answer})

    def questions_for(self, answer: str, n: int = 3) -> Listed:
        """Up to `n` questions the answer responds to (RAGAS answer relevance), or None."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"questions_for needs n >= 1, got {n!r}")
        listed = self._list("questions", {"answer": answer, "n": n})
        return replace(listed, items=listed.items[:n] if listed.items else None)

    def _list(self, task: str, fields: dict[str, object]) -> Listed:
        longer = copy.copy(self.generator)  # same model or endpoint, room for a list
        if hasattr(longer, "max_tokens"):
            longer.max_tokens = max(self.list_max_tokens, longer.max_tokens)
        reply = self._ask(longer, [(task, fields)])[0]
        raw, items, error = reply.raw, reply.parsed, reply.error
        items = list(dict.fromkeys(items)) if items else None  # small models repeat an item until the limit
        if items is None:
            log.warning("llm judge: no %s list (%s); raw output: %r", task, error or "unparseable", raw[-300:])
        return Listed(items, reply.prompt_tokens, reply.completion_tokens, reply.milliseconds)

    def _ask(self, generator, asks: list[tuple[str, dict]]) -> list[Reply]:
        """Send every ask, re-ask the unparseable ones; per ask its `Reply` (all raw outputs, the parse, the error,
        what its calls cost)."""
        return ask_until_parsed(
            generator, [self.prompts[task].render(**fields) for task, fields in asks], self.retries,
            request=lambda i, messages: self._request(asks[i][0], messages),
            read=lambda i, text: _read(asks[i][0], text), usable=_parsed,
            correction=lambda i: REASK[asks[i][0]])

    def _request(self, task: str, messages: tuple[dict[str, str], ...]) -> Request:
        question = messages[-1]["content"]
        response_format = {"type": "json_object", "schema": SCHEMAS[task]} if self.constrained else None
        return Request(question, (), messages, response_format=response_format)

    @staticmethod
    def _fields(pair: Pair) -> dict[str, str]:
        if pair.task == "relevance":
            return {"question": pair.claim, "passage": pair.passage}
        return {"claim": pair.claim, "passage": pair.passage}


def _read(task: str, text: str) -> object:
    if task == "support":
        return parse_yes_no(text)
    if task == "relevance":
        return parse_choice(text, RELEVANCE_CHOICES)
    return parse_list(text)


def _parsed(result: object) -> bool:
    return result.ok if isinstance(result, ParsedVerdict) else result is not None


def _verdict(reply: Reply) -> Verdict:
    spent = (reply.prompt_tokens, reply.completion_tokens, reply.milliseconds)
    if reply.error is not None:
        return Verdict(None, "error", reply.raw, *spent)
    parsed = reply.parsed
    if isinstance(parsed, ParsedVerdict) and parsed.ok:
        return Verdict(parsed.value, "ok", reply.raw, *spent)
    why = f"\n[{parsed.reason}]" if isinstance(parsed, ParsedVerdict) else ""
    return Verdict(None, "parse_failed", reply.raw + why, *spent)


def load_judge_prompt(task: str, name: str) -> JudgePrompt:
    """The shipped prompt `name` (support, relevance, decompose, questions) or the YAML file at path `name`."""
    template = read_template(resources.files(__package__).joinpath("prompts"), name, f"judge.prompts.{task}",
                             PROMPT_FIELDS[task])
    return JudgePrompt(name, template["system"].strip(), template["user"])
