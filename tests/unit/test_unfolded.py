"""Lines within the terminal's width with no word folded, and commands a shell reads back whole."""

from __future__ import annotations

import io
import shlex

from rich.console import Console
from rich.text import Text

from nerplat.unfolded import command_lines, print_command, unfolded_lines
from shell_text import joined_continuations

LONG = "/home/someone/experiments/" + "a-long-folder-name-" * 4 + "mlflow.db"


def test_a_paragraph_breaks_between_words_and_a_long_path_stands_whole():
    lines = [line.plain for line in unfolded_lines(Text(f"opening the store sqlite:///{LONG} now, with 2 workers"), 40, 4)]
    assert f"    sqlite:///{LONG}" in lines
    assert all(len(line) <= 40 for line in lines if len(line.split()) > 1)
    assert " ".join(" ".join(lines).split()) == f"opening the store sqlite:///{LONG} now, with 2 workers"


def test_a_long_command_breaks_before_options_and_a_shell_reads_it_back_whole():
    words = ["nerplat", "ui", "--tracking-uri", f"sqlite:///{LONG}", "--experiment", "quick start", "--resume"]
    lines = command_lines(words, 80)
    assert len(lines) > 1 and all(line.endswith(" \\") for line in lines[:-1])
    assert all(len(line) <= 80 or len(line.rstrip(" \\").split()) == 1 for line in lines)
    assert f"      sqlite:///{LONG} \\" in lines  # the path alone on its line: no argument split
    assert "  nerplat ui --tracking-uri \\" == lines[0] and "      --experiment 'quick start' --resume" == lines[-1]
    assert shlex.split(joined_continuations("\n".join(lines))) == words


def test_a_short_command_stays_on_one_line():
    buffer = io.StringIO()
    print_command(Console(file=buffer, width=80), ["nerplat", "run", "s.yaml", "--resume"])
    assert buffer.getvalue() == "  nerplat run s.yaml --resume\n"
