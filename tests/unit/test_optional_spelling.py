"""One spelling of "this or None" across nerplat: `X | None`, never `typing.Optional[X]` beside it."""

from pathlib import Path

import nerplat

PACKAGE = Path(nerplat.__file__).parent


def test_optional_types_are_written_x_or_none():
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "Optional[" in line or ("from typing import" in line and "Optional" in line)
    ]
    assert not found, f"write `X | None` instead of Optional[X]: {found}"
