"""ragsweep: hyperparameter sweeps for retrieval-augmented generation, scored on character spans.

From Python: `ragsweep.Evaluation` runs and sweeps configurations as `sweep.py` does; `ragsweep.Component`
names a component of your own; `load_pipeline("conf/best/NAME.yaml")` turns an exported configuration into
a pipeline with `retrieve(question)` and `answer(question)`; `ConfigError` and `DatasetError` are the errors
a bad config or bad data raise.
"""

from ragsweep import _offline  # noqa: F401  (must run before any Hugging Face or MLflow import)

__version__ = "0.1.0"

# Imported on first use: `import ragsweep` stays light for the command-line tools (they load Hydra and MLflow later).
_EXPORTS = {"Evaluation": "ragsweep.api.evaluation", "Component": "ragsweep.api.choices",
            "Result": "ragsweep.api.evaluation", "ConfigError": "ragsweep.runner.errors",
            "DatasetError": "ragsweep.data.base", "Dataset": "ragsweep.types",
            "load_pipeline": "ragsweep.api.loaded", "LoadedPipeline": "ragsweep.api.loaded",
            "RetrievedPassage": "ragsweep.api.loaded"}
__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ragsweep' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
