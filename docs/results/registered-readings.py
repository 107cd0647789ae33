"""The exploratory readings docs/results/README.md gives beside the registered designs (Table 2 at 50 and
100 sentences, Fig. 4 at 20% entity tokens) and their explanatory designs, recomputed from the committed
reports (run from the repository root; name reports to read only those):

    .venv/bin/python docs/results/registered-readings.py [REPORT ...]
"""

import sys
from pathlib import Path

import numpy as np
import polars as pl

RESULTS = Path(__file__).parent
REPORTS = tuple(sys.argv[1:]) or (
    "auc2t_lowres_conll-reg-50", "auc2t_lowres_conll-why-50", "auc2t_lowres_conll-why-50-patience",
    "auc2t_lowres_conll-reg-100", "auc2t_lowres_conll-why-100", "auc2t_lowres_conll-why-100-recipe", "auc2t_lowres_conll-why-50-recipe",
    "entity_ratio-reg-20",
    "entity_ratio-why-20-patience", "entity_ratio-why-20-recipe",
)
SCORES = {"lenient": "test_conlleval_micro_f1", "lenient P": "test_conlleval_micro_precision",
          "lenient R": "test_conlleval_micro_recall", "strict": "test_micro_f1", "strict recall": "test_micro_recall",
          "0.5 cut": "test_fixed_threshold_conlleval_micro_f1", "0.5 cut words": "test_fixed_threshold_word_accuracy"}
NESTED = ("auc2t_lowres_conll-reg-50", "auc2t_lowres_conll-reg-100")  # partition k of 100 contains partition k of 50
COLLAPSED = 0.5  # a run's lenient test F1 below this: it learned nothing past its first epochs
pl.Config.set_tbl_cols(-1).set_tbl_width_chars(250)  # every column of the arm table


def leave_one_out_t(differences: list[float]) -> list[float]:
    """The paired t of the differences with each unit left out in turn, sorted."""
    d = np.asarray(differences)
    kept = [np.delete(d, i) for i in range(len(d))]
    return sorted(round(float(k.mean() / (k.std(ddof=1) / np.sqrt(len(k)))), 2) for k in kept)


def read(report: str) -> None:
    runs = pl.read_parquet(RESULTS / report / "runs.parquet")
    print(f"# {report}")
    means = [pl.col(column).mean().round(3).alias(name) for name, column in SCORES.items() if column in runs.columns]
    lenient = pl.col("test_conlleval_micro_f1")
    spread = (lenient.min().round(3).alias("lowest"), lenient.max().round(3).alias("highest"))
    stops = (pl.col("stopped_epoch").mean().round(1), pl.col("stopped_epoch").max().alias("last stop"))
    print(runs.group_by("method").agg(pl.len().alias("runs"), *means, *spread, pl.col("selected_epoch").mean().round(1), *stops)
          .sort("method"))
    trials = pl.read_parquet(RESULTS / report / "trials.parquet")
    if len(trials):
        print("tuning trials (lr, head_lr, best and last dev lenient F1, stopped):",
              trials.select("method", "param.train.lr", "param.train.head_lr", "dev_best_conlleval_micro_f1",
                            "dev_conlleval_micro_f1", "stopped_epoch")
              .sort("method", "dev_best_conlleval_micro_f1").rows())
    # when each replicate met test data: what a later registration is dated against
    stamps = pl.from_epoch(runs["test_evaluated_at"], time_unit="s").sort().dt.strftime("%H:%M:%S")
    print("test evaluations (UTC):", stamps.to_list())
    # test_threshold_* are the selected epoch's, the tested model's; runs before 3d7a098 have only
    # threshold_*, each run's last evaluation's
    column, source = (("test_threshold_beginning", "the tested model's") if "test_threshold_beginning" in runs.columns
                      else ("threshold_beginning", "each run's last evaluation's, not necessarily the tested model's"))
    two_task = runs.filter(pl.col(column).is_not_null())
    thresholds = two_task.group_by("method", column).len().sort("method", column)
    print(f"begin-of-entity thresholds ({source}):", thresholds.rows())
    verdicts = pl.read_parquet(RESULTS / report / "verdicts.parquet")
    unit = verdicts["unit"][0]  # "partition" or "seed", one for every claim of a report
    collapsed = runs.filter(pl.col("test_conlleval_micro_f1") < COLLAPSED)
    print("collapsed runs (method, unit, lenient F1, selected, stopped):",
          collapsed.select("method", unit, "test_conlleval_micro_f1", "selected_epoch", "stopped_epoch").rows())
    for verdict in verdicts.iter_rows(named=True):
        d, keys = verdict["unit_differences"], verdict["unit_keys"]
        print(f"{verdict['claim']}: {verdict['verdict']}; the method ahead on {sum(x > 0 for x in d)} of {len(d)} units; "
              f"leave-one-out t {leave_one_out_t(d)}")
        print("  differences by unit:", [(key, round(x, 3)) for key, x in zip(keys, d)])
        gone = set(collapsed.filter(pl.col("method").is_in([verdict["method"], verdict["partner"]]))[unit])
        rest = [x for key, x in zip(keys, d) if key not in gone]
        if gone and rest:  # a selection by outcome: a reading only
            print(f"  without the units where an arm collapsed {sorted(gone)}: mean {np.mean(rest):+.4f}, "
                  f"the method ahead on {sum(x > 0 for x in rest)} of {len(rest)}")
    epochs = pl.read_parquet(RESULTS / report / "epochs.parquet").join(runs.select("run_id", "method"), on="run_id")
    value = pl.col("value")
    curve = epochs.filter(pl.col("metric") == "dev_micro_f1").group_by("method", "epoch").agg(
        value.min().round(3).alias("min"), value.mean().round(3).alias("mean"), value.max().round(3).alias("max"))
    print("strict dev F1 by epoch (1-8):", curve.filter(pl.col("epoch") <= 8).sort("method", "epoch").rows())
    print()


def nested_gains(smaller: str, larger: str) -> None:
    """Each method's paired gain from the smaller size to the larger over the partitions both ran."""
    scores = [pl.read_parquet(RESULTS / r / "runs.parquet")
              .select("method", "partition", pl.col("test_conlleval_micro_f1").alias(r))
              for r in (smaller, larger)]
    paired = scores[0].join(scores[1], on=["method", "partition"])
    gain = paired.select("method", (pl.col(larger) - pl.col(smaller)).alias("gain"))
    print(f"# paired gain, {smaller} to {larger} (nested partitions):")
    print(gain.group_by("method").agg(pl.len().alias("partitions"), pl.col("gain").mean().round(3).alias("mean"),
                                      (pl.col("gain") > 0).sum().alias("positive")).sort("method"))


for report in REPORTS:
    read(report)
if set(NESTED) <= set(REPORTS):
    nested_gains(*NESTED)
