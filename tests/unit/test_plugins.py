"""Plugins: a spec's files and modules and installed entry points register like built-ins, record
their origin, reach Ray workers through the runtime environment, and have their files hashed."""

import hashlib
import json
from pathlib import Path

import pytest

from nerplat import plugins
from nerplat.catalog import default_catalog, spec_catalog
from nerplat.errors import UserInputError
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource

EXAMPLE = Path(__file__).parents[2] / "examples" / "plugin"

LOSS = '''
from nerplat.objectives import OBJECTIVES
from nerplat.objectives.base import ObjectiveConfig


class Config(ObjectiveConfig):
    scale: float = 1.0


@OBJECTIVES.register("{name}", config=Config)
def build(config, context):
    """A test loss."""
    raise NotImplementedError
'''


def write_spec(folder: Path, plugin_lines: str, loss: str = "ce") -> Path:
    spec = folder / "spec.yaml"
    spec.write_text(
        f"experiment: p\n{plugin_lines}dataset: conll2003\nmethods: {{m: {{loss: {loss}}}}}\nreplicate: {{seeds: 1}}\n"
    )
    return spec


def test_a_spec_file_plugin_registers_a_loss_with_its_origin(tmp_path):
    (tmp_path / "my_test_loss.py").write_text(LOSS.format(name="test_scaled"))
    spec = write_spec(tmp_path, "plugins: [./my_test_loss.py]\n", "test_scaled")
    catalog = spec_catalog(spec)
    entry = catalog.objectives.get("test_scaled")
    assert entry.origin == f"plugin {tmp_path / 'my_test_loss.py'}"
    assert catalog.objectives.get("ce").origin == "built-in"
    plan = compile_plan(spec, catalog)
    assert plan.arms[0].objective == "test_scaled"


def test_a_plugins_parameters_are_validated_like_a_built_ins(tmp_path):
    (tmp_path / "my_test_loss.py").write_text(LOSS.format(name="test_scaled"))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "experiment: p\nplugins: [./my_test_loss.py]\ndataset: conll2003\n"
        "methods: {m: {loss: test_scaled, scal: 2}}\nreplicate: {seeds: 1}\n"
    )
    with pytest.raises(UserInputError, match="did you mean 'scale'") as caught:
        compile_plan(spec, spec_catalog(spec))
    assert caught.value.problems[0].line == 4


def test_runtime_env_ships_files_and_names_the_worker_hook(tmp_path):
    (tmp_path / "my_test_loss.py").write_text(LOSS.format(name="test_scaled"))
    loaded = plugins.load_spec_plugins(["./my_test_loss.py", str(EXAMPLE / "nerplat_example")], tmp_path, None)
    env = plugins.ray_runtime_env(loaded)
    assert env["py_modules"] == sorted([str(tmp_path / "my_test_loss.py"), str(EXAMPLE / "nerplat_example")])
    assert env["worker_process_setup_hook"] == "nerplat.plugins.import_worker_plugins"
    assert json.loads(env["env_vars"]["NERPLAT_PLUGINS"]) == ["my_test_loss", "nerplat_example"]
    assert plugins.ray_runtime_env([]) == {}


def test_files_are_recorded_with_their_sha256(tmp_path):
    (tmp_path / "my_test_loss.py").write_text(LOSS.format(name="test_scaled"))
    (loaded,) = plugins.load_spec_plugins(["my_test_loss.py"], tmp_path, None)
    (record,) = plugins.files_record([loaded])
    assert record["file"] == str(tmp_path / "my_test_loss.py")
    assert record["sha256"] == hashlib.sha256((tmp_path / "my_test_loss.py").read_bytes()).hexdigest()
    folder = plugins.load_spec_plugins([str(EXAMPLE / "nerplat_example")], tmp_path, None)
    assert {Path(r["file"]).name for r in plugins.files_record(folder)} == {
        "__init__.py", "losses.py", "samplers.py", "word_slash.py"
    }


