"""Every script of benchmarks/ at its smallest size, run as a user runs it (`python benchmarks/<name>.py --smallest`):
nothing else runs them once the change that wrote them lands, so a change that breaks one (benchmarks/grid.py
failed with a TypeError for weeks) fails here, not in the next measurement.

A run must exit 0 and print its figures' line, the one its page of docs/benchmarks quotes, so a script that
crashes or stops before measuring fails; the figures mean nothing at this size and are not checked. The inputs
are made from the embedded sotu_qa (benchmarks/smallest.py), but judges.py's second claims set, whose passages are
spans of ../shared/data/chroma_general (present wherever the suite runs, as its chroma_general tests need it).
Every script runs once, in its default mode (contention.py's and racing.py's other modes take minutes more); what each
smallest size leaves out of the full one is in the script's docstring. Each run is a test of its own, which either
worker takes (tests/conftest.py); those running llama.cpp are tests/test_benchmarks_llama.py's, one at a time with
the other llama.cpp tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
NUMBER = r"(?:-?\d+(?:\.\d+)?|nan)"  # nan: a ratio with nothing to compare at this size

# (script, its arguments, a line it must print); {tmp} is the test's own folder
RUNS = [
    ("smallest", ["{tmp}"], r"^.*filings: 3 PDFs, \d+ questions$"),
    ("config_walk", ["--smallest", "generator=extractive", "judge=lexical"],
     r"^config_walk calls=\d+ stays=\d+ files=\d+ returns=\d+$"),
    ("first_run", ["--smallest"], rf"^install_s={NUMBER} sweep_s={NUMBER} total_s={NUMBER}$"),
    ("grid", ["--smallest"], rf"^cold_over_lower_bound={NUMBER} warm_over_cold={NUMBER} warm_s_per_config={NUMBER} "
                             rf"warm_config_over_bound={NUMBER} peak_rss_gb={NUMBER}$"),
    ("grid_against", ["--smallest"], rf"^warm_over_base={NUMBER} warm_s_per_config_on_issue_machine={NUMBER}$"),
    ("warm_jobs", ["--smallest"], rf"^warm_on_over_off={NUMBER}$"),
    ("warm_breakdown", ["--smallest"],
     rf"^warm_ms_per_config={NUMBER} compose_ms={NUMBER} hydra_floor_ms={NUMBER} mlflow_ms={NUMBER}$"),
    ("warm_sweep", ["--smallest"], rf"^sweep_warm_ms_per_config={NUMBER}$"),
    ("parallel", ["--smallest"], rf"^smallest_two_over_one={NUMBER} smallest_no_preload_over_one={NUMBER}$"),
    ("racing", ["--smallest"], rf"^token_iou_winner_or_tied=\d+/3 token_iou_share={NUMBER}$"),
    ("racing_retrieval", ["--smallest"],
     rf"^smallest_wall_ratio={NUMBER} smallest_evaluations_ratio={NUMBER} smallest_rescored_ratio={NUMBER}$"),
    ("scale", ["--smallest"], rf"^spread_embed_ratio={NUMBER} for static/numpy at 2 distractors"),
    ("relevance_heldout", ["--smallest", "--workdir", "{tmp}"], rf"^heldout_auc={NUMBER} chroma_general_auc={NUMBER}$"),
    ("knobs", ["--smallest"], rf"^\| augment +\| none +\| [+-]{NUMBER} +\|"),  # its effects, not "(effects failed"
    ("judges", ["--smallest"], rf"^\| lexical \| {NUMBER} \|"),
    ("parsing", ["--smallest", "--grow", "4"],
     r"^sweep\.py on the grown folder, k=10: \d+ s, files parsed \(new cache entries\): 0$"),
    ("tracking_load", ["--smallest"], rf"^sqlite_runs_per_s_at_1={NUMBER} .* sqlite_first_refusing_writers=\w+$"),
    ("endpoint_embedder", ["--smallest"],
     rf"^in_process_per_s={NUMBER} endpoint_per_s_c1={NUMBER} .* largest_metric_difference={NUMBER}$"),
]


def _script(run) -> str:
    return run[0]


def _as_a_user_runs_it() -> dict[str, str]:
    """This environment without the suite's HF_, MLFLOW_ and pytest variables (the entry points set their own; a
    `pytest` that contention.py starts must not take itself for one of this run's workers)."""
    return {key: value for key, value in os.environ.items()
            if not key.startswith(("HF_", "MLFLOW_", "PYTEST_", "RAGSWEEP_SCOPE_SECONDS"))}


def test_every_script_has_a_smallest_run():
    from tests.test_benchmarks_llama import LLAMA_RUNS

    scripts = {path.stem for path in (ROOT / "benchmarks").glob("*.py")}
    listed = {_script(run) for run in (*RUNS, *LLAMA_RUNS)}
    assert scripts <= listed, f"no smallest run for {sorted(scripts - listed)}: add one to RUNS"
    assert listed <= scripts, f"RUNS names scripts benchmarks/ lacks: {sorted(listed - scripts)}"


@pytest.mark.slow
@pytest.mark.parametrize(("script", "arguments", "printed"), RUNS, ids=[run[0] for run in RUNS])
def test_the_script_runs_at_its_smallest_size(script, arguments, printed, tmp_path):
    run_at_smallest_size(script, arguments, printed, tmp_path)


def run_at_smallest_size(script: str, arguments: list[str], printed: str, tmp_path: Path) -> None:
    """`python benchmarks/<script>.py <arguments>` exits 0 and prints a line matching `printed`."""
    if script == "judges":
        assert SHARED.is_dir(), f"{SHARED} is missing: clone ragsweep beside ../shared (judges.py's chroma claims)"
    command = [sys.executable, f"benchmarks/{script}.py", *(argument.format(tmp=tmp_path) for argument in arguments)]
    done = subprocess.run(command, cwd=ROOT, env=_as_a_user_runs_it(), capture_output=True, text=True, timeout=900)
    shown = f"$ {' '.join(command[1:])}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert done.returncode == 0, f"exit {done.returncode}:\n{shown}"
    assert re.search(printed, done.stdout, re.MULTILINE), f"no line like {printed!r}:\n{shown}"
