"""Whether two runs answered the same questions, and which of them to compare when they did not.

A mean, a paired bootstrap or a per-question diff of two runs measures the pipeline only on the same questions: a
question deleted, added or reworded since the baseline moves the numbers with nothing in the pipeline changed. Each
run's per_query.jsonl, and an export's per-question file, gives each question's id and the sha256 of its text,
references and reference answers (`Query.sha256`). `gate`, `best --verify`, `diff` and `report` compare them
through `same_questions`: a difference fails the command, naming the questions, unless
`--on-changed-questions=compare-common` asks to compare the questions both runs have unchanged. Runs logged before
the hash was recorded are matched by id only, and the command says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ragsweep import per_query
from ragsweep.results.exported import ResultsError

OPTION = "--on-changed-questions"
FAIL, COMPARE_COMMON = "fail", "compare-common"
CHOICES = (FAIL, COMPARE_COMMON)
SHOWN = 5  # question ids a line names before it says how many more


class QuestionsChanged(ResultsError):
    """The compared runs' questions differ, and `--on-changed-questions` did not ask to compare the common ones."""


@dataclass(frozen=True)
class QuestionChanges:
    """How the questions of a second run differ from a first's, by id and by `Query.sha256`."""

    removed: tuple[str, ...]  # the first run's only
    added: tuple[str, ...]  # the second run's only
    changed: tuple[str, ...]  # in both, with another text, references or reference answers
    common: tuple[str, ...]  # in both and unchanged, in the first run's order
    unhashed: tuple[bool, bool]  # whether each run lacks a hash (logged before runs recorded them)

    @property
    def differ(self) -> bool:
        return bool(self.removed or self.added or self.changed)


@dataclass(frozen=True)
class Compared:
    """The questions a command compares, and the lines it prints (or writes) about them."""

    questions: tuple[str, ...]
    lines: tuple[str, ...]
    changes: QuestionChanges


def question_changes(before: Mapping[str, str | None], after: Mapping[str, str | None]) -> QuestionChanges:
    """The questions removed, added and changed from `before` to `after` (question id -> its sha256, None where a
    run recorded none: such a question is compared by id only)."""
    changed = tuple(question for question in before if question in after and None not in (
        before[question], after[question]) and before[question] != after[question])
    return QuestionChanges(removed=tuple(question for question in before if question not in after),
                           added=tuple(question for question in after if question not in before),
                           changed=changed,
                           common=tuple(question for question in before if question in after and question not in
                                        set(changed)),
                           unhashed=(None in before.values(), None in after.values()))


def named(questions: Sequence[str]) -> str:
    """`3 (q1, q2, q3)`, or the first `SHOWN` ids and how many more."""
    more = f", ... {len(questions) - SHOWN} more" if len(questions) > SHOWN else ""
    return f"{len(questions)} ({', '.join(questions[:SHOWN])}{more})"


def changes_text(changes: QuestionChanges) -> str:
    """The removed, added and changed questions in one clause, each kind with its count and first ids."""
    parts = [f"{what} {named(questions)}" for what, questions in (
        ("removed", changes.removed), ("added", changes.added),
        ("changed (text, references or reference answers)", changes.changed)) if questions]
    return ", ".join(parts)


def same_questions(before: Mapping[str, str | None], after: Mapping[str, str | None], on_changed: str,
                   sides: tuple[str, str], fix: str) -> Compared:
    """The questions to compare two runs on: all of them when both have the same questions; otherwise
    QuestionsChanged naming what differs and `fix`, unless `on_changed` is compare-common, which compares the
    questions both have unchanged. `sides` names the two runs (`the baseline`, `the current run`)."""
    changes = question_changes(before, after)
    unhashed = [side for side, lacking in zip(sides, changes.unhashed, strict=True) if lacking]
    lines = [f"{' and '.join(unhashed)} recorded no question hashes (logged before runs recorded them), so questions "
             "are matched by id only and a reworded one goes unnoticed"] if unhashed else []
    if not changes.differ:
        return Compared(changes.common, tuple(lines), changes)
    between = f"{sides[1]} differs from {sides[0]} in its questions: {changes_text(changes)}"
    if not changes.common:
        raise QuestionsChanged(f"{between}; no question is in both unchanged, so there is nothing to compare: {fix}")
    if on_changed != COMPARE_COMMON:
        raise QuestionsChanged(f"{between}; {fix}, or pass {OPTION}={COMPARE_COMMON} to compare the "
                               f"{len(changes.common)} questions both have unchanged")
    return Compared(changes.common, (*lines, f"{between}; comparing the {len(changes.common)} questions both have "
                                             f"unchanged ({OPTION}={COMPARE_COMMON})"), changes)


def record_hashes(records: Iterable[Mapping]) -> dict[str, str | None]:
    """Question id -> its `Query.sha256` in per_query.jsonl records (or an export's per-question lines), None where
    the run recorded none."""
    return {record["id"]: record.get(per_query.HASH) for record in records}


def means_on(questions: Mapping[str, Mapping[str, float]], ids: Iterable[str]) -> dict[str, float]:
    """Each metric's mean over those of `ids` that have it: a run's mean on the questions two runs share."""
    values: dict[str, list[float]] = {}
    for question in ids:
        for metric, value in questions[question].items():
            values.setdefault(metric, []).append(value)
    return {metric: math.fsum(found) / len(found) for metric, found in values.items()}
