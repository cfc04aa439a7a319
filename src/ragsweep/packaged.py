"""Where the configs that ship inside the package are (`pkg://ragsweep.conf`; in a checkout, a link to `conf/`)."""

from __future__ import annotations

from pathlib import Path

PACKAGED_CONF = Path(__file__).resolve().parent / "conf"
