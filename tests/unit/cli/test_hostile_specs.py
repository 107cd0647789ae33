"""Hostile specs (tests/fixtures/specs/hostile) through the real CLI: `nerplat validate` and
`nerplat run` exit 2, name the file, line and field with what to do, and write nothing.

A fixture declares each expected problem in a header comment:
    # expect: <yaml path or ->:<line or -> <text the message contains>
`-` for the path: the problem is about the file or a line, not a field; `-` for the line: the
whole file.
"""

import os
import re
from pathlib import Path

import pytest

from nerplat.cli import main

HOSTILE = Path(__file__).parents[2] / "fixtures" / "specs" / "hostile"
EXPECT = re.compile(rb"^# expect: (\S+):(\S+) (.+)$")
FIXTURES = sorted(HOSTILE.glob("*.yaml"))


def expected_lines(path: Path) -> list[str]:
    """The text each problem prints: `<message> at <path> (<file>:<line>)`, as far as it is declared."""
    lines = []
    for match in filter(None, (EXPECT.match(line) for line in path.read_bytes().splitlines())):
        field, line, text = (part.decode() for part in match.groups())
        where = f"({path})" if line == "-" else f"({path}:{line})"
        lines.append((text, "" if field == "-" else f" at {field} ", where))
    return lines


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def test_there_are_forty_and_more_hostile_specs():
    assert len(FIXTURES) >= 40
    assert all(expected_lines(path) for path in FIXTURES)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_validate_refuses_a_hostile_spec_with_file_line_and_field(path, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(HOSTILE))
    code, err = run_cli(["validate", str(path)], capsys)
    assert code == 2, err
    problems = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(problems) == len(expected_lines(path)), err
    for (text, field, where), printed in zip(expected_lines(path), problems):
        assert text in printed and where in printed and field.strip() in printed, (printed, text, field, where)
    assert "Traceback" not in err
    assert os.listdir(tmp_path) == [] and sorted(os.listdir(HOSTILE)) == before


@pytest.mark.parametrize("name", ["lr_inf", "billion_laughs", "path_with_markup", "encoder_path_traversal"])
def test_run_refuses_a_hostile_spec_before_ray_starts_and_writes_nothing(name, capsys, tmp_path):
    import ray

    code, err = run_cli(["run", str(HOSTILE / f"{name}.yaml"), "--workdir", str(tmp_path / "work")], capsys)
    assert code == 2 and "error: " in err
    assert not ray.is_initialized()
    assert not (tmp_path / "work").exists()


def test_a_spec_larger_than_a_megabyte_is_refused_unread(capsys, tmp_path):
    spec = tmp_path / "huge.yaml"
    spec.write_text("experiment: huge\ndescription: '" + "x" * 1_100_000 + "'\n")
    code, err = run_cli(["validate", str(spec)], capsys)
    assert code == 2 and "the spec is larger than 1,000,000 bytes" in err and f"({spec})" in err


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_key(capsys, tmp_path):
    spec = tmp_path / "bom.yaml"
    spec.write_bytes(b"\xef\xbb\xbfexperiment: bom\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n")
    code, err = run_cli(["validate", str(spec)], capsys)
    assert code == 0, err


def test_user_text_with_rich_markup_is_printed_as_written(capsys, tmp_path):
    spec = tmp_path / "[hub]" / "[bold]x.yaml"
    spec.parent.mkdir()
    spec.write_text("experiment: '[/x]'\n")
    code, err = run_cli(["validate", str(spec)], capsys)
    assert code == 2 and "'[/x]' must start with a letter or digit" in err and f"at experiment ({spec}:1)" in err
