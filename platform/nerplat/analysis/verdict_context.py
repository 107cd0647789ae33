"""What stands beside each verdict without deciding it: the effort each side got (the plan's arms,
their tune trials, searched keys and epochs), the reserved CPU- and GPU-hours behind it, and ASO's
eps_min (`analysis.verdicts` module docstring, tuning columns, cpu_hours and aso_eps_min)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl

ARM_SCHEMA = {"arm": pl.String(), "tune_trials": pl.Int64(), "searched": pl.String(), "epochs": pl.Int64(),
              "cpus": pl.Float64(), "gpus": pl.Float64()}
# deepsig's bootstrap: its default 1000 were too slow a call (docs/performance.md, "Figures behind the
# code's choices"); ASO is information here, not a verdict.
ASO_ITERATIONS = 200


def arm_frame(plan: dict[str, Any] | None) -> pl.DataFrame:
    """One row per arm of a plan.json: its tune trials, searched keys, epochs and the CPUs and GPUs one trial reserves."""
    rows = []
    for arm in (plan or {}).get("arms", []):
        resources = arm.get("resources") or {}
        workers = resources.get("workers", 1)
        epochs = (arm.get("fixed") or {}).get("train", {}).get("epochs")
        rows.append({
            "arm": arm["id"], "tune_trials": arm.get("tune_trials", 0),
            "searched": ", ".join(sorted(arm.get("search_space") or {})), "epochs": epochs if isinstance(epochs, int) else None,
            "cpus": workers * resources.get("cpus_per_worker", 1.0), "gpus": workers * resources.get("gpus_per_worker", 0.0),
        })
    return pl.DataFrame(rows, schema=ARM_SCHEMA)


def tuning(method_arms: list[str], partner_arms: list[str], arms: pl.DataFrame) -> dict[str, Any]:
    """Both sides' tune trials, searched keys and epochs, from the plan's arms."""
    found: dict[str, Any] = {}
    for key, ids in (("method", method_arms), ("partner", partner_arms)):
        rows = arms.filter(pl.col("arm").is_in(ids))
        row = rows.row(0, named=True) if rows.height else {}
        found |= {f"{key}_trials": row.get("tune_trials"), f"{key}_searched": row.get("searched"),
                  f"{key}_epochs": row.get("epochs")}
    return found


def aso_eps_min(a: np.ndarray, b: np.ndarray, alpha: float, comparisons: int) -> dict[str, float | None]:
    """eps_min of ASO both ways (deepsig); None with fewer than 2 pairs."""
    if a.size < 2:
        return {"aso_eps_min": None, "aso_eps_min_reverse": None}
    from deepsig import aso

    options = dict(confidence_level=1 - alpha, num_comparisons=comparisons, seed=0, show_progress=False,
                   num_bootstrap_iterations=ASO_ITERATIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identical scores divide by zero inside deepsig; eps_min is still defined
        return {"aso_eps_min": float(aso(a.tolist(), b.tolist(), **options)),
                "aso_eps_min_reverse": float(aso(b.tolist(), a.tolist(), **options))}


def reserved_hours(
    replicates: pl.DataFrame, trials: pl.DataFrame | None, arms: pl.DataFrame, arm_ids: list[str], runs: list[str]
) -> dict[str, float | None]:
    """Reserved CPU- and GPU-hours of the arms' tune trials and of the replicate runs the verdict used."""
    reserved = {r["arm"]: (r["cpus"], r["gpus"]) for r in arms.iter_rows(named=True)}
    if not any(arm in reserved for arm in arm_ids):
        return {"cpu_hours": None, "gpu_hours": None}
    used = replicates.filter(pl.col("run_id").is_in(runs))
    seconds: dict[str, float] = {}
    for arm in arm_ids:
        seconds[arm] = wall_seconds(used.filter(pl.col("arm") == arm))
        if trials is not None and not trials.is_empty():
            seconds[arm] += wall_seconds(trials.filter(pl.col("arm") == arm))
    cpu = sum(seconds[a] * reserved.get(a, (1.0, 0.0))[0] for a in arm_ids) / 3600
    gpu = sum(seconds[a] * reserved.get(a, (1.0, 0.0))[1] for a in arm_ids) / 3600
    return {"cpu_hours": cpu, "gpu_hours": gpu}


def wall_seconds(runs: pl.DataFrame) -> float:
    """A run's wall time: `trial_seconds` where logged, else its setup, training and evaluation times."""
    if runs.is_empty():
        return 0.0
    parts = [c for c in ("time_setup_s", "time_train_s", "time_eval_s") if c in runs.columns]
    summed = pl.sum_horizontal([pl.col(c).fill_null(0.0) for c in parts]) if parts else pl.lit(0.0)
    total = pl.col("trial_seconds").fill_null(summed) if "trial_seconds" in runs.columns else summed
    return float(runs.select(total.sum()).item() or 0.0)
