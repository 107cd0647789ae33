"""docs/reaper-probe.py on the tiny run: each process title of the killed driver's session with the
seconds after the kill it was last seen, and whether the session emptied (with the reaper it does)."""

import re

import pytest
from docs_scripts import output_lines, run_docs_script

pytestmark = pytest.mark.slow

LINE = re.compile(r"^(?P<title>\S+): (last seen (?P<seconds>\d+\.\d) s after the kill|still there)$")


def test_the_probe_times_every_process_of_the_killed_session():
    lines = output_lines(run_docs_script("reaper-probe.py", "--after", "1", "--wait", "30", timeout=300))
    rows = [LINE.match(line) for line in lines[:-1]]
    assert rows and all(rows), lines
    titles = {row["title"] for row in rows}
    assert {"raylet", "gcs_server", "ray::DashboardAgent", "ray::RuntimeEnvAgent"} <= titles, titles
    assert lines[-1] == "every process of the session gone: yes"
