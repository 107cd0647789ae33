"""What a changed spec means for the experiment it resumes: which arms' recorded runs it changes.

An arm's runs are decided by the arm as its plan compiles it (fixed trial settings, search space,
tune trials, replicates, resources), by the plan's tune settings when the arm is tuned, and by
the replicates' split and model logging. Nothing else in a spec (the analysis, the description,
comments, the other arms) changes what an arm's trials compute, and its label only names its runs.
So a resume with a changed spec can keep the finished runs of every arm whose part is unchanged.
Replicates added to an arm (more seeds, a larger `max_seeds`) leave its finished runs as they
were, so raising the replicates of an undecided claim continues the experiment; replicates
taken away change the arm (their finished runs would still be analysed).
The arms it changes, and those it no longer has (their runs would still be analysed), are rerun:
`nerplat run --resume --rerun-changed` deletes their runs and runs them anew.

The files an arm's runs read count as its spec: an arm whose finished runs recorded other corpus
or plugin files than those there now (`run/inputs.py`) is changed the same way, named with the files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nerplat.plan.model import Plan, sha256_of


@dataclass(frozen=True)
class SpecChange:
    started_with: str  # sha256 of the resolved spec the experiment was started from
    earlier: Mapping[str, Any] = field(repr=False)  # the plan.json it was started with
    changed: tuple[str, ...]  # arms of both plans whose runs would differ
    removed: tuple[str, ...]  # arms only the earlier plan has
    inputs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # arm -> its input files that changed

    @property
    def rerun(self) -> tuple[str, ...]:
        """The arms whose recorded runs no longer belong to the experiment."""
        spec = self.changed + self.removed
        return spec + tuple(arm for arm in self.inputs if arm not in spec)

    def describe(self) -> str:
        """'changed: a, b; removed: c; read other files: d (conll2003/train.txt changed)' for messages."""
        parts = [f"{kind}: {', '.join(arms)}" for kind, arms in (("changed", self.changed), ("removed", self.removed)) if arms]
        if self.inputs:
            parts.append("read other files: " + ", ".join(f"{arm} ({'; '.join(files)})" for arm, files in self.inputs.items()))
        return "; ".join(parts)


def arm_fingerprint(plan: Mapping[str, Any], arm: Mapping[str, Any]) -> str:
    """sha256 of what decides an arm's runs, from the plan and arm as JSON (as plan.json records them);
    which replicates it has is compared apart (`spec_change`).

    Null values count as absent: a field a later version adds with a null default (say
    `train.eval_precision`) does not make every arm of an older experiment look changed."""
    return sha256_of(
        _without_nulls(
            {
                "arm": {key: value for key, value in arm.items() if key not in ("label", "replicates")},
                "tune": _arm_tune(plan.get("tune"), arm["method"]) if arm.get("tune_trials") else None,
                "replicate_split": plan.get("replicate_split"),
                # older plans lack it
                "replicate_models": plan.get("replicate_models", Plan.model_fields["replicate_models"].default),
            }
        )
    )


def _without_nulls(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {key: _without_nulls(value) for key, value in data.items() if value is not None}
    if isinstance(data, list | tuple):
        return [_without_nulls(value) for value in data]
    return data


def _arm_tune(tune: Mapping[str, Any] | None, method: str) -> dict[str, Any] | None:
    """The tune settings as they bear on one arm: its method's starting points only, and the keys
    later versions added (`seed`, `enqueue`) at their defaults when an older plan.json lacks them."""
    if tune is None:
        return None
    return {**tune, "seed": tune.get("seed", 0), "enqueue": list(tune.get("enqueue", {}).get(method, []))}


def spec_change(started_with: str, earlier: Mapping[str, Any], plan: Plan) -> SpecChange:
    """The arms of `earlier` (the plan.json the experiment was started with) that `plan` changes or drops."""
    now = plan.model_dump(mode="json")
    current = {arm["id"]: arm_fingerprint(now, arm) for arm in now["arms"]}
    before = {arm["id"]: arm_fingerprint(earlier, arm) for arm in earlier.get("arms", [])}
    replicates = {arm["id"]: _replicate_keys(arm) for arm in now["arms"]}
    changed = tuple(
        arm["id"]
        for arm in earlier.get("arms", [])
        if arm["id"] in current and (current[arm["id"]] != before[arm["id"]] or not _replicate_keys(arm) <= replicates[arm["id"]])
    )
    removed = tuple(arm for arm in before if arm not in current)
    return SpecChange(started_with, earlier, changed, removed)


def _replicate_keys(arm: Mapping[str, Any]) -> set[tuple[int, int]]:
    return {(replicate["seed"], replicate["partition"]) for replicate in arm.get("replicates", [])}
