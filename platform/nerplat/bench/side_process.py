"""One side of a bench comparison run as a Python process of its own, timed from before that process
starts to its exit.

The time a sweep takes is what its user waits for: `nerplat run SPEC` from the command to its end, or
`python sweep.py` for a hand-written Trainer sweep, imports, set-up and teardown included. Timing
sides inside the bench's own process cannot give both that span: the bench has already imported
torch and transformers, so an in-process side's clock skips those imports, while nerplat's trial
workers, new processes, pay theirs inside its clock. A side here is a function `module:name`
taking a JSON request as keywords and returning JSON; only its module is imported in the child, so
the child pays no import of the bench's.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def timed_call(target: str, request: dict[str, Any]) -> tuple[float, Any]:
    """`target(**request)` in a new Python process: wall seconds from before the process starts to its
    exit, and what the function returned."""
    with tempfile.TemporaryDirectory(prefix="nerplat-bench-side-") as scratch:
        request_path, answer_path = Path(scratch, "request.json"), Path(scratch, "answer.json")
        request_path.write_text(json.dumps(request))
        command = [sys.executable, "-m", __name__, target, str(request_path), str(answer_path)]
        started = time.perf_counter()
        finished = subprocess.run(command, check=False)
        wall = time.perf_counter() - started
        if finished.returncode != 0:
            raise RuntimeError(f"{target} ended with exit code {finished.returncode} (its messages are above)")
        return wall, json.loads(answer_path.read_text())


def main(argv: list[str]) -> None:
    target, request_path, answer_path = argv
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    answer = function(**json.loads(Path(request_path).read_text()))
    Path(answer_path).write_text(json.dumps(answer))


if __name__ == "__main__":
    main(sys.argv[1:])
