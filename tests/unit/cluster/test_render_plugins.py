"""A spec's plugin files must be in the image (under specs/) for the RayJob's driver to ship them."""

import sys
from pathlib import Path

import pytest
from repo_paths import CLUSTER

from nerplat import plugins
from nerplat.catalog import spec_catalog
from nerplat.cluster.rayjob_manifest import load_sizing, render_rayjob
from nerplat.errors import UserInputError


@pytest.fixture(autouse=True)
def forget_plugins():
    loaded, modules = dict(plugins._loaded), set(sys.modules)
    yield
    added = set(plugins._loaded) - set(loaded)
    plugins._loaded.clear()
    plugins._loaded.update(loaded)
    for name in [m for m in sys.modules if m.split(".")[0] in added and m not in modules]:
        del sys.modules[name]


# A plugin must register something (issue 62); this one adds a loss of its file's name.
PLUGIN = '''
from nerplat.objectives import OBJECTIVES
from nerplat.objectives.base import ObjectiveConfig


@OBJECTIVES.register("{name}", config=ObjectiveConfig)
def build(config, context):
    """A loss the render tests never train."""
    raise NotImplementedError
'''


def with_plugin(spec_repo: Path, plugin: str) -> Path:
    spec = spec_repo / "specs" / "tiny.yaml"
    spec.write_text(f"plugins: [{plugin}]\n" + spec.read_text())
    return spec


def test_a_plugin_under_specs_renders(spec_repo: Path):
    (spec_repo / "specs" / "render_plugin_inside.py").write_text(PLUGIN.format(name="render_inside_loss"))
    spec = with_plugin(spec_repo, "./render_plugin_inside.py")
    sizing = load_sizing(spec, spec_catalog(spec), None)
    rayjob = render_rayjob(spec, sizing, repo_root=spec_repo, cluster_dir=CLUSTER / "base", image="r.io/n:1")
    assert rayjob["spec"]["entrypoint"].startswith("nerplat run specs/tiny.yaml")


def test_a_plugin_outside_specs_is_refused_at_its_line(spec_repo: Path):
    (spec_repo / "render_plugin_outside.py").write_text(PLUGIN.format(name="render_outside_loss"))
    spec = with_plugin(spec_repo, "../render_plugin_outside.py")
    sizing = load_sizing(spec, spec_catalog(spec), None)
    with pytest.raises(UserInputError) as caught:
        render_rayjob(spec, sizing, repo_root=spec_repo, cluster_dir=CLUSTER / "base", image="r.io/n:1")
    (problem,) = caught.value.problems
    assert "holds only specs/" in problem.message and (problem.line, problem.path) == (1, "plugins[0]")
