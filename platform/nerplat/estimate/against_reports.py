"""Calibrated predictions held against the runs of committed reports (docs/performance.md, section
"Calibrated cost predictions against committed runs"): how far `nerplat plan --cost` is off where the
store has no runs to go by.

For every arm of a report's `runs.parquet` (replicates) that the spec compiles to, the arm is
predicted as a replicate (it scores the test split) at the epochs its runs trained (the last epoch of
their dev curves in `epochs.parquet`) from this host's calibration, and set beside the runs' mean
`trial_seconds`; the epoch's sub-tokens counted on the data beside the runs' `train_tokens / epochs`
check the count apart from the host's speed.

    python -m nerplat.estimate.against_reports docs/results/NAME [--profile P] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import re
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from nerplat.catalog import default_catalog
from nerplat.estimate.calibration import calibrate
from nerplat.estimate.cost import ArmCost, Calibration, CalibrationKey, calibration_key, predict_cost
from nerplat.estimate.host import epoch_work_on_data, this_machine
from nerplat.estimate.spec_cost import HostEstimator
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.plan.model import Plan


@dataclass(frozen=True)
class ReportCheck:
    """One report's arms, predicted against their committed runs."""

    report: str
    arms: int  # arms of the report the spec still compiles to
    of: int  # arms of the report
    runs: int
    epochs: str  # the epochs the runs trained: one figure, or the range over arms
    token_ratio: tuple[float, float]  # counted / logged epoch sub-tokens: lowest and highest arm
    speed_ratio: tuple[float, float]  # calibrated / logged one-pass tokens/s, over the calibrations
    measured_s: float  # mean trial_seconds of the runs
    predicted_s: float  # mean over the runs of the predicted seconds of a run
    ratio: tuple[float, float]  # predicted / measured seconds: lowest and highest arm
    at_speed_s: float  # as predicted_s, the calibrations brought to the runs' logged speed
    at_speed_ratio: tuple[float, float]

    def row(self) -> str:
        return (
            f"| {self.report} | {self.arms} of {self.of} | {self.runs} | {self.epochs} | {_span(*self.token_ratio)} "
            f"| {_span(*self.speed_ratio)} | {self.measured_s:.0f} | {self.predicted_s:.0f} "
            f"| {self.predicted_s / self.measured_s:.2f} ({_span(*self.ratio)}) "
            f"| {self.at_speed_s:.0f} | {self.at_speed_s / self.measured_s:.2f} ({_span(*self.at_speed_ratio)}) |"
        )


