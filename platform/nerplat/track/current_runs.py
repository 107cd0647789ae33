"""Which of an experiment's active runs are its runs now: one per run key, under the arm runs in use.

MLflow has no unique keys. Restoring runs that `--rerun-changed` deleted (`mlflow runs restore`)
brings back a second arm run per (arm, phase) and a second trial or replicate per key, beside the
runs made anew; counted together, an arm with `seeds: 1` would have two replicates. So, with every
reader applying the same rule (the analysis, the runner's checks on resume):

- of the arm runs that share a key, the newest (by start time, then run id) is the arm's: the one
  `ExperimentTracker.find_arm_run` continues (a restored run is always older than its rerun);
- trials and replicates under an arm run that is not in use are left out;
- of the trials or replicates still sharing a key, the one under the arm run in use is kept, else
  the newest finished one, else the newest.

Everything left out is named, so the user can delete it (`mlflow runs delete --run-id ID`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nerplat.track import schema

FINISHED = ("completed", "early_stopped")
SHOWN = 10  # run ids named in a warning


@dataclass(frozen=True)
class CurrentRuns:
    kept: list[Any]  # MLflow runs, in the order given
    ignored: list[Any] = field(default_factory=list)  # duplicates of a kept run's key, or under an arm run not in use

    def warning(self) -> str | None:
        """One line naming the runs left out, or None."""
        if not self.ignored:
            return None
        keys = sorted({run.data.tags.get(schema.RUN_KEY, run.info.run_name) for run in self.ignored})
        ids = ", ".join(run.info.run_id for run in self.ignored[:SHOWN])
        more = f" and {len(self.ignored) - SHOWN} more" if len(self.ignored) > SHOWN else ""
        return (
            f"{len(self.ignored)} run(s) share a run key with a newer run of the experiment (runs restored after "
            f"--rerun-changed deleted them?) and are left out: {ids}{more} (keys {', '.join(keys[:SHOWN])}"
            f"{', ...' if len(keys) > SHOWN else ''}); each key counts once. Delete them to silence this: "
            "`mlflow runs delete --run-id ID`"
        )


def newest_first(run: Any) -> tuple[int, str]:
    return (-(run.info.start_time or 0), _reverse(run.info.run_id))


def current_runs(runs: Iterable[Any]) -> CurrentRuns:
    """`runs` (any kinds, as MLflow returns them) split into the experiment's runs now and those left out."""
    runs = list(runs)
    kind = lambda run: run.data.tags.get(schema.KIND)  # noqa: E731
    key = lambda run: run.data.tags.get(schema.RUN_KEY, run.info.run_name)  # noqa: E731
    in_use: dict[str, Any] = {}
    for run in sorted((r for r in runs if kind(r) == "arm"), key=newest_first):
        in_use.setdefault(key(run), run)
    arm_ids = {run.info.run_id for run in in_use.values()}
    retired = {run.info.run_id for run in runs if kind(run) == "arm"} - arm_ids

    def preference(run: Any) -> tuple:
        parent = run.data.tags.get(schema.PARENT_RUN)
        return (parent not in arm_ids, run.data.tags.get(schema.STATUS) not in FINISHED, *newest_first(run))

    children: dict[str, Any] = {}
    for run in sorted(
        (r for r in runs if kind(r) in ("trial", "replicate") and r.data.tags.get(schema.PARENT_RUN) not in retired),
        key=preference,
    ):
        children.setdefault(key(run), run)
    kept_ids = arm_ids | {run.info.run_id for run in children.values()}
    keeps = [run.info.run_id in kept_ids or kind(run) not in ("arm", "trial", "replicate") for run in runs]
    return CurrentRuns([run for run, keep in zip(runs, keeps) if keep], [run for run, keep in zip(runs, keeps) if not keep])


def _reverse(text: str) -> str:
    """Sorts `text` descending in an ascending sort (run ids are lower-case hex)."""
    return "".join(chr(255 - ord(c)) for c in text)
