"""Verdicts from a committed report's frames, and the generated verdict table."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from nerplat.analysis import verdict_context
from nerplat.analysis.convergence import VERDICT_COLUMNS as CONVERGENCE_COLUMNS
from nerplat.analysis.committed import (
    FOREST_PLOT,
    SUMMARY_END,
    SUMMARY_START,
    TABLE_END,
    TABLE_START,
    claims_tables,
    reanalyse_report,
    update_readme,
    verdict_table,
)
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.verdicts import VERDICT_COLUMNS
from nerplat.config.experiment import Claim
from nerplat.errors import UserInputError

REPORT = Path(__file__).resolve().parents[3] / "docs" / "results" / "mom_conll"
CLAIMS = (
    Claim(id="mom_vs_ce", paper="Nemoto et al. 2024", source="Table 3", method="mom", partner="ce", metric="macro_f1",
          effect=0.0033),
    Claim(id="mom_vs_best_other", paper="Nemoto et al. 2024", source="Table 3", method="mom", partner="best_other",
          metric="macro_f1", effect=0.0016),
)


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the committed report to analyse again. ASO's bootstrap, half of an analysis's CPU at its 200
    iterations, runs 20: these tests read no eps_min."""
    monkeypatch.setattr(verdict_context, "ASO_ITERATIONS", 20)
    copy = tmp_path / "results" / "mom_conll"
    shutil.copytree(REPORT, copy)
    (copy / "verdicts.parquet").unlink(missing_ok=True)
    return copy


def test_a_committed_report_is_analysed_again_from_its_frames_with_its_claims(report: Path):
    (report / "notes.txt").write_text("mine", encoding="utf-8")
    (report / ".nerplat-report.json").unlink(missing_ok=True)  # as reports made before reports listed their files
    (report / "epochs.parquet").unlink(missing_ok=True)  # and before they kept their dev curves: read from the tables
    written = reanalyse_report(report, AnalysisSettings(claims=CLAIMS, average="macro"), "mom_conll")
    judged = pl.read_parquet(report / "verdicts.parquet")
    assert tuple(judged.columns) == VERDICT_COLUMNS and judged["claim"].to_list() == ["mom_vs_ce", "mom_vs_best_other"]
    assert {"summary.parquet", "tests.parquet", "epochs.parquet", "report.md"} <= {p.name for p in written}
    assert set(CONVERGENCE_COLUMNS) <= set(pl.read_parquet(report / "summary.parquet").columns)
    epochs = pl.read_parquet(report / "epochs.parquet")
    assert epochs["metric"].unique().to_list() == ["dev_macro_f1"] and epochs["run_id"].n_unique() == judged["n_pairs"].max() * 3
    assert (report / "notes.txt").read_text(encoding="utf-8") == "mine" and (report / "RUN.md").is_file()
    runs = pl.read_parquet(report / "runs.parquet")
    for row in judged.iter_rows(named=True):
        assert row["n_pairs"] == runs.filter(pl.col("method") == "mom").height
        assert row["ci_low"] <= row["delta"] <= row["ci_high"]
        direction = "reproduced" if row["ci_low"] > 0 else "opposite" if row["ci_high"] < 0 else "inconclusive"
        assert (
            row["direction_verdict"] == direction and row["verdict"] == (direction if row["converged"] else "inconclusive")
        ), row
        assert (row["unit"], row["n_units"]) == ("seed", row["n_pairs"]) and row["magnitude_verdict"] == "not comparable"
        assert row["method_trials"] > 0 and "objective.lambda" in row["method_searched"]


