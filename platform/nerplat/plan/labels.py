"""Short arm labels for people: what tells one arm of a plan from the others, and nothing more.

Arm ids (`conll2003/untyped+low_resource-100/mom`) are unique but long: a table column cut at 20
characters shows only the part every arm shares. A label keeps the method, then the sampler
setting and the dataset only when the plan has more than one of them; a sampler setting drops the
leading `+`-parts every setting shares (`untyped+low_resource-100` -> `low_resource-100`).
Labels are distinct within a plan because every part that varies is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from nerplat.run_keys import SEPARATOR  # labels and run names share it: `mom · p0 · s1`


def arm_label_parts(cells: Sequence[tuple[str, str, str]]) -> list[tuple[str, ...]]:
    """(dataset, sampler setting, method) of every arm -> the parts of its label, in the same order."""
    datasets = {dataset for dataset, _, _ in cells}
    samplers = sorted({sampler for _, sampler, _ in cells})
    short = _without_shared_prefix(samplers)
    labels = []
    for dataset, sampler, method in cells:
        parts = [method]
        if len(samplers) > 1:
            parts.append(short[sampler])
        if len(datasets) > 1:
            parts.append(dataset)
        labels.append(tuple(parts))
    return labels


def arm_labels(cells: Sequence[tuple[str, str, str]]) -> list[str]:
    """The labels of `arm_label_parts`, joined as run names show them (`mom · low_resource-20`)."""
    return [SEPARATOR.join(parts) for parts in arm_label_parts(cells)]


def _without_shared_prefix(settings: Sequence[str]) -> dict[str, str]:
    """Each sampler setting without the leading `+`-parts all of them share (at least one part kept)."""
    split = {setting: setting.split("+") for setting in settings}
    shared = 0
    shortest = min((len(parts) for parts in split.values()), default=0)
    while shared < shortest - 1 and len({tuple(parts[: shared + 1]) for parts in split.values()}) == 1:
        shared += 1
    return {setting: "+".join(parts[shared:]) for setting, parts in split.items()}
