"""Named moments at which the driver of `nerplat run` may be made to die, for the fault tests.

A resume has to cope with a driver killed at any moment; the moments where two records are
written one after the other (an MLflow run's end and the Optuna study's tell, a run's status tag
and its end) are where a kill can leave them disagreeing. Each is a boundary here. With
`NERPLAT_KILL_AT=<boundary>` (or `<boundary>:<n>`, the n-th time it is reached) the driver sends
itself SIGKILL there, as an out-of-memory killer or a lost node would: no handler runs, nothing is
flushed. Unset (always, outside the fault tests) a boundary costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

KILL_AT_ENV = "NERPLAT_KILL_AT"
BOUNDARIES = (
    "trial_start",  # a tuning trial's MLflow run was created, its Optuna trial is running
    "status_tag",  # a run's nerplat.status tag is written, its end (MLflow status) is not
    "mlflow_finish",  # a tuning trial's MLflow run ended; the study has not been told
    "optuna_commit",  # the study was told the trial's result
    "tune_end",  # an arm's tune run ended completed, its choice recorded; its replicates not started
    "replicate",  # a replicate's MLflow run ended
    "analysis",  # every replicate ended; the analysis has not started
)
_reached: Counter[str] = Counter()


def kill_point(boundary: str) -> None:
    """Dies here (SIGKILL to this process) when `NERPLAT_KILL_AT` names `boundary` and this is the
    time it asks for (the first by default)."""
    wanted = os.environ.get(KILL_AT_ENV)
    if not wanted:
        return
    name, _, times = wanted.partition(":")
    if name != boundary:
        return
    _reached[boundary] += 1
    if _reached[boundary] == int(times or 1):
        os.kill(os.getpid(), signal.SIGKILL)
