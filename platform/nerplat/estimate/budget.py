"""`nerplat plan --cost --budget 150m`: whether the prediction fits the time a user gives, and if it
does not, which single cut would: the largest number of units (max_seeds) or replicate seeds, the
largest epoch cap, the largest tune num_samples, or the arms in no claim dropped, each found by
compiling the spec again with the cut as `--set` overrides and predicting that plan.

Advice only: `nerplat plan` exits 0 either way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from nerplat.analysis.sequential import MINIMUM_PAIRS
from nerplat.errors import Problem, UserInputError
from nerplat.estimate.cost import duration
from nerplat.plan.model import Plan
from nerplat.run.looks import claimed_arms

UNIT_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600}
BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)\s*$")

Replan = Callable[[Sequence[str]], Plan]  # the spec compiled with these --set overrides besides the user's
Predict = Callable[[Plan], "float | None"]  # a plan's predicted wall time (None: not predicted)


def parse_budget(text: str) -> float:
    """Seconds of `--budget` ('150m', '2h', '90min', '5400s')."""
    matched = BUDGET.match(text)
    if matched is None:
        raise UserInputError(Problem(f"--budget takes a duration with its unit (150m, 2h, 5400s), got {text!r}", path="--budget"))
    return float(matched.group(1)) * UNIT_SECONDS[matched.group(2)]


@dataclass(frozen=True)
class Cut:
    """A change that brings the prediction under the budget, as `--set` overrides."""

    what: str
    overrides: tuple[str, ...]
    wall_s: float

    def line(self) -> str:
        sets = " ".join(f"--set {override}" for override in self.overrides)
        return f"  {self.what}: predicted {duration(self.wall_s)} ({sets})"


@dataclass(frozen=True)
class BudgetAdvice:
    budget_s: float
    wall_s: float | None  # the plan's prediction as given
    cuts: list[Cut] = field(default_factory=list)

    @property
    def fits(self) -> bool | None:
        return None if self.wall_s is None else self.wall_s <= self.budget_s

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"fits": self.fits}

    def lines(self) -> list[str]:
        budget = f"budget {duration(self.budget_s)}"
        if self.wall_s is None:
            return [f"{budget}: no prediction to hold against it (an arm has none)"]
        if self.fits:
            return [f"{budget}: the predicted {duration(self.wall_s)} fits"]
        over = f"{budget}: the predicted {duration(self.wall_s)} exceeds it"
        if not self.cuts:
            return [f"{over}, and no single cut tried (units, seeds, epochs, tune trials, arms in no claim) fits"]
        return [f"{over}; any one of these cuts would fit:"] + [cut.line() for cut in self.cuts]


def advise(plan: Plan, wall_s: float | None, budget_s: float, replan: Replan, predict: Predict) -> BudgetAdvice:
    """The budget against `plan`'s predicted `wall_s`, with the cuts that fit when it does not."""
    if wall_s is None or wall_s <= budget_s:
        return BudgetAdvice(budget_s=budget_s, wall_s=wall_s)
    return BudgetAdvice(budget_s=budget_s, wall_s=wall_s, cuts=fitting_cuts(plan, budget_s, replan, predict))


def fitting_cuts(plan: Plan, budget_s: float, replan: Replan, predict: Predict) -> list[Cut]:
    """Of each kind of cut, the mildest that fits: values tried from the plan's own downwards."""
    cuts = []
    for tries in _cut_kinds(plan):
        for what, alternatives in tries:
            predicted = _predicted(alternatives, replan, predict)
            if predicted is not None and predicted[1] <= budget_s:
                cuts.append(Cut(what=what, overrides=predicted[0], wall_s=predicted[1]))
                break
    return cuts


def _predicted(alternatives: Sequence[tuple[str, ...]], replan: Replan, predict: Predict) -> tuple[tuple[str, ...], float] | None:
    """The first of `alternatives` (override sets that say the same cut) the spec accepts, and its prediction."""
    for overrides in alternatives:
        try:
            cut_plan = replan(overrides)
        except UserInputError:
            continue
        wall = predict(cut_plan)
        return None if wall is None else (overrides, wall)
    return None


Try = tuple[str, list[tuple[str, ...]]]  # what the cut is, and override sets that say it (the first the spec accepts)


def _cut_kinds(plan: Plan) -> list[Iterator[Try]]:
    """Per kind of cut, its tries from the mildest on."""
    kinds = []
    replicate = plan.resolved_spec.get("replicate") or {}
    if plan.sequential is not None:
        units = plan.sequential.max_seeds  # the first look needs MINIMUM_PAIRS units
        kinds.append(
            (f"at most {n} units (max_seeds, now {units})", _unit_overrides(n)) for n in range(units - 1, MINIMUM_PAIRS - 1, -1)
        )
    elif isinstance(replicate.get("seeds"), int):
        seeds = replicate["seeds"]
        kinds.append((f"{n} replicate seeds (now {seeds})", [(f"replicate.seeds={n}",)]) for n in range(seeds - 1, 0, -1))
    epochs = max(arm.fixed["train"]["epochs"] for arm in plan.arms)
    kinds.append((f"an epoch cap of {n} (now {epochs})", [(f"train.epochs={n}",)]) for n in range(epochs - 1, 0, -1))
    samples = (plan.resolved_spec.get("tune") or {}).get("num_samples")
    if plan.tune is not None and isinstance(samples, int):
        kinds.append(
            (f"{n} tune trials an arm (num_samples, now {samples})", [(f"tune.num_samples={n}",)])
            for n in range(samples - 1, 0, -1)
        )
    unclaimed = _methods_in_no_claim(plan)
    if unclaimed:
        drop = tuple(f"methods.{method}=null" for method in unclaimed)
        kinds.append(iter([(f"the arms in no claim dropped ({', '.join(unclaimed)})", [drop])]))
    return kinds


def _unit_overrides(units: int) -> list[tuple[str, ...]]:
    """max_seeds alone, else with the replicate seeds it must equal (a spec that lists both)."""
    return [(f"replicate.sequential.max_seeds={units}",), (f"replicate.seeds={units}", f"replicate.sequential.max_seeds={units}")]


def _methods_in_no_claim(plan: Plan) -> list[str]:
    """Methods none of whose arms a claim reads (none without claims: every arm is the report)."""
    if not plan.claims:
        return []
    claimed = {arm_id for arms in claimed_arms(plan.arms, plan.claims).values() for arm_id in arms}
    methods = dict.fromkeys(arm.method for arm in plan.arms)
    return [method for method in methods if not any(arm.id in claimed for arm in plan.arms if arm.method == method)]
