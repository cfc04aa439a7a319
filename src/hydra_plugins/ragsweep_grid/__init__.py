"""ragsweep's default launcher and sweeper, found by Hydra as `hydra/launcher=ragsweep` and
`hydra/sweeper=ragsweep` (see `launcher` and `sweeper`)."""
