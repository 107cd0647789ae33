"""Run keys, which resume looks up, and run names, which people read.

Plain text, no MLflow: a leaf, so the spec (labels fit for keys), the plan (arm labels, which start every
run name) and the tracker share it without the spec or the plan importing the storage layer.

A key is deterministic and unique in its experiment; it is the `nerplat.run_key` tag of the run:

    <arm>/<phase>                                  parent run of an arm's tune or replicate phase
    <arm>/tune/<trial_id>                          one tuning trial
    <arm>/replicate/seed<k>-partition<p>           one replicate of the best configuration
    summary                                        one per experiment (plan, spec, environment, report)

Keys go into MLflow search filters between single quotes, which cannot be escaped there, so
quotes and backslashes are refused rather than silently changed; names that come from outside a
spec's own vocabulary (a corpus folder's name, a sampler's text parameter) pass `key_text` first,
which writes those characters as `%XX`. (Experiments written before keys
became tags used them as run names; lookups fall back to the name there.)

A name is what MLflow's runs table shows: short, and distinct among the runs beside it. It starts
with the arm's label (`plan/labels.py`), so a name cut short still tells the arms apart:

    mom · tune, mom · replicate                    arm runs (distinct in the experiment)
    mom · t0003                                    a tuning trial (distinct under its arm run)
    mom · p0 · s1                                  the replicate of partition 0, seed 1
    summary
"""

from __future__ import annotations

import re

SEPARATOR = " · "  # between the parts of a name, and of an arm label (`plan/labels.py`)
SUMMARY_RUN_KEY = "summary"
SUMMARY_RUN_NAME = "summary"
_FORBIDDEN = set("'\"\\\n\r\t")
_ENCODED = re.compile(r"^\s+|\s+$|['\"\\\n\r\t]")  # what `key_text` writes as %XX


def check_run_key_part(part: str, what: str) -> str:
    """Returns `part` unchanged, or raises ValueError when it cannot be part of a run key."""
    if not part or part != part.strip():
        raise ValueError(f"{what} {part!r} must be non-empty without surrounding spaces")
    bad = sorted(_FORBIDDEN.intersection(part))
    if bad:
        raise ValueError(f"{what} {part!r} contains {bad!r}, which MLflow run search cannot match")
    return part


def key_text(text: str) -> str:
    """`text` fit to be part of a run key: quotes, backslashes, line breaks and tabs, and spaces at
    either end, written as `%XX` (`o'brien` -> `o%27brien`); other text unchanged."""
    return _ENCODED.sub(lambda found: "".join(f"%{ord(c):02X}" for c in found.group()), text)


def arm_run_key(arm: str, phase: str) -> str:
    return f"{check_run_key_part(arm, 'arm')}/{check_run_key_part(phase, 'phase')}"


def trial_run_key(arm: str, trial_id: str) -> str:
    return f"{arm_run_key(arm, 'tune')}/{check_run_key_part(str(trial_id), 'trial id')}"


def replicate_run_key(arm: str, seed: int, partition: int) -> str:
    return f"{arm_run_key(arm, 'replicate')}/seed{int(seed)}-partition{int(partition)}"


def arm_run_name(label: str, phase: str) -> str:
    return f"{label}{SEPARATOR}{phase}"


def trial_run_name(label: str, trial_id: str) -> str:
    return f"{label}{SEPARATOR}{trial_id}"


def replicate_run_name(label: str, seed: int, partition: int) -> str:
    return f"{label}{SEPARATOR}p{int(partition)}{SEPARATOR}s{int(seed)}"
