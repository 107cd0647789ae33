"""The trial loop trains with torch alone: it knows nothing of Ray Tune, MLflow or the runner."""

from __future__ import annotations

import pkgutil

import pytest
from import_probe import modules_loaded_by, offending

import nerplat.trial

FORBIDDEN = ("ray", "mlflow", "nerplat.run", "nerplat.track", "nerplat.spec", "nerplat.cli")


@pytest.mark.slow  # imports torch in a fresh interpreter (about 10 s on a busy 2-core machine)
def test_trial_never_imports_ray_mlflow_or_the_runner():
    modules = [m.name for m in pkgutil.iter_modules(nerplat.trial.__path__, "nerplat.trial.")]
    loaded = modules_loaded_by(*(f"import {name}" for name in modules))
    assert "torch" in loaded and set(modules) <= loaded
    assert offending(loaded, FORBIDDEN) == []
