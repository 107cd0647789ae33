"""docs/eval-time-probe.py on the bench sweep's smoke profile (the tiny encoder), 20 training and 10 dev
sentences: each part of a dev evaluation as a share of it, and what the bf16 and int8 copies label differently."""

import re

import pytest
from docs_scripts import output_lines, run_docs_script

pytestmark = pytest.mark.slow

HEAD = re.compile(r"^10 dev sentences, precision (fp32|bf16), 1 turns$")
SMALL = ["--set", "samplers=[{low_resource: {size: 20, partitions: 1}}]", "--set", "train.dev_subset=10"]
PART = re.compile(r"^\s*(?P<name>.+): median \d+\.\d{4} s \(\d+\.\d{4}-\d+\.\d{4}\), (?P<share>\d+\.\d{3}) of evaluate$")
COPY = re.compile(r"^(bf16|int8) weights label (?P<differ>\d+) of (?P<words>\d+) dev words differently from autocast$")
PARTS = [
    "evaluate", "forward, one autocast", "forward, autocast per batch", "bf16 copy", "forward, bf16 weights",
    "int8 copy", "forward, int8 weights", "metrics",
]  # fmt: skip


def test_the_probe_times_every_part_against_the_whole_evaluation():
    lines = output_lines(run_docs_script("eval-time-probe.py", "1", *SMALL, "--profile", "smoke", timeout=600))
    assert HEAD.match(lines[0]), lines[0]
    parts = [PART.match(line) for line in lines[1:9]]
    assert all(parts), lines[1:9]
    assert [part["name"] for part in parts] == PARTS and parts[0]["share"] == "1.000"
    copies = [COPY.match(line) for line in lines[9:]]
    assert len(copies) == 2 and all(copies), lines[9:]
    assert all(int(copy["differ"]) <= int(copy["words"]) for copy in copies)
