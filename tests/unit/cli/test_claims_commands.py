"""`nerplat claims table` and `nerplat reanalyze` on hostile folders and files: exit 2 with a message
naming the file and what to do, nothing written; a README reached through a symlink stays one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from nerplat.analysis.committed import FOREST_PLOT, SUMMARY_END, SUMMARY_START, TABLE_END, TABLE_START
from nerplat.cli import main

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results"
TINY = Path(__file__).resolve().parents[2] / "fixtures" / "corpora" / "tiny"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A results folder with one committed report's verdicts.parquet."""
    report = tmp_path / "results" / "mom_conll"
    report.mkdir(parents=True)
    shutil.copy(RESULTS / "mom_conll" / "verdicts.parquet", report)
    return report.parent


def readme_in(folder: Path) -> Path:
    readme = folder / "README.md"
    readme.write_text(f"# Results\n\n{TABLE_START}\nold\n{TABLE_END}\n", encoding="utf-8")
    return readme


def refused(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_missing_root_is_named(tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    assert f"{missing} does not exist: give the folder" in refused(capsys, "claims", "table", str(missing))


@pytest.mark.parametrize("damage", ["truncated", "wrong schema"])
def test_a_damaged_verdicts_parquet_is_named(root, capsys, damage):
    verdicts = root / "mom_conll" / "verdicts.parquet"
    if damage == "truncated":
        truncate(verdicts)
        expected = f"cannot read {verdicts} as a parquet file"
    else:
        pl.DataFrame({"claim": [1]}).write_parquet(verdicts)
        expected = f"{verdicts} is not a report's verdicts.parquet: it lacks the columns claim (String), paper (String)"
    err = refused(capsys, "claims", "table", str(root))
    assert expected in err and "restore it from git" in err


@pytest.mark.parametrize("target", ["missing", "folder"])
def test_a_readme_that_is_missing_or_a_folder_is_named(root, tmp_path, capsys, target):
    readme = tmp_path / "README.md"
    if target == "folder":
        readme.mkdir()
    err = refused(capsys, "claims", "table", str(root), "--readme", str(readme))
    assert f"cannot read {readme}:" in err and "--readme" in err
    assert readme.is_dir() == (target == "folder") and not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_a_readme_symlink_is_written_through_and_kept(root, tmp_path, capsys):
    real = readme_in(tmp_path / "results")
    link = tmp_path / "README.md"
    link.symlink_to(real)
    assert main(["claims", "table", str(root), "--readme", str(link)]) == 0
    assert link.is_symlink() and link.resolve() == real
    text = real.read_text(encoding="utf-8")
    assert "| mom_vs_ce_3pct | " in text and "[mom_conll](mom_conll/report.md)" in text and "\nold\n" not in text


def test_a_readme_with_summary_markers_gets_the_summary_and_the_forest_plot_beside_it(root, tmp_path, capsys):
    readme = tmp_path / "results" / "README.md"
    readme.write_text(f"# Results\n\n{SUMMARY_START}\n{SUMMARY_END}\n\n{TABLE_START}\nold\n{TABLE_END}\n", encoding="utf-8")
    registrations = tmp_path / "registered"  # none: every claim is exploratory
    assert main(["claims", "table", str(root), "--readme", str(readme), "--registrations", str(registrations)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert "**0 registered claims**" in text and f"]({FOREST_PLOT})" in text
    assert (readme.parent / FOREST_PLOT).read_bytes().startswith(b"\x89PNG")


def test_reanalyze_of_a_damaged_runs_parquet_is_named_and_writes_nothing(tmp_path, capsys):
    report = tmp_path / "mom_conll"
    shutil.copytree(RESULTS / "mom_conll", report)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"experiment: mom_conll\ndataset: {{path: {json.dumps(str(TINY))}}}\nmethods: {{ce: {{loss: ce}}}}\n")
    before = {p: p.read_bytes() for p in report.rglob("*") if p.is_file()}
    truncate(report / "runs.parquet")
    err = refused(capsys, "reanalyze", str(report), "--spec", str(spec))
    assert f"cannot read {report / 'runs.parquet'} as a parquet file" in err
    pl.DataFrame({"run_id": ["a"]}).write_parquet(report / "runs.parquet")
    err = refused(capsys, "reanalyze", str(report), "--spec", str(spec))
    assert f"{report / 'runs.parquet'} is not a report's runs.parquet: it lacks the columns arm (String)" in err
    after = {p: p.read_bytes() for p in report.rglob("*") if p.is_file() and p.name != "runs.parquet"}
    assert after == {p: data for p, data in before.items() if p.name != "runs.parquet"}


def test_a_reading_prints_a_committed_reports_pairs_in_other_metrics(capsys):
    """The README's sentence and word accuracy readings of mom_vs_focal_3pct, from the command it names."""
    spec = RESULTS.parents[1] / "specs" / "mom_conll.yaml"
    argv = ["claims", "reading", str(RESULTS / "mom_conll-cpu-mom-focal"), "--spec", str(spec), "-p", "cpu-mom-focal",
            "--claim", "mom_vs_focal_3pct", "--metric", "sentence_accuracy", "--metric", "word_accuracy"]
    assert main(argv) == 0
    sentence, word = capsys.readouterr().out.splitlines()
    assert sentence.startswith("mom_vs_focal_3pct, sentence_accuracy (conll2003 fraction(f=0.03)): mom 0.6573")
    assert "focal 0.6472" in sentence and "difference +0.0102" in sentence and "mom ahead on 12 of 15" in sentence
    assert "difference +0.0012" in word and "mom ahead on 11 of 15; paired t p 0.0203, unadjusted" in word
    err = refused(capsys, *argv[:7], "--claim", "mom_vs_ce", "--metric", "sentence_accuracy")
    assert "the spec declares no claim 'mom_vs_ce': give --claim as one of mom_vs_focal_3pct" in err
