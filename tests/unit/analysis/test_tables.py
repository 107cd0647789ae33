"""Table layouts built from summary and test frames."""

from __future__ import annotations

import polars as pl
import pytest

from nerplat.analysis import context_tables, tables as layouts
from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.report import paired_comparisons
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates
from nerplat.analysis.table_model import Cell, Column, Row, Table, ranked, slug

SETTINGS = AnalysisSettings(baseline="ce", bootstrap_resamples=200)


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return synthetic_replicates(methods=("mom", "ce", "focal"), sizes=(20, 50), seeds=4, types=("PER", "LOC"))


@pytest.fixture(scope="module")
def summary(frame) -> pl.DataFrame:
    return summarise(frame, metric_columns(frame), SETTINGS)


def _values(table: Table, row: str) -> list[float | None]:
    (found,) = [r for r in table.rows if r.label == row]
    return [c.value for c in found.cells]


def test_ranks_mark_best_and_second_on_printed_values():
    table = Table("t", "c", "m", (Column("", "a"), Column("", "b", ranked=False)), (
        Row("x", (Cell(0.91234), Cell(0.1))),
        Row("y", (Cell(0.91231), Cell(0.9))),  # prints as 0.9123 too: shares the best rank
        Row("z", (Cell(0.5), Cell(0.5))),
        Row("w", (Cell(0.2), Cell())),
    ))
    ranks = [[c.rank for c in r.cells] for r in ranked(table).rows]
    assert ranks == [[1, None], [1, None], [2, None], [None, None]]


def test_a_column_with_one_value_is_not_ranked():
    table = Table("t", "c", "m", (Column("", "a"),), (Row("x", (Cell(0.5),)), Row("y", (Cell(),))))
    assert ranked(table).rows[0].cells[0].rank is None


def test_size_table_has_sizes_by_measure_columns_and_se(summary):
    (table,) = layouts.size_tables(summary, SETTINGS)
    assert [(c.group, c.name) for c in table.columns[:4]] == [("20", "P"), ("20", "R"), ("20", "F1"), ("50", "P")]
    assert [r.label for r in table.rows] == ["ce", "focal", "mom"]
    assert all(c.se is not None for r in table.rows for c in r.cells)
    assert sum(c.rank == 1 for r in table.rows for c in r.cells) >= len(table.columns)


def test_comparison_table_shows_deltas_and_marks_only_significant_cells(frame, summary):
    tests = paired_comparisons(frame, SETTINGS, []).tests
    tables = layouts.comparison_tables(summary, tests, tests.clear(), SETTINGS)
    table = next(t for t in tables if "size-50" in t.name)
    ce, mom = table.rows[0], next(r for r in table.rows if r.label == "mom")
    assert all(c.delta is None for c in ce.cells)
    assert mom.cells[2].delta == pytest.approx(mom.cells[2].value - ce.cells[2].value)
    family = tests.filter(pl.col("family") == layouts.comparison_family("low_resource(size=50, partitions=1)"))
    significant = family.filter((pl.col("method") == "mom") & (pl.col("metric") == "test_micro_f1"))["significant"][0]
    assert mom.cells[2].significant == significant
    assert any("Holm-corrected within each metric across its 2 tests" in n for n in table.notes)


def test_comparison_table_counts_unpaired_runs_in_a_note(frame, summary):
    gap = frame.filter(~((pl.col("method") == "ce") & (pl.col("seed") == 0)))
    comparison = paired_comparisons(gap, SETTINGS, [])
    tables = layouts.comparison_tables(
        summarise(gap, metric_columns(gap), SETTINGS), comparison.tests, comparison.missing, SETTINGS
    )
    assert any("2 runs without a matched partner" in n for n in tables[0].notes)
    # the difference in parentheses is the matched runs' (seeds 1-3), not the four mom runs' mean minus ce's three
    table = next(t for t in tables if "size-50" in t.name)
    mom = next(r for r in table.rows if r.label == "mom")
    tested = comparison.tests.filter(
        (pl.col("method") == "mom") & (pl.col("partner") == "ce") & (pl.col("metric") == "test_micro_f1")
        & pl.col("sampler").str.contains("size=50")
    )
    assert mom.cells[2].delta == pytest.approx(tested["delta"][0])
    assert mom.cells[2].delta != pytest.approx(mom.cells[2].value - table.rows[0].cells[2].value)


