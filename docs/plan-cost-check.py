"""How close `nerplat plan --cost`'s model comes to the committed reports' wall times (docs/performance.md).

For each report of docs/results: the spec as it was at the report's commit (RUN.md), its completed
runs' timings from runs.parquet and trials.parquet as `MeasuredRun`s, `estimate.cost.predict_cost` on
this 2-core machine over the design's looks (every look a sequential design allows), and the
prediction beside RUN.md's wall time. In-sample: the runs the
prediction is made from are the report's own, so this checks the model's arithmetic (epochs x
tokens / tokens/s + the rest, trials spread over the slots), not how well one experiment predicts
another. Run from the repository root: `.venv/bin/python docs/plan-cost-check.py`.
"""

import re
import subprocess
import tempfile
from pathlib import Path

import polars as pl

from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.estimate.cost import EpochWork, Machine, MeasuredRun, predict_cost
from nerplat.run.looks import replicates_by_look

RESULTS = Path("docs/results")
REPORTS = {"mom_conll": ("mom_conll", "cpu"), "auc2t_lowres_conll": ("auc2t_lowres_conll", "cpu"), "entity_ratio": ("entity_ratio", "cpu"),
           "ova_auc_lowres": ("ova_auc_lowres", "cpu"), "resampling": ("resampling", "cpu"), "resampling-cpu-grid": ("resampling", "cpu-grid")}  # fmt: skip


def measured_minutes(run_md: str) -> float:
    minutes, seconds = re.search(r"wall time: (\d+) min (\d+) s", run_md).groups()
    return int(minutes) + int(seconds) / 60


def report_runs(folder: Path, epochs: dict[str, int]) -> list[MeasuredRun]:
    runs = []
    for name in ("runs", "trials"):
        frame = pl.read_parquet(folder / f"{name}.parquet").filter(pl.col("status") == "completed")
        for row in frame.iter_rows(named=True):
            if row["arm"] in epochs and row.get("time_train_s") and row.get("train_tokens") and row.get("trial_seconds") is not None:
                run_epochs = int(row.get("param.train.epochs") or epochs[row["arm"]])
                runs.append(MeasuredRun(row["arm"], row["objective"], row["encoder"], None, "fp32", run_epochs, row["train_tokens"], row["time_train_s"], row["trial_seconds"]))
    return runs


def main() -> None:
    machine = Machine(cpus=2, gpus=0, label_of=lambda arm: "cpu", precision_of=lambda arm: "fp32")
    for folder_name, (spec, profile) in REPORTS.items():
        folder = RESULTS / folder_name
        run_md = (folder / "RUN.md").read_text()
        commit = re.search(r"commit: `([0-9a-f]+)`", run_md)[1]
        text = subprocess.run(["git", "show", f"{commit}:specs/{spec}.yaml"], capture_output=True, text=True, check=True).stdout
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / f"{spec}.yaml"
            path.write_text(text)
            plan = compile_plan(path, default_catalog(), profile)
        runs = report_runs(folder, {arm.id: arm.fixed["train"]["epochs"] for arm in plan.arms})
        # every arm of a report has runs of its own, so the epoch tokens are never counted on data
        cost = predict_cost(plan, runs, machine, work_of=lambda arm: EpochWork(float("nan"), 1), looks=replicates_by_look(plan))
        predicted, measured = cost.wall_s / 60, measured_minutes(run_md)
        print(f"{folder_name} ({commit[:7]}): predicted {predicted:.1f} min, measured {measured:.1f} min ({(predicted - measured) / measured:+.0%})")


if __name__ == "__main__":
    main()
