"""Every broken spec under tests/fixtures/specs/broken fails with exactly the problems it declares.

A fixture declares each expected problem in a header comment:
    # expect: <yaml path>:<line> <text the message contains>
"""

import re
from pathlib import Path

import pytest

from nerplat.errors import UserInputError
from nerplat.spec.validate import SpecSource, validate_spec_file

BROKEN = Path(__file__).parents[2] / "fixtures" / "specs" / "broken"
EXPECT = re.compile(r"^# expect: (\S*):(\d+) (.+)$")


def expectations(path: Path) -> list[tuple[str, int, str]]:
    found = [EXPECT.match(line) for line in path.read_text().splitlines()]
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in found if m]


FIXTURES = sorted(BROKEN.glob("*.yaml"))


def test_there_are_a_dozen_and_more_broken_specs():
    assert len(FIXTURES) >= 12
    assert all(expectations(path) for path in FIXTURES)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_broken_spec_reports_its_problems_with_path_and_line(path, catalog):
    with pytest.raises(UserInputError) as raised:
        validate_spec_file(SpecSource(path, environ={}), catalog)
    found = [(p.path, p.line, p.message) for p in raised.value.problems]
    expected = expectations(path)
    assert len(found) == len(expected), found
    for (want_path, want_line, want_text), (got_path, got_line, got_message) in zip(expected, found):
        assert (got_path, got_line) == (want_path, want_line), found
        assert want_text in got_message
    assert all(p.source == str(path) for p in raised.value.problems)
