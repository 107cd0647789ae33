"""Analysis settings: defaults, validation with paths, headline metric names."""

from __future__ import annotations

import pytest

from nerplat.analysis.settings import AnalysisSettings, settings_from_mapping
from nerplat.errors import UserInputError


def test_defaults_analyse_a_bare_experiment():
    settings = AnalysisSettings()
    assert (settings.baseline, settings.test, settings.alpha, settings.bootstrap_resamples) == (None, "paired_t", 0.05, 1000)
    assert settings.headline("f1") == "test_micro_f1"
    assert AnalysisSettings(split="dev", average="macro").headline("recall") == "dev_macro_recall"


def test_every_problem_is_reported_with_its_path():
    with pytest.raises(UserInputError) as error:
        settings_from_mapping({"alpha": 1.5, "test": "t", "extra": 1}, source="plan.json")
    assert {p.path for p in error.value.problems} == {"analysis.alpha", "analysis.test", "analysis.extra"}
    assert all(p.source == "plan.json" for p in error.value.problems)


def test_a_method_compared_with_itself_is_refused():
    with pytest.raises(UserInputError, match="compares a method with itself"):
        settings_from_mapping({"comparisons": [["mom", "mom"]]}, source="flags")
