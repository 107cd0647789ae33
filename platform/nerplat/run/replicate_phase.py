"""The replicate phase: each arm's chosen configuration re-trained for every replicate (seed x
partition) not yet completed, all arms in one Tuner, or look by look under a sequential design.
`ExperimentRunner` (run/runner.py) holds one and calls `replicate` with the arms whose tuning is complete.
"""

from __future__ import annotations

import json
from typing import Any

from nerplat.plan.model import Arm, Replicate
from nerplat.run.job import PHASE_KEY, TrialJob
from nerplat.run.looks import ReplicateLooks, claimed_arms, needed_arms
from nerplat.run.outcomes import ArmOutcome
from nerplat.run.phase_context import PhaseContext
from nerplat.run.ray_session import concurrency
from nerplat.run.trainable import nerplat_trial, trial_resources
from nerplat.serving.mlflow_models import ArmModel, register_arm_models
from nerplat.track import schema
from nerplat.track.experiment_reader import open_client


class ReplicatePhase:
    """Replicates arms' chosen configurations with what the run shares with its phases (`PhaseContext`)."""

    def __init__(self, context: PhaseContext):
        self.context = context
        self.next_look: int | None = None  # 1-based: the look --resume runs, once `through_look` stopped the design early

    def replicate(self, arms: list[Arm], outcomes: dict[str, ArmOutcome]) -> None:
        """Re-trains each arm's chosen configuration for every replicate not yet completed: all at
        once, or look by look under a sequential design (`run.looks`) while some claim needs the arm
        (a claim in `undecidable` needs none beyond the first look). With `through_look` k the looks stop
        after the k-th: a later --resume recomputes the looks taken and runs look k + 1 on the next units
        (`next_look`, unless the design ended by then)."""
        plan, ledger, board = self.context.plan, self.context.ledger, self.context.board
        parents: dict[str, str] = {}
        asked = {arm.id: arm.replicates for arm in arms}
        if plan.sequential is None:
            self._replicate_look(arms, asked, outcomes, parents)
        else:
            looks = ReplicateLooks(plan.sequential)
            claimed = claimed_arms(arms, plan.claims)
            active = list(arms)
            for look in range(looks.looks()):
                asked.update({arm.id: looks.replicates(arm, look) for arm in active})
                board.stage(
                    f"look {look + 1}: replicates of {len(active)} arm(s) up to {max(len(asked[a.id]) for a in active)} each"
                )
                self._replicate_look(active, asked, outcomes, parents)
                if any(outcomes[a.id].errors for a in active):
                    break  # a failed replicate leaves its claims unjudged: a resume runs it again first
                needed = needed_arms(self._claim_verdicts(), claimed, self.context.undecidable)
                for arm in active:
                    if arm.id not in needed:  # its claims are decided: the progress table counts what it ran
                        board.phase(arm.id, "replicate", len(arm.replicates)).total = len(asked[arm.id])
                active = [arm for arm in active if arm.id in needed and len(asked[arm.id]) < len(arm.replicates)]
                if active and look + 1 == self.context.through_look:
                    self.next_look = look + 2
                if not active or self.next_look:
                    break
        for arm in arms:
            statuses = ledger.statuses(parents[arm.id])
            outcomes[arm.id].replicates = statuses
            ledger.record_replicate_summary(parents[arm.id], plan.replicate_split)
            complete = statuses.get("completed", 0) >= len(asked[arm.id])
            if complete:
                self._register_models(arm, parents[arm.id])
            ledger.finish(parents[arm.id], "completed" if complete else "failed")

    def _replicate_look(
        self, arms: list[Arm], asked: dict[str, tuple[Replicate, ...]], outcomes: dict[str, ArmOutcome], parents: dict[str, str]
    ) -> None:
        """Runs the `asked` replicates of `arms` that have not completed, all in one Tuner."""
        jobs = []
        for arm in arms:
            jobs += self._replicate_jobs(arm, asked[arm.id], outcomes[arm.id].chosen or {}, parents)
        if jobs:
            self.context.board.stage(f"replicates: {len(jobs)} runs of {len(arms)} arm(s) with their chosen configurations")
            for arm_id, errors in self._fit_replicates(arms, jobs).items():
                outcomes[arm_id].errors += errors

    def _claim_verdicts(self) -> Any:
        """The claims judged on the replicates finished so far (statistics only: no ASO, no convergence)."""
        import polars as pl

        # lazy: polars, which only a sequential design's looks need
        from nerplat.analysis.report import settings_from_plan
        from nerplat.analysis.run_frames import fetch_replicates
        from nerplat.analysis.verdicts import verdicts

        plan = self.context.plan
        replicates = fetch_replicates(open_client(self.context.tracking_uri), plan.experiment)
        usable = replicates.filter(pl.col("status") == "completed") if not replicates.is_empty() else replicates
        settings = settings_from_plan(plan.model_dump(mode="json"), "plan")
        return verdicts(usable, settings, aso=False)

    def _replicate_jobs(
        self, arm: Arm, replicates: tuple[Replicate, ...], chosen: dict[str, Any], parents: dict[str, str]
    ) -> list[dict[str, Any]]:
        """Opens the arm's replicate runs (finished ones are skipped) and returns the Tune jobs of the rest."""
        context, plan = self.context, self.context.plan
        parent = context.ledger.start_phase(arm, "replicate", params=chosen, tags={schema.SAMPLED: json.dumps(chosen)})
        parents[arm.id] = parent.run_id
        jobs, skipped = [], 0
        for replicate in replicates:
            config = arm.trial_config(chosen, seed=replicate.seed, partition=replicate.partition, eval_split=plan.replicate_split)
            run = context.ledger.open_replicate(parent.run_id, arm, replicate, config)
            if run.finished and run.status == "completed":
                skipped += 1
                continue
            if context.registrations:  # what this run serves; a run finished earlier keeps what it served then
                context.ledger.tracker.edits.set_tags(
                    run.run_id, {schema.REGISTRATIONS: json.dumps(context.registrations, sort_keys=True)}
                )
            job = TrialJob(
                arm=arm,
                phase="replicate",
                seed=replicate.seed,
                partition=replicate.partition,
                eval_split=plan.replicate_split,
                select_metric=context.select_metric,
                fixed_values=chosen,
                parent_run_id=parent.run_id,
                run_id=run.run_id,
                tracking_uri=context.tracking_uri,
                log_model=plan.replicate_models != "none",
            )
            jobs.append(job.model_dump(mode="json"))
        progress = context.board.phase(arm.id, "replicate", len(arm.replicates))
        # finished before this session: a later look finds this session's own runs finished too
        progress.skipped = max(progress.skipped, skipped - progress.finished)
        return jobs

    def _fit_replicates(self, arms: list[Arm], jobs: list[dict[str, Any]]) -> dict[str, list[str]]:
        """All replicates of all arms in one Tuner, so small arms fill idle CPUs; returns errors by arm."""
        from ray import tune

        # lazy: Ray Tune, loaded only when trials run (a resume with nothing left starts no Ray)
        from nerplat.run.events import TrialEvents

        context = self.context
        context.ray.connect()
        events = TrialEvents(context.ledger, context.board, context.metrics)
        limit = context.plan.tune.max_concurrent if context.plan.tune else None
        tuner = tune.Tuner(
            tune.with_resources(nerplat_trial, trial_resources),
            param_space={PHASE_KEY: tune.grid_search(jobs)},
            tune_config=tune.TuneConfig(
                num_samples=1,
                max_concurrent_trials=max(concurrency(arm, limit) for arm in arms),
                reuse_actors=context.ray.reuse_workers,
                trial_dirname_creator=lambda trial: trial.trial_id,
            ),
            run_config=context.ray.run_config("replicate", events, max(a.resources.max_retries for a in arms)),
        )
        context.ray.fit(tuner, events, expected=len(jobs))
        return events.errors

    def _register_models(self, arm: Arm, parent_run_id: str) -> None:
        """The arm's chosen replicate models into the MLflow registry (spec `replicate.models`)."""
        context, plan = self.context, self.context.plan
        runs = context.ledger.children(parent_run_id)
        mode = plan.tune.mode if plan.tune else "max"
        register_arm_models(
            context.tracking_uri,
            ArmModel(plan.experiment, arm.id, arm.label),
            runs,
            plan.replicate_models,
            metric=context.select_metric,
            split=plan.replicate_split,
            mode=mode,
        )
