"""Every committed report (docs/results/<name>/) has the columns the current analysis writes in its frames.

The expected columns are not listed here: they are what `analysis.report.analyse` writes today for a
small synthetic experiment, so a new column in the analysis makes every report that predates it fail
until it is regenerated (`docs/results/reproduce.sh <spec> [profile]`, the command in its RUN.md).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import polars as pl
import pytest
import yaml
from repo_paths import REPO

from nerplat.analysis.committed import FOREST_PLOT, SUMMARY_END, SUMMARY_START, TABLE_END, TABLE_START, claims_tables
from nerplat.analysis.registrations import load_registrations
from nerplat.analysis.report import analyse
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates

RESULTS = REPO / "docs" / "results"
REPORTS = sorted(
    folder for folder in RESULTS.iterdir() if (folder / "RUN.md").is_file() or (folder / "summary.parquet").is_file()
)
FRAMES = ("summary", "tests")


@lru_cache(maxsize=1)
def written_columns() -> dict[str, list[str]]:
    """The columns of each frame the analysis writes, for two sizes, three methods and three seeds."""
    replicates = synthetic_replicates(sizes=(20, 50), seeds=3)
    analysis = analyse(
        replicates, pl.DataFrame(), AnalysisSettings(baseline="ce", comparisons=(("mom", "focal"),), bootstrap_resamples=100)
    )
    return {"summary": analysis.summary.columns, "tests": analysis.tests.columns}


def test_the_synthetic_experiment_fills_both_frames():
    columns = written_columns()
    assert {"mean", "se", "ci_low", "ci_high", "converged"} <= set(columns["summary"])
    assert {"p_value", "p_holm", "mde", "n_needed"} <= set(columns["tests"])


def test_the_results_readme_holds_the_claims_table_the_reports_generate():
    """The README's summary and claims table are `nerplat claims table docs/results --readme ...`'s output
    from the committed verdicts.parquet files and specs/registered, never typed or left behind a rerun
    report or a new registration."""
    text = (RESULTS / "README.md").read_text(encoding="utf-8")
    tables = claims_tables(RESULTS, load_registrations(REPO / "specs" / "registered"), FOREST_PLOT)
    assert text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0] == "\n" + tables.markdown
    assert text.split(SUMMARY_START, 1)[1].split(SUMMARY_END, 1)[0] == "\n" + tables.summary
    assert text.index(SUMMARY_START) < text.index("\n## ")  # the summary opens the README, before the prose
    assert (RESULTS / FOREST_PLOT).is_file()


def test_entity_ratio_runs_the_configurations_the_committed_auc2t_report_chose():
    """specs/entity_ratio.yaml's cpu profile types in what auc2t_lowres_conll's search chose on 100 untyped
    sentences (3 significant digits); rerunning that report without updating the spec fails here."""
    methods = yaml.safe_load((REPO / "specs" / "entity_ratio.yaml").read_text(encoding="utf-8"))["profiles"]["cpu"]["methods"]
    typed = {method: settings["train"] for method, settings in methods.items() if settings}  # null drops an arm
    chosen = pl.read_parquet(RESULTS / "auc2t_lowres_conll" / "chosen.parquet").filter(
        pl.col("arm").str.contains("low_resource-100/") & pl.col("method").is_in(list(typed))
    )
    assert chosen.height == len(typed) == 3
    for row in chosen.iter_rows(named=True):
        train = typed[row["method"]]
        assert (train["lr"], train["head_lr"]) == (
            float(f"{row['param.train.lr']:.3g}"), float(f"{row['param.train.head_lr']:.3g}")
        ), row["method"]


def test_there_are_committed_reports():
    assert len(REPORTS) >= 2, f"no report folders found under {RESULTS}"


@pytest.mark.parametrize("report", REPORTS, ids=lambda folder: folder.name)
@pytest.mark.parametrize("frame", FRAMES)
def test_a_committed_report_has_every_column_the_analysis_writes(report: Path, frame: str):
    path = report / f"{frame}.parquet"
    assert path.is_file(), f"{path.relative_to(REPO)} is missing: regenerate the report ({report.name}/RUN.md has the command)"
    missing = [column for column in written_columns()[frame] if column not in pl.read_parquet_schema(path)]
    assert not missing, (
        f"{path.relative_to(REPO)} lacks {', '.join(missing)}, which the current analysis writes: regenerate the report "
        f"with the command in {report.name}/RUN.md (docs/results/reproduce.sh)"
    )
