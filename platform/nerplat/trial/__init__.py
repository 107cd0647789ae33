"""One trial, in-process: data -> model -> objective -> optimiser -> evaluation. No Ray Tune, no MLflow."""
