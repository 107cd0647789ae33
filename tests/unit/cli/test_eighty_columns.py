"""What the tour's commands print at 80 columns: no word, path, URL or command folded across lines;
a line wider than 80 holds one such item alone (the terminal may wrap it; nerplat does not)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from nerplat.cli.run_commands import print_summary
from nerplat.run.outcomes import ArmOutcome, RunSummary

WIDTH = 80
LONG = "/home/someone/experiments/" + "a-long-folder-name-" * 4


def assert_unfolded(text: str, wholes: list[str]) -> None:
    """Every item of `wholes` within one line; every line wider than WIDTH one word or one item alone."""
    lines = [line.rstrip() for line in text.splitlines()]
    for whole in wholes:
        assert any(whole in line for line in lines), f"{whole!r} folded in:\n{text}"
    for line in lines:
        if len(line) > WIDTH:
            assert len(line.split()) == 1 or line.strip() in wholes, f"a line wider than {WIDTH} holds more than one item: {line!r}"


def _console(buffer: io.StringIO) -> Console:
    return Console(file=buffer, width=WIDTH, highlight=False)


def test_the_end_of_a_run_folds_no_path_and_gives_the_browse_command_a_line_of_its_own():
    tracking, optuna, report = f"sqlite:///{LONG}mlflow.db", f"sqlite:///{LONG}optuna.db", f"{LONG}reports/quickstart"
    summary = RunSummary(
        "quickstart", tracking, "1", [ArmOutcome("conll2003/untyped+low_resource-100/mom", errors=[f"worker died writing {LONG}x.ckpt"])],
        optuna_storage=optuna, report_dir=Path(report), unconverged=("conll2003/untyped+low_resource-100/mom: dev micro F1 still rising",),
    )
    buffer = io.StringIO()
    print_summary(summary, _console(buffer))
    browse = f"nerplat ui --tracking-uri {tracking} --experiment quickstart --optuna-storage {optuna}"
    assert_unfolded(buffer.getvalue(), [tracking, optuna, report, f"{LONG}x.ckpt", browse])
    assert f"  {browse}" in buffer.getvalue().splitlines()


def test_a_run_stage_line_folds_no_path_and_no_word():
    from nerplat.run.progress import ProgressBoard

    buffer = io.StringIO()
    ProgressBoard("quickstart", _console(buffer)).stage(f"opening the MLflow store sqlite:///{LONG}mlflow.db with 2 trial workers at a time")
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


def test_data_fetch_help_breaks_no_sentence(monkeypatch, capsys):
    from nerplat.cli import main

    monkeypatch.setenv("COLUMNS", str(WIDTH))
    assert main(["data", "fetch", "--help"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    prose = lines[lines.index(next(line for line in lines if line.startswith("Download"))):]
    prose = prose[: prose.index(next(line for line in prose if line.startswith("╭")))]
    for line, following in zip(prose, prose[1:]):  # a line ends early only where its paragraph does
        if line and following:
            assert len(line) + 1 + len(following.split()[0]) > WIDTH - 4, f"broken after {line!r}"
    assert any(re.search(r"or a copy that differs from the reference\.$", line) for line in prose)
