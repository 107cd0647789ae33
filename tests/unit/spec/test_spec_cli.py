"""`nerplat validate`, `nerplat plan` and `nerplat registry` through the real CLI entry point."""

import json

import pytest

from nerplat.catalog import default_catalog
from nerplat.cli import main
from nerplat.plan.model import Plan

GOOD = """\
experiment: cli_check
dataset: {path: corpus}
model: {encoder: tiny, max_length: 64}
train: {epochs: 2, batch_size: 4}
methods:
  ce: {loss: ce}
replicate: {seeds: 2}
profiles:
  short: {train: {epochs: 1}}
"""
BROKEN = "experiment: cli_check\ndataset: {path: corpus}\nmethods:\n  ce: {loss: ce}\n  ce: {loss: cee}\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder with a tiny corpus; the tests check that nothing else appears in it."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "train.txt").write_text("EU\tB-ORG\nrejects\tO\n\n")
    (tmp_path / "corpus" / "test.txt").write_text("EU\tB-ORG\n\n")  # replicates evaluate on test
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "broken.yaml").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_validate_reports_every_problem_and_exits_2_writing_nothing(folder, capsys):
    before = listing(folder)
    assert main(["validate", "good.yaml", "broken.yaml"]) == 2
    out, err = capsys.readouterr()
    assert "OK good.yaml (profiles: short)" in out
    err = " ".join(err.split())
    assert "duplicate key 'ce' (first defined on line 4) at methods.ce (broken.yaml:5)" in err
    assert "unknown loss 'cee'; did you mean 'ce'?" in err and "at methods.ce.loss (broken.yaml:5)" in err
    assert listing(folder) == before


def test_validate_reports_problems_of_a_profile(folder, capsys):
    (folder / "good.yaml").write_text(GOOD.replace("epochs: 1", "epochs: 0"))
    assert main(["validate", "good.yaml"]) == 2
    assert "profiles.short.train.epochs (good.yaml:9)" in " ".join(capsys.readouterr().err.split())


def test_plan_says_when_runs_choose_their_checkpoint_without_a_search(folder, capsys):
    (folder / "good.yaml").write_text(GOOD + "tune: {metric: dev_macro_f1}\n")
    assert main(["plan", "good.yaml"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no search: every run chooses its checkpoint on dev_macro_f1 (mode max)" in out
    assert "scheduler" not in out


def test_validate_ok(folder, capsys):
    assert main(["validate", "good.yaml", "--profile", "short"]) == 0
    assert capsys.readouterr().out.strip() == "OK good.yaml (profiles: short)"


def test_plan_prints_a_table_and_json(folder, capsys):
    assert main(["plan", "good.yaml"]) == 0
    out = capsys.readouterr().out
    assert "│ ce " in out and "corpus/full/ce" not in out  # the arm's short label; its id is in --json
    assert "dataset: corpus" in out and "1 arms, 0 tune trials, 2 replicate runs: 2 trials in all" in out
    assert main(["plan", "good.yaml", "--profile", "short", "--json"]) == 0
    plan = Plan.model_validate_json(capsys.readouterr().out)
    assert plan.profile == "short" and plan.arms[0].fixed["train"]["epochs"] == 1


def test_validate_and_plan_warn_about_bf16_on_a_cpu_that_emulates_it(folder, capsys, monkeypatch):
    from nerplat.trial import device

    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx2"}))
    for command in ("validate", "plan"):
        assert main([command, "good.yaml", "--profile", "short", "--set", "train.precision=bf16"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert f"torch CPU capability {device.cpu_capability()}" in out, command
        assert "train.precision bf16 (method ce) on a CPU without bf16 units" in out and "bf16 is emulated there" in out
        assert main([command, "good.yaml", "--set", "train.precision=auto"]) == 0
        assert "emulated" not in capsys.readouterr().out
    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    monkeypatch.setattr(device.torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert main(["validate", "good.yaml", "--set", "train.precision=bf16"]) == 0
    assert "emulated" not in capsys.readouterr().out


def test_plan_of_a_broken_spec_exits_2(folder, capsys):
    assert main(["plan", "broken.yaml", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "unknown loss 'cee'" in err


def test_registry_lists_every_registry_with_entry_parameters(capsys):
    assert main(["registry", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert set(listing) == set(default_catalog().registries())
    samplers = {entry["name"]: entry for entry in listing["samplers"]}
    size = next(p for p in samplers["low_resource"]["params"] if p["name"] == "size")
    assert size["required"] and size["type"] == "int" and size["description"]
    assert samplers["low_resource"]["summary"]
    assert main(["registry"]) == 0
    assert "low_resource" in capsys.readouterr().out
