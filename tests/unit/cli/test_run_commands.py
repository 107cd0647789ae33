"""`nerplat run`'s resume hint and end-of-run summary."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from nerplat.cli.run_commands import print_summary, resume_command
from nerplat.run.outcomes import ArmOutcome, RunSummary
from nerplat.run.ray_session import Interrupted
from shell_text import joined_continuations


def test_the_resume_hint_repeats_every_option_that_locates_the_experiment():
    hint = resume_command(
        Path("specs/a b.yaml"), profile="cpu", workdir=Path("/w"), storage="s3://bucket/ray", address="ray://head:10001"
    )
    assert shlex.join(hint) == (
        "nerplat run 'specs/a b.yaml' --profile cpu --workdir /w --storage s3://bucket/ray --address ray://head:10001 --resume"
    )
    plain = resume_command(Path("s.yaml"), profile=None, workdir=Path("."), storage=None, address=None)
    assert plain == ["nerplat", "run", "s.yaml", "--resume"]


def test_the_summary_prints_every_failure_in_full_and_every_unconverged_cell():
    buffer = io.StringIO()
    failure = "ray.exceptions.ActorDiedError: The actor died unexpectedly.\n\tpid: 12 [/x]"
    summary = RunSummary(
        "e", "sqlite:///m.db", "1",
        [ArmOutcome("d/s/ce", errors=[failure, "tuning incomplete: 1 of 2 trials finished"])],
        unconverged=("d/s/ce: dev micro F1 still rising at the last epoch",),
    )
    print_summary(summary, Console(file=buffer, width=300))
    text = buffer.getvalue()
    assert "The actor died unexpectedly." in text and "pid: 12 [/x]" in text  # every line, markup kept literal
    assert "tuning incomplete: 1 of 2" in text
    assert "warning: d/s/ce: dev micro F1 still rising" in text
    assert "no report was written" in text


def test_the_resume_hint_is_printed_on_one_line_however_long(tmp_path, monkeypatch):
    """Wrapped by the console, a long --workdir broke the command in two when copied."""
    from nerplat.cli import main
    from nerplat.run import runner

    def interrupted(self):
        raise Interrupted()

    monkeypatch.setattr(runner.ExperimentRunner, "run", interrupted)
    spec = Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml"
    workdir = tmp_path / ("a-long-folder-name-" * 12)
    workdir.mkdir()
    import contextlib
    import io as _io

    out = _io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["run", str(spec), "--workdir", str(workdir)])
    assert code == 130
    assert f"nerplat run {spec} --workdir {workdir} --resume" in joined_continuations(out.getvalue()).splitlines()[-1]


def test_progress_every_reaches_the_runner_and_is_documented(monkeypatch, capsys):
    from nerplat.cli import main
    from nerplat.run import runner

    seen = []

    def interrupted(self):
        seen.append(self.options.progress_every)
        raise Interrupted()

    monkeypatch.setattr(runner.ExperimentRunner, "run", interrupted)
    spec = str(Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml")
    assert main(["run", spec, "--progress-every", "5"]) == 130
    assert main(["run", spec]) == 130
    assert seen == [5.0, 30.0]
    assert main(["run", spec, "--progress-every", "0"]) == 2  # refused: a line every 0 s would flood the log
    capsys.readouterr()
    main(["run", "--help"])
    assert "--progress-every" in capsys.readouterr().out


def test_the_summary_says_where_the_studies_are_and_how_to_browse_both_views():
    buffer = io.StringIO()
    summary = RunSummary("e", "sqlite:////w/mlflow.db", "1", [ArmOutcome("d/s/mom")], optuna_storage="sqlite:////w d/optuna.db")
    print_summary(summary, Console(file=buffer, width=60))
    text = buffer.getvalue()
    optuna = "Optuna: sqlite:////w d/optuna.db (one study per tuned arm, named e/<arm>)"
    assert optuna in " ".join(text.split())  # wrapped between words
    browse = "nerplat ui --tracking-uri sqlite:////w/mlflow.db --experiment e --optuna-storage 'sqlite:////w d/optuna.db'"
    assert f"  {browse}\n" in joined_continuations(text)


def test_the_metrics_port_reaches_the_runner_from_the_flag_or_the_environment(monkeypatch, capsys):
    from nerplat.cli import main
    from nerplat.run import runner

    seen = []

    def interrupted(self):
        seen.append(self.options.metrics_port)
        raise Interrupted()

    monkeypatch.setattr(runner.ExperimentRunner, "run", interrupted)
    monkeypatch.delenv("NERPLAT_METRICS_PORT", raising=False)
    spec = str(Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml")
    assert main(["run", spec]) == 130
    assert main(["run", spec, "--metrics-port", "18080"]) == 130
    monkeypatch.setenv("NERPLAT_METRICS_PORT", "18081")
    assert main(["run", spec]) == 130
    assert seen == [None, 18080, 18081]
    assert main(["run", spec, "--metrics-port", "70000"]) == 2


def test_rerun_changed_reaches_the_runner_with_resume_and_is_refused_without_it(monkeypatch, capsys):
    from nerplat.cli import main
    from nerplat.run import runner

    seen = []

    def interrupted(self):
        seen.append((self.options.resume, self.options.rerun_changed))
        raise Interrupted()

    monkeypatch.setattr(runner.ExperimentRunner, "run", interrupted)
    spec = str(Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml")
    assert main(["run", spec, "--resume", "--rerun-changed"]) == 130
    assert main(["run", spec, "--rerun-changed"]) == 2
    assert seen == [(True, True)]
    assert "error: --rerun-changed needs --resume" in capsys.readouterr().err


def report_folder(folder: Path) -> Path:
    """A report's summary.parquet and settings.json, as the analysis writes them, for two arms."""
    import polars as pl

    from nerplat.analysis.settings import AnalysisSettings

    rows = [
        {"dataset": "conll2003", "sampler_family": "low_resource", "sampler": "untyped+low_resource(size=100, partitions=3)",
         "sampler_label": "untyped+low_resource-100", "encoder": "minilm-l6", "head": "softmax", "objective": method,
         "method": method, "metric": "test_micro_f1", "size": 100, "n": 3, "mean": mean, "sd": 0.0123456, "se": 0.007,
         "ci_low": 0.5, "ci_high": 0.6, "converged": converged}
        for method, mean, converged in (("mom", 0.5523, False), ("ce", 0.5681, True))
    ]
    folder.mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(folder / "summary.parquet")
    (folder / "settings.json").write_text(AnalysisSettings(baseline="ce", decimals=3).model_dump_json())
    return folder


