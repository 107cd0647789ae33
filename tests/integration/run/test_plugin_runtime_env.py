"""An embedded Ray's workers import the driver's plugins: a file that is on no worker's path arrives
through py_modules and the worker setup hook registers its loss before any task runs."""

from __future__ import annotations

import sys

import pytest
from embedded_ray import connect_embedded

from nerplat import plugins

LOSS = '''
from nerplat.objectives import OBJECTIVES
from nerplat.objectives.base import ObjectiveConfig


@OBJECTIVES.register("embedded_plugin_loss", config=ObjectiveConfig)
def build(config, context):
    """A loss only this plugin registers."""
'''


@pytest.mark.slow
def test_workers_of_an_embedded_ray_have_the_plugins_entries(tmp_path, monkeypatch):
    import ray

    from nerplat.objectives import OBJECTIVES

    if ray.is_initialized():
        pytest.fail("a Ray session of an earlier test is still open: this test must start its own")
    (tmp_path / "embedded_test_plugin.py").write_text(LOSS)
    loaded = dict(plugins._loaded)
    try:
        plugins.load_spec_plugins(["./embedded_test_plugin.py"], tmp_path, None)
        connect_embedded(monkeypatch)

        @ray.remote(num_cpus=0)
        def registered_objectives() -> tuple[list[str], str]:
            from nerplat.objectives import OBJECTIVES

            return OBJECTIVES.names(), OBJECTIVES.get("embedded_plugin_loss").origin

        names, origin = ray.get(registered_objectives.remote(), timeout=300)
        assert "embedded_plugin_loss" in names and origin == "plugin embedded_test_plugin"
    finally:
        ray.shutdown()
        OBJECTIVES._entries.pop("embedded_plugin_loss", None)
        plugins._loaded.clear()
        plugins._loaded.update(loaded)
        sys.modules.pop("embedded_test_plugin", None)
