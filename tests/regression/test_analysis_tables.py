"""Golden files for every table layout on a fixed synthetic frame, in every format.

Regenerate (after checking the change is intended) with:
    NERPLAT_UPDATE_GOLDENS=1 pytest tests/regression/test_analysis_tables.py
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from nerplat.analysis import context_tables, tables as layouts
from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.compare import setting_axes
from nerplat.analysis.render import EXTENSIONS, RENDERERS
from nerplat.analysis.report import paired_comparisons
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates
from nerplat.analysis.table_model import Table

GOLDENS = Path(__file__).parent / "goldens" / "analysis"
UPDATE = os.environ.get("NERPLAT_UPDATE_GOLDENS") == "1"
SETTINGS = AnalysisSettings(baseline="ce", comparisons=(("mom", "focal"),), bootstrap_resamples=500, seed=0)
SPLIT = {
    "sentences": 1200, "tokens": 20500, "mentions_per_type": {"PER": 30, "LOC": 12}, "pct_B": 2.04, "pct_I": 1.5, "pct_O": 96.46
}


def _frame() -> pl.DataFrame:
    """Two corpora, three sizes, three methods, two heads, four seeds; one ce run missing."""
    frame = synthetic_replicates(
        datasets=("conll2003", "wnut17"), sizes=(20, 50, 100), methods=("ce", "focal", "mom"),
        heads=("softmax", "crf"), seeds=4, types=("LOC", "PER", "MISC"), seed=2024,
    )
    return frame.filter(
        ~((pl.col("method") == "ce") & (pl.col("seed") == 3) & (pl.col("size") == 20) & (pl.col("head") == "crf"))
    )


def _resampling_frame() -> pl.DataFrame:
    """Samplers with different size factors, for the size-factor table."""
    factors = {"full": 1.0, "sC": 3.8, "sCR": 4.6}
    base = synthetic_replicates(datasets=("anem", "wnut17"), sizes=(1000,), methods=("ce",), seeds=2, types=())
    frames = [
        base.with_columns(pl.lit(name).alias("sampler"), pl.lit(name).alias("sampler_label"),
                          pl.lit(name).alias("sampler_family"),
                          (pl.col("train_size_factor") * factor + pl.col("seed") * 0.01).alias("train_size_factor"))
        for name, factor in factors.items()
    ]
    return pl.concat(frames)


CHOSEN = pl.DataFrame({
    "arm": ["conll2003/low_resource-20/mom", "conll2003/low_resource-20/focal", "wnut17/low_resource-20/mom"],
    "param.objective.gamma": [None, 2.0, None],
    "param.objective.lambda": [0.3512, None, 0.05],
    "param.train.lr": [2e-5, 5e-5, 3e-5],
    "dev_best_micro_f1": [0.6123, 0.5987, 0.4012],
})


def _layouts() -> dict[str, Table]:
    frame = _frame()
    axes = setting_axes(frame)
    summary = summarise(frame, metric_columns(frame), SETTINGS)
    comparison = paired_comparisons(frame, SETTINGS, axes)
    resampling = _resampling_frame()
    return {
        "size": layouts.size_tables(summary, SETTINGS, axes)[0],
        "comparison": layouts.comparison_tables(summary, comparison.tests, comparison.missing, SETTINGS, axes)[0],
        "grid": layouts.grid_tables(summary, SETTINGS)[0],
        "per_type": layouts.per_type_tables(summary, SETTINGS, axes)[0],
        "dataset": context_tables.dataset_table(
            {"toy": {"train": SPLIT, "test": SPLIT}, "toy_b": {"train": SPLIT, "dev": SPLIT, "test": SPLIT}}
        ),
        "size_factor": context_tables.size_factor_table(summarise(resampling, ["train_size_factor"], SETTINGS)),
        "tests": layouts.tests_table(
            comparison.tests.filter(pl.col("family") == "pairs"), SETTINGS, "tests-pairs", "Paired tests of mom against focal."
        ),
        "chosen": context_tables.chosen_table(CHOSEN),
    }


TABLES = _layouts()


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
@pytest.mark.parametrize("layout", sorted(TABLES))
def test_table_matches_its_golden(layout: str, fmt: str):
    text = RENDERERS[fmt](TABLES[layout])
    golden = GOLDENS / f"{layout}.{EXTENSIONS[fmt]}"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden {golden.name}: run with NERPLAT_UPDATE_GOLDENS=1 to create it"
    assert text == golden.read_text(encoding="utf-8"), (
        f"{layout} ({fmt}) changed; if intended, regenerate with NERPLAT_UPDATE_GOLDENS=1"
    )
