"""`nerplat bench startup` for real on a tiny bundle: every command timed twice in new processes (the floor of
5 repeats lowered by `bench.repeats.MIN_REPEATS_VARIABLE`), as JSON."""

import json

import pytest
from tiny_taggers import train_bundle

from nerplat.bench.repeats import MIN_REPEATS_VARIABLE
from nerplat.cli import main


@pytest.mark.slow
def test_bench_startup_times_each_command_and_names_where_predicts_imports_go(tmp_path, capsys, monkeypatch):
    bundle = train_bundle("softmax", tmp_path)
    monkeypatch.setenv(MIN_REPEATS_VARIABLE, "2")
    assert main(["bench", "startup", str(bundle), "--repeats", "2", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in figures["commands"]] == ["--help", "predict", "export", "serve"]
    for command in figures["commands"]:
        for clock in ("wall", "cpu"):
            spread = command[clock]
            assert len(spread["repeats"]) == 2, (command["name"], clock)
            assert 0 < spread["min"] <= spread["median"] <= spread["max"], (command["name"], clock)
    help_cpu, predict_cpu = (figures["commands"][i]["cpu"]["median"] for i in (0, 1))
    assert predict_cpu > help_cpu  # a tagger loaded: torch, transformers and the weights on top of the CLI
    assert "torch" in figures["imports"] and list(figures["imports"])[-1] == "other"
    assert figures["cpu_capability"] and figures["load_before"] >= 0 and figures["repeats"] == 2
