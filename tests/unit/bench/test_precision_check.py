"""The fp32-vs-auto paired check: cells paired by seed and partition, judged against the replicate noise."""

import polars as pl
import pytest

from nerplat.bench.precision_check import main, precision_differences
from nerplat.errors import UserInputError


def replicates(scores: dict[tuple[str, str], list[float]]) -> pl.DataFrame:
    rows = [
        {
            "run_id": f"{sampler}-{method}-{seed}", "dataset": "conll", "sampler": sampler, "method": method, "size": 100,
            "seed": seed, "partition": 0, "test_micro_f1": score,
        }  # fmt: skip
        for (sampler, method), values in scores.items()
        for seed, score in enumerate(values)
    ]
    return pl.DataFrame(rows)


def test_each_cell_is_paired_by_seed_and_judged_against_the_fp32_replicates_sd():
    fp32 = replicates({("lr-100", "ce"): [0.50, 0.60, 0.55], ("lr-100", "dice"): [0.40, 0.41, 0.42]})
    auto = replicates({("lr-100", "ce"): [0.52, 0.59, 0.56], ("lr-100", "dice"): [0.50, 0.51, 0.53]})
    table = precision_differences(fp32, auto, "test_micro_f1")
    ce, dice = (table.filter(pl.col("method") == method).row(0, named=True) for method in ("ce", "dice"))
    assert ce["n_pairs"] == 3 and ce["difference"] == pytest.approx((0.02 - 0.01 + 0.01) / 3)
    assert ce["replicate_sd"] == pytest.approx(0.05) and ce["within_noise"]
    assert dice["difference"] == pytest.approx(0.1033, abs=1e-4) and not dice["within_noise"]  # sd 0.01
    assert 0 <= dice["p_value"] < 0.01


def test_no_shared_pairs_or_a_missing_metric_is_bad_input():
    fp32 = replicates({("lr-100", "ce"): [0.5, 0.6]})
    with pytest.raises(UserInputError, match="share no replicate pairs"):
        precision_differences(fp32, replicates({("lr-200", "ce"): [0.5, 0.6]}), "test_micro_f1")
    with pytest.raises(UserInputError, match="no metric 'dev_f1'"):
        precision_differences(fp32, fp32, "dev_f1")


def test_an_unknown_experiment_exits_2_naming_it(tracking_uri, capsys):
    assert main(["fp32-exp", "auto-exp", "--tracking-uri", tracking_uri]) == 2
    assert "no MLflow experiment named 'fp32-exp'" in capsys.readouterr().err
