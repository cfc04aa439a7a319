"""Where the configs that ship inside the package are (`pkg://ragsweep.conf`; in a checkout, a link to `conf/`)."""

from __future__ import annotations

from pathlib import Path

PACKAGED_CONF = Path(__file__).resolve().parent / "conf"


def with_packaged(conf_dir: Path) -> list[Path]:
    """Every folder a config in `conf_dir` is composed from: that folder, then the package's (a project's
    `conf/` extends the packaged config through Hydra's search path)."""
    return [conf_dir] if conf_dir.resolve() == PACKAGED_CONF.resolve() else [conf_dir, PACKAGED_CONF]
