"""bench startup's clocks on stand-in commands: a process run to its end, a server to its first /ping, imports by package."""

from __future__ import annotations

import sys

import pytest

from nerplat.bench.startup import bench_startup, import_seconds, time_command, time_serve
from nerplat.loopback import free_port
from nerplat.errors import UserInputError

SERVER = """
import http.server, sys, time
time.sleep(0.3)  # loading a model
class Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ping" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Ping).serve_forever()
"""


def test_a_command_is_timed_to_its_end_with_its_cpu_seconds():
    busy = time_command([sys.executable, "-c", "sum(range(3_000_000))"])
    assert busy.wall > 0 and busy.cpu > 0
    assert busy.cpu < busy.wall + 1  # one thread: no more CPU than wall clock (plus the clocks' granularity)


def test_a_failing_command_is_named_with_its_last_error_lines():
    with pytest.raises(UserInputError, match=r"exited with 3: .*the reason"):
        time_command([sys.executable, "-c", "import sys; print('the reason', file=sys.stderr); sys.exit(3)"])


def test_a_server_is_timed_to_its_first_ping_then_stopped():
    port = free_port()
    served = time_serve([sys.executable, "-c", SERVER, str(port)], port)
    assert served.wall >= 0.3 and served.cpu > 0


def test_a_server_that_dies_before_answering_is_named():
    port = free_port()
    with pytest.raises(UserInputError, match="exited with 1: .*no model"):
        time_serve([sys.executable, "-c", "import sys; sys.exit('no model')"], port)


def test_imports_are_summed_by_top_level_package_largest_first(tmp_path):
    (tmp_path / "slowpkg").mkdir()
    (tmp_path / "slowpkg" / "__init__.py").write_text("import time\ntime.sleep(0.1)\n")
    (tmp_path / "slowpkg" / "part.py").write_text("import time\ntime.sleep(0.2)\n")
    importing = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import slowpkg.part"
    seconds = import_seconds([sys.executable, "-c", importing], shown=3)
    assert list(seconds)[0] == "slowpkg" and seconds["slowpkg"] >= 0.3  # its two modules' own times, added
    assert list(seconds)[-1] == "other" and len(seconds) == 4
    shown = [value for name, value in seconds.items() if name != "other"]
    assert shown == sorted(shown, reverse=True) and seconds["other"] >= 0


@pytest.mark.parametrize(
    "options, message",
    [({"repeats": 4}, "--repeats must be at least 5"), ({"spec": "s.yaml"}, "--spec and --method together")],
)
def test_bad_options_are_refused_before_anything_runs(options, message):
    with pytest.raises(UserInputError, match=message):
        bench_startup("MODEL", **options)
