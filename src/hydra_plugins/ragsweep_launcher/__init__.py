"""ragsweep's launcher, found by Hydra as `hydra/launcher=ragsweep` (see `launcher`)."""