def test_grid_table_leaves_blank_where_a_method_was_not_run():
    grid = synthetic_replicates(methods=("ce", "focal"), heads=("softmax", "crf"), sizes=(100,), seeds=2, types=())
    grid = grid.filter(~((pl.col("method") == "focal") & (pl.col("head") == "crf")))  # focal does not apply to CRF
    (table,) = layouts.grid_tables(summarise(grid, ["test_micro_f1"], SETTINGS), SETTINGS)
    assert [c.name for c in table.columns] == ["crf", "softmax"]
    assert table.row_header == "Method"
    assert _values(table, "focal")[0] is None and _values(table, "focal")[1] is not None


def test_per_type_table_orders_rarest_first_and_ends_with_the_macro_average(summary):
    table = layouts.per_type_tables(summary, SETTINGS)[0]
    assert [r.label for r in table.rows] == ["PER", "LOC", "Macro-avg"]  # PER support 100, LOC 200
    assert table.rows[-1].rule_above
    mom = [c for c, col in zip(table.rows[0].cells, table.columns) if col.group == "mom"]
    ce = [c for c, col in zip(table.rows[0].cells, table.columns) if col.group == "ce"]
    assert all(c.arrow == ("up" if c.value > b.value else "down") for c, b in zip(mom, ce))
    assert all(c.arrow == "" for c in ce)
    assert table.rows[0].cells[-1].value == 100


def test_dataset_table_from_plain_statistics():
    split = {
        "sentences": 1200, "tokens": 20500, "mentions_per_type": {"PER": 30, "LOC": 12}, "pct_B": 2.0, "pct_I": 1.5, "pct_O": 96.5
    }
    table = context_tables.dataset_table({"toy": {"train": split, "test": split}})
    cells = [c.text for c in table.rows[0].cells]
    assert cells[:3] == ["1,200", "", "1,200"]  # no dev split: blank
    assert cells[6:9] == ["42", "", "42"]
    assert cells[9] == "2.0 / 1.5 / 96.5" and cells[-1] == "2"


def test_size_factor_table_averages_over_datasets(summary):
    rows = pl.DataFrame({
        "sampler": ["sCR", "sCR", "full"], "dataset": ["a", "b", "a"], "metric": ["train_size_factor"] * 3,
        "mean": [4.0, 5.0, 1.0],
    })
    table = context_tables.size_factor_table(rows)
    assert [r.label for r in table.rows] == ["full", "sCR"]
    assert _values(table, "sCR") == [4.0, 5.0, 4.5]
    assert _values(table, "full") == [1.0, None, 1.0]
    assert context_tables.size_factor_table(rows.clear()) is None


def test_slugs_are_file_safe():
    assert slug("size", "conll2003", "low_resource(size=100, k=2)", None) == "size-conll2003-low_resource-size-100-k-2"


def test_no_grid_when_every_method_has_a_single_model(summary):
    crf = summary.with_columns(pl.when(pl.col("method") == "mom").then(pl.lit("crf")).otherwise(pl.col("head")).alias("head"))
    assert layouts.grid_tables(crf, SETTINGS) == []


def test_one_replicate_per_cell_says_no_test_was_possible(frame):
    single = frame.filter(pl.col("seed") == 0)
    comparison = paired_comparisons(single, SETTINGS, [])
    table = layouts.comparison_tables(
        summarise(single, metric_columns(single), SETTINGS), comparison.tests, comparison.missing, SETTINGS
    )[0]
    assert table.notes[0] == "n = 1 replicate per cell"
    assert table.notes[1].startswith("No significance test")


def test_unconverged_cells_are_marked_in_every_table_with_a_footnote(frame, summary):
    from nerplat.analysis.render import to_markdown

    marked = summary.with_columns((pl.col("method") != "mom").alias("converged"))
    tests = paired_comparisons(frame, SETTINGS, []).tests.with_columns(
        (pl.col("method") != "mom").alias("converged"), pl.lit(True).alias("partner_converged")
    )
    tables = [
        *layouts.size_tables(marked, SETTINGS), *layouts.comparison_tables(marked, tests, tests.clear(), SETTINGS),
        *layouts.per_type_tables(marked, SETTINGS), layouts.tests_table(tests, SETTINGS, "tests", "t"),
    ]
    for table in tables:
        flagged = {row.label for row in table.rows for cell in row.cells if cell.unconverged}
        assert flagged, table.name
        if table.row_header != "Entity type":  # per-type rows are types; the method is the column there
            assert all("mom" in label for label in flagged), table.name
        assert any(note.startswith("‡ epoch budget not converged") for note in table.notes), table.name
        assert "‡" in to_markdown(table)
    plain = layouts.size_tables(summary, SETTINGS)[0]
    assert not any(note.startswith("‡") for note in plain.notes)


