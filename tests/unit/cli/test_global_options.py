"""The CLI around the commands: --version, completion, -q/-v, --json, --set routing, readable values."""

import json
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from nerplat.cli import hoist_global_flags, main, package_version
from nerplat.cli.options import format_values
from nerplat.cli.run_commands import print_summary, summary_json
from nerplat.cli.train_commands import split_assignments
from nerplat.run.outcomes import ArmOutcome, RunSummary

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = str(ROOT / "specs" / "quickstart.yaml")


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"nerplat {package_version()}\n" and package_version()[0].isdigit()


def test_shell_completion_completes_command_names():
    script = Path(sys.executable).parent / "nerplat"
    env = {**os.environ, "_NERPLAT_COMPLETE": "complete_bash", "COMP_WORDS": "nerplat va", "COMP_CWORD": "1"}
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["validate"]


def test_quiet_validate_prints_nothing_on_success(capsys):
    assert run(capsys, "validate", QUICKSTART)[1].startswith("OK ")
    assert run(capsys, "-q", "validate", QUICKSTART)[1:] == ("", "")


def test_quiet_and_verbose_may_follow_the_command(capsys):
    hoisted = hoist_global_flags(["plan", "s.yaml", "-q", "--set", "a=1", "--", "-v"])
    assert hoisted == ["-q", "plan", "s.yaml", "--set", "a=1", "--", "-v"]
    assert run(capsys, "validate", QUICKSTART, "-q")[1:] == ("", "")
    code, out, _ = run(capsys, "plan", QUICKSTART, "-q")  # the plan is a result: printed under -q too
    assert code == 0 and "auc2t" in out
    code, _, err = run(capsys, "validate", QUICKSTART, "-v", "--quiet")
    assert code == 2 and "not both" in err


def test_quiet_and_verbose_together_are_refused(capsys):
    code, _, err = run(capsys, "-q", "-v", "validate", QUICKSTART)
    assert code == 2 and "not both" in err


def test_validate_json_lists_specs_and_problems(capsys, tmp_path):
    code, out, _ = run(capsys, "validate", "--json", QUICKSTART)
    assert code == 0 and json.loads(out) == {"ok": True, "specs": [{"spec": QUICKSTART, "profiles": ["smoke"]}], "problems": []}
    code, out, _ = run(capsys, "validate", "--json", QUICKSTART, "--set", "train.epochs=0")
    report = json.loads(out)
    assert code == 2 and not report["ok"] and report["problems"][0]["source"] == "--set train.epochs=0"


def test_plan_takes_overrides(capsys):
    code, out, _ = run(capsys, "plan", QUICKSTART, "--json", "--set", "train.epochs=1", "--set", "tune.time_budget_s=30")
    plan = json.loads(out)
    assert code == 0 and plan["resolved_spec"]["train"]["epochs"] == 1 and plan["tune"]["time_budget_s"] == 30


def test_registry_json_gives_each_entrys_origin(capsys):
    code, out, _ = run(capsys, "registry", "--json")
    listing = json.loads(out)
    assert code == 0 and {e["origin"] for group in listing.values() for e in group} == {"built-in"}
    assert {"conll", "jsonl_tokens", "jsonl_text"} <= {e["name"] for e in listing["formats"]}


def test_registry_with_a_spec_lists_its_plugins(capsys):
    code, out, _ = run(capsys, "registry", "--json", "--spec", str(ROOT / "examples" / "plugin" / "spec.yaml"))
    origins = {e["name"]: e["origin"] for group in json.loads(out).values() for e in group}
    assert code == 0 and origins["smoothed_ce"] == f"plugin {ROOT / 'examples' / 'plugin' / 'nerplat_example'}"


def test_values_print_readably():
    assert format_values({"objective.lambda": 0.31274918273645, "train.lr": 2.1234e-05, "head": "crf", "k": [0.5, 3]}) == (
        "objective.lambda=0.3127, train.lr=2.123e-05, head=crf, k=[0.5, 3]"
    )


def test_train_set_routes_spec_keys_and_searched_values():
    assert split_assignments(["train.epochs=3", "objective.lambda=0.2", "methods.mom.lambda=0.3", "samplers[0].x=1"]) == (
        ["train.epochs=3", "methods.mom.lambda=0.3", "samplers[0].x=1"],
        ["objective.lambda=0.2"],
    )


def test_train_names_the_arms_of_a_method_when_the_arm_id_is_wrong(capsys):
    spec = str(ROOT / "specs" / "resampling.yaml")
    code, _, err = run(capsys, "train", spec, "-m", "bilstm_softmax", "-p", "cpu", "--arm", "wnut17/fraction-0.1")
    assert code == 2 and "has no arm 'wnut17/fraction-0.1'" in err
    assert "wnut17/fraction-0.1/bilstm_softmax, wnut17/fraction-0.1+sc/bilstm_softmax" in err


def test_train_names_the_methods_when_the_method_is_unknown(capsys):
    code, _, err = run(capsys, "train", QUICKSTART, "-m", "nope")
    assert code == 2 and "no method 'nope'" in err and "methods: " in err


def summary() -> RunSummary:
    outcomes = [
        ArmOutcome("a/full/mom", {"objective.lambda": 0.123456789}, 0.87654321, {"completed": 3, "stopped": 1}, {"completed": 2}),
        ArmOutcome("a/full/ce", {}, None, {}, {"failed": 1}, errors=["boom"]),
    ]
    return RunSummary("exp", "sqlite:///m.db", "1", outcomes, None)


def test_run_summary_lines_are_readable():
    console = Console(record=True, width=200)
    print_summary(summary(), console)
    text = console.export_text()
    assert "a/full/mom: tune 3 completed, 1 stopped replicates 2 completed chosen objective.lambda=0.1235 (dev 0.8765)" in text
    assert "a/full/ce: tune - replicates 1 failed" in text and "error: boom" in text


def test_run_summary_json():
    data = summary_json(summary())
    assert data["failed"] == ["a/full/ce"] and data["arms"][0]["chosen"] == {"objective.lambda": 0.123456789}
    assert data["results"] is None and data["next_look"] is None  # no report: no results; no look left
    json.dumps(data)


def test_every_command_prints_its_help(capsys):
    """Help text is rich markup: an unescaped '[...]' in one option's help crashed `nerplat predict --help`."""
    import typer.main

    from nerplat.cli import _register_commands, app

    _register_commands()
    group = typer.main.get_command(app)
    paths = []
    for name, command in group.commands.items():
        paths += [[name, sub] for sub in getattr(command, "commands", {})] or [[name]]
    assert ["predict"] in paths and len(paths) > 10
    for path in paths:
        assert main([*path, "--help"]) == 0, path
        assert "Usage" in capsys.readouterr().out, path


def test_repeated_calls_register_each_command_once(capsys):
    """Each call registered every command again, so in a test worker the 500th call took seconds."""
    from nerplat.cli import app

    main(["validate", "--help"])
    counts = (len(app.registered_commands), len(app.registered_groups))
    main(["plan", "--help"])
    main(["data", "stats", "--help"])
    capsys.readouterr()
    assert (len(app.registered_commands), len(app.registered_groups)) == counts
    names = [command.name for command in app.registered_commands]
    assert len(names) == len(set(names)) and "validate" in names
