"""Analysis: MLflow runs -> Polars frames -> statistics, tables and plots. No torch, no Ray."""
