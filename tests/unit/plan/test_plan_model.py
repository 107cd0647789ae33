"""Plan data: distributions, canonical JSON, and the snapshot guard the plan tests rely on."""

import pytest
from pydantic import TypeAdapter

from nerplat.config.search_space import Choice, Distribution, IntRange, LogUniform, Uniform

from nerplat.plan.model import canonical_json, sha256_of


@pytest.mark.parametrize(
    ("distribution", "inside", "outside"),
    [
        (Uniform(low=0, high=1), [0, 0.5, 1], [-0.1, 1.1, True, "0.5", float("nan")]),
        (LogUniform(low=1e-5, high=1e-3), [1e-5, 1e-4], [0, 1e-2]),
        (IntRange(low=1, high=3), [1, 2, 3], [0, 4, 2.0, True]),
        (Choice(options=("ce", "focal")), ["ce", "focal"], ["dice", None]),
    ],
)
def test_contains(distribution, inside, outside):
    assert all(distribution.contains(v) for v in inside)
    assert not any(distribution.contains(v) for v in outside)


def test_grid_values():
    assert Uniform(low=0, high=1).grid_values(5) == [0, 0.25, 0.5, 0.75, 1]
    assert LogUniform(low=1e-4, high=1e-2).grid_values(3) == pytest.approx([1e-4, 1e-3, 1e-2])
    assert LogUniform(low=1e-4, high=1e-2).grid_values(3)[-1] == 1e-2  # ends exactly on high
    assert IntRange(low=1, high=3).grid_values(5) == [1, 2, 3]  # every value of a short range
    assert IntRange(low=0, high=100).grid_values(3) == [0, 50, 100]
    assert Choice(options=(1, 2)).grid_values(9) == [1, 2]


def test_distributions_are_a_union_discriminated_by_kind():
    adapter = TypeAdapter(Distribution)
    assert adapter.validate_python({"kind": "int", "low": 1, "high": 4}) == IntRange(low=1, high=4)
    assert adapter.dump_python(Choice(options=("a", "b")), mode="json") == {"kind": "choice", "options": ["a", "b"]}
    with pytest.raises(ValueError):
        adapter.validate_python({"kind": "normal", "low": 0, "high": 1})


def test_labels():
    assert Uniform(low=0, high=1).label() == "uniform(0, 1)"
    assert LogUniform(low=1e-5, high=1e-3).label() == "loguniform(1e-05, 0.001)"
    assert IntRange(low=1, high=8).label() == "int(1, 8)"
    assert Choice(options=("ce", "wce")).label() == "choice(ce, wce)"


def test_canonical_json_ignores_key_order():
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'
    assert sha256_of({"a": 1, "b": 2}) == sha256_of({"b": 2, "a": 1})


def test_snapshots_fail_on_a_difference_and_on_absence(tmp_path, monkeypatch, match_snapshot):
    monkeypatch.delenv("NERPLAT_UPDATE_SNAPSHOTS", raising=False)
    snapshot = tmp_path / "plan.json"
    with pytest.raises(AssertionError, match="no snapshot"):
        match_snapshot({"a": 1}, snapshot)
    monkeypatch.setenv("NERPLAT_UPDATE_SNAPSHOTS", "1")
    match_snapshot({"a": 1}, snapshot)
    monkeypatch.delenv("NERPLAT_UPDATE_SNAPSHOTS")
    match_snapshot({"a": 1}, snapshot)
    with pytest.raises(AssertionError, match="plan differs"):
        match_snapshot({"a": 2}, snapshot)
