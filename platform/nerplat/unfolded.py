"""Lines that fit the terminal without folding a word: a path, URL or command longer than the line
goes on a line of its own, whole, for the terminal to wrap and a mouse to copy (rich folds it)."""

from __future__ import annotations

import re

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
