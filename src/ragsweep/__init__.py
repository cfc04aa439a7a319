"""ragsweep: hyperparameter sweeps for retrieval-augmented generation, scored on character spans."""

from ragsweep import _offline  # noqa: F401  (must run before any Hugging Face or MLflow import)

__version__ = "0.1.0"
