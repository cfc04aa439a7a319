"""A drafted question: the prompt that asks for it, the JSON it must come back as, and its tolerant parse."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from ragsweep.chunking.sentence import sentence_bounds
from ragsweep.generation.prompts import read_template
from ragsweep.judging.parsing import parse_object

TYPES = {  # the question types a set mixes, with the hint the prompt gives for each
    "factual": "it asks for a fact the text states",
    "reasoning": "answering it takes a step of reasoning over what the text says",
    "summary": "it asks for the gist of several sentences",
    "comparative": "it compares two things the text mentions",
}
DIFFICULTIES = ("easy", "medium", "hard")
MAX_EXCERPTS = 3
PROMPT_FIELDS = ("passage",)  # required; {type}, {type_hint} and {difficulty} are filled in where present
QUESTION_CHARS = 250  # longest answer the schema allows: a looping model cannot run past max_tokens
# A question, not a restated sentence: it opens with a question word and ends at its only question mark.
# Not "What is": SmolLM2-135M asked "What is the answer to this question?" for most passages.
QUESTION_PATTERN = r'^(What did|What was|What were|What does|What do|What are|What kind|What year|Which|Who|Whom|Whose|When|Where|Why|How|In what|In which) [^"\\?\n]{5,200}\?$'
SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "pattern": QUESTION_PATTERN},
        "answer": {"type": "string", "minLength": 1, "maxLength": QUESTION_CHARS},
        "excerpts": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_EXCERPTS},
        "type": {"type": "string", "enum": list(TYPES)},
        "difficulty": {"type": "string", "enum": list(DIFFICULTIES)},
    },
    "required": ["question", "answer", "excerpts", "type", "difficulty"],
}


def schema_for(passage: str, constrain_excerpts: bool) -> dict:
    """The JSON schema of a draft; with `constrain_excerpts`, each excerpt must be one of the passage's
    sentences, so a backend that turns schemas into grammars (llama.cpp) can only copy them verbatim.
    Sentences with a double quote or a backslash are left out: llama-cpp-python 0.3.36 escapes them
    wrongly in an enum, and llama.cpp then crashes on the grammar (segmentation fault)."""
    sentences = [passage[a:b].strip() for a, b in sentence_bounds(passage)]
    usable = list(dict.fromkeys(s for s in sentences if s and '"' not in s and "\\" not in s))
    if not constrain_excerpts or not usable:
        return SCHEMA
    excerpts = {**SCHEMA["properties"]["excerpts"], "items": {"type": "string", "enum": usable}}
    return {**SCHEMA, "properties": {**SCHEMA["properties"], "excerpts": excerpts}}


REASK = ('Reply with JSON only: {"question": "...", "answer": "...", "excerpts": ["..."], '
         '"type": "...", "difficulty": "..."}.')


@dataclass(frozen=True)
class Draft:
    question: str
    excerpts: tuple[str, ...]
    answer: str
    type: str
    difficulty: str


@dataclass(frozen=True)
class DraftPrompt:
    name: str
    system: str
    user: str

    def render(self, passage: str, question_type: str, difficulty: str) -> tuple[dict[str, str], ...]:
        fields = {"passage": passage, "type": question_type, "type_hint": TYPES[question_type], "difficulty": difficulty}
        user = self.user
        for key, value in fields.items():
            user = user.replace("{" + key + "}", value)
        return ({"role": "system", "content": self.system}, {"role": "user", "content": user})


def load_draft_prompt(name: str = "draft") -> DraftPrompt:
    """The shipped prompt `draft`, or a YAML file with `system` and `user` holding every field."""
    template = read_template(resources.files(__package__).joinpath("prompts"), name, "prompt", PROMPT_FIELDS)
    return DraftPrompt(name, template["system"].strip(), template["user"])


def parse_draft(raw: str, wanted_type: str, wanted_difficulty: str) -> tuple[Draft | None, str]:
    """The draft in a model's output, or None and why not. Read tolerantly (fences, prose, a missing
    brace, one excerpt as a string, other capitals in type and difficulty); a type or difficulty
    outside the allowed values is taken as the one asked for, and said so in the reason."""
    found, reason = parse_object(raw)
    if found is None:
        return None, reason
    fields = {str(key).lower(): value for key, value in found.items()}
    question, answer = _text(fields.get("question")), _text(fields.get("answer"))
    excerpts = fields.get("excerpts", fields.get("excerpt"))
    excerpts = [excerpts] if isinstance(excerpts, str) else excerpts
    if not question:
        return None, "no question"
    if not isinstance(excerpts, list) or not [e for e in excerpts if _text(e)]:
        return None, "no excerpts"
    if not answer:
        return None, "no answer"
    notes = []
    kinds = {"type": (wanted_type, TYPES), "difficulty": (wanted_difficulty, DIFFICULTIES)}
    chosen = {}
    for key, (wanted, allowed) in kinds.items():
        value = _text(fields.get(key)).lower()
        chosen[key] = value if value in allowed else wanted
        if value not in allowed:
            notes.append(f"{key} {value!r} read as {wanted!r}")
    texts = tuple(dict.fromkeys(str(e).strip() for e in excerpts if _text(e)))[:MAX_EXCERPTS]  # as copied: location reads it
    return Draft(question, texts, answer, chosen["type"], chosen["difficulty"]), "; ".join(["json", *notes])


def check_mix(mix: Mapping[str, float], allowed, key: str) -> dict[str, float]:
    """A requested mix (value -> weight), normalised to shares; errors name the key and the fix."""
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(f"{key} must map {', '.join(allowed)} to weights, e.g. {key}.factual=1")
    unknown = sorted(set(mix) - set(allowed))
    if unknown:
        raise ValueError(f"{key}.{unknown[0]}: not one of {', '.join(allowed)}")
    if any(isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0 for w in mix.values()) \
            or not sum(mix.values()) > 0:
        raise ValueError(f"{key} weights must be numbers >= 0 with a positive sum, got {dict(mix)}")
    total = float(sum(mix.values()))
    return {value: float(mix.get(value, 0)) / total for value in allowed if mix.get(value, 0) > 0}


def next_wanted(shares: Mapping[str, float], achieved: Counter) -> str:
    """The value furthest below its share if one more question were kept (ties: the first listed), so
    the questions kept approach the requested mix whatever the filters drop."""
    total = sum(achieved.values()) + 1
    return max(shares, key=lambda value: shares[value] * total - achieved[value])


def _text(value: object) -> str:
    return " ".join(str(value).split()) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