def test_a_report_older_than_the_stopping_columns_reads_convergence_from_its_fits(report: Path):
    stopping = ("stopped_by", "stopped_epoch", "converged_run")  # what runs tagged nerplat.stopped_by carry
    runs = pl.read_parquet(report / "runs.parquet").drop(stopping, strict=False)  # a report older than the tag
    runs.with_columns(pl.lit(1.0).alias("fit_converged")).write_parquet(report / "runs.parquet")
    reanalyse_report(report, AnalysisSettings(claims=CLAIMS, average="macro"), "mom_conll")
    assert pl.read_parquet(report / "verdicts.parquet")["converged"].to_list() == [True, True]
    assert pl.read_parquet(report / "runs.parquet")["converged_run"].to_list() == [True] * runs.height


def test_the_claims_table_and_summary_are_generated_between_the_readme_markers(report: Path, tmp_path: Path):
    reanalyse_report(report, AnalysisSettings(claims=CLAIMS, average="macro"), "mom_conll")
    tables = claims_tables(report.parent, {}, FOREST_PLOT)
    table = tables.markdown
    rows = [line for line in table.splitlines() if line.startswith("| mom_vs")]
    assert len(rows) == 2  # no registrations: both claims exploratory, one row each
    assert rows[1].startswith("| mom_vs_ce | macro_f1 | mom vs ce |") and "[mom_conll](mom_conll/report.md)" in rows[1]
    assert table == verdict_table(report.parent)
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# Results\n\n{SUMMARY_START}\nold summary\n{SUMMARY_END}\n\nprose\n\n{TABLE_START}\nold, typed by hand\n{TABLE_END}\n\n"
        "after\n", encoding="utf-8")
    update_readme(readme, table, tables.summary)
    text = readme.read_text(encoding="utf-8")
    assert "typed by hand" not in text and "old summary" not in text and table in text and tables.summary in text
    assert text.endswith(f"{TABLE_END}\n\nafter\n") and text.index(tables.summary) < text.index("prose")
    assert f"]({FOREST_PLOT})" in tables.summary and tables.forest is not None
    readme.write_text(f"{TABLE_START}\n{TABLE_END}\n", encoding="utf-8")
    with pytest.raises(UserInputError, match="no summary markers"):
        update_readme(readme, table, tables.summary)
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(UserInputError, match="no verdict markers"):
        update_readme(readme, table)


def test_an_arm_without_tune_trials_takes_its_epoch_cap_from_the_plan():
    import polars as pl

    from nerplat.analysis.committed import arms_from_runs
    from nerplat.analysis.verdict_context import arm_frame

    replicates = pl.DataFrame({"arm": ["a/ce", "a/mom"]})
    trials = pl.DataFrame(
        {"arm": ["a/mom", "a/mom"], "status": ["completed"] * 2, "param.train.epochs": ["30", "30"],
         "param.train.lr": ["0.1", "0.2"]}
    )
    planned = arm_frame(
        {"arms": [{"id": "a/ce", "fixed": {"train": {"epochs": 20}}}, {"id": "a/mom", "fixed": {"train": {"epochs": 25}}}]}
    )
    epochs = dict(arms_from_runs(replicates, trials, planned).select("arm", "epochs").iter_rows())
    assert epochs == {"a/ce": 20, "a/mom": 30}  # the runs' own record wins where they have one
    assert dict(arms_from_runs(replicates, trials).select("arm", "epochs").iter_rows())["a/ce"] is None


def test_only_finished_tune_trials_count_as_tuning_effort():
    """A resumed run's interrupted trials once counted: method_trials 6 for a search of 4 (issue 47)."""
    from nerplat.analysis.committed import arms_from_runs

    replicates = pl.DataFrame({"arm": ["a/mom"]})
    statuses = ["completed", "interrupted", "completed", "early_stopped", "interrupted", "completed", "failed"]
    trials = pl.DataFrame({
        "arm": ["a/mom"] * len(statuses), "status": statuses,
        "param.objective.lambda": ["0.1", "0.9", "0.2", "0.3", "0.8", "0.4", "0.7"],
    })  # fmt: skip
    row = arms_from_runs(replicates, trials).row(0, named=True)
    assert row["tune_trials"] == 4 and row["searched"] == "objective.lambda"
