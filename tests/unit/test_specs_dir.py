"""Every spec under specs/ (recursively) validates with the real registries, and plans as snapshotted.

Snapshots live in tests/unit/plan/snapshots/specs/; rewrite them on purpose with
NERPLAT_UPDATE_SNAPSHOTS=1 and review the diff (a changed default in a registry shows up here).
"""

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
