"""What a spec will cost on this host before it runs (`nerplat plan --cost`): the prediction model
(`cost`), the earlier runs it reads from the MLflow store (`store_runs`), what this host offers a
trial (`host`), the short calibration run where the store has no runs (`calibration`), and the cut
that brings a prediction under a budget (`budget`)."""
