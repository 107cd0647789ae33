"""The spec layer (and the compiler it feeds) runs without torch, Ray, MLflow or the model layers."""

from __future__ import annotations

from import_probe import modules_loaded_by, offending

FORBIDDEN = ("torch", "ray", "mlflow", "transformers", "nerplat.models", "nerplat.objectives", "nerplat.run", "nerplat.trial")


def test_spec_and_plan_never_import_models_ray_or_mlflow():
    loaded = modules_loaded_by(
        "import nerplat.spec.validate, nerplat.spec.samplers, nerplat.spec.methods, nerplat.plan.compiler"
    )
    assert "nerplat.spec.validate" in loaded
    assert offending(loaded, FORBIDDEN) == []
