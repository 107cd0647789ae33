"""Deterministic MLflow run names: the same plan always yields the same names, so resume is a lookup.

    <arm>/<phase>                                  parent run of an arm's tune or replicate phase
    <arm>/tune/<trial_id>                          one tuning trial
    <arm>/replicate/seed<k>-partition<p>           one replicate of the best configuration
    summary                                        one per experiment (plan, spec, environment)

Names go into MLflow search filters between single quotes, which cannot be escaped there, so
quotes and backslashes are refused rather than silently changed.
"""

from __future__ import annotations

SUMMARY_RUN_NAME = "summary"
_FORBIDDEN = set("'\"\\\n\r\t")


def check_run_name_part(part: str, what: str) -> str:
    """Returns `part` unchanged, or raises ValueError when it cannot be part of a run name."""
    if not part or part != part.strip():
        raise ValueError(f"{what} {part!r} must be non-empty without surrounding spaces")
    bad = sorted(_FORBIDDEN.intersection(part))
    if bad:
        raise ValueError(f"{what} {part!r} contains {bad!r}, which MLflow run search cannot match")
    return part


def arm_run_name(arm: str, phase: str) -> str:
    return f"{check_run_name_part(arm, 'arm')}/{check_run_name_part(phase, 'phase')}"


def trial_run_name(arm: str, trial_id: str) -> str:
    return f"{arm_run_name(arm, 'tune')}/{check_run_name_part(str(trial_id), 'trial id')}"


def replicate_run_name(arm: str, seed: int, partition: int) -> str:
    return f"{arm_run_name(arm, 'replicate')}/seed{int(seed)}-partition{int(partition)}"
