"""`nerplat` commands of the ui group."""

import typer


def register(app: typer.Typer) -> None:
    """Adds this group's commands to the app (filled in by the issue that owns it)."""
