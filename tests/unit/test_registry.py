import pytest
from pydantic import BaseModel, ConfigDict, Field

from nerplat.errors import UserInputError
from nerplat.registry import Registry


class GammaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gamma: float = Field(2.0, ge=0)


def make_registry() -> Registry:
    registry = Registry("loss")

    @registry.register("mom")
    def mom(config: BaseModel) -> str:
        """Majority or minority learning."""
        return "mom"

    @registry.register("scr")
    def scr(config: BaseModel) -> str:
        return "scr"

    return registry


def test_unknown_name_suggests_the_closest_and_lists_all():
    message = make_registry().unknown_message("mmo")
    assert message == "unknown loss 'mmo'; did you mean 'mom'? (registered: mom, scr)"


def test_suggestion_ignores_case():
    assert "did you mean 'scr'?" in make_registry().unknown_message("sCR")


def test_get_unknown_raises_user_input_error():
    with pytest.raises(UserInputError, match="unknown loss 'xyz'"):
        make_registry().get("xyz")


def test_duplicate_registration_is_refused():
    registry = make_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.register("mom")(lambda config: None)


def test_summary_is_the_first_docstring_line():
    assert make_registry().get("mom").summary == "Majority or minority learning."


def test_build_validates_params_and_passes_the_config_and_context_to_the_factory():
    registry = Registry("loss")
    registry.register("focal", GammaConfig)(lambda config, *, labels: (config.gamma, labels))
    assert registry.build("focal", {"gamma": 0.5}, labels=["O"]) == (0.5, ["O"])
    assert registry.config("focal", {}) == GammaConfig(gamma=2.0)


def test_build_reports_every_bad_parameter_located_under_at():
    registry = Registry("loss")
    registry.register("focal", GammaConfig)(lambda config: config)
    with pytest.raises(UserInputError) as caught:
        registry.build("focal", {"gamma": -1, "gama": 1}, at="objective")
    assert [(p.path, p.message) for p in caught.value.problems] == [
        ("objective.gamma", "loss 'focal': input should be greater than or equal to 0 (got -1)"),
        ("objective.gama", "unknown key 'gama' in loss 'focal'; did you mean 'gamma'? (allowed: gamma)"),
    ]


def test_an_unknown_name_is_located_under_at():
    with pytest.raises(UserInputError) as caught:
        make_registry().build("mmo", {}, at="objective")
    (problem,) = caught.value.problems
    assert problem.path == "objective" and "did you mean 'mom'?" in problem.message


def test_an_explicit_summary_wins_over_the_docstring():
    registry = Registry("corpus")
    registry.register("x", summary="Corpus X.")(lambda config: None)
    assert registry.get("x").summary == "Corpus X."


def test_an_entry_carries_its_examples_and_traits_defaulting_to_its_defaults_alone():
    registry = Registry("loss")
    registry.register("focal", GammaConfig, examples=({"gamma": 0.5}, {"gamma": 3.0}), traits="serving")(lambda c: c)
    registry.register("plain", GammaConfig)(lambda c: c)
    assert registry.get("focal").examples == ({"gamma": 0.5}, {"gamma": 3.0})
    assert registry.get("focal").traits == "serving"
    assert (registry.get("plain").examples, registry.get("plain").traits) == (({},), None)
