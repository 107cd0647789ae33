"""Ending the `nerplat` process without the interpreter's teardown of its modules.

At exit Python waits for the process's threads, runs the atexit callbacks and flushes the standard
streams; then it frees every module and every object they hold, one by one. With torch and
transformers loaded that last step is a large share of a short command's CPU time
(docs/performance.md, "Start-up of small commands"), and it changes nothing outside the process: its
memory goes back to the system when it ends. `run_program` runs the command, and `exit_process`
does those first steps, as Python's exit does, and ends the process.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

BROKEN_PIPE_CODE = 1  # what click exits with when the reader of its output has left


def run_program(command: Callable[[], int]) -> NoReturn:
    """Runs `command` and ends the process with its code: the one it returns, or the one it exits
    with (`sys.exit`, click's exit when the reader of its output left, as `nerplat --help | head -1`
    does). An exception it raises is not caught: Python prints it and exits 1, as it would."""
    try:
        code = command()
    except SystemExit as done:
        code = exit_status(done.code)
    except BrokenPipeError:  # the reader left while a message outside click was written: nothing to say, nowhere
        code = BROKEN_PIPE_CODE
    exit_process(code)


def exit_status(code: object) -> int:
    """The status `sys.exit(code)` ends a process with: None 0, an integer itself, anything else 1
    after it is printed on stderr."""
    if code is None or isinstance(code, int):
        return code or 0
    try:
        print(code, file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 1


def exit_process(code: int) -> NoReturn:
    """Ends the process with `code` once its threads are done, its atexit callbacks have run (logging's
    flush, temporary folders' removal, Ray's shutdown) and the standard streams are flushed."""
    # The first two steps of Python's own exit (Py_FinalizeEx), which no public function runs:
    threading._shutdown()  # tells idle thread pools to stop, then joins the non-daemon threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that left (`| head`) or a closed stream: nothing to write to
            pass
    os._exit(code)
