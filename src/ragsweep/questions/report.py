"""The audit of a generated question set: what was tried, what each filter dropped and why, what was kept."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

DROP_REASONS = ("generation_failed", "unparseable", "located", "excerpt_relevance", "duplicate", "round_trip",
                "answerability", "judge_failed")  # failed calls are counted, never read as a verdict
EXAMPLES_PER_REASON = 3
SAMPLE_SIZE = 10


class QuestionSetAudit:
    """Counts per document and overall, filled one screened draft at a time (`add`)."""

    def __init__(self, wanted: Mapping[str, int], settings: Mapping[str, Any]) -> None:
        self.settings = settings
        self.achieved: dict[str, Counter] = {"type": Counter(), "difficulty": Counter()}
        self.drafts: Counter = Counter()
        self.excerpts: Counter = Counter()
        self.examples: dict[str, list[dict[str, str]]] = {reason: [] for reason in DROP_REASONS}
        self.documents = {doc_id: {"wanted": count, "passages_tried": 0, "kept": 0, "answers_dropped": 0, "dropped": Counter(),
                                   "type": Counter(), "difficulty": Counter(), "excerpt_tokens": []}
                          for doc_id, count in wanted.items()}
        self.seconds = 0.0  # set when the set is written

    def add(self, screened, tokens: Callable[[str], int]) -> None:
        """Count one screened draft; `tokens` counts an excerpt's tokens."""
        document = self.documents[screened.attempt.passage.doc_id]
        document["passages_tried"] += 1
        if screened.reason is not None:
            document["dropped"][screened.reason] += 1
            if len(self.examples[screened.reason]) < EXAMPLES_PER_REASON:
                self.examples[screened.reason].append({
                    "document": screened.attempt.passage.doc_id,
                    "question": screened.draft.question if screened.draft else None, "detail": screened.detail})
            return
        draft = screened.draft
        document["kept"] += 1
        document["answers_dropped"] += screened.answer_dropped
        for key, value in (("type", draft.type), ("difficulty", draft.difficulty)):
            document[key][value] += 1
            self.achieved[key][value] += 1
        for span, found in screened.spans:
            self.excerpts["exact" if found.exact else "fuzzy"] += 1
            document["excerpt_tokens"].append(tokens(found_text(screened, span)))
        self.excerpts["unlocated"] += len(draft.excerpts) - len(screened.spans)

    def to_dict(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        tried = sum(d["passages_tried"] for d in self.documents.values())
        kept = len(records)
        tokens = [t for d in self.documents.values() for t in d["excerpt_tokens"]]
        return {
            "documents": len(self.documents),
            "questions_wanted": sum(d["wanted"] for d in self.documents.values()),
            "questions_kept": kept,
            "passages_tried": tried,
            "yield": round(kept / tried, 4) if tried else 0.0,
            "dropped": {reason: sum(d["dropped"][reason] for d in self.documents.values()) for reason in DROP_REASONS},
            "answers_dropped": sum(d["answers_dropped"] for d in self.documents.values()),
            "drafts": dict(self.drafts),
            "excerpts": dict(self.excerpts),
            "mean_excerpt_tokens": round(sum(tokens) / len(tokens), 1) if tokens else None,
            "mix": {key: {"requested": {k: round(v, 3) for k, v in self.settings[plural].items()},
                          "achieved": dict(self.achieved[key])}
                    for key, plural in (("type", "types"), ("difficulty", "difficulties"))},
            "seconds": round(self.seconds, 1),
            "seconds_per_draft": round(self.seconds / tried, 2) if tried else None,
            "seconds_per_kept_question": round(self.seconds / kept, 2) if kept else None,
            "per_document": {doc_id: {"wanted": d["wanted"], "passages_tried": d["passages_tried"], "kept": d["kept"],
                                      "dropped": dict(d["dropped"]), "type": dict(d["type"]),
                                      "difficulty": dict(d["difficulty"]),
                                      "mean_excerpt_tokens": round(sum(d["excerpt_tokens"]) / len(d["excerpt_tokens"]), 1)
                                      if d["excerpt_tokens"] else None}
                             for doc_id, d in sorted(self.documents.items())},
            "examples_dropped": {reason: examples for reason, examples in self.examples.items() if examples},
            "sample_kept": sample(records, SAMPLE_SIZE, self.settings["seed"]),
            "settings": {key: self.settings[key] for key in ("seed", "questions_per_document", "attempts_per_question",
                                                             "filters")},
        }

    def markdown(self, records: Sequence[dict[str, Any]]) -> str:
        """The report as a page a person reads: totals, drops with examples, mix, per document, a sample."""
        data = self.to_dict(records)
        lines = ["# Generated question set", "",
                 f"{data['questions_kept']} questions kept of {data['questions_wanted']} wanted, from "
                 f"{data['passages_tried']} passages tried over {data['documents']} documents "
                 f"(yield {data['yield']:.0%}) in {data['seconds']:.0f} s "
                 f"({_per(data['seconds_per_kept_question'])}). Drafts generated: "
                 f"{data['drafts'].get('generated', 0)}, from the cache: {data['drafts'].get('from_cache', 0)}. "
                 f"Mean excerpt length: {data['mean_excerpt_tokens'] or '–'} tokens (cl100k_base); excerpts located "
                 f"verbatim {data['excerpts'].get('exact', 0)}, by fuzzy match {data['excerpts'].get('fuzzy', 0)}, "
                 f"not located {data['excerpts'].get('unlocated', 0)} (of kept questions). Kept without their answer "
                 f"(filters.unsupported_answer=drop_answer): {data['answers_dropped']}.", "",
                 "## Dropped, by the first check each draft failed", "", "| check | dropped | example |", "|---|---:|---|"]
        for reason in DROP_REASONS:
            example = data["examples_dropped"].get(reason, [{}])[0]
            shown = f"{example.get('question') or ''} — {example.get('detail', '')}" if example else ""
            lines.append(f"| {reason} | {data['dropped'][reason]} | {_cell(shown)} |")
        lines += ["", "## Mix", "", "| | requested | achieved |", "|---|---|---|"]
        for key, mix in data["mix"].items():
            lines.append(f"| {key} | {_mix(mix['requested'])} | {_mix(mix['achieved'])} |")
        lines += ["", "## Per document", "", "| document | wanted | tried | kept | dropped | mean excerpt tokens |",
                  "|---|---:|---:|---:|---|---:|"]
        for doc_id, d in data["per_document"].items():
            dropped = ", ".join(f"{k} {v}" for k, v in d["dropped"].items()) or "none"
            lines.append(f"| {doc_id} | {d['wanted']} | {d['passages_tried']} | {d['kept']} | {dropped} | "
                         f"{d['mean_excerpt_tokens'] if d['mean_excerpt_tokens'] is not None else '–'} |")
        lines += ["", f"## {len(data['sample_kept'])} kept questions, chosen at random", ""]
        for record in data["sample_kept"]:
            answer = record["answers"][0] if record["answers"] else "(dropped: not supported by the excerpts)"
            lines.append(f"- **{record['question']}** ({record['type']}, {record['difficulty']}; {record['corpus']}) "
                         f"— answer: {answer}")
            lines += [f"  > {' '.join(reference['content'].split())}" for reference in record["references"]]
        return "\n".join(lines) + "\n"


def found_text(screened, span) -> str:
    return screened.attempt.passage.text[span.start - screened.attempt.passage.start:span.end - screened.attempt.passage.start]


def sample(records: Sequence[dict[str, Any]], count: int, seed: int) -> list[dict[str, Any]]:
    """`count` kept questions chosen at random (seeded), in their order in the set."""
    chosen = sorted(random.Random(seed).sample(range(len(records)), min(count, len(records))))
    return [records[i] for i in chosen]


def _mix(counts: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "–"


def _per(seconds: float | None) -> str:
    return f"{seconds:.1f} s per kept question" if seconds is not None else "no question kept"


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())[:200]
