import re
from pathlib import Path

from nerplat.track.environment import TRACKED_PACKAGES, environment_report, git_state, package_versions


def test_package_versions_cover_the_stack():
    versions = package_versions()
    assert set(TRACKED_PACKAGES) <= set(versions)
    assert versions["mlflow"] and versions["nerplat"] and re.match(r"3\.\d+", versions["python"])


def test_missing_packages_are_reported_as_none():
    assert package_versions(("surely-not-installed-xyz",))["surely-not-installed-xyz"] is None


def test_git_state_of_the_source_tree():
    state = git_state(Path(__file__).parent)
    assert state is not None and re.fullmatch(r"[0-9a-f]{40}", state.commit)


def test_no_git_state_outside_a_repository(tmp_path):
    assert git_state(tmp_path) is None


def test_environment_report_is_json_ready():
    import json

    report = environment_report()
    assert json.loads(json.dumps(report))["packages"]["torch"]
