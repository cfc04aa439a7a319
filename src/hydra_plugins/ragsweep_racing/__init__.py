"""ragsweep's racing sweeper, found by Hydra as `hydra/sweeper=racing` (see `racing_sweeper`)."""
