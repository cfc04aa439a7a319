"""No judge: answers are generated and scored against references, but no judged metric is computed."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.judging.base import Pair, Verdict


class NoJudge:
    enabled = False
    threshold = 0.5

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        raise RuntimeError("judge=none judges nothing; the runner does not call it")
