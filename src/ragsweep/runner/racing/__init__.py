"""A race over a grid (`hydra/sweeper=racing`): `sweep` runs the rounds, `schedule` decides who goes on, `rounds`
gives a job its questions in a round, `kept` holds the configurations built in the sweeping process between rounds.
The race's record on MLflow is `tracking.racing`."""
