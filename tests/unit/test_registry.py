import pytest
from pydantic import BaseModel

from nerplat.errors import UserInputError
from nerplat.registry import Registry


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
