"""Hostile specs (tests/fixtures/specs/hostile) through the real CLI: `nerplat validate` and
`nerplat run` exit 2, name the file, line and field with what to do, and write nothing.

A fixture declares each expected problem in a header comment:
    # expect: <yaml path or ->:<line or -> <text the message contains>
`-` for the path: the problem is about the file or a line, not a field; `-` for the line: the
whole file.
"""

import os
import re
import shutil
import sys
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


@pytest.mark.parametrize(
    "name", ["lr_inf", "billion_laughs", "path_with_markup", "encoder_path_traversal", "sampler_size_beyond_corpus"]
)
def test_run_refuses_a_hostile_spec_before_ray_starts_and_writes_nothing(name, capsys, tmp_path):
    import ray

    code, err = run_cli(["run", str(HOSTILE / f"{name}.yaml"), "--workdir", str(tmp_path / "work")], capsys)
    assert code == 2 and "error: " in err
    assert not ray.is_initialized()
    assert not (tmp_path / "work").exists()


def test_plan_refuses_a_sampler_asking_more_than_the_corpus_has_as_train_does(capsys, tmp_path, monkeypatch):
    """Issue 62: `plan` accepted `low_resource: {size: 1e9}`, which `train` refused once it had read the corpus."""
    monkeypatch.chdir(tmp_path)
    spec = HOSTILE / "sampler_size_beyond_corpus.yaml"
    code, err = run_cli(["plan", str(spec)], capsys)
    assert code == 2, err
    [(text, field, where)] = expected_lines(spec)
    assert f"error: {text}{field}{where}" in err and "Traceback" not in err, err
    assert os.listdir(tmp_path) == []


def test_run_refuses_a_ray_storage_it_cannot_write_before_the_store_opens_or_ray_starts(capsys, tmp_path):
    """Issue 62: `run --storage /proc/nerplat` opened the store and started Ray before Ray Tune's
    traceback, leaving the replicate run RUNNING."""
    import ray

    spec = tmp_path / "spec.yaml"
    spec.write_text("experiment: hostile\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n")
    code, err = run_cli(["run", str(spec), "--workdir", str(tmp_path / "work"), "--storage", "/proc/nerplat"], capsys)
    assert code == 2, err
    assert "--storage /proc/nerplat cannot be written (/proc refused a new folder)" in err and "at --storage" in err
    assert not ray.is_initialized() and not (tmp_path / "work").exists() and "Traceback" not in err


def test_run_refuses_an_unreachable_database_store_in_one_line(capfd, tmp_path, monkeypatch):
    """Issue 62: an unreachable PostgreSQL store printed 113 s of MLflow's retry warnings before
    nerplat's error; one connection attempt now says so at once."""
    import ray

    from nerplat.loopback import free_port

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = f"postgresql+psycopg://127.0.0.1:{free_port()}/mlflow"  # nothing listens there
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"experiment: hostile\ndataset: conll2003\nmethods: {{ce: {{loss: ce}}}}\ntracking: {{uri: '{uri}'}}\n")
    code = main(["run", str(spec), "--workdir", str(tmp_path / "work")])
    err = capfd.readouterr().err
    assert code == 2, err
    [line] = [line for line in err.splitlines() if line.strip()]
    assert line.startswith(f"error: MLflow store {uri} is not reachable (connection failed: connection to server at")
    assert line.endswith("check that the database runs and that this machine can reach it, or change the tracking uri in the "
                         "spec")
    assert not ray.is_initialized() and not (tmp_path / "work").exists()


@pytest.mark.parametrize("found", ["a port where nothing listens", "no cluster"])
def test_run_probes_the_cluster_auto_finds_before_joining_it(found, capsys, tmp_path, monkeypatch):
    """Issue 62: `--address auto` skipped the probe, so a cluster wanting a token printed twenty lines of
    gcs_client errors before a refusal that did not name the token; auto is now probed where Ray finds it."""
    import ray
    from ray._private import services

    from nerplat.loopback import free_port

    port = free_port()

    def canonicalize(address, temp_dir=None):
        if found == "no cluster":
            raise ConnectionError("Could not find any running Ray instance.")
        return f"127.0.0.1:{port}"

    monkeypatch.setattr(services, "canonicalize_bootstrap_address", canonicalize)
    spec = tmp_path / "spec.yaml"
    spec.write_text("experiment: hostile\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n")
    code, err = run_cli(["run", str(spec), "--workdir", str(tmp_path / "work"), "--address", "auto"], capsys)
    assert code == 2, err
    expected = (
        f"no Ray cluster answers at 127.0.0.1:{port}" if found != "no cluster"
        else "auto finds no Ray cluster on this machine (Could not find any running Ray instance.)"
    )
    assert expected in err and "at --address" in err and "Traceback" not in err
    assert not ray.is_initialized() and not (tmp_path / "work").exists()


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


