"""Searchers and schedulers a spec may name; Ray and Optuna are imported only when one is built."""

from __future__ import annotations

import functools
import hashlib
import itertools
import random
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nerplat.registry import Registry

SEARCHERS: Registry = Registry("searcher")
SCHEDULERS: Registry = Registry("scheduler")


class TpeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n_startup_trials: int = Field(5, ge=0, description="Random trials before TPE starts modelling.")
    constant_liar: bool = Field(True, description="Penalise running trials' points so concurrent trials spread out.")


class RandomConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GridConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    points_per_axis: int = Field(5, ge=2, description="Grid points per continuous dimension (choice/int use every value).")


class AshaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grace_period: int = Field(1, ge=1, description="Evaluations before a trial may be stopped.")
    reduction_factor: float = Field(3.0, gt=1, description="Fraction 1/eta of trials promoted per rung.")


class FifoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


def tune_domains(space: dict[str, Any]) -> dict[str, Any]:
    """Plan distributions (dotted TrialConfig paths) as Ray Tune domains for the Tuner's param_space.

    The space goes into param_space, not into OptunaSearch: a searcher given its own space ignores
    the metric and mode set on TuneConfig, and they must be set in one place only.
    """
    from ray import tune

    domains = {}
    for key, dist in space.items():
        if dist.kind == "uniform":
            domains[key] = tune.uniform(dist.low, dist.high)
        elif dist.kind == "loguniform":
            domains[key] = tune.loguniform(dist.low, dist.high)
        elif dist.kind == "int":
            domains[key] = tune.randint(int(dist.low), int(dist.high) + 1)  # upper bound exclusive
        else:
            domains[key] = tune.choice(list(dist.options))
    return domains


def grid_points(space: dict[str, Any], points_per_axis: int) -> dict[str, list[Any]]:
    """Every searched value per axis, as the compiler counted them (`Distribution.grid_values`)."""
    return {key: list(dist.grid_values(points_per_axis)) for key, dist in space.items()}


def optuna_distributions(space: dict[str, Any]) -> dict[str, Any]:
    """The Optuna distributions of a plan space, as Ray's OptunaSearch converts the Tune domains of
    `tune_domains` (a test holds the two equal), built without importing Ray Tune: a resume with
    nothing left to run reads its studies without Ray."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    distributions = {}
    for key, dist in space.items():
        if dist.kind in ("uniform", "loguniform"):
            distributions[key] = FloatDistribution(dist.low, dist.high, log=dist.kind == "loguniform")
        elif dist.kind == "int":
            distributions[key] = IntDistribution(int(dist.low), int(dist.high))
        else:
            distributions[key] = CategoricalDistribution(list(dist.options))
    return distributions


def searcher_seed(tune_seed: int, arm_id: str, place: int) -> int:
    """The seed of an arm's searched trial: sha256 of the spec's `tune.seed`, the arm id and the
    trial's place in the search (`TrialSeeds.place`), as a 32-bit integer.

    The arm id gives every tuned arm its own draws (one seed for all made every arm's random start
    draw the same quantiles, rescaled). The place gives each trial its own draws, the same in a
    resumed search as in a clean one: seeded once per session, a search resumed during its random
    start drew its first points again, and seeded by the trials asked, other points than a clean run.
    """
    digest = hashlib.sha256(f"{tune_seed}\0{arm_id}\0{place}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class TrialSeeds:
    """The seeds of an arm's searched trials (`run.study_search.TrialSeededSampler` draws with them).

    `interrupted` are the numbers of the study's trials that a stopped driver or Tuner interrupted
    (`run.study.interrupted_numbers`): each one's point runs again as a later trial, which takes its
    place, so the trials after it keep the places, and the seeds, they have in a clean run.
    """

    tune_seed: int
    arm_id: str
    interrupted: frozenset[int] = frozenset()

    def place(self, number: int) -> int:
        """The place in the search of the study's trial `number`: its number less the interrupted trials before it."""
        return number - sum(1 for earlier in self.interrupted if earlier < number)

    def of(self, number: int) -> int:
        """The seed of the study's trial `number`."""
        return searcher_seed(self.tune_seed, self.arm_id, self.place(number))


def grid_combinations(grid: dict[str, list[Any]], seed: int) -> list[dict[str, Any]]:
    """Every combination of grid points, in an order shuffled by `seed`."""
    keys = sorted(grid)
    combinations = [dict(zip(keys, values)) for values in itertools.product(*(grid[key] for key in keys))]
    random.Random(seed).shuffle(combinations)
    return combinations


@SEARCHERS.register("tpe", TpeConfig)
def build_tpe(config: TpeConfig, space: dict[str, Any], seeds: TrialSeeds, study: Any) -> Any:
    """Optuna TPE (constant liar under concurrency) on the arm's study (`run.study.ArmStudy`), each
    trial drawn with its own seed."""
    import optuna

    from nerplat.run.study_search import StudySearch, TrialSeededSampler  # lazy: Ray Tune, which only a search needs

    sampler = functools.partial(
        optuna.samplers.TPESampler, n_startup_trials=config.n_startup_trials, constant_liar=config.constant_liar
    )
    return StudySearch(TrialSeededSampler(sampler, seeds.of), study)


@SEARCHERS.register("random", RandomConfig)
def build_random(config: RandomConfig, space: dict[str, Any], seeds: TrialSeeds, study: Any) -> Any:
    """Uniform random sampling of the search space, each trial drawn with its own seed."""
    import optuna

    from nerplat.run.study_search import StudySearch, TrialSeededSampler  # lazy: Ray Tune, which only a search needs

    return StudySearch(TrialSeededSampler(optuna.samplers.RandomSampler, seeds.of), study)


@SEARCHERS.register("grid", GridConfig)
def build_grid(config: GridConfig, space: dict[str, Any], seeds: TrialSeeds, study: Any) -> Any:
    """Every combination of grid points, in an order seeded by the arm: the ones MLflow has not seen
    finish are queued in the study, so a resumed grid runs exactly those (Optuna's GridSampler alone
    would count failed and interrupted points as visited)."""
    import optuna

    from nerplat.run.study import enqueue_unfinished  # lazy: Optuna, which only a search needs
    from nerplat.run.study_search import StudySearch  # lazy: Ray Tune, which only a search needs

    grid = grid_points(space, config.points_per_axis)
    enqueue_unfinished(study, grid_combinations(grid, seeds.of(0)))
    return StudySearch(optuna.samplers.GridSampler(grid, seed=seeds.of(0)), study)


@SCHEDULERS.register("asha", AshaConfig)
def build_asha(config: AshaConfig, max_t: int) -> Any:
    """Asynchronous successive halving on the per-evaluation dev metric."""
    from ray.tune.schedulers import ASHAScheduler

    return ASHAScheduler(
        time_attr="training_iteration",
        max_t=max_t,
        grace_period=min(config.grace_period, max_t),
        reduction_factor=config.reduction_factor,
    )


@SCHEDULERS.register("fifo", FifoConfig)
def build_fifo(config: FifoConfig, max_t: int) -> Any:
    """Run every trial to the end."""
    from ray.tune.schedulers import FIFOScheduler

    return FIFOScheduler()
