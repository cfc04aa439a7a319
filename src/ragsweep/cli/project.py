"""`ragsweep init | sweep`: a project folder of your own, and Hydra's command line from any folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def init_command(args: argparse.Namespace) -> int:
    """A project folder: conf/config.yaml extending the packaged defaults, a dataset and a grid to copy from."""
    from ragsweep.runner.entry import PROJECT_CONFIG

    folder = args.folder.resolve()
    if folder.exists() and not folder.is_dir():
        print(f"ragsweep: error: {args.folder} is a file; ragsweep init writes a project folder: give a new or empty "
              "folder's path", file=sys.stderr)
        return 2
    files = {folder / "conf" / "config.yaml": PROJECT_CONFIG,
             folder / "conf" / "dataset" / "my_data.yaml": MY_DATA,
             folder / "sweeps" / "my_grid.yaml": MY_GRID,
             folder / ".gitignore": "mlruns/\noutputs/\n.cache/\nreports/\n"}
    taken = [path for path in [*files, folder / "conf" / "sweep"] if path.exists() or path.is_symlink()]
    if taken:
        print(f"ragsweep: error: {taken[0]} exists; ragsweep init writes a new project: give an empty folder",
              file=sys.stderr)
        return 2
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / "conf" / "sweep").symlink_to(Path("..") / "sweeps", target_is_directory=True)  # grids: +sweep=NAME
    print(f"wrote a ragsweep project in {folder}:\n"
          "  conf/config.yaml         extends the packaged defaults (ragsweep sweep --cfg job shows them)\n"
          "  conf/dataset/my_data.yaml  your documents and questions (format: docs/configuration/dataset.md)\n"
          "  sweeps/my_grid.yaml      a named grid (conf/sweep links to sweeps/)\n"
          f"next: cd {folder} && ragsweep sweep -m k=3,5   then: ragsweep best; ragsweep ui")
    return 0


MY_DATA = """\
# Your own data: documents/*.txt and queries.jsonl under data/my_data (format: docs/configuration/dataset.md).
# Use it: ragsweep sweep dataset=my_data   (or `- override dataset: my_data` in conf/config.yaml)
_target_: ragsweep.data.native.NativeDataset
path: ${paths.root}/data/my_data
"""

MY_GRID = """\
# @package _global_
# A named grid: ragsweep sweep -m +sweep=my_grid   (the packaged ones: quick, chunking, retrieval, full)
hydra:
  sweeper:
    params:
      k: 3,5
      chunker: recursive,fixed
"""


def add_commands(commands: argparse._SubParsersAction) -> None:
    """sweep (its arguments go to Hydra whole: see `main`) and init."""
    sweep = commands.add_parser("sweep", help="run one configuration, or a grid with -m (what python sweep.py does, "
                                "from any folder)", description="Hydra's command line, e.g. `ragsweep sweep -m "
                                "chunker=recursive,fixed k=5,10`; the configs are ./conf/config.yaml's (ragsweep init) "
                                "or the packaged ones; --config-dir DIR adds your own YAML; --hydra-help: Hydra's help")
    sweep.add_argument("overrides", nargs="*", help="Hydra overrides and flags (-m, --config-dir, --cfg job, ...)")
    init = commands.add_parser("init", help="write a project folder: conf/config.yaml extending the packaged "
                               "defaults, your dataset and grid, .gitignore")
    init.add_argument("folder", type=Path, nargs="?", default=Path("."), help="the folder (default: .)")
    init.set_defaults(command=init_command)
    constraints = commands.add_parser("constraints", help="print every package version ragsweep was tested with, "
                                      "for pip install -c (docs: Install)")
    constraints.set_defaults(command=constraints_command)


def constraints_command(args: argparse.Namespace) -> int:
    """The constraints file shipped inside the package: `ragsweep constraints > c.txt; pip install -c c.txt ...`."""
    from importlib.resources import files

    print(files("ragsweep").joinpath("constraints.txt").read_text(encoding="utf-8"), end="")
    return 0
