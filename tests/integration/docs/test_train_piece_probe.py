"""docs/train-piece-probe.py on the bench sweep's smoke profile (the tiny encoder), 20 training sentences in
one batch and 10 dev sentences: one line per batch cost. Steps are what a tiny trial costs, so each epoch has
one; the sweep's 4 epochs stay, as a trial's first step counts as start-up and the 3 others must time above
the 0.00 s the probe prints (a 1-epoch trial printed 0.00)."""

import re

import pytest
from docs_scripts import output_lines, run_docs_script

pytestmark = pytest.mark.slow

ROW = re.compile(
    r"^\s*(?P<name>.+): training (?P<train>\d+\.\d\d) s, (?P<tokens>\d+) tokens/s, best dev [01]\.\d{3} \(medians of 1\)$"
)
SMALL = ["--sentences", "20", "--set", "train.batch_size=32", "--set", "train.dev_subset=10"]


def test_the_probe_trains_at_every_cost_and_both_baselines():
    lines = output_lines(run_docs_script("train-piece-probe.py", "1", *SMALL, "--profile", "smoke", timeout=600))
    rows = [ROW.match(line) for line in lines]
    assert all(rows), lines
    names = [row["name"] for row in rows]
    assert names == [f"pieces at cost {cost}" for cost in (0, 8, 32, 64, 128, 512)] + ["whole batches", "sorted as one group"]
    assert all(float(row["train"]) > 0 and int(row["tokens"]) > 0 for row in rows)
