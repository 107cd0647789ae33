"""Lines that fit the terminal without folding a word: a path or URL longer than the line goes on a
line of its own, whole, for the terminal to wrap and a mouse to copy (rich folds it); a command to
copy is broken between its arguments with a shell's line continuation."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text


def unfolded_lines(text: Text, width: int, hanging: int = 0) -> list[Text]:
    """`text` broken between words into lines of at most `width` cells, except a word longer than
    that, which stays whole; lines after the first of a paragraph are indented by `hanging` spaces."""
    lines: list[Text] = []
    for paragraph in text.split("\n", allow_blank=True):
        plain = paragraph.plain
        breaks: list[int] = []
        start, room = 0, width
        for word in re.finditer(r"\S+", plain):
            if word.end() - start > room and plain[start:word.start()].strip():
                breaks.append(word.start())
                start, room = word.start(), width - hanging
        for k, line in enumerate(paragraph.divide(breaks)):
            line.rstrip()
            lines.append(Text(" " * hanging) + line if k else line)
    return lines


def print_unfolded(console: Console, text: str | Text, hanging: int = 0, markup: bool = True) -> None:
    """Prints `text` (console markup unless `markup` is False) wrapped between words at the console's
    width; no word is folded."""
    rendered = console.render_str(text, markup=markup, highlight=False) if isinstance(text, str) else text
    for line in unfolded_lines(rendered, console.width, hanging):
        console.print(line, soft_wrap=True)


def print_message(console: Console, text: str, hanging: int = 2) -> None:
    """An error or warning (console markup): in a terminal, or where COLUMNS says how wide the reader
    is, wrapped between words at that width, as `print_unfolded`; into a file or pipe one line,
    whole, for grep and logs."""
    if console.is_terminal or os.environ.get("COLUMNS"):
        print_unfolded(console, text, hanging)
    else:
        console.print(text, soft_wrap=True, highlight=False)


def command_lines(words: Sequence[str], width: int, indent: int = 2) -> list[str]:
    """The shell command `words` as lines of at most `width` cells that a shell reads as one: broken
    before an option, kept with its value where they fit a line together, with a trailing backslash;
    no argument is split (one longer than a line stands alone)."""
    room = width - indent - 4 - 2  # a continuation line's indent and its " \\"
    groups: list[list[str]] = []
    for word in (shlex.quote(word) for word in words):
        if groups and not word.startswith("-"):
            groups[-1].append(word)
        else:
            groups.append([word])
    pieces = []
    for group in groups:
        pieces += [" ".join(group)] if len(" ".join(group)) <= room else group
    lines = [" " * indent + pieces[0]]
    for piece in pieces[1:]:
        if len(lines[-1]) + 1 + len(piece) + 2 > width:
            lines[-1] += " \\"
            lines.append(" " * (indent + 4) + piece)
        else:
            lines[-1] += " " + piece
    return lines


def print_command(console: Console, words: Sequence[str], indent: int = 2) -> None:
    """Prints the command `words` to be copied into a shell: lines of its own, within the console's width."""
    for line in command_lines(words, console.width, indent):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
