"""ragsweep from Python: `Evaluation` runs and sweeps configurations; `load_pipeline` queries an export."""
