"""The exploratory readings docs/results/README.md gives beside the registered Table 2 designs at 50
and 100 sentences and their explanatory designs, recomputed from the committed reports (run from
the repository root; name reports to read only those):

    .venv/bin/python docs/results/table2-readings.py [REPORT ...]
"""

import sys
from pathlib import Path

import numpy as np
import polars as pl

RESULTS = Path(__file__).parent
REPORTS = tuple(sys.argv[1:]) or ("auc2t_lowres_conll-reg-50", "auc2t_lowres_conll-why-50", "auc2t_lowres_conll-why-50-patience",
                                  "auc2t_lowres_conll-reg-100", "auc2t_lowres_conll-why-100")
SCORES = {"lenient": "test_conlleval_micro_f1", "strict": "test_micro_f1", "0.5 cut": "test_fixed_threshold_conlleval_micro_f1"}


def leave_one_out_t(differences: list[float]) -> list[float]:
    """The paired t of the differences with each unit left out in turn, sorted."""
    d = np.asarray(differences)
    kept = [np.delete(d, i) for i in range(len(d))]
    return sorted(round(float(k.mean() / (k.std(ddof=1) / np.sqrt(len(k)))), 2) for k in kept)


for report in REPORTS:
    runs = pl.read_parquet(RESULTS / report / "runs.parquet")
    print(f"# {report}")
    means = [pl.col(column).mean().round(3).alias(name) for name, column in SCORES.items() if column in runs.columns]
    print(runs.group_by("method").agg(pl.len().alias("runs"), *means, pl.col("selected_epoch").mean().round(1),
                                      pl.col("stopped_epoch").max()).sort("method"))
    two_task = runs.filter(pl.col("threshold_beginning").is_not_null())
    thresholds = two_task.group_by("method", "threshold_beginning").len().sort("method", "threshold_beginning")
    print("begin-of-entity thresholds:", thresholds.rows())
    for verdict in pl.read_parquet(RESULTS / report / "verdicts.parquet").iter_rows(named=True):
        d = verdict["unit_differences"]
        print(f"{verdict['claim']}: {verdict['verdict']}; the method ahead on {sum(x > 0 for x in d)} of {len(d)} units; "
              f"leave-one-out t {leave_one_out_t(d)}")
        print("  differences by unit:", [(unit, round(x, 3)) for unit, x in zip(verdict["unit_keys"], d)])
    epochs = pl.read_parquet(RESULTS / report / "epochs.parquet").join(runs.select("run_id", "method"), on="run_id")
    value = pl.col("value")
    curve = epochs.filter(pl.col("metric") == "dev_micro_f1").group_by("method", "epoch").agg(
        value.min().round(3).alias("min"), value.mean().round(3).alias("mean"), value.max().round(3).alias("max"))
    print("strict dev F1 by epoch (1-8):", curve.filter(pl.col("epoch") <= 8).sort("method", "epoch").rows())
    print()
