"""An arm's choice among its finished tuning trials: a function of their points, scores and sampling order.

The tuning trials as the ledger reads them back from MLflow (`FinishedTrial`, `InterruptedTrial`),
each with its sample index, and the rule that chooses among them.

The best `dev_best_<metric>` wins. Trials that tie (the tiny test encoder scores every point alike;
a coarse metric on a small dev set does too) are told apart by their sampling order: the earliest
trial the search sampled wins. A trial's place in that order is its sample index, recorded on its
MLflow run when it is sampled (tag `nerplat.sample_index`, `run.study_search.StudySearch`), and
carried by the point of an interrupted trial that a resume runs again (`run.study.enqueue_unfinished`).
Never an Optuna trial number nor an MLflow start time: a study rebuilt after `optuna.db` was lost,
a re-queued point and concurrent trials that start out of order renumber those, and a killed and
resumed search then chose another of the tied points than a clean run (issue 62).

Runs an earlier nerplat wrote carry no sample index; they are placed first, in the order their
runs started (`legacy_sample_indexes`), which is their sampling order when one trial ran at a time.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FinishedTrial:
    """A tuning trial that finished (completed or early-stopped), as MLflow recorded it."""

    values: dict[str, Any]  # its searched values
    value: float  # its tune metric (`dev_best_<metric>`), what the searcher was told
    run_id: str
    run_name: str
    sample_index: int = 0  # its place in the search's sampling order


@dataclass(frozen=True)
class InterruptedTrial:
    """A tuning trial a stopped driver or Tuner interrupted, as MLflow recorded it."""

    values: dict[str, Any]  # its searched values
    run_id: str
    sample_index: int = 0  # its place in the search's sampling order, which the point's next run keeps


def chosen_trial(finished: Sequence[FinishedTrial], mode: str) -> FinishedTrial:
    """The best of `finished` by value (`mode` "max" or "min"; a NaN value is never best), ties to
    the smallest sample index."""
    if not finished:
        raise ValueError("no finished trial to choose from")
    sign = -1.0 if mode == "max" else 1.0
    return min(finished, key=lambda trial: (math.isnan(trial.value), sign * trial.value, trial.sample_index))


def first_free_index(taken: Collection[int]) -> int:
    """The sample index of a newly sampled trial: the smallest no trial of the search holds, so a
    resumed search numbers its new trials as a clean run does (the places of interrupted trials stay
    with the points that run again)."""
    index = 0
    while index in taken:
        index += 1
    return index


def legacy_sample_indexes(recorded: Sequence[int | None]) -> list[int]:
    """Sample indexes for trial runs in start order, `recorded` holding each run's tag (None when an
    earlier nerplat wrote none): the recorded ones as they are, the others, in start order, the
    smallest indexes no run records."""
    taken = {index for index in recorded if index is not None}
    indexes = []
    for index in recorded:
        if index is None:
            index = first_free_index(taken)
            taken.add(index)
        indexes.append(index)
    return indexes
