"""Environment defaults that keep ragsweep usable on machines without internet access.

A Hugging Face hub-name lookup stalls for about 70 s before failing offline, and MLflow
phones home for telemetry; both are switched off here, before those libraries are imported.
A user who sets these variables keeps their own values.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per small file reads as noise
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # with a server, a "View run" link per run and job
