"""nerplat's own modules are imported at the top of a module, where readers and the layer tests see
them. A function-local import of one stays only with its reason beside it: a `# lazy: <why>` comment
on its line, or on the line above it or above the block of imports it belongs to, such as
`# lazy: torch, which --help does not need`. Third-party imports are not checked here: where those load
is the import-probe tests' business (tests/support/import_probe.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nerplat

PACKAGE = Path(nerplat.__file__).parent
REASON = re.compile(r"#\s*lazy:\s*\S")
IMPORTS = (ast.Import, ast.ImportFrom)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def imports_nerplat(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "nerplat"
    return any(alias.name.split(".")[0] == "nerplat" for alias in node.names)


def unexplained_local_imports(path: Path) -> list[str]:
    """`path:line: source` of each import of a nerplat module inside a function with no reason beside it."""
    lines = path.read_text().splitlines()
    found = []

    def comment_above(line: int) -> bool:
        return line >= 2 and lines[line - 2].lstrip().startswith("#") and REASON.search(lines[line - 2]) is not None

    def check(body: list[ast.stmt]) -> None:
        explained_until = 0  # the last line of the previous import when it was explained
        for statement in body:
            if isinstance(statement, IMPORTS):
                explained = (
                    any(REASON.search(lines[n - 1]) for n in range(statement.lineno, statement.end_lineno + 1))
                    or comment_above(statement.lineno)
                    or explained_until == statement.lineno - 1
                )
                if imports_nerplat(statement) and not explained:
                    found.append(f"{path}:{statement.lineno}: {lines[statement.lineno - 1].strip()}")
                explained_until = statement.end_lineno if explained else 0
            else:
                explained_until = 0

    def visit(node: ast.AST, in_function: bool) -> None:
        if in_function:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(node, field, None), list):
                    check(getattr(node, field))
            for handler in getattr(node, "handlers", []):
                check(handler.body)
            for case in getattr(node, "cases", []):
                check(case.body)
        for child in ast.iter_child_nodes(node):
            visit(child, in_function or isinstance(child, FUNCTIONS))

    visit(ast.parse("\n".join(lines), str(path)), False)
    return found


def test_every_local_import_of_a_nerplat_module_says_why_it_is_local():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in unexplained_local_imports(path)]
    assert not found, "import these at the top of the module, or say why not with `# lazy: <why>`:\n" + "\n".join(found)


def test_the_check_finds_a_local_import_without_a_reason_and_accepts_one_with_it(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "import json\n"
        "from nerplat.errors import Problem\n"
        "\n"
        "def bare():\n"
        "    import torch\n"
        "    from nerplat.spec.loader import read_document\n"
        "    from . import sibling\n"
        "\n"
        "def explained():\n"
        "    from nerplat.catalog import spec_catalog  # lazy: torch, not needed by validate\n"
        "    # lazy: Ray and Optuna, which only a run needs\n"
        "    from nerplat.run.study import StudySearch\n"
        "    import nerplat.run.events\n"
        "    x = 1\n"
        "    import nerplat.run.trainable\n"
        "\n"
        "def commented():\n"
        "    # the loader\n"
        "    from nerplat.spec import loader\n"
        "\n"
        "class Outer:\n"
        "    def method(self):\n"
        "        if True:\n"
        "            import nerplat.metrics\n"
    )
    assert [hit.split(":", 2)[1] for hit in unexplained_local_imports(module)] == ["6", "7", "15", "19", "24"]
