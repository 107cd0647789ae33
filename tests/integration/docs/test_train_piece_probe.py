"""docs/train-piece-probe.py on the bench sweep's smoke profile (the tiny encoder): one line per batch cost."""

import re

import pytest
from docs_scripts import output_lines, run_docs_script

pytestmark = pytest.mark.slow

ROW = re.compile(r"^\s*(?P<name>.+): training (?P<train>\d+\.\d\d) s, (?P<tokens>\d+) tokens/s, best dev [01]\.\d{3} \(medians of 1\)$")


def test_the_probe_trains_at_every_cost_and_both_baselines():
    lines = output_lines(run_docs_script("train-piece-probe.py", "1", "--sentences", "20", "--profile", "smoke", timeout=600))
    rows = [ROW.match(line) for line in lines]
    assert all(rows), lines
    names = [row["name"] for row in rows]
    assert names == [f"pieces at cost {cost}" for cost in (0, 8, 32, 64, 128, 512)] + ["whole batches", "sorted as one group"]
    assert all(float(row["train"]) > 0 and int(row["tokens"]) > 0 for row in rows)
