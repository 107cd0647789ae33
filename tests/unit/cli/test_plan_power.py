"""`nerplat plan` says per claim whether the design can decide it, and `nerplat run` stops the arms
of undecidable claims after the first look unless asked not to."""

from __future__ import annotations

import pytest

from nerplat.run.ray_session import Interrupted
from shell_text import joined_continuations

SPEC = """
experiment: power
dataset: conll2003
model: {encoder: tiny, max_length: 64}
train: {epochs: 2, batch_size: 16, lr: 1.0e-3, dev_subset: 100, threads: 1}
samplers: [{low_resource: {size: 40, partitions: 3}}]
methods:
  ce: {loss: ce}
  mom: {loss: mom, lambda: 0.5}
  focal: {loss: focal, gamma: 2.0}
replicate: {seeds: 3, sequential: {max_seeds: 3, look_every: 1}}
claims:
  - {id: weak, paper: x, source: Table 3, method: mom, partner: ce, metric: micro_f1, effect: 0.0033, pilot_sd: 0.0071}
  - {id: strong, paper: x, source: Table 3, method: focal, partner: ce, metric: micro_f1, effect: 0.05, pilot_sd: 0.004}
  - {id: unknown, paper: x, source: Fig. 2, method: focal, partner: mom, metric: micro_f1, effect: 0.01}
"""


@pytest.fixture
def spec(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one printed line per line
    path = tmp_path / "power.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return str(path)


def test_plan_prints_each_claims_pilot_sd_power_and_units_and_marks_the_undecidable(spec, capsys):
    from nerplat.cli import main

    assert main(["plan", spec]) == 0
    lines = capsys.readouterr().out.splitlines()
    weak = next(line for line in lines if line.startswith("  claim weak: "))
    assert weak.startswith(
        "  claim weak: pilot sd 0.0071 (the claim's pilot_sd); paper effect +0.0033 = 0.46 sd; fixed design power 0.0"
    )
    assert "at 3 partitions (alpha 0.0167)" in weak and "undecidable at this budget (needs " in weak
    strong = next(line for line in lines if line.startswith("  claim strong: "))
    assert "= 12.50 sd; fixed design power 1.00 at 3 partitions" in strong and "undecidable" not in strong
    assert "the sequential design (looks at [3]): power 1.00, 3.0 partitions expected at stopping" in strong
    assert "  claim unknown: no pilot sd: power unknown" in lines
    assert any(line.startswith("claim weak: 2 arms, 0 tune trials, at most 3 partitions (sequential") for line in lines)
    assert lines[-1] == (
        "undecidable at this budget: weak: arms in no other claim stop after the first look "
        "(nerplat run --replicate-undecidable replicates them on)"
    )


def test_a_missing_pilot_folder_is_refused(spec, tmp_path, capsys):
    from nerplat.cli import main

    assert main(["plan", spec, "--pilot", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.split())  # the error console keeps the COLUMNS it was made under
    assert "holds neither runs.parquet nor mlflow.db" in err


def test_run_stops_undecidable_claims_arms_after_the_first_look_unless_asked(spec, monkeypatch, capsys):
    from nerplat.cli import main
    from nerplat.run import runner

    seen = []

    def interrupted(self):
        seen.append(self.undecidable)
        raise Interrupted()

    monkeypatch.setattr(runner.ExperimentRunner, "run", interrupted)
    assert main(["run", spec]) == 130
    out = joined_continuations(capsys.readouterr().out)
    assert "claim weak: pilot sd 0.0071" in out and "undecidable at this budget: weak: arms in no other claim stop" in out
    assert "--resume" in out.splitlines()[-1] and "--replicate-undecidable" not in out.splitlines()[-1]
    assert main(["run", spec, "--replicate-undecidable"]) == 130
    out = joined_continuations(capsys.readouterr().out)
    assert "weak: replicated to the end anyway (--replicate-undecidable)" in out
    assert out.splitlines()[-1].endswith("--replicate-undecidable --resume")
    assert seen == [frozenset({"weak"}), frozenset()]
