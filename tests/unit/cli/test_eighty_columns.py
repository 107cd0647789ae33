"""What the tour's commands print at 80 columns: no word, path, URL or command folded across lines;
a line wider than 80 holds one such item alone (the terminal may wrap it; nerplat does not)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from nerplat.cli.run_commands import print_summary
from nerplat.run.outcomes import ArmOutcome, RunSummary
from shell_text import joined_continuations, line_items

WIDTH = 80
LONG = "/home/someone/experiments/" + "a-long-folder-name-" * 4


def assert_unfolded(text: str, wholes: list[str]) -> None:
    """Every item of `wholes` within one line; every line wider than WIDTH one word or one item alone
    (with a shell's line continuation after it in a command)."""
    lines = [line.rstrip() for line in text.splitlines()]
    for whole in wholes:
        assert any(whole in line for line in lines), f"{whole!r} folded in:\n{text}"
    for line in lines:
        if len(line) > WIDTH:
            items = line_items(line)
            assert len(items) == 1 or " ".join(items) in wholes, (
                f"a line wider than {WIDTH} holds more than one item: {line!r}"
            )


def _console(buffer: io.StringIO) -> Console:
    return Console(file=buffer, width=WIDTH, highlight=False)


def test_the_end_of_a_run_folds_no_path_and_gives_the_browse_command_a_line_of_its_own():
    tracking, optuna, report = f"sqlite:///{LONG}mlflow.db", f"sqlite:///{LONG}optuna.db", f"{LONG}reports/quickstart"
    summary = RunSummary(
        "quickstart", tracking, "1",
        [ArmOutcome("conll2003/untyped+low_resource-100/mom", errors=[f"worker died writing {LONG}x.ckpt"])],
        optuna_storage=optuna, report_dir=Path(report),
        unconverged=("conll2003/untyped+low_resource-100/mom: dev micro F1 still rising",),
    )
    buffer = io.StringIO()
    print_summary(summary, _console(buffer))
    browse = f"nerplat ui --tracking-uri {tracking} --experiment quickstart --optuna-storage {optuna}"
    assert_unfolded(buffer.getvalue(), [tracking, optuna, report, f"{LONG}x.ckpt"])
    assert f"  {browse}" in joined_continuations(buffer.getvalue()).splitlines()  # a shell reads it whole


def test_a_run_stage_line_folds_no_path_and_no_word():
    from nerplat.run.progress import ProgressBoard

    buffer = io.StringIO()
    board = ProgressBoard("quickstart", _console(buffer))
    board.stage(f"opening the MLflow store sqlite:///{LONG}mlflow.db with 2 trial workers at a time")
    text = buffer.getvalue()
    assert_unfolded(text, [f"sqlite:///{LONG}mlflow.db"])
    words = {word for line in text.splitlines() for word in line.split()}
    assert {"workers", "opening", "MLflow"} <= words


def test_ui_prints_each_url_on_a_line_of_its_own(capsys):
    from nerplat.cli.ui_commands import _print_urls
    from nerplat.track.view import runs_table_url

    _print_urls("http://127.0.0.1:5000", [("quickstart", "1"), ("entity_ratio", "2")])
    lines = capsys.readouterr().out.splitlines()
    assert runs_table_url("http://127.0.0.1:5000", "1") in lines and runs_table_url("http://127.0.0.1:5000", "2") in lines
    assert_unfolded("\n".join(lines), [])


def test_registry_tables_fit_80_columns_or_stack_their_rows(monkeypatch, capsys):
    from nerplat.cli import main

    monkeypatch.setenv("COLUMNS", str(WIDTH))
    assert main(["registry"]) == 0
    text = capsys.readouterr().out
    assert max(len(line.rstrip()) for line in text.splitlines()) <= WIDTH
    framed = [line.rstrip() for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert all(line[-1] in "┓┃┩│┘" for line in framed), "a table cut at column 80, its right border lost"
    assert "  parameters:" in text.splitlines() and "balanced_undersampling" in text.splitlines()  # samplers stacked


def command_paths() -> list[list[str]]:
    """Every command and command group, as its words after `nerplat` (the program itself: [])."""
    import typer.main

    from nerplat.cli import _register_commands, app

    _register_commands()

    def walk(command, path):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def help_words(command) -> set[str]:
    """The words of what `command --help` prints from nerplat's text: its help, its parameters' and
    the first paragraph of each subcommand's (what a group lists), as rich renders the markup."""
    texts = [command.help or "", *(getattr(param, "help", None) or "" for param in command.params)]
    texts += [(sub.help or "").split("\n\n")[0] for sub in getattr(command, "commands", {}).values()]
    return {word for text in texts for word in Text.from_markup(text).plain.split()}


@pytest.mark.parametrize("path", [path for path, _ in command_paths()], ids=lambda path: " ".join(path) or "nerplat")
def test_every_help_fits_80_columns_folds_no_word_and_breaks_no_sentence(path, monkeypatch, capsys):
    from nerplat.cli import main

    monkeypatch.setenv("COLUMNS", str(WIDTH))
    command = dict((" ".join(p), c) for p, c in command_paths())[" ".join(path)]
    assert main([*path, "--help"]) == 0
    lines = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert max(cell_len(line) for line in lines) <= WIDTH
    folded = sorted(word for word in help_words(command) if not any(word in line for line in lines))
    assert not folded, f"cut or folded across lines: {folded}"
    prose = lines[: next(k for k, line in enumerate(lines) if line.startswith("╭"))]
    for line, following in zip(prose, prose[1:]):  # a line ends early only where its paragraph does
        indent = len(line) - len(line.lstrip())
        if line.strip() and following.strip() and len(following) - len(following.lstrip()) == indent:
            assert len(line) + 1 + len(following.split()[0]) > WIDTH - 1, f"broken after {line!r}"


def test_bench_figures_fit_80_columns_or_stack_their_rows(monkeypatch, capsys):
    from nerplat.bench.repeats import Spread
    from nerplat.bench.startup import CommandFigures, StartupBench
    from nerplat.cli import bench_commands, main

    model = f"{LONG}bundle"
    commands = [("--help", "nerplat --help"), ("predict", f'nerplat predict {model} --text "EU rejects German call ."')]
    figures = StartupBench(
        [CommandFigures(name, shown, Spread.of([3.84, 3.9, 4.2]), Spread.of([3.43, 3.5, 3.71])) for name, shown in commands],
        {"torch": 1.62, "transformers": 0.71, "other": 0.4}, repeats=3, load_before=3.2, load_after=3.4, cpu_capability="AVX2",
    )
    monkeypatch.setattr(bench_commands, "bench_startup", lambda *args, **kwargs: figures)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    assert main(["bench", "startup", model]) == 0
    text = capsys.readouterr().out
    assert_unfolded(text, [model, "wall 3.90 (3.84-4.20) s; CPU 3.50 (3.43-3.71) s"])
    assert "nerplat --help" in text.splitlines()  # the stacked rows: each command on a line of its own


def test_plan_lines_fold_no_path_and_indent_what_they_continue(tmp_path, monkeypatch, capsys):
    import shutil

    from nerplat.cli import main

    root = Path(__file__).parents[3]
    pilot = tmp_path / LONG.strip("/") / "auc2t_lowres_conll"
    pilot.mkdir(parents=True)
    shutil.copy(root / "docs" / "results" / "auc2t_lowres_conll" / "runs.parquet", pilot)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    assert main(["plan", str(root / "specs" / "auc2t_lowres_conll.yaml"), "-p", "cpu", "--pilot", str(pilot)]) == 0
    lines = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    text = "\n".join(lines)
    assert_unfolded(text, [str(pilot / "runs.parquet")])
    claim = next(k for k, line in enumerate(lines) if line.startswith("  claim auc2t_vs_ce_100: pilot sd"))
    assert lines[claim + 1].startswith(f"    ({pilot}")  # continued, indented


@pytest.mark.parametrize("reader", ["terminal", "COLUMNS"])
def test_errors_wrap_between_words_and_keep_a_path_whole(tmp_path, monkeypatch, capsys, reader):
    from nerplat.cli import main
    from nerplat.cli.options import err_console

    folder = tmp_path / LONG.strip("/") / "mine"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("EU\tB-ORG\n\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"experiment: t\ndataset: {{path: {folder}}}\nmethods: {{ce: {{loss: ce}}}}\n")
    if reader == "terminal":
        monkeypatch.setattr(err_console, "_force_terminal", True)
        monkeypatch.setattr(err_console, "_color_system", None)
    else:
        monkeypatch.setenv("COLUMNS", str(WIDTH))  # the tour's setting, its output a pipe
    monkeypatch.setattr(err_console, "width", WIDTH)
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) > 1
    assert_unfolded(err, [str(folder / "test.txt")])
    assert "add test.txt" in " ".join(err.split())


def test_errors_into_a_pipe_stay_one_line_each(tmp_path, monkeypatch, capsys):
    from nerplat.cli import main

    monkeypatch.delenv("COLUMNS", raising=False)
    spec = tmp_path / "spec.yaml"
    spec.write_text("experiment: t\ndataset: {path: nowhere-" + "x" * 100 + "}\nmethods: {ce: {loss: ce}}\n")
    assert main(["validate", str(spec)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: no corpus folder or file at")


def test_plan_tables_keep_a_distribution_whole(monkeypatch, capsys):
    from nerplat.cli import main

    root = Path(__file__).parents[3]
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    assert main(["plan", str(root / "specs" / "auc2t_lowres_conll.yaml"), "-p", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "loguniform(3e-05,0.0003)" in out
    assert not re.search(r"uniform\([^)\n]*\n", out), "a distribution cut across lines"