def test_user_text_with_rich_emoji_codes_is_printed_as_written(capsys, tmp_path):
    """Issue 62: `:x:` in a path or value was printed as an emoji (escape() stops markup, not emoji codes)."""
    folder = tmp_path / ":x:"
    folder.mkdir()
    spec = folder / ":warning:.yaml"
    spec.write_text("experiment: 'a:x:b'\n")
    code, err = run_cli(["validate", str(spec)], capsys)
    assert code == 2 and "'a:x:b' must start with a letter or digit" in err and f"at experiment ({spec}:1)" in err, err
    corpus = tmp_path / "c:x:"
    shutil.copytree(Path(__file__).parents[2] / "fixtures" / "corpora" / "tiny", corpus)
    spec.write_text(f"experiment: hostile\ndataset: {{path: '{corpus}'}}\nmethods: {{ce: {{loss: ce}}}}\n")
    assert main(["plan", str(spec)]) == 0
    assert "dataset: c:x:" in capsys.readouterr().out


# Nine levels of nine aliases each: 9**9 values from about 300 bytes.
ALIAS_BOMB = "{a: &a [" + ", ".join(["lol"] * 9) + "]" + "".join(
    f", {b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi")
) + "}"
# --set value -> text the message contains. A flag passes the spec file's bounds and checks.
HOSTILE_SETS = {
    "alias_bomb": (f"description={ALIAS_BOMB}", "the value expands to more than 100,000 values"),
    "nesting_5000_deep": ("description=" + "[" * 5000 + "]" * 5000, "the value nests mappings or lists too deeply"),
    "nesting_51_deep": ("description=" + "[" * 51 + "]" * 51, "the value nests mappings or lists more than 50 levels deep"),
    "binary_tag": ("description=!!binary aGk=", "YAML tag !!binary is not allowed"),
    "python_tag": (
        "description=!!python/object/apply:os.system [echo]", "YAML tag !!python/object/apply:os.system is not allowed"
    ),
    "larger_than_a_megabyte": ("description=" + "x" * 1_000_001, "the value is larger than 1,000,000 bytes"),
    "nul_escape": ('description="a\\0b"', "the value holds control character #x0000"),
    "esc_escape": ('description="\\e[31m"', "the value holds control character #x001b"),
    "esc_raw": ("description=a\x1b[31mb", "character #x001b is not allowed in YAML text"),
    "escape_in_a_key": ('methods={"c\\0e": {loss: ce}}', "the key holds control character #x0000"),
}


@pytest.mark.parametrize("command", ["validate", "plan"])
@pytest.mark.parametrize("name", sorted(HOSTILE_SETS))
def test_a_hostile_set_value_is_refused_naming_the_flag(name, command, capsys, tmp_path, monkeypatch):
    assignment, text = HOSTILE_SETS[name]
    spec = tmp_path / "spec.yaml"
    spec.write_text("experiment: hostile\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n")
    monkeypatch.chdir(tmp_path)
    code, err = run_cli([command, str(spec), "--set", assignment], capsys)
    assert code == 2, err
    assert text in err and f"(--set {assignment[:20]}".replace("\x1b", "\\x1b") in err, err
    assert "Traceback" not in err and "\x1b" not in err and len(err) < 1000, err
    assert os.listdir(tmp_path) == ["spec.yaml"]


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ("import sys\nsys.exit(3)\n", "failed to import: it called sys.exit(3)"),
        ("raise SystemExit\n", "failed to import: it called sys.exit(None)"),
        ("raise KeyboardInterrupt\n", "failed to import: KeyboardInterrupt"),
        ("raise GeneratorExit('odd')\n", "failed to import: GeneratorExit: odd"),
    ],
)
def test_a_plugin_that_exits_or_interrupts_at_import_is_named_with_exit_2(body, text, capsys, tmp_path, monkeypatch):
    (tmp_path / "exits_at_import.py").write_text(body)
    spec = tmp_path / "spec.yaml"
    spec.write_text("experiment: hostile\nplugins: [exits_at_import.py]\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n")
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(["validate", str(spec)], capsys)
    assert code == 2, err
    assert f"plugin '{tmp_path / 'exits_at_import.py'}' {text}" in err and f"at plugins[0] ({spec}:2)" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("plugin", ["this", "registers_nothing.py"])
def test_a_plugin_that_registers_nothing_is_refused_naming_it(plugin, capsys, tmp_path, monkeypatch):
    """Issue 62: `plugins: [this]` (a module that registers nothing, as a misnamed one) was accepted silently."""
    monkeypatch.delitem(sys.modules, "this", raising=False)
    (tmp_path / "registers_nothing.py").write_text("WEIGHT = 2.0\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"experiment: hostile\nplugins: [{plugin}]\ndataset: conll2003\nmethods: {{ce: {{loss: ce}}}}\n")
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(["validate", str(spec)], capsys)
    named = plugin if plugin == "this" else str(tmp_path / plugin)
    assert code == 2, err
    assert f"plugin '{named}' was imported but registers nothing" in err and f"at plugins[0] ({spec}:2)" in err, err