def test_the_sampler_table_shows_each_sampler_against_the_reference_with_marks():
    base = synthetic_replicates(methods=("ce",), sizes=(100,), seeds=4, types=())
    runs = []
    for label, shift in (("full", 0.0), ("sc", 0.05)):
        runs.append(base.with_columns(
            pl.lit(label).alias("sampler"), pl.lit(label).alias("sampler_label"), pl.lit(label).alias("sampler_family"),
            pl.col("^test_.*$") + shift * (1 + 0.1 * pl.col("seed")), (pl.col("run_id") + label).alias("run_id"),
        ))
    frame = pl.concat(runs)
    settings = AnalysisSettings(baseline="ce", reference_sampler="full", bootstrap_resamples=100)
    tests = paired_comparisons(frame, settings, []).tests
    (table,) = layouts.sampler_tables(summarise(frame, metric_columns(frame), settings), tests, settings)
    assert [row.label for row in table.rows] == ["full", "sc"]
    assert table.rows[1].cells[2].delta == pytest.approx(0.05 * 1.15)
    assert table.rows[1].cells[2].significant  # every seed gains 0.05-0.065: p far below 0.05
    assert any("Holm-corrected within each metric across its 1 tests" in n for n in table.notes)


def test_the_dev_curve_table_lists_epochs_the_share_and_the_verdict():
    curves = pl.DataFrame({
        "dataset": ["d"] * 4, "sampler": ["s"] * 4, "method": ["ce", "ce", "mom", "mom"],
        "epoch": [1, 2, 1, 2], "n": [3] * 4, "mean": [0.4, 0.6, 0.5, 0.5],
    })
    verdicts = pl.DataFrame({"dataset": ["d", "d"], "sampler": ["s", "s"], "method": ["ce", "mom"],
                             "last_epoch_share": [1.0, 0.0], "runs": [3, 3], "stopped_by_patience": [1, 3],
                             "mean_stopped_epoch": [19.0, 7.0], "judged_by": ["patience", "fit"], "converged": [False, True]})
    (table,) = context_tables.dev_curve_tables(curves, verdicts, SETTINGS)
    assert [c.name for c in table.columns] == ["1", "2", "Last epoch selected", "Stopped by patience", "Converged"]
    ce, mom = table.rows
    assert [c.value for c in ce.cells[:2]] == [0.4, 0.6] and ce.cells[2].text == "100%"
    assert ce.cells[3].text == "1/3 (mean epoch 19.0)" and ce.cells[4].text == "no ‡ (cap)"
    assert mom.cells[3].text == "n/a" and mom.cells[4].text == "yes"  # crfsuite fits: no patience to count


def test_chosen_table_lists_each_tuned_arms_values_and_dev_score():
    chosen = pl.DataFrame({
        "arm": ["toy/full/mom", "toy/full/focal"],
        "param.objective.gamma": [None, 2.0],
        "param.objective.lambda": [0.25, None],
        "param.train.lr": [2e-5, 3e-5],
        "param.unused": pl.Series([None, None], dtype=pl.String),
        "dev_best_micro_f1": [0.61, 0.58],
    })
    table = context_tables.chosen_table(chosen)
    assert [c.name for c in table.columns] == ["objective.gamma", "objective.lambda", "train.lr", "dev_best_micro_f1"]
    assert [r.label for r in table.rows] == ["toy/full/focal", "toy/full/mom"]
    mom = table.rows[1].cells
    assert [c.text for c in mom[:3]] == ["", "0.25", "2e-05"] and mom[3].value == 0.61
    assert context_tables.chosen_table(chosen.clear()) is None  # no arm was tuned: no table


def test_the_decimals_setting_sets_every_score_cells_digits_and_cells_carry_the_sd(frame, summary):
    comparison = paired_comparisons(frame, SETTINGS, [])
    three = SETTINGS.model_copy(update={"decimals": 3})
    for settings, digits in ((SETTINGS, 4), (three, 3)):
        (table, *_) = layouts.comparison_tables(summary, comparison.tests, comparison.missing, settings)
        cells = [c for row in table.rows for c in row.cells if c.value is not None]
        assert {c.digits for c in cells} == {digits} and all(c.sd is not None for c in cells)
    row = summary.filter((pl.col("method") == "mom") & (pl.col("metric") == "test_micro_f1") & (pl.col("size") == 20))
    (table, *_) = layouts.size_tables(summary, three)
    (mom,) = [r for r in table.rows if r.label == "mom"]
    assert mom.cells[2].sd == pytest.approx(row["sd"][0]) and mom.cells[2].number() == f"{row['mean'][0]:.3f}"
