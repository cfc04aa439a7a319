"""The scripts of benchmarks/ that run llama.cpp, at their smallest size (see tests/test_benchmarks.py): one at a time
with the suite's other llama.cpp tests, as two llama.cpp processes on the same cores each slow ~10x."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_benchmarks import NUMBER, run_at_smallest_size

pytestmark = [pytest.mark.llama_cpp, pytest.mark.slow]

LLAMA_RUNS = [  # (script, its arguments, a line it must print); {tmp} is the test's own folder
    ("generation", ["--smallest", "--workdir", "{tmp}"],
     rf"^calls_over_distinct_prompts={NUMBER} judge_calls_over_distinct_pairs={NUMBER} "),
    ("contention", ["--smallest"], rf"^together_over_alone_default={NUMBER} "),
    ("estimate", ["--smallest"], r"^\| the sweep \| --sample 2 / logged \|"),
    ("estimate_judge", ["--smallest"], r"^\| \| --sample 1 / made \|"),
]


@pytest.mark.parametrize(("script", "arguments", "printed"), LLAMA_RUNS, ids=[run[0] for run in LLAMA_RUNS])
def test_the_script_runs_at_its_smallest_size(script: str, arguments: list[str], printed: str, tmp_path: Path):
    run_at_smallest_size(script, arguments, printed, tmp_path)
