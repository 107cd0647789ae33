"""Ending the `nerplat` process without the interpreter's teardown of its modules.

At exit Python waits for the process's threads, runs the atexit callbacks and flushes the standard
streams; then it frees every module and every object they hold, one by one. With torch and
transformers loaded that last step is a large share of a short command's CPU time
(docs/performance.md, "Start-up of small commands"), and it changes nothing outside the process: its
memory goes back to the system when it ends. `exit_process` does the first three steps, as Python's
exit does, and ends the process.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


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
