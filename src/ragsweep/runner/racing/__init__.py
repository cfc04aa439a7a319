"""A race over a grid (`hydra/sweeper=racing`): `sweep` runs the rounds, `schedule` decides who goes on, `rounds`
gives a job its questions in a round. The race's record on MLflow is `tracking.racing`."""
