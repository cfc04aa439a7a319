"""The judges `ragsweep calibrate` measures and `ragsweep train-judge` trains, built from a project's config
as a sweep builds its stages (through `build.judge_stage`, which builds a sweep's own)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsweep.cache import StageCache
from ragsweep.hydra_internals import locate
from ragsweep.judging.base import Judge
from ragsweep.judging.calibration.labelled_claims import LabelledClaim
from ragsweep.packaged import with_packaged
from ragsweep.runner.build import Built, group_config, instantiate_stage, judge_stage
from ragsweep.runner.compose import composing
from ragsweep.runner.errors import ConfigError


def build_judge(conf_dir: str | Path, name: str, overrides: Sequence[str] = (),
                claims: Sequence[LabelledClaim] = (), root: Path | None = None,
                passages: Sequence[str] | None = None) -> tuple[Judge, dict[str, Any]]:
    """The judge `conf/judge/<name>.yaml` describes, with `overrides` (`judge.threshold=0.4`), composed
    from the project's config and built as a sweep builds its stages (the project's embedder handed to a
    judge that asks for one, the stage cache to one that asks for `cache`, and to one that asks for a
    `dataset` the distinct passages of `claims`, or `passages`, or else the config's dataset: the trained
    judge learns from texts, never from labels); with its resolved config.
    Embedders are not wrapped in the stage cache, so a rerun measures the judge's speed, not the cache's.

    Raises:
        ValueError: an unknown judge (listing those that exist), `none`, or a bad setting.
    """
    conf_dir = Path(conf_dir)
    refusal = check_judge_option(with_packaged(conf_dir), name)
    cfg = compose_with_judge(conf_dir, name, overrides, root)
    cache_cfg = group_config(cfg, "cache")
    stages = {"cache": Built(StageCache.from_settings(cache_cfg), {})}
    uncached = StageCache(cache_cfg["dir"], enabled=False)  # embeddings computed, not read: s/claim is the judge's
    if "embedder" in cfg and "embedder" in _parameters(cfg.judge.get("_target_")):
        stages["embedder"] = instantiate_stage(cfg, "embedder", {}, uncached)
    if "dataset" in _parameters(cfg.judge.get("_target_")):
        if passages is None and claims:
            passages = list(dict.fromkeys(passage for claim in claims for passage in claim.context))
        stages["dataset"] = (instantiate_stage(cfg, "dataset", {"cache": stages["cache"]}, uncached) if passages is None
                             else Built(list(passages), {"passages": len(passages)}))
    built = judge_stage(cfg, stages, uncached, keyed=False)
    if built is None:
        raise ValueError(refusal)
    judge = built.component
    if not callable(getattr(judge, "judge", None)) or not isinstance(getattr(judge, "threshold", None), (int, float)):
        raise ValueError(f"judge._target_={cfg.judge.get('_target_')}: {type(judge).__name__} is not a judge; it "
                         "needs a judge(pairs) method and a numeric threshold (see ragsweep.judging.base.Judge)")
    return judge, group_config(cfg, "judge")


def check_judge_option(conf_dirs: Sequence[Path], name: str) -> str:
    """Refuse a judge option none of `conf_dirs` (a project's conf/, the packaged one) has, or `none`; the
    refusal a judge that is off gets.

    Raises:
        ValueError: naming the option and the judges there are.
    """
    options = sorted({path.stem for folder in conf_dirs for path in (Path(folder) / "judge").glob("*.yaml")})
    usable = ", ".join(option for option in options if option != "none")
    if not usable:
        raise ValueError(f"--judge {name}: {Path(conf_dirs[0]) / 'judge'} holds no judge; run from the project "
                         "folder (the one with conf/) or give --project")
    if name not in options:
        raise ValueError(f"--judge {name}: there is no {Path(conf_dirs[0]) / 'judge' / name}.yaml; choose one of "
                         f"{usable}")
    refusal = f"--judge {name} turns judging off, so there is nothing to calibrate; choose one of {usable}"
    if name == "none":
        raise ValueError(refusal)
    return refusal


def compose_with_judge(conf_dir: Path, name: str, overrides: Sequence[str], root: Path | None = None):
    """The project's config with `judge=<name>`, appended (`+judge=`) when the defaults list has no judge;
    its paths (the stage cache a judge's model is kept in) under the project folder `root` (default: the one
    holding `conf_dir`), wherever this runs."""
    paths = f"paths.root={(root or conf_dir.parent).resolve()}"
    with composing(conf_dir) as compose_checked:
        try:
            return compose_checked("config", [paths, f"judge={name}", *overrides], job=False)
        except ConfigError as error:
            if not str(error).startswith("Could not override 'judge'"):
                raise
        return compose_checked("config", [paths, f"+judge={name}", *overrides], job=False)  # none in defaults


def _parameters(target: str | None) -> set[str]:
    """The constructor arguments of `target`; empty when it cannot be imported (the build reports that)."""
    import inspect

    try:
        return set(inspect.signature(locate(str(target))).parameters)
    except (ImportError, ValueError, TypeError):
        return set()
