"""The searcher Ray Tune asks for an arm's trials: OptunaSearch on the arm's study (run/study.py),
drawing each trial with a seed of its own.

A sampler seeded once per session draws from wherever its generator stands, so a search resumed
after a kill drew other points than a clean run from the trial where the driver stopped, and chose
another configuration. `TrialSeededSampler` seeds each trial by its place in the search
(`run.search.TrialSeeds`): the n-th searched trial draws what the n-th trial of a clean run draws
from the same finished trials, however many sessions the search took. With the point of each
interrupted trial run again first (`run.study.enqueue_unfinished`), a killed and resumed search asks
for the points a clean run asks for, one trial at a time (concurrent trials finish in any order).

`StudySearch` also gives each trial its sample index when it is sampled (run/trial_choice.py): the
index its queued point carries when it runs an interrupted trial's point again, else the smallest
no trial of the search holds. It travels in the trial's Tune config (`run.job.SAMPLE_INDEX_KEY`) to
the ledger, which tags the trial's MLflow run with it, and is kept on the Optuna trial.

Imported when a search starts: it imports Ray Tune.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState
from ray.tune.search.optuna import OptunaSearch

from nerplat.kill_points import kill_point
from nerplat.run.job import SAMPLE_INDEX_KEY
from nerplat.run.study import SAMPLE_INDEX_ATTR, ArmStudy, run_attributes
from nerplat.run.trial_choice import first_free_index


class TrialSeededSampler(BaseSampler):
    """An Optuna sampler built anew for each trial by `build(seed=...)`, with the seed `seed_of(trial
    number)` (`TrialSeeds.of`: the seed of the trial's place in the search); Optuna calls
    `before_trial` first, in `ask`. Both callables pickle (a sampler class or a partial of one, a
    bound method): Tune saves its searcher with them."""

    def __init__(self, build: Callable[..., BaseSampler], seed_of: Callable[[int], int]):
        self._build, self._seed_of = build, seed_of
        self._sampler = build(seed=seed_of(0))

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._sampler = self._build(seed=self._seed_of(trial.number))
        self._sampler.before_trial(study, trial)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._sampler.infer_relative_search_space(study, trial)

    def sample_relative(self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._sampler.sample_relative(study, trial, search_space)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution) -> Any:
        return self._sampler.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        self._sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._sampler.reseed_rng()


class StudySearch(OptunaSearch):
    """Ray Tune's OptunaSearch on an arm's persistent study, whose trials name their MLflow runs.

    Tune reports a trial's end to its searcher before its callbacks, so the study would be told
    before the ledger ends the trial's MLflow run. The report is held here instead, and `tell` (the
    driver's callback, once the run ended) passes it on.
    """

    def __init__(self, sampler: Any, study: ArmStudy):
        super().__init__(sampler=sampler, storage=study.storage, study_name=study.name)
        self._held: dict[str, tuple[dict | None, bool]] = {}
        self._taken = set(study.taken)  # sample indexes held: by MLflow's trial runs, then by this session's trials

    def suggest(self, trial_id: str) -> dict | None:
        """The trial's searched values and its sample index (`SAMPLE_INDEX_KEY`)."""
        config = super().suggest(trial_id)
        if not isinstance(config, dict):
            return config
        trial = self._ot_trials[trial_id]
        index = trial.user_attrs.get(SAMPLE_INDEX_ATTR)
        if index is None:
            index = first_free_index(self._taken)
            trial.set_user_attr(SAMPLE_INDEX_ATTR, index)
        self._taken.add(index)
        return {**config, SAMPLE_INDEX_KEY: index}

    def record_run(self, trial_id: str, run_id: str, run_name: str) -> None:
        """Tune trial `trial_id` logs to this MLflow run: said on its Optuna trial."""
        trial = self._ot_trials.get(trial_id)
        if trial is not None:
            for key, value in run_attributes(run_id, run_name).items():
                trial.set_user_attr(key, value)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        self._held[trial_id] = (result, error)

    def tell(self, trial_id: str) -> None:
        """Tells the study how trial `trial_id` ended, once its MLflow run has ended. A trial that
        errored fails, whatever it reported before (MLflow calls it failed)."""
        if trial_id not in self._held:
            return
        result, error = self._held.pop(trial_id)
        super().on_trial_complete(trial_id, None if error else result, error)
        kill_point("optuna_commit")
