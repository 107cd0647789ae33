"""Corpora and samplers load without torch, Ray, MLflow, or any layer above data."""

from __future__ import annotations

from import_probe import modules_loaded_by, offending

FORBIDDEN = (
    "torch",
    "ray",
    "mlflow",
    "transformers",
    "nerplat.spec",
    "nerplat.plan",
    "nerplat.models",
    "nerplat.objectives",
    "nerplat.run",
    "nerplat.trial",
    "nerplat.track",
)


def test_data_never_imports_higher_layers_torch_ray_or_mlflow():
    loaded = modules_loaded_by("import nerplat.data.corpora, nerplat.data.samplers, nerplat.data.corpus_stats, nerplat.data.hub")
    assert "nerplat.data.samplers.low_resource" in loaded
    assert offending(loaded, FORBIDDEN) == []
