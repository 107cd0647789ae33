"""What nerplat's modules import, read from their source (no import runs): the arrows that the import-cycle
and layer tests check. Every import statement counts, those inside functions too: a lazy import is
still a dependency."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def unit_of(module: str) -> str | None:
    """'nerplat.spec.loader' -> 'spec'; 'nerplat.errors' -> 'errors'; other packages -> None."""
    parts = module.split(".")
    return parts[1] if parts[0] == "nerplat" and len(parts) > 1 else None


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: Path, root: Path) -> str:
    """The package a module's relative imports start from: itself for an `__init__`, else its parent."""
    here = module_name(path, root)
    return here if path.name == "__init__.py" else here.rpartition(".")[0]


def absolute_base(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module a `from ... import` reads from, inside `package`."""
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
    return base


def import_statements(path: Path, root: Path) -> Iterator[tuple[int, set[str]]]:
    """(line, absolute names it may import) for each import statement of `path`, at any depth of its code.

    `from a import b` names both `a` and `a.b` (b may be a module: `from nerplat import spec`).
    """
    package = package_of(path, root)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield node.lineno, {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = absolute_base(node, package)
            yield node.lineno, {base} | {f"{base}.{alias.name}" for alias in node.names}


def imported_modules(path: Path, root: Path) -> set[str]:
    """Absolute names of every module `path` imports, at any depth of its code."""
    return {name for _, names in import_statements(path, root) for name in names}


def write_package(root: Path, files: dict[str, str]) -> Path:
    """A scratch package at `root`: {relative file path: its text}."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root
