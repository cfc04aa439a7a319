"""ragsweep's packaged configs (Hydra's `pkg://ragsweep.conf` search path); no code."""