HEADER = (
    "| report | arms | runs | epochs | epoch tokens counted / logged | tokens/s calibrated / logged "
    "| measured s a run | predicted s a run | predicted / measured (arms) "
    "| at logged speed: s a run | predicted / measured (arms) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def check_report(report: Path, plan: Plan, estimator: HostEstimator) -> ReportCheck:
    """The report's arms that `plan` has, each predicted as a replicate at its runs' epochs, from the
    calibration and from the calibration brought to the runs' one-pass speed (module docstring)."""
    runs = pl.read_parquet(report / "runs.parquet")
    last_epoch = pl.read_parquet(report / "epochs.parquet").group_by("run_id").agg(pl.col("epoch").max().alias("epochs"))
    runs = runs.join(last_epoch, on="run_id").filter(pl.col("time_train_s") > 0)
    measured = {arm: frame for (arm,), frame in runs.group_by("arm")}
    arms = [arm for arm in plan.arms if arm.id in measured]
    if not arms:
        raise ValueError(f"no arm of {report}/runs.parquet is in the plan ({', '.join(sorted(measured))})")
    at_epochs = []
    for arm in arms:
        train = arm.fixed["train"] | {"epochs": int(measured[arm.id]["epochs"].median())}
        at_epochs.append(arm.model_copy(update={"fixed": arm.fixed | {"train": train}, "tune_trials": 0}))
    replicates = plan.model_copy(update={"arms": at_epochs, "tune": None})
    cost = estimator.predict(replicates)
    logged: dict[CalibrationKey, list[float]] = {}  # one-pass tokens/s of the runs, by the calibration that stands for them
    for arm in at_epochs:
        frame, passes = measured[arm.id], estimator.work_of(arm).passes
        logged.setdefault(calibration_key(arm, estimator.machine), []).extend(
            (frame["train_tokens"] * passes / frame["time_train_s"]).to_list()
        )
    at_speed = {key: _at_speed(c, statistics.median(logged[key])) for key, c in estimator.calibrations.items() if key in logged}
    at_speed_cost = predict_cost(replicates, [], estimator.machine, estimator.work_of, calibrations=at_speed.values())
    counts = [len(measured[arm.id]) for arm in at_epochs]
    tokens = [
        estimator.work_of(arm).tokens
        / statistics.median((measured[arm.id]["train_tokens"] / measured[arm.id]["epochs"]).to_list())
        for arm in at_epochs
    ]
    per_arm = [measured[arm.id]["trial_seconds"].mean() for arm in at_epochs]
    speeds = [estimator.calibrations[key].train_tokens_per_s / c.train_tokens_per_s for key, c in at_speed.items()]
    epochs = sorted({arm.fixed["train"]["epochs"] for arm in at_epochs})

    def per_run(costs: list[ArmCost]) -> tuple[float, tuple[float, float]]:
        """Mean predicted seconds of a run, and predicted / measured of the lowest and highest arm."""
        ratios = [cost.trial_s / seconds for cost, seconds in zip(costs, per_arm)]
        return sum(cost.trial_s * n for cost, n in zip(costs, counts)) / sum(counts), (min(ratios), max(ratios))

    (predicted_s, ratio), (at_speed_s, at_speed_ratio) = per_run(cost.arms), per_run(at_speed_cost.arms)
    used = runs.filter(pl.col("arm").is_in([arm.id for arm in arms]))
    return ReportCheck(
        report=report.name, arms=len(arms), of=len(measured), runs=sum(counts), epochs=_span(epochs[0], epochs[-1], "{:d}"),
        token_ratio=(min(tokens), max(tokens)), speed_ratio=(min(speeds), max(speeds)),
        measured_s=float(used["trial_seconds"].mean()),
        predicted_s=predicted_s, ratio=ratio, at_speed_s=at_speed_s, at_speed_ratio=at_speed_ratio,
    )  # fmt: skip


def _at_speed(calibration: Calibration, tokens_per_s: float) -> Calibration:
    """The calibration as if this host trained at `tokens_per_s`, its evaluation sped up alike."""
    factor = tokens_per_s / calibration.train_tokens_per_s
    return replace(calibration, train_tokens_per_s=tokens_per_s, eval_tokens_per_s=calibration.eval_tokens_per_s * factor)


def report_command(report: Path) -> tuple[Path, str | None]:
    """The spec and profile the report's RUN.md says it ran (`nerplat run SPEC [--profile P]`)."""
    match = re.search(r"nerplat run ([^\s`]+)(?: --profile ([\w-]+))?", (report / "RUN.md").read_text())
    if match is None:
        raise ValueError(f"{report}/RUN.md names no `nerplat run` command")
    return Path(match.group(1)), match.group(2)


def _span(low: float, high: float, form: str = "{:.2f}") -> str:
    low, high = form.format(low), form.format(high)
    return low if low == high else f"{low}-{high}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, nargs="+", help="report folders (docs/results/NAME)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME:KEY=VALUE", help="an override of one report's spec")
    args = parser.parse_args(argv)
    checks = []
    # no store: calibrated, one per encoder, batch and head
    estimator = HostEstimator([], this_machine(), epoch_work_on_data, calibrate)
    for report in args.report:
        spec, profile = report_command(report)
        overrides = [o.split(":", 1)[1] for o in args.set if o.split(":", 1)[0] == report.name]
        plan = compile_plan(SpecSource(spec, profile, overrides=overrides), default_catalog())
        checks.append(check_report(report, plan, estimator))
    print(HEADER)
    for check in checks:
        print(check.row())
    for calibration in estimator.calibrations.values():
        print(f"- {calibration.line()}")


if __name__ == "__main__":
    main()
