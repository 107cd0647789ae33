"""Modules and functions stay small enough to read whole: no module of nerplat over 500 lines, no
function over 60 (its signature and code; a docstring is documentation, not length).

A module that outgrows the limit splits by concept; a function, into the steps it takes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nerplat

PACKAGE = Path(nerplat.__file__).parent
MODULE_LINES = 500
FUNCTION_LINES = 60


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from `def` to the function's end, less its docstring."""
    lines = node.end_lineno - node.lineno + 1
    if ast.get_docstring(node, clean=False) is not None:
        docstring = node.body[0]
        lines -= docstring.end_lineno - docstring.lineno + 1
    return lines


def oversized(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        text = path.read_text()
        if (count := len(text.splitlines())) > MODULE_LINES:
            found.append(f"{relative}: {count} lines")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (count := function_lines(node)) > FUNCTION_LINES:
                found.append(f"{relative}:{node.lineno} {node.name}: {count} lines")
    return found


def test_no_module_over_500_lines_and_no_function_over_60():
    assert oversized() == []


def test_the_check_counts_code_not_docstrings(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    docstring = '    """' + "\n".join(["Says why."] * 20) + '"""'
    (tmp_path / "ok.py").write_text(f"def fits():\n{docstring}\n{body}\n")  # def + 59 lines of code
    (tmp_path / "long.py").write_text(f"def too_long():\n{body}\n    return 0\n" + "\n" * 500)
    assert oversized(tmp_path) == ["long.py: 561 lines", "long.py:1 too_long: 61 lines"]