def test_every_broken_plugin_is_located_in_the_spec(tmp_path):
    (tmp_path / "broken_test_plugin.py").write_text("import no_such_module_here\n")
    (tmp_path / "json.py").write_text("")
    (tmp_path / "clash_test_plugin.py").write_text(LOSS.format(name="ce"))
    spec = write_spec(
        tmp_path,
        "plugins:\n  - ./missing.py\n  - ./broken_test_plugin.py\n  - ./json.py\n  - ./clash_test_plugin.py\n"
        "  - no_such_plugin_module\n",
    )
    with pytest.raises(UserInputError) as caught:
        spec_catalog(spec)
    problems = caught.value.problems
    assert [(p.line, p.path) for p in problems] == [
        (3, "plugins[0]"), (4, "plugins[1]"), (5, "plugins[2]"), (6, "plugins[3]"), (7, "plugins[4]")
    ]
    messages = [p.message for p in problems]
    assert "no .py file or package folder" in messages[0]
    assert "No module named 'no_such_module_here'" in messages[1]
    assert "already a Python module; rename" in messages[2]
    assert "loss 'ce' is already registered (built-in)" in messages[3]
    assert "no such module" in messages[4]


def test_installed_entry_points_are_loaded_with_their_distribution(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "ep_test_pkg").mkdir(parents=True)
    (site / "ep_test_pkg" / "__init__.py").write_text(LOSS.format(name="test_from_entry_point"))
    info = site / "ep_test_dist-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-test-dist\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[nerplat.plugins]\nmine = ep_test_pkg\n")
    monkeypatch.syspath_prepend(str(site))
    (loaded,) = [p for p in plugins.load_entry_points() if p.module == "ep_test_pkg"]
    assert loaded.origin == "entry point mine (ep-test-dist 1.2)" and loaded.ship is None
    assert default_catalog().objectives.get("test_from_entry_point").origin == loaded.origin


def test_the_worker_hook_imports_what_the_driver_listed(tmp_path, monkeypatch):
    (tmp_path / "worker_test_plugin.py").write_text(LOSS.format(name="test_on_worker"))
    monkeypatch.syspath_prepend(str(tmp_path))  # where Ray's py_modules puts a shipped file
    monkeypatch.setenv(plugins.PLUGINS_ENV, json.dumps(["worker_test_plugin"]))
    plugins.import_worker_plugins()
    assert "test_on_worker" in default_catalog().objectives


def test_the_documented_loss_works_as_written(tmp_path):
    """docs/plugins.md's "A new loss, in full": its file and spec, verbatim, compile under the spec's own
    experiment (a copy of a tour spec under its old name is refused by a store that ran it)."""
    import re

    import torch
    from objective_fakes import output_of

    from nerplat.objectives.base import ObjectiveContext
    from nerplat.objectives.build import build_objective

    doc = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text()
    section = doc[doc.index("## A new loss, in full") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (tmp_path / "focal_smooth.py").write_text(code)
    spec = tmp_path / "spec.yaml"
    spec.write_text(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    plan = compile_plan(spec, spec_catalog(spec))
    tour = {
        compile_plan(SpecSource(s, p), spec_catalog(s)).experiment
        for s in (Path(__file__).parents[2] / "specs").glob("*.yaml")
        for p in (None, "smoke")
        if p is None or s.stem == "quickstart"
    }
    assert plan.experiment not in tour
    ce, arm = plan.arms
    assert arm.objective == "focal_smooth" and list(arm.search_space) == ["objective.gamma"] and ce.objective == "ce"
    commands = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    assert "nerplat run my_loss/spec.yaml" in commands
    context = ObjectiveContext(labels=["O", "B-PER", "I-PER"], label_counts=[5, 2, 1], max_length=8)
    scores, labels = torch.randn(2, 3, 3, generator=torch.Generator().manual_seed(0)), torch.tensor([[0, 1, 2], [0, 0, 1]])
    plain = build_objective("focal_smooth", {"gamma": 0.0, "smoothing": 0.0}, context)
    expected = torch.nn.functional.cross_entropy(scores.reshape(-1, 3), labels.reshape(-1))
    assert torch.allclose(plain(output_of(scores, labels), labels), expected)
    focal = build_objective("focal_smooth", {"gamma": 2.0, "smoothing": 0.1}, context)
    assert focal(output_of(scores, labels), labels) < plain(output_of(scores, labels), labels)


def test_a_module_plugin_is_shipped_unless_installed(tmp_path, monkeypatch):
    package = tmp_path / "mod_test_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "losses.py").write_text(LOSS.format(name="test_from_module"))
    monkeypatch.syspath_prepend(str(tmp_path))
    (loaded,) = plugins.load_spec_plugins(["mod_test_pkg.losses"], tmp_path, None)
    assert (loaded.module, loaded.ship, loaded.origin) == ("mod_test_pkg.losses", str(package), "plugin mod_test_pkg.losses")
    (installed,) = plugins.load_spec_plugins(["yaml"], tmp_path, None)
    assert installed.ship is None
