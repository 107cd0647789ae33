"""The tune phase of an arm: search its space on dev in one Tuner, continuing the arm's Optuna study,
then choose the trial whose configuration the replicates re-train. `ExperimentRunner` (run/runner.py)
holds one and calls `tune_arm` for each arm with a search space.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from nerplat.plan.model import Arm
from nerplat.run.job import PHASE_KEY, TrialJob
from nerplat.run.ledger import FinishedTrial
from nerplat.run.outcomes import ArmOutcome
from nerplat.run.phase_context import PhaseContext
from nerplat.run.ray_session import concurrency, path_component
from nerplat.run.search import SCHEDULERS, SEARCHERS, TrialSeeds, optuna_distributions, tune_domains
from nerplat.run.trainable import nerplat_trial, trial_resources
from nerplat.track.studies import study_name


class TunePhase:
    """Tunes arms on dev with what the run shares with its phases (`PhaseContext`)."""

    def __init__(self, context: PhaseContext):
        self.context = context

    def tune_arm(self, arm: Arm, outcome: ArmOutcome) -> None:
        """Searches the arm's space on dev (continuing an earlier session's trials), then chooses."""
        ledger, board = self.context.ledger, self.context.board
        parent = ledger.start_phase(arm, "tune", params={"search_space": {k: v.label() for k, v in arm.search_space.items()}})
        metric = f"dev_best_{self.context.select_metric}"
        previous = ledger.finished_trials(parent.run_id, metric)
        progress = board.phase(arm.id, "tune", arm.tune_trials)
        progress.skipped = len(previous)
        for trial in previous:
            progress.offer(trial.value)
        remaining = arm.tune_trials - len(previous)
        budget_spent = False
        if not parent.finished and remaining > 0:
            kept = f" ({len(previous)} finished earlier)" if previous else ""
            board.stage(f"tuning {arm.id}: {remaining} of {arm.tune_trials} trials to run{kept}")
            errors, budget_spent = self._search(arm, parent.run_id, previous, remaining)
            outcome.errors += errors
            previous = ledger.finished_trials(parent.run_id, metric)
        outcome.tune_trials.update(ledger.statuses(parent.run_id))
        if len(previous) < arm.tune_trials:
            budget = f"tune.time_budget_s ({self.context.plan.tune.time_budget_s:g} s)" if budget_spent else None
            if budget and previous:  # the spec's own limit: choose from what finished
                board.stage(
                    f"tuning {arm.id}: {budget} spent after {len(previous)} of {arm.tune_trials} trials; choosing from those"
                )
            else:
                # Chosen from fewer trials than the spec asks for, the arm would not be the experiment the
                # spec describes: it stays unchosen, and --resume runs the missing trials.
                outcome.errors.append(
                    f"{budget} was spent before any trial finished: raise it" if budget
                    else f"tuning incomplete: {len(previous)} of {arm.tune_trials} trials finished; the arm is not "
                    "replicated until --resume has run the missing ones"
                )
                ledger.finish(parent.run_id, "failed")
                return
        chosen = self._chosen_trial(arm, parent.run_id, previous)
        outcome.chosen, outcome.chosen_value = chosen.values, chosen.value
        ledger.record_choice(parent.run_id, chosen, metric)
        ledger.finish(parent.run_id, "completed")

    def _arm_study(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial]) -> Any:
        """The arm's Optuna study, in step with MLflow's finished trials (run/study.py)."""
        from nerplat.run.study import ArmStudy, prepare_study  # lazy: Optuna, loaded only when an arm is tuned

        context = self.context
        study = ArmStudy(context.study_storage, study_name(context.plan.experiment, arm.id), tuple(previous))
        metric = f"dev_best_{context.select_metric}"
        distributions = optuna_distributions(arm.search_space)
        if prepare_study(study, owner=parent_run_id, metric=metric, mode=context.plan.tune.mode, distributions=distributions):
            context.console.print(
                f"[yellow]replaced the Optuna study {escape(study.name)}[/] in {escape(context.optuna_storage)}: it held the "
                "trials of another MLflow run of this arm, since deleted (the experiment or the arm started anew)"
            )
        return study

    def _chosen_trial(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial]) -> FinishedTrial:
        """The study's best trial, once the study agrees with MLflow: nerplat and optuna-dashboard
        choose the same trial, ties included (run/study.py, `chosen_trial`)."""
        from nerplat.run.study import chosen_trial  # lazy: Optuna, loaded only when an arm is tuned

        return chosen_trial(self._arm_study(arm, parent_run_id, previous))

    def _searcher(self, arm: Arm, parent_run_id: str, study: Any) -> Any:
        """The arm's searcher on its prepared study, which first asks for the point of each trial an
        earlier session left interrupted, then for the spec's starting points, each once; each
        trial drawn with the seed of its place in the search (run/study_search.py)."""
        # lazy: Optuna, loaded only when an arm is tuned
        from nerplat.run.study import enqueue_unfinished, interrupted_numbers, points_to_queue

        settings = self.context.plan.tune
        interrupted = self.context.ledger.interrupted_trials(parent_run_id)
        enqueue_unfinished(study, points_to_queue(interrupted, settings.enqueue.get(arm.method, ())))
        seeds = TrialSeeds(settings.seed, arm.id, interrupted_numbers(study, interrupted))
        return SEARCHERS.build(
            settings.searcher.name, settings.searcher.params, at="tune.search", space=arm.search_space, seeds=seeds, study=study
        )

    def _search(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial], remaining: int) -> tuple[list[str], bool]:
        """One Tuner over `remaining` new trials, continuing the arm's Optuna study; returns the arm's
        trial errors and whether `tune.time_budget_s` ended it early."""
        from ray import tune

        # lazy: Ray Tune and Optuna, loaded only when trials run (a resume with nothing left starts no Ray)
        from nerplat.run.events import TrialEvents
        from nerplat.run.study import fail_running

        context = self.context
        context.connect_ray()
        settings = context.plan.tune
        metric = f"dev_best_{context.select_metric}"
        study = self._arm_study(arm, parent_run_id, previous)
        searcher = self._searcher(arm, parent_run_id, study)
        evaluations = max(1, arm.fixed["train"]["epochs"] // arm.fixed["train"]["eval_every"])
        scheduler = SCHEDULERS.build(settings.scheduler.name, settings.scheduler.params, at="tune.scheduler", max_t=evaluations)
        job = TrialJob(
            arm=arm, phase="tune", seed=settings.train_seed, partition=arm.partitions[0], eval_split=None,
            select_metric=context.select_metric, parent_run_id=parent_run_id,
        )
        events = TrialEvents(context.ledger, context.board, context.metrics, search=searcher)
        tuner = tune.Tuner(
            tune.with_resources(nerplat_trial, trial_resources),
            param_space={PHASE_KEY: job.model_dump(mode="json"), **tune_domains(arm.search_space)},
            tune_config=tune.TuneConfig(
                metric=metric,
                mode=settings.mode,
                search_alg=searcher,
                scheduler=scheduler,
                num_samples=remaining,
                max_concurrent_trials=concurrency(arm, settings.max_concurrent),
                time_budget_s=settings.time_budget_s,
                reuse_actors=True,
                trial_dirname_creator=lambda trial: trial.trial_id,
            ),
            run_config=context.ray_run_config(f"{path_component(arm.id)}__tune", events, arm.resources.max_retries),
        )
        try:
            budget_spent = context.fit(tuner, events, expected=remaining, time_budget_s=settings.time_budget_s)
        finally:
            fail_running(study)
        return events.errors.get(arm.id, []), budget_spent
