"""`nerplat claims register` and `nerplat claims registrations`: a registration beside the spec, and
every refusal with exit 2 and nothing written."""

from __future__ import annotations

import pytest

from nerplat.cli import main

SPEC = """
experiment: confirm
dataset: conll2003
model: {encoder: tiny, max_length: 64}
train: {epochs: 2, batch_size: 16, lr: 1.0e-3, dev_subset: 100, threads: 1}
methods:
  ce: {loss: ce}
  mom: {loss: mom, lambda: 0.5}
replicate: {seeds: [3, 4, 5, 6], sequential: {max_seeds: 4, look_every: 1}}
claims:
  - {id: mom_vs_ce, paper: x, source: Table 3, method: mom, partner: ce, metric: micro_f1, effect: 0.0033}
  - {id: mom_vs_best, paper: x, source: Table 3, method: mom, partner: best_other, metric: micro_f1, effect: 0.01}
"""


@pytest.fixture
def spec(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one printed line per line
    path = tmp_path / "specs" / "confirm.yaml"
    path.parent.mkdir()
    path.write_text(SPEC, encoding="utf-8")
    return path


def test_register_writes_the_claim_beside_the_spec_and_lists_it(spec, capsys):
    assert main(["claims", "register", str(spec), "--claim", "mom_vs_ce"]) == 0
    out = capsys.readouterr().out
    written = spec.parent / "registered" / "mom_vs_ce.yaml"
    assert f"mom_vs_ce: registered in {written}" in out and "seeds 3, 4, 5, 6" in out
    assert main(["claims", "registrations", str(written.parent)]) == 0
    listed = capsys.readouterr().out
    assert "mom_vs_ce: digest" in listed and "looks at [3, 4] of 4, obrien_fleming" in listed
    assert "not committed (no registration date yet)" in listed


@pytest.mark.parametrize("argv, message", [
    ([], "its partner is best_other"),  # every claim: one refused, none written
    (["--claim", "nope"], "unknown claim 'nope'"),
    (["--profile", "nope"], "unknown profile"),
])
def test_bad_input_exits_2_and_writes_nothing(spec, capsys, argv, message):
    assert main(["claims", "register", str(spec), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (spec.parent / "registered").exists()


def test_units_an_earlier_registration_held_are_refused(spec, capsys):
    assert main(["claims", "register", str(spec), "--claim", "mom_vs_ce"]) == 0
    path = spec.parent / "registered" / "mom_vs_ce.yaml"
    before = path.read_text(encoding="utf-8")
    spec.write_text(SPEC.replace("[3, 4, 5, 6]", "[6, 7, 8, 9]"), encoding="utf-8")
    capsys.readouterr()
    assert main(["claims", "register", str(spec), "--claim", "mom_vs_ce", "--replace"]) == 2
    assert "already holds seeds [6] of claim mom_vs_ce" in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == before


def test_a_missing_registrations_folder_is_named(tmp_path, capsys):
    assert main(["claims", "registrations", str(tmp_path / "none")]) == 2
    assert "is not a folder: give the registrations' folder" in capsys.readouterr().err
