"""What ships inside the package, and how ragsweep was installed: the configs (`pkg://ragsweep.conf`; in a
checkout, a link to `conf/`), the configuration pages (a link to `docs/configuration/`), and the install command
of an extra that works for this install (a checkout's editable one, or a wheel's)."""

from __future__ import annotations

import importlib.metadata
import json
import re
import urllib.parse
from pathlib import Path

PACKAGED_CONF = Path(__file__).resolve().parent / "conf"


def with_packaged(conf_dir: Path) -> list[Path]:
    """Every folder a config in `conf_dir` is composed from: that folder, then the package's (a project's
    `conf/` extends the packaged config through Hydra's search path)."""
    return [conf_dir] if conf_dir.resolve() == PACKAGED_CONF.resolve() else [conf_dir, PACKAGED_CONF]


PAGES = Path(__file__).resolve().parent / "pages"  # docs/configuration's pages, shipped in the wheel
_OPTIONS_MARKER = re.compile(r"<!-- ragsweep:conf (\w+) -->")
# The Makefile's LLAMA_CMAKE, as docs/tutorial.md's install: the kernels llama.cpp's pinned numbers were made with
_LLAMA_BUILD = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON '
                '-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DLLAVA_BUILD=OFF" ')


def install_command(extra: str) -> str:
    """The command that adds the extra `extra` to ragsweep as it is installed here: into the checkout an editable
    install runs from, else beside the wheel, with the versions it was tested with (as the documented install)."""
    build = _LLAMA_BUILD if extra == "llama" else ""
    checkout = editable_checkout()
    if checkout is not None:
        return f'{build}pip install -e "{checkout}[{extra}]"'
    return f'ragsweep constraints > constraints.txt && {build}pip install -c constraints.txt "ragsweep[{extra}]"'


def editable_checkout() -> Path | None:
    """The checkout an editable install (`pip install -e`) runs from, from its PEP 610 direct_url.json; None for
    an install from a wheel."""
    try:
        text = importlib.metadata.distribution("ragsweep").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    info = json.loads(text or "{}")
    url = info.get("url", "")
    if not info.get("dir_info", {}).get("editable") or not url.startswith("file://"):
        return None
    return Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))


def page_names() -> list[str]:
    """The configuration pages `ragsweep docs PAGE` prints (each config group's, and `index`)."""
    return sorted(path.stem for path in PAGES.glob("*.md"))


def page(name: str) -> str:
    """A shipped page's Markdown, each group's list of options (built into the site from the configs) pointing
    to the packaged config files instead; KeyError for a page that is not shipped."""
    path = PAGES / f"{name.removesuffix('.md')}.md"
    if not path.is_file():
        raise KeyError(name)
    return _OPTIONS_MARKER.sub(lambda found: f"Its options are the files in {PACKAGED_CONF / found[1]}/.",
                               path.read_text(encoding="utf-8"))
