"""Searchers and schedulers a spec may name; Ray and Optuna are imported only when one is built."""

from __future__ import annotations

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


@SEARCHERS.register("tpe", TpeConfig)
def build_tpe(config: TpeConfig, space: dict[str, Any], metric: str, mode: str, seed: int) -> Any:
    """Optuna TPE (constant liar under concurrency)."""
    raise NotImplementedError  # built by the execution issue


@SEARCHERS.register("random", RandomConfig)
def build_random(config: RandomConfig, space: dict[str, Any], metric: str, mode: str, seed: int) -> Any:
    """Uniform random sampling of the search space."""
    raise NotImplementedError  # built by the execution issue


@SEARCHERS.register("grid", GridConfig)
def build_grid(config: GridConfig, space: dict[str, Any], metric: str, mode: str, seed: int) -> Any:
    """Every combination of grid points."""
    raise NotImplementedError  # built by the execution issue


@SCHEDULERS.register("asha", AshaConfig)
def build_asha(config: AshaConfig, max_t: int) -> Any:
    """Asynchronous successive halving on the per-evaluation dev metric."""
    raise NotImplementedError  # built by the execution issue


@SCHEDULERS.register("fifo", FifoConfig)
def build_fifo(config: FifoConfig, max_t: int) -> Any:
    """Run every trial to the end."""
    raise NotImplementedError  # built by the execution issue
