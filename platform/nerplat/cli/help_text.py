"""Command help as paragraphs the terminal wraps, not the lines of the docstring they come from.

Typer keeps a docstring's single line breaks, so a paragraph wrapped at the source's width broke its
sentences again at 80 columns (a line and a half, a short line, ...). `flow_help` joins the lines of
each paragraph of every command's docstring; lines that start with a space (examples, commands to
copy) and `\\b` paragraphs keep their breaks.
"""

from __future__ import annotations

import inspect

import typer


def flowed(text: str) -> str:
    """`text` with each paragraph's lines joined by spaces, except indented lines and `\\b` paragraphs."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(paragraph if paragraph.startswith("\b") else _joined(paragraph) for paragraph in paragraphs)


def _joined(paragraph: str) -> str:
    lines: list[str] = []
    for line in paragraph.split("\n"):
        if lines and not line[:1].isspace() and not lines[-1][:1].isspace():
            lines[-1] += " " + line
        else:
            lines.append(line)
    return "\n".join(lines)


def flow_help(app: typer.Typer) -> None:
    """Flows the help of every command of `app` and of its command groups, in place."""
    for command in app.registered_commands:
        text = command.help if command.help is not None else inspect.getdoc(command.callback)
        if text:
            command.help = flowed(text)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            flow_help(group.typer_instance)
