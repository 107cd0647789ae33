"""The tune phase of an arm: search its space on dev in one Tuner, continuing the arm's Optuna study,
then choose the trial whose configuration the replicates re-train (run/trial_choice.py). `ExperimentRunner`
(run/runner.py) holds one and calls `tune_arm` for each arm with a search space.

A tune phase that completed in an earlier session is never chosen again: its recorded choice (the
tune run's `nerplat.sampled`, the `nerplat.best_trial` tag) stands, and a resume that cannot read
it, or finds that its replicates trained another configuration, is refused before it writes
anything (`refuse_unusable_choices`).
"""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape

from nerplat.errors import Problem, UserInputError
from nerplat.kill_points import kill_point
from nerplat.plan.model import Arm
from nerplat.run.job import PHASE_KEY, TrialJob
from nerplat.run.outcomes import ArmOutcome
from nerplat.run.phase_context import PhaseContext
from nerplat.run.ray_session import concurrency, path_component
from nerplat.run.search import SCHEDULERS, SEARCHERS, TrialSeeds, optuna_distributions, tune_domains
from nerplat.run.trainable import nerplat_trial, trial_resources
from nerplat.run.trial_choice import FinishedTrial, chosen_trial
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
        if parent.finished:  # completed earlier: what it chose stands
            outcome.tune_trials.update(ledger.statuses(parent.run_id))
            self._keep_choice(arm, parent.run_id, previous, outcome)
            return
        remaining = arm.tune_trials - len(previous)
        budget_spent = False
        if remaining > 0:
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
        self._arm_study(arm, parent.run_id, previous)  # in step with MLflow, as optuna-dashboard shows it
        chosen = chosen_trial(previous, self.context.plan.tune.mode)
        outcome.chosen, outcome.chosen_value = chosen.values, chosen.value
        ledger.record_choice(parent.run_id, chosen, metric)
        ledger.finish(parent.run_id, "completed")
        kill_point("tune_end")

    def _arm_study(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial]) -> Any:
        """The arm's Optuna study, in step with MLflow's finished trials (run/study.py)."""
        from nerplat.run.study import ArmStudy, prepare_study  # lazy: Optuna, loaded only when an arm is tuned

        context = self.context
        taken = context.ledger.taken_sample_indexes(parent_run_id)
        study = ArmStudy(context.study_storage, study_name(context.plan.experiment, arm.id), tuple(previous), taken)
        metric = f"dev_best_{context.select_metric}"
        distributions = optuna_distributions(arm.search_space)
        if prepare_study(study, owner=parent_run_id, metric=metric, mode=context.plan.tune.mode, distributions=distributions):
            context.console.print(
                f"[yellow]replaced the Optuna study {escape(study.name)}[/] in {escape(context.optuna_storage)}: it held the "
                "trials of another MLflow run of this arm, since deleted (the experiment or the arm started anew)"
            )
        return study

    def _keep_choice(self, arm: Arm, parent_run_id: str, previous: list[FinishedTrial], outcome: ArmOutcome) -> None:
        """The choice a completed tune phase recorded, read back and never written again; its study is
        brought in step with MLflow (rebuilt, in sampling order, when optuna.db was lost)."""
        chosen = self.context.ledger.recorded_choice(arm, f"dev_best_{self.context.select_metric}")
        if chosen is None:  # `refuse_unusable_choices` refuses it before a resume writes
            raise UserInputError(self._unreadable(arm))
        self._arm_study(arm, parent_run_id, previous)
        outcome.chosen, outcome.chosen_value = chosen.values, chosen.value

    def refuse_unusable_choices(self, arms: list[Arm]) -> None:
        """Before a resume writes anything: every completed tune phase of `arms` has a choice to read
        back (`RunLedger.recorded_choice`), and its replicates, if started, trained that configuration;
        UserInputError naming each arm that does not."""
        ledger, metric = self.context.ledger, f"dev_best_{self.context.select_metric}"
        problems = []
        for arm in arms:
            if not arm.tune_trials or not ledger.phase_completed(arm, "tune"):
                continue
            chosen = ledger.recorded_choice(arm, metric)
            trained = ledger.replicated_choice(arm)
            if chosen is None:
                problems.append(Problem(self._unreadable(arm)))
            elif trained is not None and trained != chosen.values:
                problems.append(Problem(
                    f"arm {arm.id}: its tune run records the choice {chosen.values} (trial {chosen.run_name}), but its "
                    f"replicates were trained with {trained}: the record was rewritten after they started (an "
                    "earlier nerplat re-chose tied trials when optuna.db was lost, issue 62); nothing was changed: "
                    f"set the tune run's tag nerplat.sampled back to {json.dumps(trained)} and nerplat.best_trial on that "
                    "trial's run, or change `experiment:` to start anew"
                ))
        if problems:
            raise UserInputError(problems)

    @staticmethod
    def _unreadable(arm: Arm) -> str:
        return (
            f"arm {arm.id}: its tune phase completed, but its tune run records no choice nerplat can read back (a "
            "nerplat.sampled tag that is the point of a finished trial tagged nerplat.best_trial); nothing was "
            "changed: restore those tags, or change `experiment:` to start anew"
        )

    def _searcher(self, arm: Arm, parent_run_id: str, study: Any) -> Any:
        """The arm's searcher on its prepared study, which first asks for the point of each trial an
        earlier session left interrupted, then for the spec's starting points, each once; each
        trial drawn with the seed of its place in the search (run/study_search.py)."""
        # lazy: Optuna, loaded only when an arm is tuned
        from nerplat.run.study import enqueue_unfinished, interrupted_numbers, starting_points

        settings = self.context.plan.tune
        interrupted = self.context.ledger.interrupted_trials(parent_run_id)
        enqueue_unfinished(study, starting_points(interrupted, settings.enqueue.get(arm.method, ())), interrupted)
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
        context.ray.connect()
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
                reuse_actors=context.ray.reuse_workers,
                trial_dirname_creator=lambda trial: trial.trial_id,
            ),
            run_config=context.ray.run_config(f"{path_component(arm.id)}__tune", events, arm.resources.max_retries),
        )
        try:
            budget_spent = context.ray.fit(tuner, events, expected=remaining, time_budget_s=settings.time_budget_s)
        finally:
            fail_running(study)
        return events.errors.get(arm.id, []), budget_spent
