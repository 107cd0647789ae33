"""The paired check before a profile trains in `train.precision: auto`: the same spec and profile run
twice, in fp32 and in auto (bf16 where this host measured it faster), with the same seeds and
partitions, and each cell's replicates paired by seed and partition (`analysis.compare.paired_values`).

A cell passes when its mean paired difference (auto minus fp32) lies within the replicate noise: its
size is at most the standard deviation of the fp32 replicates' scores across seeds and partitions.
A paired t-test is reported beside it. `docs/precision-check.sh SPEC PROFILE` runs both experiments
and then this module:

    python -m nerplat.bench.precision_check --tracking-uri URI FP32_EXPERIMENT AUTO_EXPERIMENT [--metric test_micro_f1]

Exit code 0 when every cell passes, 1 when one does not, 2 on bad input (an unknown experiment, a
metric the runs lack, no pairs).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import polars as pl

from nerplat.analysis.compare import paired_values
from nerplat.analysis.run_frames import replicate_frame
from nerplat.analysis.stats import paired_test
from nerplat.errors import Problem, UserInputError
from nerplat.track.experiment_reader import find_experiment, open_client, search_all

FP32, AUTO = "fp32", "auto"
COLUMNS = (
    "dataset", "sampler", "method", "n_pairs", "fp32_mean", "auto_mean", "difference", "replicate_sd", "p_value", "within_noise",
)  # fmt: skip


def precision_differences(fp32: pl.DataFrame, auto: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One row per cell (dataset, sampler, method) present in both frames of replicate runs: the
    paired mean difference auto - fp32 of `metric`, the fp32 replicates' sd, the paired t p-value."""
    for name, frame in ((FP32, fp32), (AUTO, auto)):
        if metric not in frame.columns:
            raise UserInputError(Problem(f"the {name} experiment's replicates have no metric {metric!r}", path="--metric"))
    tagged = pl.concat(
        [
            frame.select("run_id", "dataset", "sampler", "method", "size", "seed", "partition", metric)
            .with_columns(pl.lit(side).alias("precision"))
            for side, frame in ((FP32, fp32), (AUTO, auto))
        ],
        how="vertical_relaxed",
    )  # fmt: skip
    rows = []
    for method in sorted(set(fp32["method"]) & set(auto["method"])):
        arms = tagged.filter(pl.col("method") == method).with_columns(pl.col("precision").alias("method"))
        for row in paired_values(arms, AUTO, FP32, metric).iter_rows(named=True):
            a, b = np.asarray(row["a"], dtype=float), np.asarray(row["b"], dtype=float)
            if len(a) == 0:
                continue
            _, p_value = paired_test(a[None, :], b[None, :], "paired_t")
            difference, noise = float((a - b).mean()), float(b.std(ddof=1)) if len(b) > 1 else float("nan")
            rows.append({
                "dataset": row["dataset"], "sampler": row["sampler"], "method": method, "n_pairs": len(a),
                "fp32_mean": float(b.mean()), "auto_mean": float(a.mean()), "difference": difference,
                "replicate_sd": noise, "p_value": float(p_value[0]), "within_noise": bool(abs(difference) <= noise),
            })  # fmt: skip
    if not rows:
        raise UserInputError(
            "the two experiments share no replicate pairs (same dataset, sampler, method, size, seed, partition)"
        )
    return pl.DataFrame(rows).select(COLUMNS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nerplat.bench.precision_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("fp32_experiment")
    parser.add_argument("auto_experiment")
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--metric", default="test_micro_f1")
    args = parser.parse_args(argv)

    try:
        client = open_client(args.tracking_uri)
        frames = [replicate_frame(search_all(client, find_experiment(client, name).experiment_id, "replicate"))
                  for name in (args.fp32_experiment, args.auto_experiment)]  # fmt: skip
        table = precision_differences(*frames, args.metric)
    except UserInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return UserInputError.exit_code
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=4, tbl_width_chars=200):
        print(table)
    passed = int(table["within_noise"].sum())
    noise = "within the replicate noise (|auto - fp32| <= sd of the fp32 replicates)"
    print(f"{passed} of {table.height} cells {noise} on {args.metric}")
    return 0 if passed == table.height else 1


if __name__ == "__main__":
    sys.exit(main())