def test_run_ends_with_the_headline_table_even_under_quiet_and_its_json_has_the_same_numbers(monkeypatch, tmp_path, capsys):
    from nerplat.cli import main
    from nerplat.run import runner

    report = report_folder(tmp_path / "reports" / "e")

    def finished(self):
        arms = [ArmOutcome("conll2003/untyped+low_resource-100/ce", {}, None, {}, {"completed": 3})]
        return RunSummary("e", "sqlite:///m.db", "1", arms, report_dir=report)

    monkeypatch.setattr(runner.ExperimentRunner, "run", finished)
    monkeypatch.setenv("COLUMNS", "80")
    spec = str(Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml")
    assert main(["-q", "run", spec]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "MLflow:" not in out and "replicates 3 completed" not in out  # notes: left out under -q
    assert any("ce" in line and "0.568 ± 0.012" in line and "yes" in line for line in lines), out
    assert any("mom" in line and "0.552 ± 0.012" in line and " no " in line for line in lines), out
    row = {arm: lines.index(next(line for line in lines if f"│ {arm} " in line)) for arm in ("ce", "mom")}
    assert row["ce"] < row["mom"]  # baseline first
    assert main(["run", spec, "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(r["arm"], r["label"], r["mean"], r["sd"], r["n"], r["converged"]) for r in results] == [
        ("conll2003/untyped+low_resource-100/ce", "ce", 0.5681, 0.0123456, 3, True),
        ("conll2003/untyped+low_resource-100/mom", "mom", 0.5523, 0.0123456, 3, False),
    ]


def test_run_help_shows_its_examples_whole_at_80_columns(monkeypatch, capsys):
    from nerplat.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    lines = [line.strip() for line in text.splitlines()]
    assert "nerplat run specs/quickstart.yaml --set train.epochs=3" in lines
    assert "nerplat run specs/quickstart.yaml --resume" in lines


def test_the_plan_table_names_arms_by_their_labels_and_splits_no_word_at_80_columns(monkeypatch, capsys):
    from nerplat.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    spec = str(Path(__file__).parents[3] / "specs" / "entity_ratio.yaml")
    assert main(["plan", spec]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    words = {word for line in text.splitlines() for word in line.replace("│", " ").split()}
    assert {"comauc_2t", "entity_ratio-100-0.01", "two_task", "replicates"} <= words  # whole, never "entity_ra" + "tio"
    assert "untyped+entity_ratio-100-0.01: untyped+entity_ratio(size=100, ratio=0.01)" in text  # what the labels leave out
    assert main(["plan", spec, "--json"]) == 0
    arms = {arm["id"] for arm in json.loads(capsys.readouterr().out)["arms"]}
    assert "conll2003/untyped+entity_ratio-100-0.01/comauc_2t" in arms


@pytest.fixture
def stopped_before_training(monkeypatch) -> str:
    """The tiny spec, with `run` interrupted before Ray and `train`'s trial failing at once: what the
    commands print at start, and nothing more."""
    from nerplat.run import runner
    from nerplat.trial import loop

    def interrupted(self):
        raise Interrupted()

    def failed(*args, **kwargs):
        raise loop.NonFiniteLoss("stopped here by the test")

    monkeypatch.setattr(runner.ExperimentRunner, "run", interrupted)
    monkeypatch.setattr(loop, "run_trial", failed)
    return str(Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml")


def test_run_and_train_warn_at_start_about_bf16_on_a_cpu_that_emulates_it(tmp_path, monkeypatch, capsys, stopped_before_training):
    """Before any trial: `run` then stops (interrupted), `train`'s trial fails at once."""
    from nerplat.cli import main
    from nerplat.trial import device

    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx2"}))
    spec = stopped_before_training
    warning = "train.precision bf16 (method ce) on a CPU without bf16 units"
    assert main(["run", spec, "--workdir", str(tmp_path), "--set", "methods.ce.train.precision=bf16"]) == 130
    assert warning in " ".join(capsys.readouterr().out.split())
    assert main(["train", spec, "-m", "ce", "--set", "train.precision=bf16"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert warning in out and out.index(warning) < out.index("stopped here by the test")
    assert main(["train", spec, "-m", "ce"]) == 1
    assert "emulated" not in capsys.readouterr().out


@pytest.mark.parametrize(("flags", "environment", "named"), [(["--address", "not an address"], None, "--address"),
                                                              (["--address", "http://head:6379"], None, "--address"),
                                                              ([], "not an address:6379", "RAY_ADDRESS")])
def test_a_malformed_cluster_address_is_refused_before_anything_is_written(
    tmp_path, monkeypatch, capsys, flags, environment, named
):
    from nerplat.cli import main

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if environment:
        monkeypatch.setenv("RAY_ADDRESS", environment)
    spec = Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml"
    assert main(["run", str(spec), "--workdir", str(tmp_path), *flags]) == 2
    err = capsys.readouterr().err
    assert "is not a Ray cluster address: give HOST:PORT (the GCS, e.g. 10.0.0.5:6379) or ray://HOST:PORT" in err
    assert f"at {named}" in err
    assert list(tmp_path.iterdir()) == [] and "Traceback" not in err


def test_run_says_what_it_starts_before_it_checks_the_spec(monkeypatch, capsys, tmp_path):
    from nerplat.cli import main, run_commands
    from nerplat.errors import UserInputError

    printed_before = []

    def checking(*args, **kwargs):  # where the seconds of imports and corpus reading go
        printed_before.append(capsys.readouterr().out)
        raise UserInputError("stop here")

    monkeypatch.setattr(run_commands, "compile_spec", checking)
    spec = tmp_path / "quickstart.yaml"
    assert main(["run", str(spec)]) == 2
    assert printed_before and printed_before[0].startswith(f"nerplat run {spec}: checking the spec")


def test_run_and_train_say_at_start_what_precision_auto_chose_here_and_why(
    tmp_path, monkeypatch, capsys, stopped_before_training
):
    """On a CPU listing avx512_bf16 whose calibration measured bf16 slower: fp32, with the ratio and the calibration."""
    from nerplat.cli import main
    from precision_hosts import calibrated_host

    calibrated_host(monkeypatch, tmp_path / "cache", threads=1, train_bf16=1.6, evaluate_bf16=1.2)
    spec = stopped_before_training
    auto = ["--set", "methods.ce.train.precision=auto", "--set", "train.threads=1"]
    chosen = "precision of arm ce: training auto: bf16 1.60x slower than fp32 here: fp32"
    assert main(["run", spec, "--workdir", str(tmp_path), *auto]) == 130
    out = " ".join(capsys.readouterr().out.split())
    assert chosen in out and "precision calibration (" in out and "at load" in out
    assert main(["train", spec, "-m", "ce", *auto]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert chosen in out and out.index(chosen) < out.index("stopped here by the test")


def test_a_run_stopped_by_through_look_says_which_look_a_resume_runs_even_under_quiet():
    """docs/results/reproduce.sh keeps the scratch store when it reads this line, so it goes to the loud console."""
    quiet, loud = io.StringIO(), io.StringIO()
    summary = RunSummary("e", "sqlite:///m.db", "1", [ArmOutcome("d/s/ce")], next_look=3)
    print_summary(summary, Console(file=quiet, quiet=True), Console(file=loud, width=80))
    assert loud.getvalue().splitlines() == ["stopped after look 2 by --through-look: --resume runs look 3"]
    plain = io.StringIO()
    print_summary(RunSummary("e", "sqlite:///m.db", "1", [ArmOutcome("d/s/ce")]), Console(file=plain, width=80))
    assert "stopped after look" not in plain.getvalue()
