"""What the judges fine-tuned here share: the encoder they start from, their cached folder, one training step.

The support judge (`trained`) and the span relevance judge (`span_relevance`) each fine-tune a packaged
encoder once per corpus and settings, keep the result in the stage cache under `judges/<key>/`, and train
with the same clipped AdamW step and warm-up schedule.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragsweep.cache import exclusive

log = logging.getLogger(__name__)


def check_encoder(model: str | None, key: str) -> None:
    """Refuse, before any work, an encoder `encoder_path` could not give."""
    if model in (None, "minilm"):
        return
    if model == "mpnet":
        from ragsweep.embedding.mpnet import installed_parts

        try:
            installed_parts()
        except ValueError as error:
            raise ValueError(f"{key}=mpnet: {error}") from None
    elif not Path(str(model)).is_dir():
        raise ValueError(f"{key}={model}: not minilm, mpnet or a model folder")


def encoder_path(model: str | None, cache_dir: Path) -> str:
    """The encoder a judge starts from: `minilm` (or null, the default), `mpnet`, or a model folder."""
    if model in (None, "minilm"):
        from ragsweep.embedding.minilm import minilm_path

        return minilm_path()
    if model == "mpnet":
        from ragsweep.embedding.mpnet import mpnet_path

        return str(mpnet_path(cache_dir))
    return str(model)


def cached_model(cache_dir: Path, folder: Path, train: Callable[[Path], None]) -> Path:
    """`folder` from the stage cache, or trained now by `train(partial)` into a temporary folder renamed into place
    once whole (its `training.json` written last marks it so); one process trains, the others wait for it."""
    with exclusive(cache_dir / ".locks" / f"judges-{folder.name}.lock"):
        if (folder / "training.json").is_file():
            log.info("trained model from the cache: %s", folder)
            return folder
        partial = folder.with_name(f".{folder.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        try:
            train(partial)
            shutil.rmtree(folder, ignore_errors=True)  # a folder without training.json is a dead write
            os.replace(partial, folder)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return folder


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' warnings off for a block (restored after)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def warmup_schedule(optimizer: Any, steps: int) -> Any:
    """Linear warm-up over the first 10% of `steps` (at least one), then linear decay to 0 at `steps`."""
    import torch

    warmup = max(1, steps // 10)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (steps - step) / max(1, steps - warmup))))


def optimizer_step(model: Any, optimizer: Any, schedule: Any, loss: Any, losses: list[float], bar: Any,
                   window: int = 50) -> None:
    """Backpropagate `loss`, clip gradients at norm 1, step the optimizer and the schedule, and show the mean
    loss of the last `window` steps."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step(), schedule.step(), optimizer.zero_grad()
    losses.append(loss.item())
    bar.update()
    bar.set_postfix(loss=f"{sum(losses[-window:]) / len(losses[-window:]):.3f}")
