"""MLflow tracking: experiments, parent and child runs, deterministic names, artifacts."""
