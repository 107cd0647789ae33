"""Command help flows as paragraphs: the line breaks of a docstring wrapped in the source are not kept."""

from __future__ import annotations

import typer.main

from nerplat.cli.help_text import flowed


def test_the_lines_of_a_paragraph_are_joined_and_paragraphs_kept():
    text = """First line
    goes on here.

    A second paragraph
    in two lines."""
    assert flowed(text) == "First line goes on here.\n\nA second paragraph in two lines."


def test_indented_lines_and_verbatim_paragraphs_keep_their_breaks():
    text = "Examples:\n  nerplat run a.yaml\n  nerplat run b.yaml\n\n\b\nkept\nas is"
    assert flowed(text) == text


def test_every_command_the_program_lists_has_no_break_inside_a_paragraph():
    from nerplat.cli import _register_commands, app

    _register_commands()

    def commands(group):
        for command in group.commands.values():
            yield command
            yield from commands(command) if hasattr(command, "commands") else ()

    listed = list(commands(typer.main.get_command(app)))
    assert {"registry", "analyze", "reanalyze", "tracking"} <= {command.name for command in listed}
    for command in listed:
        for paragraph in (command.help or "").split("\n\n"):
            lines = paragraph.split("\n")
            assert all(line[:1].isspace() for line in lines[1:]), f"{command.name}: {paragraph!r}"
