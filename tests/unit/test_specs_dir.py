"""Every spec under specs/ (recursively) validates with the real registries, and plans as snapshotted.

Snapshots live in tests/unit/plan/snapshots/specs/; rewrite them on purpose with
NERPLAT_UPDATE_SNAPSHOTS=1 and review the diff (a changed default in a registry shows up here).
"""

import re
from pathlib import Path

import pytest
import spec_testing

from nerplat.catalog import default_catalog
from nerplat.plan.compiler import build_plan
from nerplat.spec.validate import default_dataset_check, validate_spec_file

ROOT = Path(__file__).parents[2]
REGISTERED = ROOT / "specs" / "registered"  # registrations of claims (nerplat claims register), not specs
SPECS = [
    path for path in sorted((ROOT / "specs").rglob("*.yaml")) + sorted((ROOT / "specs").rglob("*.yml"))
    if REGISTERED not in path.parents
]
SNAPSHOTS = Path(__file__).parent / "plan" / "snapshots" / "specs"


def test_specs_exist():
    assert ROOT / "specs" / "quickstart.yaml" in SPECS


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.relative_to(ROOT / "specs")))
def test_spec_and_its_profiles_validate_and_plan_as_snapshotted(spec):
    variants = validate_spec_file(spec, default_catalog(), dataset_check=default_dataset_check())
    for validated in variants:
        plan = build_plan(validated)
        assert plan.arms, f"{spec} plans no arm"
        name = str(spec.relative_to(ROOT / "specs").with_suffix("")).replace("/", "--")
        name += f"--{validated.profile}" if validated.profile else ""
        spec_testing.assert_matches_snapshot(plan.model_dump(mode="json"), SNAPSHOTS / f"{name}.json")


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.relative_to(ROOT / "specs")))
def test_every_two_task_arm_chooses_its_thresholds_on_dev(spec):
    # issue 12 item 6: CE-2T at a fixed 0.5 against AUC-2T with dev-tuned thresholds is not a fair match
    for validated in validate_spec_file(spec, default_catalog(), dataset_check=default_dataset_check()):
        untuned = [a.id for a in build_plan(validated).arms if a.head == "two_task" and not a.fixed["train"]["tune_threshold"]]
        assert not untuned, f"{spec.name} ({validated.profile or 'no profile'}): {untuned} decode at a fixed threshold"


# A spec is a declaration: a header (what it runs, each deviation from the paper in a line, how to
# plan it, where its claims and history live), a line per profile and a short block per registered
# design. Thirty comment lines hold that for the largest spec (resampling: 4 corpora, 11 methods,
# 4 profiles); run histories, scores and the reasons behind earlier cuts belong in docs/results.
COMMENT_CEILING = 30
HISTORY = re.compile(r"\b(20\d\d-\d\d-\d\d|commit [0-9a-f]{7,}|[0-9a-f]{7,40}\b(?= \())")


def _comment_lines(spec: Path) -> list[str]:
    return [line.strip() for line in spec.read_text(encoding="utf-8").splitlines() if line.strip().startswith("#")]


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.relative_to(ROOT / "specs")))
def test_spec_comments_stay_under_the_ceiling(spec):
    assert len(_comment_lines(spec)) <= COMMENT_CEILING, (
        f"{spec.name}: {len(_comment_lines(spec))} comment lines; move history to docs/results/README.md"
    )


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: str(p.relative_to(ROOT / "specs")))
def test_spec_comments_carry_no_run_history(spec):
    dated = [line for line in _comment_lines(spec) if HISTORY.search(line)]
    assert not dated, f"{spec.name} comments name dates or commits of earlier runs: {dated}"


def test_the_history_check_catches_a_dated_comment(tmp_path):
    spec = tmp_path / "lab.yaml"
    spec.write_text("# Its pilot is the cpu profile's run of 2026-12-01 (commit 0bfc7cc)\nexperiment: x\n", encoding="utf-8")
    assert any(HISTORY.search(line) for line in _comment_lines(spec))
