"""docs/malloc-probe.sh on the integration tests' tiny spec, for its first two settings: a line each
with the trial worker's RSS and the seconds MLflow recorded."""

import re

import pytest
from docs_scripts import output_lines, run_docs_script
from nerplat_processes import SPEC

pytestmark = pytest.mark.slow

ROW = re.compile(r"^(?P<name>.+?) +(?P<peak>\d+\.\d\d) GB +(?P<last>\d+\.\d\d) GB +(?P<train>\d+\.\d) +(?P<eval>\d+\.\d)$")


def test_the_probe_runs_a_trial_per_setting_and_reads_its_times_back():
    # TMPDIR is left as it is: Ray keeps its sockets under it, and a pytest folder's path is too long for them
    env = {"MALLOC_PROBE_SETTINGS": "2", "MALLOC_PROBE_INTERVAL": "1", "NERPLAT_TEST_EXPERIMENT": "malloc_probe"}
    # 2 epochs: the tiny spec's ASHA scheduler refuses 1
    lines = output_lines(run_docs_script("malloc-probe.sh", "2", str(SPEC), "", env=env, timeout=900))
    assert lines[0].split() == ["malloc", "peak", "RSS", "last", "RSS", "train", "s", "eval", "s"]
    rows = [ROW.match(line) for line in lines[1:]]
    assert all(rows) and len(rows) == 2, lines
    assert [row["name"] for row in rows] == ["tcmalloc (nerplat's default)", "glibc"]
    assert all(float(row["train"]) > 0 and float(row["peak"]) >= float(row["last"]) for row in rows)
