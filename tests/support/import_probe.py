"""What a fresh interpreter has imported after importing some of nerplat: the check behind the
import-boundary tests (a lower layer never pulls in a higher one, nor torch, Ray or MLflow where
docs/architecture.md says it knows nothing of them)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PROBE = """
import json, sys
{imports}
print(json.dumps(sorted(sys.modules)))
"""
COMMANDS_PROBE = """
import json, sys
from nerplat.cli import main
commands, record = json.loads(sys.argv[1]), sys.argv[2]
with open(record, "w") as out:
    for argv in commands:
        code = main(argv)
        out.write(json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\\n")
        out.flush()
"""


def modules_loaded_by(*statements: str) -> set[str]:
    """Names in `sys.modules` of a new interpreter after running the import `statements`."""
    code = PROBE.format(imports="\n".join(statements))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    return set(json.loads(done.stdout))


def modules_after_commands(
    commands: Sequence[Sequence[str]], cwd: Path, timeout: float
) -> tuple[list[tuple[int, set[str]]], str]:
    """Each `nerplat` command of `commands` run in turn (`main(argv)`) in one new interpreter (one start-up
    of torch for all: seconds of CPU each), with its exit code and the names in `sys.modules` after it,
    which hold what the commands before it loaded too; and the interpreter's stderr. A forbidden module
    absent after the last command was loaded by none."""
    record = cwd / "commands-probe.jsonl"
    command = [sys.executable, "-c", COMMANDS_PROBE, json.dumps([list(c) for c in commands]), str(record)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(rows) == len(commands), done.stderr[-2000:]
    return [(row["code"], set(row["modules"])) for row in rows], done.stderr


def offending(loaded: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """The `forbidden` packages (or their submodules) among `loaded`."""
    return sorted({f for f in forbidden for m in loaded if m == f or m.startswith(f + ".")})
