"""Reading back what nerplat prints for a shell: a command broken over lines with continuations."""

from __future__ import annotations

import re


def joined_continuations(text: str) -> str:
    """`text` with each backslash-newline continuation (and the next line's indent) read as one space,
    as a shell reads a pasted command."""
    return re.sub(r" \\\n *", " ", text)


def line_items(line: str) -> list[str]:
    """The words of one printed line, a command's trailing continuation left out."""
    return line.rstrip().removesuffix(" \\").split()
