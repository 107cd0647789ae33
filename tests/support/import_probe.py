"""What a fresh interpreter has imported after importing some of nerplat: the check behind the
import-boundary tests (a lower layer never pulls in a higher one, nor torch, Ray or MLflow where
docs/architecture.md says it knows nothing of them)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
{imports}
print(json.dumps(sorted(sys.modules)))
"""


def modules_loaded_by(*statements: str) -> set[str]:
    """Names in `sys.modules` of a new interpreter after running the import `statements`."""
    code = PROBE.format(imports="\n".join(statements))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    return set(json.loads(done.stdout))


def offending(loaded: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """The `forbidden` packages (or their submodules) among `loaded`."""
    return sorted({f for f in forbidden for m in loaded if m == f or m.startswith(f + ".")})
