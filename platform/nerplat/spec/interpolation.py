"""`${VAR}` and `${VAR:-default}` in spec scalars, so one spec serves laptops and clusters.

Follows the shell: `${VAR:-default}` takes the default when VAR is unset or empty; `${VAR}` with VAR
unset is an error (a silent empty string would hide a missing setting). `$${` writes a literal `${`.
Defaults are plain text: they cannot nest another `${...}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InterpolationError(ValueError):
    """A reference that cannot be resolved; the message says which and why."""


def needs_interpolation(text: str) -> bool:
    return "${" in text


def referenced_names(text: str) -> tuple[str, ...]:
    """Names of the variables `text` refers to (`$${` is not a reference), in order."""
    names = [match.group(1).partition(":-")[0] for match in _REFERENCE.finditer(text) if match.group(1) is not None]
    return tuple(dict.fromkeys(names))


def interpolate(text: str, environ: Mapping[str, str]) -> str:
    """Replaces every `${...}` reference in `text` from `environ`.

    Raises
    ------
    InterpolationError
        For an unset variable without a default, an unterminated reference or a bad name.
    """

    def substitute(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        if match.group(1) is None:
            raise InterpolationError(f"unterminated '${{' in {text!r}: close it with '}}'")
        name, has_default, default = match.group(1).partition(":-")
        if not _NAME.fullmatch(name):
            raise InterpolationError(
                f"bad reference '{whole}': write ${{NAME}} or ${{NAME:-default}} (NAME: letters, digits, _)"
            )
        value = environ.get(name)
        if has_default:
            return value if value else default
        if value is None:
            raise InterpolationError(f"environment variable {name} is not set (or write ${{{name}:-default}})")
        return value

    return _REFERENCE.sub(substitute, text)
