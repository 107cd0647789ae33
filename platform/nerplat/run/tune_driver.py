"""Ray's side of a run, in one object the runner and both phases hold: join or start Ray once, refuse
arms no node can place, build each Tuner's run config, run a Tuner and say how it ended.

Ray Tune splits its own driver the same way (`Tuner` -> `TunerInternal` -> `TuneController`), each
layer calling down into the next and none back up: the phases call a `TuneDriver` and it calls no phase
and no runner. The session's pieces it uses (connecting, the environment, how many trials fit, where
a name may go in a path) are `run/ray_session.py`.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from nerplat.errors import Problem, UserInputError
from nerplat.plan.model import Plan
from nerplat.run.allocator import reuse_workers, worker_malloc_line
from nerplat.run.exported_metrics import TrialMetrics
from nerplat.run.progress import ProgressBoard
from nerplat.run.ray_session import (
    Interrupted,
    concurrency,
    connect_ray,
    path_component,
    placement_problem,
    treat_sigterm_as_ctrl_c,
)
from nerplat.track.store import StoreLost


class TuneDriver:
    """Connects to Ray once (`connect`), then builds (`run_config`) and runs (`fit`) the phases' Tuners."""

    def __init__(
        self, plan: Plan, board: ProgressBoard, metrics: TrialMetrics, console: Console, *, storage: str,
        address: str | None, verbose: bool = False, metrics_port: int | None = None,
    ):  # fmt: skip
        self.plan = plan
        self.board = board
        self.metrics = metrics
        self.console = console
        self.storage = storage  # Ray Tune's storage_path
        self.given_address = address  # --address
        self.verbose = verbose
        self.metrics_port = metrics_port  # embedded Ray's Prometheus endpoint on 127.0.0.1
        self.connected = False

    @property
    def address(self) -> str | None:
        """The running cluster the run joins (--address, else RAY_ADDRESS); None for an embedded Ray."""
        return self.given_address or os.environ.get("RAY_ADDRESS")

    @property
    def reuse_workers(self) -> bool:
        """Whether the phases' Tuners reuse trial workers: a cluster's nodes choose their own malloc;
        an embedded Ray's workers are reused only off the C library's malloc (`allocator.reuse_workers`)."""
        return bool(self.address) or reuse_workers(os.environ)

    @property
    def address_flag(self) -> str:
        """Where `address` comes from, as messages name it."""
        return "--address" if self.given_address else "RAY_ADDRESS"

    def connect(self) -> None:
        """Starts or joins Ray once, when this session first needs it, then refuses arms no node can
        place and starts exporting the trials' metrics."""
        if self.connected:
            return
        self._start()
        treat_sigterm_as_ctrl_c()
        self._refuse_unplaceable()
        self.metrics.start()
        self.connected = True

    def _start(self) -> None:
        """Connects to Ray (its start takes tens of seconds: said before, and its dashboard after)."""
        address = self.address
        self.board.stage(f"connecting to Ray at {address}" if address else "starting Ray (embedded, on 127.0.0.1)")
        url = connect_ray(address, self.verbose, self.metrics_port, self.address_flag)
        started = f"connected to Ray at {address}" if address else "Ray started"
        line = f"{started}, dashboard at {url}" if url else f"{started} (no dashboard URL)"
        if self.metrics_port is not None:
            line += f"; Prometheus metrics at http://127.0.0.1:{self.metrics_port}/metrics"
        if not address:
            line += f"; {worker_malloc_line(os.environ)}"
        self.board.stage(line)
        limit = self.plan.tune.max_concurrent if self.plan.tune else None
        self.board.concurrency = concurrency(self.plan.arms[0], limit)

    def _refuse_unplaceable(self) -> None:
        """Arms whose trials no node can place: refused on an embedded cluster; on a given cluster an
        autoscaler may add nodes, so the wait is announced instead of silent."""
        import ray

        nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
        problems = [problem for arm in self.plan.arms if (problem := placement_problem(arm, nodes))]
        if not problems:
            return
        if not self.address:
            raise UserInputError(
                [
                    Problem(
                        f"{problem}: lower resources.cpus_per_worker / workers, or pass --address of a larger Ray cluster",
                        path="resources",
                    )
                    for problem in problems
                ]
            )
        for problem in problems:
            self.console.print(
                f"[yellow]waiting:[/] {escape(problem)}; Tune waits until a node that fits joins "
                "(an autoscaler may add one; Ctrl-C stops)"
            )

    def run_config(self, name: str, events: Any, max_retries: int) -> Any:
        """The `tune.RunConfig` of the Tuner `name`, reporting to `events`, a trial retried `max_retries` times."""
        from ray import tune

        experiment_dir = Path(self.storage) / path_component(self.plan.experiment) / name
        if "://" not in self.storage and experiment_dir.exists():
            shutil.rmtree(experiment_dir)  # resume state lives in MLflow; stale Ray state would confuse Tune
        return tune.RunConfig(
            name=f"{path_component(self.plan.experiment)}/{name}",
            storage_path=self.storage,
            callbacks=[events],
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
            failure_config=tune.FailureConfig(max_failures=max_retries),
            verbose=0,
        )

    def fit(self, tuner: Any, events: Any, expected: int, time_budget_s: float | None = None) -> bool:
        """Runs the Tuner; Interrupted when it stopped before all `expected` trials ended (Ctrl-C,
        SIGTERM: Tune then returns early, possibly between two trials); StoreLost from its callbacks.

        Returns True when `time_budget_s` ended it early instead: Tune stops its trials once the
        budget is spent, which is the spec's choice, not an interruption (trials it cut are closed
        as interrupted all the same, so --resume never counts them as finished)."""
        started = time.monotonic()
        try:
            tuner.fit()
        except KeyboardInterrupt:
            events.mark_interrupted()
            raise Interrupted() from None
        except Exception as error:
            lost = _store_lost_in(error)
            if lost is None:
                raise
            raise lost from error
        ended = len(events.outcomes)
        if events.mark_interrupted() or ended < expected:
            if time_budget_s is not None and time.monotonic() - started >= time_budget_s:
                return True
            raise Interrupted()
        return False


def _store_lost_in(error: BaseException) -> StoreLost | None:
    """The StoreLost a Tune callback raised, however Tune wrapped it."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, StoreLost):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None
