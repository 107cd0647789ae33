"""The Makefile's install step: what a new user sees on a correct install."""

from __future__ import annotations

from pathlib import Path

MAKEFILE = Path(__file__).parents[2] / "Makefile"


def test_libauc_goes_in_last_so_no_pip_check_reports_its_missing_dependencies():
    """pip checks the installed packages' declared dependencies after every install that resolves
    dependencies; LibAUC's (installed with --no-deps on purpose) would print an ERROR line then."""
    recipe = MAKEFILE.read_text().split("$(STAMP): pyproject.toml\n", 1)[1].split("\n\n", 1)[0]
    installs = [line.strip() for line in recipe.splitlines() if "pip install" in line]
    assert "--no-deps libauc" in installs[-1]
    assert all("--no-deps" in line or "libauc" not in line for line in installs)
