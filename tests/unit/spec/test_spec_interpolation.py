import pytest

from nerplat.spec.interpolation import InterpolationError, interpolate


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${A}", "alpha"),
        ("x-${A}-y", "x-alpha-y"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),  # like the shell: empty takes the default
        ("${A:-fallback}", "alpha"),
        ("${EMPTY}", ""),
        ("${MISSING:-}", ""),
        ("$${A}", "${A}"),
        ("no reference", "no reference"),
        ("${A}${A}", "alphaalpha"),
    ],
)
def test_interpolates_like_the_shell(text, expected):
    assert interpolate(text, {"A": "alpha", "EMPTY": ""}) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${MISSING}", "environment variable MISSING is not set"),
        ("${1BAD}", "bad reference '${1BAD}'"),
        ("${A", "unterminated '${'"),
        ("${}", "bad reference"),
    ],
)
def test_bad_references_say_what_to_fix(text, message):
    with pytest.raises(InterpolationError, match=message.replace("$", r"\$").replace("{", r"\{")):
        interpolate(text, {"A": "alpha"})
