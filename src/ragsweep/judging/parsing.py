"""Tolerant parsing of an LLM judge's raw text into a verdict value, as pure functions.

Small and API models alike wrap their verdict in prose, code fences or half-finished JSON; RAGAS
turns such output into NaN and FlashRAG reads it as 0. Here every output either parses to a value
in [0, 1] or to `None` with the reason, which the judge records as a `parse_failed` verdict. Two
rules keep a parse honest rather than lucky: an output that says both yes and no (or names two
letters) fails instead of picking one, and JSON cut off inside the verdict fails instead of guessing
how it ended (`{"verdict": "YE` is not YES; `{"verdict": "YES"` missing its brace is).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# Keys a judge's JSON verdict may come under, most specific first; a one-key object is read whatever its key.
VERDICT_KEYS = ("verdict", "answer", "supported", "support", "label", "result", "choice", "relevance",
                "score", "probability")
LIST_KEYS = ("claims", "statements", "questions", "items")

# Negative phrases are counted (and blanked) before positive ones, so "not supported" is never "supported".
_NEGATIVE = re.compile(r"\b(?:not[\s_-]+supported|unsupported|not[\s_-]+support(?:s|ed)?|"
                       r"(?:does|do|did)\s*(?:not|n't)\s+support|no|false)\b")
_POSITIVE = re.compile(r"\b(?:yes|true|supported|supports)\b")
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(%?)\s*[.!]?\s*$")
_FENCE = re.compile(r"```(?:[a-zA-Z]+[ \t]*\n)?\s*(.*?)(?:```|$)", re.DOTALL)
_KEY_VALUE = re.compile(r"""["']?(?:%s)["']?\s*[:=]\s*["']?([^"',}\n]+)""" % "|".join(VERDICT_KEYS), re.IGNORECASE)
# Closings tried on JSON that stops early; those starting with a quote close a string cut mid-way.
_CLOSINGS = ("", "}", "]", "]}", '"}', '"]', '"]}')


@dataclass(frozen=True)
class ParsedVerdict:
    """A parsed verdict: `value` in [0, 1], or None with `reason` saying why not (on success, how it was read)."""

    value: float | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.value is not None


def parse_yes_no(raw: str) -> ParsedVerdict:
    """A support verdict: YES/true/supported -> 1.0, NO/false/not supported -> 0.0, a number in [0, 1]
    (or a percentage) as a probability; from JSON objects (fenced, inside prose, or missing their
    closing brace) or from plain text."""
    return _parse(raw, _yes_no_value)


def parse_choice(raw: str, choices: Mapping[str, float]) -> ParsedVerdict:
    """A multiple-choice verdict: the letter chosen (`B`, `(b)`, `Answer: C`, `{"answer": "A"}`) mapped
    through `choices` (e.g. {"A": 1.0, "B": 0.5, "C": 0.0}); a bare number in [0, 1] is also read."""
    letters = {letter.upper(): float(score) for letter, score in choices.items()}
    return _parse(raw, lambda value: _choice_value(value, letters))


def parse_list(raw: str, keys: tuple[str, ...] = LIST_KEYS) -> list[str] | None:
    """The non-empty strings of `{"claims": [...]}` (any key of `keys`, or a one-key object) or of a bare
    JSON list, fenced or inside prose; an item cut off mid-way is dropped; None when there are none."""
    found = _json_values(_unfence(raw or ""))
    if not found.values:
        return None
    value = found.values[0]
    if isinstance(value, dict):
        key = next((k for k in keys if k in value), next(iter(value)) if len(value) == 1 else None)
        value = value.get(key) if key is not None else None
    if not isinstance(value, list):
        return None
    if found.cut and len(found.values) == 1:
        value = value[:-1]
    items = [str(item).strip() for item in value if isinstance(item, (str, int, float)) and str(item).strip()]
    return items or None


def parse_object(raw: str) -> tuple[dict | None, str]:
    """The first JSON object in `raw` (fenced, inside prose, or missing its closing braces) and how it
    was read; None with the reason when there is none, or when the output stops inside a string (a
    value cut mid-way is not trusted, as for verdicts)."""
    found = _json_values(_unfence(raw or "").strip())
    objects = [value for value in found.values if isinstance(value, dict)]
    if not objects:
        return None, "truncated JSON (cut off inside a value)" if found.truncated else "no JSON object"
    if found.cut is not None and objects[0] is found.values[-1]:
        return None, f"truncated JSON (the {found.cut!r} value is cut off)"
    return objects[0], "json"


@dataclass
class _Found:
    values: list = field(default_factory=list)  # JSON objects and lists, in order
    cut: str | None = None       # the key (or "[]" for a list) whose string value the last value's closing cut
    truncated: bool = False      # JSON starts, but stops inside a string no closing can finish


def _parse(raw: str, read: Callable[[object], ParsedVerdict]) -> ParsedVerdict:
    text = _unfence(raw or "").strip()
    if not text:
        return ParsedVerdict(None, "empty output")
    if "{" not in text:
        return read(text)
    found = _json_values(text)
    objects = [value for value in found.values if isinstance(value, dict)]
    if not objects:
        if found.truncated:
            return ParsedVerdict(None, "truncated JSON (cut off inside a value)")
        match = _KEY_VALUE.search(text)  # not JSON, e.g. {'verdict': 'yes'}
        return read(match.group(1).strip() if match else text)
    readings = []
    for number, obj in enumerate(objects):
        key = _verdict_key(obj)
        if key is None:
            continue
        if key == found.cut and number == len(objects) - 1 and obj is found.values[-1]:
            return ParsedVerdict(None, f"truncated JSON (the {key!r} value is cut off)")
        readings.append(read(obj[key]))
    if not readings:
        return ParsedVerdict(None, f"JSON without a verdict key ({', '.join(VERDICT_KEYS[:3])}, ...)")
    values = {reading.value for reading in readings if reading.ok}
    if len(values) > 1:
        return ParsedVerdict(None, "contradictory: JSON objects with different verdicts")
    return next((reading for reading in readings if reading.ok), readings[0])


def _yes_no_value(value: object) -> ParsedVerdict:
    if isinstance(value, bool):
        return ParsedVerdict(float(value), "boolean")
    if isinstance(value, (int, float)):
        return _in_range(float(value), str(value))
    text = str(value).strip().strip("\"'").lower()
    if _NUMBER.match(text):
        return _probability(text)
    rest, negatives = _NEGATIVE.subn(" ", text)
    positives = len(_POSITIVE.findall(rest))
    if positives and negatives:
        return ParsedVerdict(None, "contradictory: says both yes and no")
    if positives or negatives:
        return ParsedVerdict(1.0 if positives else 0.0, "yes/no")
    return ParsedVerdict(None, f"no yes/no verdict in {_short(text)}")


def _choice_value(value: object, letters: dict[str, float]) -> ParsedVerdict:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _in_range(float(value), str(value))
    text = str(value).strip().strip("\"'")
    if _NUMBER.match(text):
        return _probability(text)
    options = "".join(letters)
    patterns = (rf"^\(?([{options}])\)?[.:)]?$",                    # "B", "(b)", "C."
                rf"^\(?([{options}])[.:)]\s",                       # "B) partly relevant", "A. ..."
                rf"\(([{options}])\)",                              # "... is (B)"
                rf"\b(?:answer|choice|option)\s*(?:is\s*)?[:=\-]?\s*\(?([{options}])\b")
    found = {m.group(1).upper() for pattern in patterns for m in re.finditer(pattern, text, re.IGNORECASE)}
    if len(found) > 1:
        return ParsedVerdict(None, f"contradictory: names {' and '.join(sorted(found))}")
    if found:
        return ParsedVerdict(letters[found.pop()], "choice")
    return ParsedVerdict(None, f"no choice among {', '.join(letters)} in {_short(text)}")


def _probability(text: str) -> ParsedVerdict:
    match = _NUMBER.match(text)
    return _in_range(float(match.group(1)) / (100 if match.group(2) else 1), match.group(0).strip())


def _in_range(number: float, shown: str) -> ParsedVerdict:
    if not 0.0 <= number <= 1.0:
        return ParsedVerdict(None, f"number {shown} is outside [0, 1]")
    return ParsedVerdict(number, "number")


def _json_values(text: str) -> _Found:
    """Every top-level JSON object or list in `text`, the last one closed if the output stops early."""
    decoder, found, position = json.JSONDecoder(), _Found(), 0
    while (start := next((i for i in range(position, len(text)) if text[i] in "{["), None)) is not None:
        tail = text[start:].rstrip().rstrip(",")
        for closing in _CLOSINGS:
            try:
                value, end = decoder.raw_decode(tail + closing)
            except json.JSONDecodeError:
                continue
            found.values.append(value)
            if closing.startswith('"'):
                found.cut = next(reversed(value)) if isinstance(value, dict) and value else "[]"
            position = start + end
            break
        else:
            found.truncated = found.truncated or _open_string(tail)
            position = start + 1
    return found


def _open_string(text: str) -> bool:
    """Whether `text` ends inside a JSON string or right after a key."""
    return len(re.findall(r'(?<!\\)"', text)) % 2 == 1 or text.rstrip().endswith(":")


def _verdict_key(obj: dict) -> str | None:
    keys = {str(key).lower(): key for key in obj}
    key = next((keys[name] for name in VERDICT_KEYS if name in keys), None)
    return key if key is not None or len(obj) != 1 else next(iter(obj))


def _unfence(text: str) -> str:
    match = _FENCE.search(text)
    return match.group(1) if match else text


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
